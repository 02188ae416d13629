//! The report's formats, one module each, all pure (`&ClusterReport` in, text out, reading
//! nothing but the report), and the wording they share. Strings from result files are untrusted: every format but JSON passes
//! them through [`clean`] so a hostile message cannot drive a terminal or break a line format;
//! markup formats escape on top of that.

pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod prometheus;
pub(crate) mod text;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::ingest::attention::Finding;
use crate::ingest::report::{
    ClusterReport, FabricCell, FabricMatrix, FactGroup, FactValue, GpuHost, GpuPairRow, GpuTotals,
    HostReport, NcclRun, Phase, Run, State, Status, Totals,
};

pub(crate) use crate::text::clean;
use crate::text::clean_but;

/// The first 12 hex digits of a sha256, as people compare them.
pub(crate) fn short_sha(sha: &str) -> String {
    clean(sha.get(..12).unwrap_or(sha))
}

/// What a host is, in one word or two: its state, or `stale`, or `not in plan`.
pub(crate) fn standing(h: &HostReport) -> &'static str {
    if h.planned == Some(false) {
        "not in plan"
    } else if h.stale {
        "stale"
    } else {
        h.state.as_str()
    }
}

/// Where a host stands and which result says so, in a sentence: `failed: precheck at …
/// (path)`, `stale: … was made from another plan (…)`, `missing: no result`.
pub(crate) fn reason(h: &HostReport, plan_sha: Option<&str>) -> String {
    let word = if h.stale && h.planned != Some(false) {
        "stale"
    } else {
        h.state.as_str()
    };
    format!("{word}: {}", reason_detail(h, plan_sha))
}

/// The result that says why a host stands where it does: its latest, or, for a host failed by
/// its fabric test alone, that fabric run (not the passing run before it).
pub(crate) fn shown_run(h: &HostReport) -> Option<&Run> {
    let fabric = h
        .fabric_run
        .as_ref()
        .filter(|f| f.status == Status::Fail && h.state == State::Failed);
    fabric
        .filter(|_| h.latest.as_ref().is_none_or(|r| r.status != Status::Fail))
        .or(h.latest.as_ref())
}

/// [`reason`] without the leading state, for layouts that show the state beside it.
pub(crate) fn reason_detail(h: &HostReport, plan_sha: Option<&str>) -> String {
    let Some(run) = shown_run(h) else {
        // A fabric result says nothing of the settings: the host is missing its precheck or
        // apply, not every result.
        return match &h.fabric_run {
            Some(f) => format!(
                "no precheck or apply result, only the fabric test at {} ({})",
                f.finished_at,
                clean(&f.path)
            ),
            None => "no result".to_string(),
        };
    };
    let at = format!("{} at {} ({})", run.name, run.finished_at, clean(&run.path));
    if h.stale && h.planned != Some(false) {
        return format!(
            "{at} was made from another plan (plan_sha256 {}, this plan {}); regenerate the \
             bundles and run again",
            short_sha(&run.plan_sha256),
            short_sha(plan_sha.unwrap_or_default()),
        );
    }
    let applied = || {
        h.runs
            .iter()
            .find(|r| r.phase == Phase::Apply && !r.dry_run)
            .map_or_else(String::new, |r| {
                format!(" since the apply at {}", r.finished_at)
            })
    };
    match h.state {
        State::Pending => format!("{at} found {}; run apply", h.changes_size),
        State::Drifted => format!("{at} found {}{}", h.changes_size, applied()),
        State::Prechecked if !h.ok => format!(
            "{at} found the settings as planned, but no apply has made them persistent \
             (ingest --require prechecked accepts this)"
        ),
        _ => at,
    }
}

/// At most this many hosts are named per step of [`next_step`]; the rest are counted.
const NEXT_HOSTS: usize = 6;

/// What to run next on the hosts that are not ready, in one line: `run apply on gpu-004,
/// gpu-007 (rolled back); precheck on gpu-002 (failed), gpu-006 (missing)`. A host is named
/// with its state unless it is pending (what apply is for); a failed one with the run that
/// failed, to run again once fixed; a stale or missing one with a precheck of the new bundle.
/// `None` when every counted host is ready. `name` escapes a host name for the format.
pub(crate) fn next_step(report: &ClusterReport, name: fn(&str) -> String) -> Option<String> {
    const STEPS: [&str; 5] = ["apply", "precheck", "rollback", "apply --dry-run", "fabric"];
    let mut steps: Vec<Vec<String>> = vec![Vec::new(); STEPS.len()];
    for h in report.hosts.iter().filter(|h| h.counted() && !h.ok) {
        let (step, note) = if h.stale {
            ("precheck", Some("stale"))
        } else {
            match (h.state, &h.latest) {
                (State::Missing, _) => ("precheck", Some("missing")),
                // Failed by its fabric test only: fix the link, then run the test again.
                (State::Failed, latest)
                    if latest.as_ref().is_none_or(|r| r.status != Status::Fail)
                        && h.fabric.iter().any(|f| f.status == Status::Fail) =>
                {
                    ("fabric", Some("failed"))
                }
                (State::Failed, Some(run)) => {
                    let step = match (run.phase, run.dry_run) {
                        (Phase::Apply, true) => "apply --dry-run",
                        (phase, _) => phase.as_str(),
                    };
                    (step, Some("failed"))
                }
                (State::Pending, _) => ("apply", None),
                (state, _) => ("apply", Some(state.as_str())),
            }
        };
        let i = STEPS.iter().position(|s| *s == step).unwrap_or(0);
        steps[i].push(match note {
            Some(note) => format!("{} ({note})", name(&h.host)),
            None => name(&h.host),
        });
    }
    let parts: Vec<String> = STEPS
        .iter()
        .zip(steps)
        .filter(|(_, hosts)| !hosts.is_empty())
        .map(|(step, hosts)| {
            let more = hosts.len().saturating_sub(NEXT_HOSTS);
            let mut named = hosts[..hosts.len() - more].join(", ");
            if more > 0 {
                let _ = write!(named, " and {more} more");
            }
            format!("{step} on {named}")
        })
        .collect();
    (!parts.is_empty()).then(|| format!("run {}", parts.join("; ")))
}

/// `7 planned hosts: 4 ready (3 configured, 1 prechecked), 1 pending, 1 failed, 1 missing, 0
/// stale; 1 not in plan`. Without a plan, `missing` and `stale` cannot occur and are left out.
pub(crate) fn hosts_line(t: &Totals) -> String {
    let mut line = match t.planned {
        Some(n) => format!("{n} planned {}: ", plural(n, "host", "hosts")),
        None => format!("{} hosts: ", t.hosts),
    };
    let _ = write!(line, "{} ready", t.passed);
    // Which states the ready hosts are in; prechecked hosts are ready only under
    // `--require prechecked`, and are listed with the others otherwise.
    let ready_prechecked = t.passed.saturating_sub(t.configured).min(t.prechecked);
    let ready: Vec<String> = [
        (t.configured, State::Configured),
        (ready_prechecked, State::Prechecked),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, s)| format!("{n} {}", s.as_str()))
    .collect();
    if !ready.is_empty() {
        let _ = write!(line, " ({})", ready.join(", "));
    }
    for (n, state) in [
        (t.prechecked - ready_prechecked, State::Prechecked),
        (t.pending, State::Pending),
        (t.drifted, State::Drifted),
        (t.rolled_back, State::RolledBack),
    ] {
        if n > 0 {
            let _ = write!(line, ", {n} {}", state.as_str());
        }
    }
    let _ = write!(line, ", {} failed", t.failed);
    if t.planned.is_some() {
        let _ = write!(line, ", {} missing, {} stale", t.missing, t.stale);
        if t.unplanned > 0 {
            let _ = write!(line, "; {} not in plan", t.unplanned);
        }
    }
    line
}

/// `11 results read, 7 used, 4 superseded; 3 files skipped, 2 problems`.
pub(crate) fn files_line(t: &Totals) -> String {
    format!(
        "{} {} read, {} used, {} superseded; {} {} skipped, {} {}",
        t.results,
        plural(t.results, "result", "results"),
        t.used,
        t.superseded,
        t.skipped,
        plural(t.skipped, "file", "files"),
        t.problems,
        plural(t.problems, "problem", "problems")
    )
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `gpu-002 (mlx5_0), gpu-004`: the hosts of a value, with the NICs when only some have it.
pub(crate) fn hosts_of(v: &FactValue) -> String {
    v.hosts
        .iter()
        .map(|h| match v.nics.get(h) {
            Some(nics) => format!("{} ({})", clean(h), clean(&nics.join(", "))),
            None => clean(h),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` on mlx5_0, mlx5_1` when `host` has the value on only some of its NICs; empty otherwise.
fn on_nics(v: &FactValue, host: &str) -> String {
    v.nics
        .get(host)
        .map(|n| format!(" on {}", clean(&n.join(", "))))
        .unwrap_or_default()
}

/// Per host, a line for each fact it differs from most hosts in, in the consistency section's
/// order: `dcqcn_rpg_ai_rate: 10 (most hosts: 5)`, naming the NICs when only some have it.
pub(crate) fn outliers(groups: &[FactGroup]) -> BTreeMap<&str, Vec<String>> {
    let mut by_host: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for g in groups {
        let Some((common, others)) = g.values.split_first() else {
            continue;
        };
        let fact = fact_name(g);
        for v in others {
            for host in &v.hosts {
                let nics = on_nics(v, host);
                by_host.entry(host).or_default().push(format!(
                    "{fact}: {}{nics} (most hosts: {})",
                    value_text(&v.value),
                    value_text(&common.value)
                ));
            }
        }
    }
    by_host
}

/// Per host, a line for each fact whose planned value it does not have, in the consistency
/// section's order: `mtu: 1500 (plan 4200)`, naming the NICs when only some have it; also when
/// every host has that value.
pub(crate) fn off_plan(groups: &[FactGroup]) -> BTreeMap<&str, Vec<String>> {
    let mut by_host: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for g in groups {
        let Some(planned) = &g.planned else {
            continue;
        };
        for v in g.values.iter().filter(|v| v.value != *planned) {
            for host in &v.hosts {
                let nics = on_nics(v, host);
                by_host.entry(host).or_default().push(format!(
                    "{}: {}{nics} (plan {})",
                    fact_name(g),
                    value_text(&v.value),
                    value_text(planned)
                ));
            }
        }
    }
    by_host
}

/// `firmware [28.x]`, `mtu`: a fact group's name with its scope, cleaned.
pub(crate) fn fact_name(g: &FactGroup) -> String {
    match &g.scope {
        Some(scope) => format!("{} [{}]", g.fact, clean(scope)),
        None => g.fact.clone(),
    }
}

/// How many hosts the consistency section compares: those of its widest fact (every result
/// gives `tool_version`).
pub(crate) fn compared_hosts(groups: &[FactGroup]) -> usize {
    groups.iter().map(|g| g.hosts).max().unwrap_or(0)
}

/// The hosts of a fact's common value, out of the `of` hosts compared: `all 6 hosts`, `1 host`,
/// `3 hosts` when others differ, and `the 5 hosts that report it` when every host that reports
/// the fact agrees but some do not report it: never "all" of a subset.
pub(crate) fn common_hosts(g: &FactGroup, of: usize) -> String {
    let n = g.values.first().map_or(0, |v| v.count);
    if !g.agree {
        host_count(n)
    } else if n >= of {
        all_hosts(n)
    } else if n == 1 {
        "the 1 host that reports it".to_string()
    } else {
        format!("the {n} hosts that report it")
    }
}

/// A fact's value in running text, cleaned, and quoted when it has a space so that the words
/// around it read apart: `"rx on tx on" on 1 host`, not `rx on tx on on 1 host`.
pub(crate) fn value_text(value: &str) -> String {
    let value = clean(value);
    if value.contains(' ') {
        format!("\"{value}\"")
    } else {
        value
    }
}

/// `all 5 hosts`, and `1 host` rather than `all 1 host`.
pub(crate) fn all_hosts(n: usize) -> String {
    if n == 1 {
        host_count(n)
    } else {
        format!("all {}", host_count(n))
    }
}

/// `5 hosts`, `1 host`.
pub(crate) fn host_count(n: usize) -> String {
    format!("{n} {}", plural(n, "host", "hosts"))
}

/// A fabric check's status as a mark that reads without colour: ✅ ❌ ⚠, and – for a check that
/// did not run or was skipped.
pub(crate) fn fabric_mark(s: Option<Status>) -> &'static str {
    match s {
        Some(Status::Pass | Status::Changed) => "✅",
        Some(Status::Fail) => "❌",
        Some(Status::Warn) => "⚠",
        Some(Status::Skip) | None => "–",
    }
}

/// `400 Gb/s`, `2.5 Gb/s`: a speed in Gb/s as people write it.
pub(crate) fn gbps_text(gbps: f64) -> String {
    format!("{gbps} Gb/s")
}

/// A fabric cell's rate against its link: `97.00 Gb/s (24% of 400 Gb/s)`, the rate alone when
/// the link speed is unknown, `no traffic` when none ran. Cleaned.
pub(crate) fn fabric_rate(c: &FabricCell) -> String {
    if c.rate.is_empty() {
        return "no traffic".to_string();
    }
    match (c.pct, c.link_gbps) {
        (Some(pct), Some(link)) => format!("{} ({pct}% of {})", clean(&c.rate), gbps_text(link)),
        _ => clean(&c.rate),
    }
}

/// `6 ports on 2 rails: 4 passed, 2 failed`, then `; no fabric result from h3, h4`. Cleaned.
pub(crate) fn fabric_line(m: &FabricMatrix) -> String {
    let mut line = format!(
        "{} {} on {} {}: {} passed",
        m.ports,
        plural(m.ports, "port", "ports"),
        m.rails.len(),
        plural(m.rails.len(), "rail", "rails"),
        m.passed
    );
    for (n, what) in [
        (m.warned, "warned"),
        (m.failed, "failed"),
        (m.skipped, "skipped"),
    ] {
        if n > 0 {
            let _ = write!(line, ", {n} {what}");
        }
    }
    if !m.not_run.is_empty() {
        let names: Vec<String> = m.not_run.iter().map(|h| clean(h)).collect();
        let _ = write!(line, "; no fabric result from {}", names.join(", "));
    }
    line
}

/// `NCCL 2.23.4 (the plan's nccl_version), GPUDirect RDMA through the peer-memory module`: what
/// NCCL will do on a host, and which NCCL the checks judged by. Cleaned.
pub(crate) fn gpu_host_text(g: &GpuHost) -> String {
    let route = match g.route.as_str() {
        "peermem" => "GPUDirect RDMA through the peer-memory module",
        "dmabuf" => "GPUDirect RDMA through DMA-BUF",
        "none" => "no GPUDirect RDMA (GPU memory staged through host memory)",
        _ => "GPUDirect RDMA not decided",
    };
    let (nccl, driver) = gpu_versions(g);
    format!(
        "{nccl}, {route}{}",
        driver.map(|d| format!("; {d}")).unwrap_or_default()
    )
}

/// `NCCL 2.23.4 (the plan's nccl_version)` and `GPU driver 550.54.15` (absent where not loaded):
/// which NCCL the checks judged by, and the driver. Cleaned.
pub(crate) fn gpu_versions(g: &GpuHost) -> (String, Option<String>) {
    let nccl = if g.nccl_version.is_empty() {
        "NCCL version unknown".to_string()
    } else if g.nccl_version_from.is_empty() {
        format!("NCCL {}", clean(&g.nccl_version))
    } else {
        format!(
            "NCCL {} ({})",
            clean(&g.nccl_version),
            clean(&g.nccl_version_from)
        )
    };
    let driver = (!g.driver.is_empty()).then(|| format!("GPU driver {}", clean(&g.driver)));
    (nccl, driver)
}

/// `GPU 0 (0000:18:00.0) ↔ mlx5_0 (0000:19:00.0)`; a GPU planned by its address once. Cleaned.
pub(crate) fn gpu_pair_name(p: &GpuPairRow) -> String {
    let pair = &p.pair;
    let gpu = if pair.gpu == pair.gpu_pci || pair.gpu_pci.is_empty() {
        format!("GPU {}", clean(&pair.gpu))
    } else {
        format!("GPU {} ({})", clean(&pair.gpu), clean(&pair.gpu_pci))
    };
    let nic = if pair.nic_pci.is_empty() {
        clean(&pair.nic)
    } else {
        format!("{} ({})", clean(&pair.nic), clean(&pair.nic_pci))
    };
    format!("{gpu} ↔ {nic}")
}

/// `PIX, PXB`: the relations of a host's pairs, each once, when every pair passed; `None` when
/// one did not (the formats then list the pairs). Cleaned.
pub(crate) fn gpu_relations_all_passed(g: &GpuHost) -> Option<String> {
    if g.pairs.iter().any(|p| p.status != Status::Pass) {
        return None;
    }
    let mut relations: Vec<String> = g.pairs.iter().map(|p| clean(&p.pair.relation)).collect();
    relations.sort_unstable();
    relations.dedup();
    Some(relations.join(", "))
}

/// `PIX  ACS off  GPU x16 32.0 GT/s  port x8 (of x16) 32.0 GT/s  MRRS 512`: a pair's relation,
/// ACS, both links and the port's Max Read Request Size. Cleaned.
pub(crate) fn gpu_pair_facts(p: &GpuPairRow) -> String {
    let pair = &p.pair;
    let relation = if pair.relation.is_empty() {
        "relation unknown".to_string()
    } else {
        clean(&pair.relation)
    };
    let mut text = format!("{relation}  ACS {}", clean(&p.acs));
    for (end, link) in [("GPU", &pair.gpu_link), ("port", &pair.nic_link)] {
        if let Some(link) = link {
            let _ = write!(text, "  {end} {}", clean(&link.text()));
        }
    }
    if let Some(mrrs) = pair.mrrs {
        let _ = write!(text, "  MRRS {mrrs}");
    }
    text
}

/// `4 pairs on 2 hosts: 3 passed, 1 failed; GPUDirect RDMA on 1 of 2 hosts (not on h2)`. Cleaned.
pub(crate) fn gpu_line(t: &GpuTotals) -> String {
    let mut line = format!(
        "{} {} on {}: {} passed",
        t.pairs,
        plural(t.pairs, "pair", "pairs"),
        host_count(t.hosts),
        t.passed
    );
    for (n, what) in [
        (t.warned, "warned"),
        (t.failed, "failed"),
        (t.skipped, "skipped"),
    ] {
        if n > 0 {
            let _ = write!(line, ", {n} {what}");
        }
    }
    let _ = write!(
        line,
        "; GPUDirect RDMA on {} of {}",
        t.gpu_direct,
        host_count(t.hosts)
    );
    if !t.without_gpu_direct.is_empty() {
        let names: Vec<String> = t.without_gpu_direct.iter().map(|h| clean(h)).collect();
        let _ = write!(line, " (not on {})", names.join(", "));
    }
    line
}

/// A fabric port's memory: `GPU 0 (0000:18:00.0)` or `host memory`; empty where the plan names no
/// GPU for the port. Cleaned.
pub(crate) fn memory_text(c: &FabricCell) -> String {
    match c.memory_used.as_deref() {
        Some("host") => "host memory".to_string(),
        Some(used) => clean(used),
        None if c.memory.is_some() => "memory unknown".to_string(),
        None => String::new(),
    }
}

/// `GPUDirect ✅ mlx5_0, ✅ mlx5_1  busbw ✅ 46.32 GB/s (>= 45.00 GB/s)`: a host's NCCL self-test
/// in a line (HCAs whose word is not `Enabled` say it). Cleaned.
pub(crate) fn nccl_line(n: &NcclRun) -> String {
    let hcas: Vec<String> = n
        .gdr
        .iter()
        .map(|h| {
            let word = if h.gdr == "Enabled" {
                String::new()
            } else {
                format!(
                    " {}",
                    clean(if h.gdr.is_empty() { "not run" } else { &h.gdr })
                )
            };
            format!("{} {}{word}", fabric_mark(Some(h.status)), clean(&h.nic))
        })
        .collect();
    let gdr = if hcas.is_empty() {
        "–".to_string()
    } else {
        hcas.join(", ")
    };
    let busbw = match n.busbw_check {
        Some(Status::Skip) | None => format!("{} not measured", fabric_mark(n.busbw_check)),
        Some(s) if n.busbw.is_empty() => format!("{} no result", fabric_mark(Some(s))),
        Some(s) => format!(
            "{} {} GB/s{}",
            fabric_mark(Some(s)),
            clean(&n.busbw),
            if n.mark.is_empty() {
                String::new()
            } else {
                format!(" ({})", clean(&n.mark))
            }
        ),
    };
    format!("GPUDirect {gdr}  busbw {busbw}")
}

/// At most this many hosts are named per finding; the rest are counted.
const FINDING_HOSTS: usize = 8;

/// Where a finding holds, as two texts: its hosts (`gpu-001, gpu-002`, then `and 3 more`) and
/// its NICs (`mlx5_0, mlx5_1`: the same on every host named; else per host, `gpu-001: mlx5_0;
/// gpu-002: mlx5_1`), empty for a host-wide check; and how many hosts. Cleaned.
pub(crate) fn finding_where(f: &Finding) -> (String, String, usize) {
    let mut hosts: Vec<(&str, Vec<&str>)> = Vec::new();
    // Each host's place, looked up rather than searched for: a finding can hold every host (the
    // `ingest_limit` warning of 100,000 results), and a search per item took minutes.
    let mut place: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (host, nic) in &f.at {
        let i = *place.entry(host.as_str()).or_insert_with(|| {
            hosts.push((host, Vec::new()));
            hosts.len() - 1
        });
        if let Some(nic) = nic {
            hosts[i].1.push(nic);
        }
    }
    let mut names: Vec<String> = hosts
        .iter()
        .take(FINDING_HOSTS)
        .map(|(h, _)| clean(h))
        .collect();
    if hosts.len() > FINDING_HOSTS {
        names.push(format!("and {} more", hosts.len() - FINDING_HOSTS));
    }
    let same = hosts.windows(2).all(|w| w[0].1 == w[1].1);
    let nics = if same {
        hosts
            .first()
            .map(|(_, n)| n.iter().map(|n| clean(n)).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    } else {
        hosts
            .iter()
            .take(FINDING_HOSTS)
            .map(|(h, n)| {
                let n: Vec<String> = n.iter().map(|n| clean(n)).collect();
                format!("{}: {}", clean(h), n.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    (names.join(", "), nics, hosts.len())
}

/// The markup formats' templates, compiled in.
const TEMPLATES: [(&str, &str); 2] = [
    (
        "ingest/report.html",
        include_str!("../../../templates/ingest/report.html.j2"),
    ),
    (
        "ingest/junit.xml",
        include_str!("../../../templates/ingest/junit.xml.j2"),
    ),
];

/// Renders one of [`TEMPLATES`] with HTML/XML auto-escaping (by the `.html`/`.xml` name), strict
/// undefined values, and every string [`clean`]ed (newlines kept: markup does not mind them)
/// before it is escaped.
fn render_template(name: &str, context: impl Serialize) -> Result<String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // quick-xml's escaping (the five XML specials) suits both formats and, unlike minijinja's
    // HTML escaping, leaves `/` readable.
    env.set_formatter(|out, state, value| match value.as_str() {
        Some(s) if *state.auto_escape() != AutoEscape::None => out
            .write_str(&quick_xml::escape::escape(clean_but(s, Some('\n'))))
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string())),
        _ => minijinja::escape_formatter(out, state, value),
    });
    for (template, source) in TEMPLATES {
        env.add_template(template, source)
            .with_context(|| format!("template {template}"))?;
    }
    let mut text = env
        .get_template(name)
        .and_then(|t| t.render(minijinja::value::Serde(context)))
        .with_context(|| format!("template {name}"))?;
    // One trailing newline, whatever the template ends with.
    text.truncate(text.trim_end().len());
    text.push('\n');
    Ok(text)
}
