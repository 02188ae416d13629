//! Rendering a host's files from the templates in `templates/` (compiled in, or a customised copy
//! given with `--templates`). One environment for all hosts: strict undefined values, custom
//! auto-escaping per file kind ([`crate::escape`]), `error()` for impossible branches, LF line
//! endings and exactly one trailing newline. Pure: no I/O except reading a template folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};
use serde::Serialize;

use crate::escape;
use crate::model::{Host, Plan};

/// A template id: its path under `templates/` without `.j2`; the output file is its base name.
pub type TemplateId = &'static str;

/// A file of the bundle rendered from a template.
#[derive(Debug, Clone, Copy)]
pub struct FileTemplate {
    /// Path under `templates/` without `.j2`; the bundle file is its base name.
    pub id: TemplateId,
    /// Its mode in the bundle: the scripts a user runs are executable, nothing else is.
    pub mode: u32,
}

impl FileTemplate {
    /// The file's name in the bundle.
    pub fn file_name(&self) -> &'static str {
        // `host/apply.sh` → `apply.sh`; `dist/ansible/roce.yml` → `ansible/roce.yml`.
        self.id.split_once('/').map_or(self.id, |(_, rest)| rest)
    }
}

const fn file(id: TemplateId, mode: u32) -> FileTemplate {
    FileTemplate { id, mode }
}

/// `precheck.sh`: read-only checks.
pub const PRECHECK_SH: FileTemplate = file("host/precheck.sh", 0o755);
/// `apply.sh`: verify, precheck, save, apply, read back, persist.
pub const APPLY_SH: FileTemplate = file("host/apply.sh", 0o755);
/// `rollback.sh`: restore what apply saved.
pub const ROLLBACK_SH: FileTemplate = file("host/rollback.sh", 0o755);
/// `roce-gen.service`: the boot-time oneshot unit.
pub const SERVICE: FileTemplate = file("host/roce-gen.service", 0o644);
/// `README.txt`: how to run the bundle.
pub const README_TXT: FileTemplate = file("host/README.txt", 0o644);
/// `lib.sh`: the shell library the scripts source; the same for every host.
pub const LIB_SH: FileTemplate = file("host/lib.sh", 0o644);

/// `run-here.sh`: finds and runs this host's bundle from a USB stick or a share.
pub const RUN_HERE_SH: FileTemplate = file("dist/run-here.sh", 0o755);
/// `ansible/inventory.yml`: every host with its management address, by group.
pub const ANSIBLE_INVENTORY: FileTemplate = file("dist/ansible/inventory.yml", 0o644);
/// `ansible/roce.yml`: the playbook that runs a phase on every host and fetches the results.
pub const ANSIBLE_PLAYBOOK: FileTemplate = file("dist/ansible/roce.yml", 0o644);

/// The files of the output folder itself, beside the bundles.
pub const DIST_FILES: [FileTemplate; 3] = [RUN_HERE_SH, ANSIBLE_INVENTORY, ANSIBLE_PLAYBOOK];

/// The files rendered for each host.
pub const HOST_FILES: [FileTemplate; 5] = [PRECHECK_SH, APPLY_SH, ROLLBACK_SH, SERVICE, README_TXT];

/// The files that do not depend on the host: rendered once per run, shared by every bundle.
pub const SHARED_FILES: [FileTemplate; 1] = [LIB_SH];

/// A rendered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Its name in the bundle.
    pub name: &'static str,
    /// Its text: LF line endings, one final newline.
    pub text: String,
    /// Its mode.
    pub mode: u32,
}

/// `(id, source)` pairs of templates compiled in from `templates/<id>.j2`.
macro_rules! embedded {
    ($($id:expr => $file:literal),* $(,)?) => {
        &[$(($id, include_str!(concat!("../templates/", $file, ".j2")))),*]
    };
}

/// Every template compiled into the binary, partials (`_*.sh`) included.
const EMBEDDED: &[(&str, &str)] = embedded![
    "host/_prologue.sh" => "host/_prologue.sh",
    "host/_plan.sh" => "host/_plan.sh",
    "host/_checks.sh" => "host/_checks.sh",
    "host/_settings.sh" => "host/_settings.sh",
    "host/_persist.sh" => "host/_persist.sh",
    LIB_SH.id => "host/lib.sh",
    PRECHECK_SH.id => "host/precheck.sh",
    APPLY_SH.id => "host/apply.sh",
    ROLLBACK_SH.id => "host/rollback.sh",
    SERVICE.id => "host/roce-gen.service",
    README_TXT.id => "host/README.txt",
    RUN_HERE_SH.id => "dist/run-here.sh",
    ANSIBLE_INVENTORY.id => "dist/ansible/inventory.yml",
    ANSIBLE_PLAYBOOK.id => "dist/ansible/roce.yml",
];

/// The template environment, built once and used for every host.
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// The renderer over the embedded templates, or over `dir` where it has a template (a
    /// customised copy may override only some files).
    pub fn new(dir: Option<&Path>) -> Result<Self> {
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
        for (id, source) in EMBEDDED {
            let file = format!("{id}.j2");
            let custom = dir.map(|d| d.join(&file)).filter(|p| p.is_file());
            let source = match custom {
                Some(path) => std::fs::read_to_string(&path)
                    .with_context(|| format!("{}: could not read the template", path.display()))?,
                None => (*source).to_string(),
            };
            // The auto-escape callback sees the name, so register under the `.j2` file name.
            env.add_template_owned(file.clone(), source)
                .with_context(|| {
                    format!(
                        "template {} does not parse",
                        template_path(dir, &file).display()
                    )
                })?;
        }
        Ok(Self { env })
    }

    /// Renders the files every bundle shares (`lib.sh`); they see only the run's metadata.
    pub fn render_shared(&self, meta: &Meta<'_>) -> Result<Vec<Rendered>> {
        let ctx = minijinja::context! { tool_version => meta.tool_version, plan_sha256 => meta.plan_sha256 };
        SHARED_FILES
            .iter()
            .map(|f| self.render(f, &ctx, "every host"))
            .collect()
    }

    /// Renders the output folder's own files from `ctx` (see [`crate::dist::DistContext`]).
    pub fn render_dist<C: Serialize>(&self, ctx: &C) -> Result<Vec<Rendered>> {
        let ctx = minijinja::Value::from(minijinja::value::Serde(ctx));
        DIST_FILES
            .iter()
            .map(|f| self.render(f, &ctx, "the output folder"))
            .collect()
    }

    /// Renders every host file for `host`, in bundle order.
    pub fn render_host(&self, plan: &Plan, host: &Host, meta: &Meta<'_>) -> Result<Vec<Rendered>> {
        let ctx =
            minijinja::Value::from(minijinja::value::Serde(HostContext::new(plan, host, meta)));
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
        let name = format!("{}.j2", file.id);
        let text = self
            .env
            .get_template(&name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| anyhow::anyhow!("{}", describe(&e)))
            .with_context(|| {
                format!(
                    "failed to render `{}` for host `{for_what}` (a template bug)",
                    file.id
                )
            })?;
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
pub struct Meta<'a> {
    /// roce-gen's version.
    pub tool_version: &'a str,
    /// sha256 of the plan file.
    pub plan_sha256: &'a str,
}

/// The values a host's templates see. Everything is already validated; lists that scripts need
/// as bash arrays are given per field.
#[derive(Debug, Serialize)]
struct HostContext<'a> {
    tool_version: &'a str,
    plan_sha256: &'a str,
    cluster: ClusterContext,
    host: &'a Host,
    /// Where apply installs the bundle for the boot unit.
    install_dir: String,
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
    min_ofed_version: String,
    min_fw_version: String,
}

impl<'a> HostContext<'a> {
    fn new(plan: &'a Plan, host: &'a Host, meta: &Meta<'a>) -> Self {
        let c = &plan.cluster;
        let vector = |set: &crate::model::Priorities| {
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
        Self {
            tool_version: meta.tool_version,
            plan_sha256: meta.plan_sha256,
            install_dir: format!("/opt/roce-gen/{}", c.cluster_name),
            host,
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
                    crate::model::RoceMode::V2 => "RoCE v2".into(),
                    crate::model::RoceMode::V1 => "IB/RoCE v1".into(),
                },
                global_pause: c.global_pause.as_str().to_string(),
                persistence: c.persistence,
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
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_id_is_embedded() {
        for f in HOST_FILES.iter().chain(&SHARED_FILES).chain(&DIST_FILES) {
            let embedded = EMBEDDED.iter().any(|(e, _)| *e == f.id);
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
        assert_eq!(exec, ["precheck.sh", "apply.sh", "rollback.sh"]);
    }
}
