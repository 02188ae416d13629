//! Rendering a host's files from the templates in `templates/` (compiled in, or a customised copy
//! given with `--templates`). One environment for all hosts: strict undefined values, custom
//! auto-escaping per file kind ([`crate::generate::escape`]), `error()` for impossible branches, LF line
//! endings and exactly one trailing newline. Pure: no I/O except reading a template folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};
use serde::Serialize;

use crate::generate::escape;
use crate::generate::fabric::PortPairs;
use crate::plan::model::{GpuDirect, Host, Plan};

/// A template id: its path under `templates/` without `.j2`; the output file is its base name.
pub(crate) type TemplateId = &'static str;

/// A file of the bundle, from `templates/`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileTemplate {
    /// Path under `templates/` (without `.j2` for a template); the bundle file is its base name.
    pub id: TemplateId,
    /// Its mode in the bundle: the scripts a user runs are executable, nothing else is.
    pub mode: u32,
    /// A plain source file, shipped byte for byte, or a template rendered with the plan.
    pub source: Source,
}

/// How a file of `templates/` becomes a bundle file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// `templates/<id>`, copied as it is: the shell library and the scripts, which hold no plan
    /// value, so that they are the same bytes in every bundle and can be checked as sources.
    Plain,
    /// `templates/<id>.j2`, rendered with the plan's values, auto-escaped per file kind.
    Template,
}

impl FileTemplate {
    /// The file's name in the bundle.
    pub(crate) fn file_name(&self) -> &'static str {
        // `host/apply.sh` → `apply.sh`; `dist/ansible/roce.yml` → `ansible/roce.yml`.
        self.id.split_once('/').map_or(self.id, |(_, rest)| rest)
    }

    /// Its file name under `templates/`.
    fn path(&self) -> String {
        match self.source {
            Source::Plain => self.id.to_string(),
            Source::Template => format!("{}.j2", self.id),
        }
    }
}

const fn file(id: TemplateId, mode: u32) -> FileTemplate {
    FileTemplate {
        id,
        mode,
        source: Source::Template,
    }
}

const fn plain(id: TemplateId, mode: u32) -> FileTemplate {
    FileTemplate {
        id,
        mode,
        source: Source::Plain,
    }
}

/// `precheck.sh`: read-only checks.
pub(crate) const PRECHECK_SH: FileTemplate = plain("host/precheck.sh", 0o755);
/// `apply.sh`: verify, precheck, save, apply, read back, persist.
pub(crate) const APPLY_SH: FileTemplate = plain("host/apply.sh", 0o755);
/// `rollback.sh`: restore what apply saved.
pub(crate) const ROLLBACK_SH: FileTemplate = plain("host/rollback.sh", 0o755);
/// `lib.sh`: the shell library the scripts source (it sources its parts, `lib-*.sh`).
pub(crate) const LIB_SH: FileTemplate = plain("host/lib.sh", 0o644);
/// `lib-text.sh`: text for the console (every host's or network's text escaped); `run-here.sh`
/// includes it too.
pub(crate) const LIB_TEXT_SH: FileTemplate = plain("host/lib-text.sh", 0o644);
/// `lib-parse.sh`: the readers of every tool output the scripts parse.
pub(crate) const LIB_PARSE_SH: FileTemplate = plain("host/lib-parse.sh", 0o644);
/// `lib-checks.sh`: identity and environment checks, the precheck.
pub(crate) const LIB_CHECKS_SH: FileTemplate = plain("host/lib-checks.sh", 0o644);
/// `lib-probe.sh`: the monitoring probe (optics, link, PCIe, counters, LLDP) and its checks.
pub(crate) const LIB_PROBE_SH: FileTemplate = plain("host/lib-probe.sh", 0o644);
/// `lib-settings.sh`: each setting's read and write per backend, saving and restoring.
pub(crate) const LIB_SETTINGS_SH: FileTemplate = plain("host/lib-settings.sh", 0o644);
/// `lib-rdma.sh`: DCQCN parameters and the cable length as settings, the receive-buffer and GID
/// checks, `nccl.env`.
pub(crate) const LIB_RDMA_SH: FileTemplate = plain("host/lib-rdma.sh", 0o644);
/// `lib-persist.sh`: the boot unit, the driver-reload hooks, the boot wait.
pub(crate) const LIB_PERSIST_SH: FileTemplate = plain("host/lib-persist.sh", 0o644);
/// `lib-firmware.sh`: the NICs' firmware (NV) configuration, read, checked and set.
pub(crate) const LIB_FIRMWARE_SH: FileTemplate = plain("host/lib-firmware.sh", 0o644);
/// `lib-netmgr.sh`: who manages each netdev (NetworkManager, networkd, netplan, ifcfg) and the
/// MTU it keeps.
pub(crate) const LIB_NETMGR_SH: FileTemplate = plain("host/lib-netmgr.sh", 0o644);
/// `lib-net.sh`: multi-rail address hygiene: the ARP and reverse-path sysctls, the route to
/// each rail peer.
pub(crate) const LIB_NET_SH: FileTemplate = plain("host/lib-net.sh", 0o644);
/// `lib-lag.sh`: RoCE LAG: a bond's slaves, the per-port settings on each, the LAG checks.
pub(crate) const LIB_LAG_SH: FileTemplate = plain("host/lib-lag.sh", 0o644);
/// `lib-gpu.sh`: the GPU path: each planned GPU↔port pair's PCIe relation, ACS, link, MRRS, and
/// whether NCCL will use GPUDirect RDMA.
pub(crate) const LIB_GPU_SH: FileTemplate = plain("host/lib-gpu.sh", 0o644);
/// `lib-nccl.sh`: the NCCL self-test of the fabric phase (nccl-tests' all_reduce_perf): NCCL's
/// GPUDirect per HCA and the bus bandwidth of the planned ports.
pub(crate) const LIB_NCCL_SH: FileTemplate = plain("host/lib-nccl.sh", 0o644);
/// `health.sh`: the live health run the health timer starts (node_exporter's textfile).
pub(crate) const HEALTH_SH: FileTemplate = plain("host/health.sh", 0o755);
/// `lib-health.sh`: the health run's counters, drift and textfile, and its timer's install.
pub(crate) const LIB_HEALTH_SH: FileTemplate = plain("host/lib-health.sh", 0o644);
/// `roce-gen-health.service` and `.timer`: the health run every `health_interval`.
pub(crate) const HEALTH_SERVICE: FileTemplate = file("host/roce-gen-health.service", 0o644);
pub(crate) const HEALTH_TIMER: FileTemplate = file("host/roce-gen-health.timer", 0o644);
/// `fabric.sh`: the fabric test, every host at once (phase `fabric`).
pub(crate) const FABRIC_SH: FileTemplate = plain("host/fabric.sh", 0o755);
/// `lib-fabric.sh`: the fabric test's traffic, counters and checks.
pub(crate) const LIB_FABRIC_SH: FileTemplate = plain("host/lib-fabric.sh", 0o644);
/// `plan.sh`: this host's plan as bash data, the only file of a bundle's shell that differs
/// between hosts.
pub(crate) const PLAN_SH: FileTemplate = file("host/plan.sh", 0o644);
/// `roce-gen.service`: the boot-time oneshot unit.
pub(crate) const SERVICE: FileTemplate = file("host/roce-gen.service", 0o644);
/// `README.txt`: how to run the bundle.
pub(crate) const README_TXT: FileTemplate = file("host/README.txt", 0o644);

/// `run-here.sh`: finds and runs this host's bundle from a USB stick or a share.
pub(crate) const RUN_HERE_SH: FileTemplate = file("dist/run-here.sh", 0o755);
/// `ansible/inventory.yml`: every host with its management address, by group.
pub(crate) const ANSIBLE_INVENTORY: FileTemplate = file("dist/ansible/inventory.yml", 0o644);
/// `ansible/roce.yml`: the playbook that runs a phase on every host and fetches the results.
pub(crate) const ANSIBLE_PLAYBOOK: FileTemplate = file("dist/ansible/roce.yml", 0o644);

/// `README.txt` of the output folder: the trust anchor and how to check it.
pub(crate) const DIST_README: FileTemplate = file("dist/README.txt", 0o644);

/// The Ansible files, which the folder's `SHA256SUMS` lists.
pub(crate) const ANSIBLE_FILES: [FileTemplate; 2] = [ANSIBLE_INVENTORY, ANSIBLE_PLAYBOOK];

/// The files of the output folder itself, beside the bundles, in the order they are made: each
/// carries the checksum of those before it (generate renders them in these steps).
#[cfg(test)]
const DIST_FILES: [FileTemplate; 4] = [
    ANSIBLE_INVENTORY,
    ANSIBLE_PLAYBOOK,
    RUN_HERE_SH,
    DIST_README,
];

/// The files rendered for each host.
pub(crate) const HOST_FILES: [FileTemplate; 1] = [PLAN_SH];

/// The files that do not depend on the host: made once per run, shared by every bundle.
pub(crate) const SHARED_FILES: [FileTemplate; 25] = [
    PRECHECK_SH,
    APPLY_SH,
    ROLLBACK_SH,
    LIB_SH,
    LIB_TEXT_SH,
    LIB_PARSE_SH,
    LIB_CHECKS_SH,
    LIB_PROBE_SH,
    LIB_SETTINGS_SH,
    LIB_RDMA_SH,
    LIB_PERSIST_SH,
    LIB_FIRMWARE_SH,
    LIB_NETMGR_SH,
    LIB_NET_SH,
    LIB_LAG_SH,
    LIB_GPU_SH,
    LIB_NCCL_SH,
    HEALTH_SH,
    LIB_HEALTH_SH,
    FABRIC_SH,
    LIB_FABRIC_SH,
    SERVICE,
    HEALTH_SERVICE,
    HEALTH_TIMER,
    README_TXT,
];

/// A rendered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// Its name in the bundle.
    pub name: &'static str,
    /// Its text: LF line endings, one final newline.
    pub text: String,
    pub mode: u32,
}

/// `(path under templates/, source)` of every file compiled into the binary.
macro_rules! embedded {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../templates/", $file)))),*]
    };
}

/// The plain files a template includes (`{% include %}`): `run-here.sh` carries the bundle's
/// console text functions, one copy for both. They must hold no template syntax.
const INCLUDED: &[&str] = &["host/lib-text.sh"];

/// Every file of `templates/` compiled into the binary.
const EMBEDDED: &[(&str, &str)] = embedded![
    "host/precheck.sh",
    "host/apply.sh",
    "host/rollback.sh",
    "host/lib.sh",
    "host/lib-text.sh",
    "host/lib-parse.sh",
    "host/lib-checks.sh",
    "host/lib-probe.sh",
    "host/lib-settings.sh",
    "host/lib-rdma.sh",
    "host/lib-persist.sh",
    "host/lib-firmware.sh",
    "host/lib-netmgr.sh",
    "host/lib-net.sh",
    "host/lib-lag.sh",
    "host/lib-gpu.sh",
    "host/lib-nccl.sh",
    "host/health.sh",
    "host/lib-health.sh",
    "host/fabric.sh",
    "host/lib-fabric.sh",
    "host/plan.sh.j2",
    "host/roce-gen.service.j2",
    "host/roce-gen-health.service.j2",
    "host/roce-gen-health.timer.j2",
    "host/README.txt.j2",
    "dist/run-here.sh.j2",
    "dist/README.txt.j2",
    "dist/ansible/inventory.yml.j2",
    "dist/ansible/roce.yml.j2",
];

/// The template environment and the plain sources, built once and used for every host.
pub(crate) struct Renderer {
    env: Environment<'static>,
    /// The plain files (`Source::Plain`) by path under `templates/`.
    plain: Vec<(&'static str, String)>,
}

impl Renderer {
    /// The renderer over the embedded templates, or over `dir` where it has a file (a customised
    /// copy may override only some files).
    pub(crate) fn new(dir: Option<&Path>) -> Result<Self> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_syntax(
            SyntaxConfig::builder()
                // Bash has `${#array[@]}`, so Jinja comments are `{## … ##}` here.
                .comment_delimiters("{##", "##}")
                .trim_blocks(true)
                .lstrip_blocks(true)
                .keep_trailing_newline(true)
                .build()
                .context("template syntax")?,
        );
        env.set_auto_escape_callback(escape::mode_for);
        env.set_formatter(escape::formatter);
        env.add_function("error", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        let mut plain = Vec::new();
        for (file, source) in EMBEDDED {
            let custom = dir.map(|d| d.join(file)).filter(|p| p.is_file());
            let source = match custom {
                Some(path) => std::fs::read_to_string(&path)
                    .with_context(|| format!("{}: could not read the template", path.display()))?,
                None => (*source).to_string(),
            };
            if !file.ends_with(".j2") {
                if INCLUDED.contains(file) {
                    env.add_template_owned(*file, source.clone())
                        .with_context(|| {
                            format!(
                                "{} does not parse as a template",
                                template_path(dir, file).display()
                            )
                        })?;
                }
                plain.push((*file, source));
                continue;
            }
            // The auto-escape callback sees the name, so register under the `.j2` file name.
            env.add_template_owned(*file, source).with_context(|| {
                format!(
                    "template {} does not parse",
                    template_path(dir, file).display()
                )
            })?;
        }
        Ok(Self { env, plain })
    }

    /// The files every bundle shares: the plain scripts and library, and the unit and README,
    /// which see the cluster's values but no host's.
    pub(crate) fn render_shared(&self, plan: &Plan, meta: &Meta<'_>) -> Result<Vec<Rendered>> {
        let ctx = minijinja::Value::from(minijinja::value::Serde(SharedContext::new(plan, meta)));
        SHARED_FILES
            .iter()
            .map(|f| self.render(f, &ctx, "every host"))
            .collect()
    }

    /// Renders the output folder's own `files` from `ctx` (see
    /// [`crate::generate::dist::DistContext`]), as (name, bytes).
    pub(crate) fn render_dist<C: Serialize>(
        &self,
        files: &[FileTemplate],
        ctx: &C,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        files
            .iter()
            .map(|f| self.render_dist_file(f, ctx))
            .collect()
    }

    /// Renders one of the output folder's own files from `ctx`, as (name, bytes).
    pub(crate) fn render_dist_file<C: Serialize>(
        &self,
        file: &FileTemplate,
        ctx: &C,
    ) -> Result<(String, Vec<u8>)> {
        let ctx = minijinja::Value::from(minijinja::value::Serde(ctx));
        let r = self.render(file, &ctx, "the output folder")?;
        Ok((r.name.to_string(), r.text.into_bytes()))
    }

    /// Renders every host file for `host`, in bundle order.
    pub(crate) fn render_host(
        &self,
        plan: &Plan,
        host: &Host,
        fabric: &[PortPairs],
        meta: &Meta<'_>,
    ) -> Result<Vec<Rendered>> {
        let ctx = minijinja::Value::from(minijinja::value::Serde(HostContext::new(
            plan, host, fabric, meta,
        )));
        HOST_FILES
            .iter()
            .map(|f| self.render(f, &ctx, host.hostname.as_str()))
            .collect()
    }

    fn render(
        &self,
        file: &FileTemplate,
        ctx: &minijinja::Value,
        for_what: &str,
    ) -> Result<Rendered> {
        let name = file.path();
        let text = match file.source {
            Source::Plain => self
                .plain
                .iter()
                .find(|(p, _)| *p == name)
                .map(|(_, text)| text.clone())
                .with_context(|| format!("`{name}` is not embedded (a build bug)"))?,
            Source::Template => self
                .env
                .get_template(&name)
                .and_then(|t| t.render(ctx))
                .map_err(|e| anyhow::anyhow!("{}", describe(&e)))
                .with_context(|| {
                    format!(
                        "failed to render `{}` for host `{for_what}` (a template bug)",
                        file.id
                    )
                })?,
        };
        Ok(Rendered {
            name: file.file_name(),
            text: normalize(&text),
            mode: file.mode,
        })
    }
}

/// A template error with its whole chain (an include's error is the source of the outer one),
/// each with minijinja's source context.
fn describe(err: &Error) -> String {
    let mut out = format!("{err:#}");
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        match inner.downcast_ref::<Error>() {
            Some(e) => out.push_str(&format!("\ncaused by: {e:#}")),
            None => out.push_str(&format!("\ncaused by: {inner}")),
        }
        source = inner.source();
    }
    out
}

fn template_path(dir: Option<&Path>, file: &str) -> PathBuf {
    dir.map_or_else(|| Path::new("templates").join(file), |d| d.join(file))
}

/// LF line endings, no trailing blanks at the end, exactly one final newline.
fn normalize(text: &str) -> String {
    let mut out = text.replace("\r\n", "\n");
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// What identifies a generation run: the same for every host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta<'a> {
    /// roce-gen's version.
    pub tool_version: &'a str,
    /// sha256 of the plan file.
    pub plan_sha256: &'a str,
}

/// The values the shared templates (unit, README) see: the run's and the cluster's.
#[derive(Debug, Serialize)]
struct SharedContext<'a> {
    tool_version: &'a str,
    plan_sha256: &'a str,
    cluster: ClusterContext,
    /// Where apply installs the bundle for the boot unit.
    install_dir: String,
}

/// The values a host's data file sees. Everything is already validated; lists that scripts
/// need as bash arrays are given per field.
#[derive(Debug, Serialize)]
struct HostContext<'a> {
    #[serde(flatten)]
    shared: SharedContext<'a>,
    host: &'a Host,
    /// The fabric test's pairs of each planned port, in plan order.
    fabric: &'a [PortPairs],
}

/// One DCQCN parameter as the scripts take it: `ecn/<dir>/<name>` and the value.
#[derive(Debug, Serialize)]
struct DcqcnContext {
    name: &'static str,
    dir: &'static str,
    value: u32,
}

#[derive(Debug, Serialize)]
struct ClusterContext {
    name: String,
    trust: String,
    roce_dscp: u8,
    roce_priority: u8,
    roce_tos: u8,
    cnp_dscp: u8,
    cnp_priority: u8,
    /// `0,0,0,1,0,0,0,0`, as `mlnx_qos --pfc` takes it.
    pfc_vector: String,
    /// Per priority 0 or 1, as the OFED `ecn/*/enable/N` files hold it.
    ecn_vector: String,
    /// `RoCE v2` or `IB/RoCE v1`, as configfs spells it.
    roce_mode: String,
    global_pause: String,
    persistence: bool,
    /// `check`, `os` or `leave`.
    dcbx: String,
    /// Metres, empty when the plan leaves the host's.
    cable_length: String,
    /// The DCQCN parameters the plan sets.
    dcqcn: Vec<DcqcnContext>,
    /// `report`, `apply` or `off`.
    firmware_config: String,
    nccl_env: bool,
    /// `check`, `set` or `leave`.
    arp_sysctls: String,
    min_ofed_version: String,
    min_fw_version: String,
    /// The fabric test: seconds per step, the share of the link speed a link must reach, the
    /// incast step.
    fabric_seconds: u16,
    fabric_min_pct: u8,
    fabric_incast: bool,
    /// Live health: whether apply installs the timer, its intervals and the textfile folder.
    health: bool,
    health_interval: u32,
    drift_interval: u32,
    health_textfile_dir: String,
    /// The GPU path (format v1.3): `check`, `require` or `no` (settled: `no` where no row names
    /// a GPU); the farthest relation allowed (`PIX`, `PXB`, `PHB`, `NODE`); `check` or
    /// `disable`; the Max Read Request Size in bytes and NCCL's version, empty where not planned.
    gpu_direct: String,
    gpu_nic_distance: String,
    pcie_acs: String,
    pcie_mrrs: String,
    nccl_version: String,
    /// The NCCL self-test in the fabric phase (settled: yes where a row names a GPU), and its
    /// pass mark in GB/s, empty where not planned.
    nccl_test: bool,
    nccl_min_busbw: String,
}

impl<'a> SharedContext<'a> {
    fn new(plan: &'a Plan, meta: &Meta<'a>) -> Self {
        let c = &plan.cluster;
        let vector = |set: &crate::plan::model::Priorities| {
            (0..8u8)
                .map(|p| {
                    if set.iter().any(|q| q.get() == p) {
                        "1"
                    } else {
                        "0"
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        // The plan's default where it says nothing: check with a GPU named, else no.
        let has_gpu = plan
            .hosts
            .iter()
            .flat_map(|h| &h.nics)
            .any(|n| n.gpu.is_some());
        let settled_direct = if has_gpu {
            GpuDirect::Check
        } else {
            GpuDirect::No
        };
        Self {
            tool_version: meta.tool_version,
            plan_sha256: meta.plan_sha256,
            install_dir: format!("/opt/roce-gen/{}", c.cluster_name),
            cluster: ClusterContext {
                name: c.cluster_name.to_string(),
                trust: c.trust.as_str().to_string(),
                roce_dscp: c.roce_dscp.get(),
                roce_priority: c.roce_priority.get(),
                roce_tos: c.roce_tos.get(),
                cnp_dscp: c.cnp_dscp.get(),
                cnp_priority: c.cnp_priority.get(),
                pfc_vector: vector(&c.pfc_priorities),
                ecn_vector: vector(&c.ecn_priorities),
                roce_mode: match c.roce_mode {
                    crate::plan::model::RoceMode::V2 => "RoCE v2".into(),
                    crate::plan::model::RoceMode::V1 => "IB/RoCE v1".into(),
                },
                global_pause: c.global_pause.as_str().to_string(),
                persistence: c.persistence,
                dcbx: c.dcbx.as_str().to_string(),
                cable_length: c.cable_length.map(|m| m.to_string()).unwrap_or_default(),
                dcqcn: c
                    .dcqcn
                    .0
                    .iter()
                    .filter_map(|(name, value)| {
                        let p = crate::plan::model::dcqcn_param(name)?;
                        Some(DcqcnContext {
                            name: p.name,
                            dir: p.point.dir(),
                            value: *value,
                        })
                    })
                    .collect(),
                firmware_config: c.firmware_config.as_str().to_string(),
                nccl_env: c.nccl_env,
                arp_sysctls: c.arp_sysctls.as_str().to_string(),
                min_ofed_version: c
                    .min_ofed_version
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                min_fw_version: c
                    .min_fw_version
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                fabric_seconds: c.fabric.seconds,
                fabric_min_pct: c.fabric.min_pct,
                fabric_incast: c.fabric.incast,
                health: c.health.enabled,
                health_interval: c.health.interval,
                drift_interval: c.health.drift_interval,
                health_textfile_dir: c.health.health_textfile_dir.as_str().to_string(),
                gpu_direct: c
                    .gpu_path
                    .gpu_direct
                    .unwrap_or(settled_direct)
                    .as_str()
                    .to_string(),
                gpu_nic_distance: c.gpu_path.gpu_nic_distance.as_str().to_string(),
                pcie_acs: c.gpu_path.pcie_acs.as_str().to_string(),
                pcie_mrrs: c
                    .gpu_path
                    .pcie_mrrs
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
                nccl_version: c
                    .gpu_path
                    .nccl_version
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                nccl_test: c.gpu_path.nccl_test(has_gpu),
                nccl_min_busbw: c
                    .gpu_path
                    .nccl_min_busbw
                    .map(|b| b.gbs().to_string())
                    .unwrap_or_default(),
            },
        }
    }
}

impl<'a> HostContext<'a> {
    fn new(plan: &'a Plan, host: &'a Host, fabric: &'a [PortPairs], meta: &Meta<'a>) -> Self {
        Self {
            shared: SharedContext::new(plan, meta),
            host,
            fabric,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_id_is_embedded() {
        for f in HOST_FILES.iter().chain(&SHARED_FILES).chain(&DIST_FILES) {
            let embedded = EMBEDDED.iter().any(|(e, _)| *e == f.path());
            assert!(embedded, "{} is not embedded", f.id);
        }
        assert!(Renderer::new(None).is_ok());
    }

    #[test]
    fn normalize_gives_lf_and_one_trailing_newline() {
        assert_eq!(normalize("a\r\nb\n\n\n"), "a\nb\n");
        assert_eq!(normalize("a"), "a\n");
    }

    #[test]
    fn only_the_scripts_a_user_runs_are_executable() {
        let exec: Vec<&str> = HOST_FILES
            .iter()
            .chain(&SHARED_FILES)
            .filter(|f| f.mode == 0o755)
            .map(FileTemplate::file_name)
            .collect();
        assert_eq!(
            exec,
            [
                "precheck.sh",
                "apply.sh",
                "rollback.sh",
                "health.sh",
                "fabric.sh"
            ]
        );
    }
}
