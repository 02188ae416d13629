//! The console report, in the style of EasyRoCE-NC: the files that could not be used, a ❌ block
//! per host that did not pass (its failing item ids, then each item with its message), a ✅ line
//! per host that did, the consistency section, and a closing list of what to fix with totals.
//! Colour only when asked (the caller decides: a terminal, and no `NO_COLOR`).

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use crate::ingest::render::{
    all_hosts, clean, common_hosts, compared_hosts, fabric_line, fabric_mark, fabric_rate,
    fact_name, files_line, finding_where, gpu_host_text, gpu_line, gpu_pair_facts, gpu_pair_name,
    gpu_relations_all_passed, host_count, hosts_line, hosts_of, memory_text, nccl_line, next_step,
    reason, short_sha, value_text,
};
use crate::ingest::report::{
    ClusterReport, FabricMatrix, FactGroup, Group, HostReport, Kind, Require, State, Status,
};

const RULE: &str = "============================================================";

struct Paint {
    color: bool,
}

impl Paint {
    fn with(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }
    fn red(&self, text: &str) -> String {
        self.with(AnsiColor::Red.on_default().bold(), text)
    }
    fn green(&self, text: &str) -> String {
        self.with(AnsiColor::Green.on_default(), text)
    }
    fn yellow(&self, text: &str) -> String {
        self.with(AnsiColor::Yellow.on_default(), text)
    }
    fn bold(&self, text: &str) -> String {
        self.with(Style::new().bold(), text)
    }
    fn dim(&self, text: &str) -> String {
        self.with(Style::new().dimmed(), text)
    }
}

/// The report as console text; `color` adds ANSI colours.
pub(crate) fn render(report: &ClusterReport, color: bool) -> String {
    let p = Paint { color };
    let mut out = String::new();
    heading(&mut out, &p, report);
    let _ = writeln!(out, "{}", p.dim(RULE));
    hosts(&mut out, &p, report);
    if !report.attention.is_empty() {
        let _ = writeln!(out, "{}", p.dim(RULE));
        let _ = writeln!(out, "{}", p.bold("needs attention:"));
        for g in &report.attention {
            attention_group(&mut out, &p, g);
        }
    }
    if !report.consistency.is_empty() {
        let of = compared_hosts(&report.consistency);
        let _ = writeln!(out, "{}", p.dim(RULE));
        let _ = writeln!(
            out,
            "{}",
            p.bold(&format!("consistency across {}:", host_count(of)))
        );
        for g in &report.consistency {
            consistency_line(&mut out, &p, g, of);
        }
    }
    if report.gpu.is_some() {
        let _ = writeln!(out, "{}", p.dim(RULE));
        gpu(&mut out, &p, report);
    }
    if let Some(m) = &report.fabric {
        let _ = writeln!(out, "{}", p.dim(RULE));
        fabric(&mut out, &p, m);
        nccl(&mut out, &p, report);
    }
    let _ = writeln!(out, "{}", p.dim(RULE));
    verdict(&mut out, &p, report);
    out
}

/// The GPU path: a line per host (NCCL's version and GPUDirect route, marked by `gpu_direct`);
/// under a host whose pairs all passed one line for them, under another each pair with its
/// relation, ACS, links and MRRS (the messages are in the host's block and needs attention);
/// then the counts.
fn gpu(out: &mut String, p: &Paint, report: &ClusterReport) {
    let _ = writeln!(
        out,
        "{}",
        p.bold("GPU path (host: NCCL, GPUDirect; GPU ↔ port: PCIe relation, ACS, links, MRRS):")
    );
    for h in report.hosts.iter().filter(|h| h.counted()) {
        let Some(g) = &h.gpu else { continue };
        let line = format!(
            "  {}: {} {}",
            clean(&h.host),
            fabric_mark(g.gpu_direct),
            gpu_host_text(g)
        );
        let _ = match g.gpu_direct {
            Some(Status::Fail) => writeln!(out, "{}", p.red(&line)),
            Some(Status::Warn) => writeln!(out, "{}", p.yellow(&line)),
            _ => writeln!(out, "{line}"),
        };
        if let Some(relations) = gpu_relations_all_passed(g) {
            let n = g.pairs.len();
            let _ = writeln!(
                out,
                "    ✅ {n} {} ({relations}): all passed",
                if n == 1 { "pair" } else { "pairs" },
            );
            continue;
        }
        for x in &g.pairs {
            let line = format!(
                "    {} {}: {}",
                fabric_mark(Some(x.status)),
                gpu_pair_name(x),
                gpu_pair_facts(x)
            );
            let _ = match x.status {
                Status::Fail => writeln!(out, "{}", p.red(&line)),
                Status::Warn => writeln!(out, "{}", p.yellow(&line)),
                _ => writeln!(out, "{line}"),
            };
        }
    }
    if let Some(t) = &report.gpu {
        let line = format!("gpu path: {}", gpu_line(t));
        let _ = if t.failed > 0 {
            writeln!(out, "{}", p.red(&line))
        } else {
            writeln!(out, "{line}")
        };
    }
}

/// The NCCL self-test of each counted host whose fabric result has one: a line each (GPUDirect
/// per HCA as NCCL says it, the bus bandwidth against its mark), under one that did not pass its
/// checks' messages.
fn nccl(out: &mut String, p: &Paint, report: &ClusterReport) {
    let runs: Vec<_> = report
        .hosts
        .iter()
        .filter(|h| h.counted())
        .filter_map(|h| Some((h, h.nccl.as_ref()?)))
        .collect();
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{}",
        p.bold("NCCL self-test (host: GPUDirect per HCA as NCCL says, bus bandwidth at the largest size):")
    );
    for (h, n) in runs {
        let line = format!("  {}: {}", clean(&h.host), nccl_line(n));
        let _ = writeln!(out, "{line}");
        for message in &n.problems {
            let _ = writeln!(out, "    {}", p.yellow(&clean(message)));
        }
    }
}

/// The fabric matrix: one line per rail and host port (the rate against the link, the priority
/// proof, loss, congestion), under a port that failed its link's two ends with their switch
/// ports and what failed, under one that warned its warnings; then the counts.
fn fabric(out: &mut String, p: &Paint, m: &FabricMatrix) {
    let _ = writeln!(
        out,
        "{}",
        p.bold("fabric (rail, host port: rate of the link, priority, loss, congestion):")
    );
    for rail in &m.rails {
        for c in rail.cells.iter().flatten() {
            let mut line = format!(
                "  rail {}  {} {}: {} {}  priority {}  loss {}  congestion {}",
                clean(&rail.rail),
                clean(&c.host),
                clean(&c.nic),
                fabric_mark(Some(c.status)),
                fabric_rate(c),
                fabric_mark(c.priority),
                fabric_mark(c.loss),
                fabric_mark(c.congestion),
            );
            if c.memory.is_some() {
                let _ = write!(
                    line,
                    "  memory {} {}",
                    fabric_mark(c.memory),
                    memory_text(c)
                );
            }
            let Some(link) = c.link.and_then(|i| m.links.get(i)) else {
                let _ = writeln!(out, "{line}");
                for message in &c.warnings {
                    let _ = writeln!(out, "    {}", p.yellow(&clean(message)));
                }
                continue;
            };
            let _ = writeln!(out, "{}", p.red(&line));
            let _ = writeln!(
                out,
                "    {} (switch port: {}); {}",
                clean(&link.from.name()),
                clean(&link.from.switch_ports()),
                clean(&link.peers)
            );
            if let Some(to) = &link.to {
                let _ = writeln!(
                    out,
                    "    → {} (switch port: {})",
                    clean(&to.name()),
                    clean(&to.switch_ports())
                );
            }
            for message in &link.problems {
                let _ = writeln!(out, "    {}", clean(message));
            }
        }
    }
    let line = format!("fabric: {}", fabric_line(m));
    let _ = if m.failed > 0 {
        writeln!(out, "{}", p.red(&line))
    } else {
        writeln!(out, "{line}")
    };
}

/// The plan (or the cluster), the results read, then each file skipped or unreadable, and each
/// result superseded by a file of another name.
fn heading(out: &mut String, p: &Paint, report: &ClusterReport) {
    match (&report.plan, &report.cluster) {
        (Some(plan), cluster) => {
            let _ = writeln!(
                out,
                "plan: {} (cluster {}, {}, sha256 {})",
                clean(&plan.file),
                clean(cluster.as_deref().unwrap_or_default()),
                host_count(plan.hosts),
                short_sha(&plan.sha256)
            );
        }
        (None, Some(cluster)) => {
            let _ = writeln!(out, "cluster: {}", clean(cluster));
        }
        (None, None) => {}
    }
    let newest = report
        .as_of
        .as_ref()
        .map(|at| format!("; the newest finished at {}", clean(at)))
        .unwrap_or_default();
    let _ = writeln!(out, "results: {}{newest}", files_line(&report.totals));
    for f in &report.skipped {
        let note = format!("note: {}: skipped: {}", clean(&f.path), clean(&f.reason));
        let _ = writeln!(out, "{}", p.dim(&note));
    }
    for f in &report.problems {
        let _ = writeln!(
            out,
            "{}: {}: {}",
            p.red("error"),
            clean(&f.path),
            clean(&f.reason)
        );
    }
    // A host's result put aside by a file of another name is said even without -v: any file can
    // claim to be any host's result.
    for f in &report.superseded {
        if f.superseded_by_another_name().is_some() {
            let _ = writeln!(
                out,
                "{}: {}: {}, a file of another name",
                p.yellow("warning"),
                clean(&f.path),
                clean(&f.reason)
            );
        }
    }
}

/// The hosts not ready (a block each), those ready (a line each), those not in the plan, and
/// those a reboot waits for.
fn hosts(out: &mut String, p: &Paint, report: &ClusterReport) {
    if report.hosts.is_empty() {
        let _ = writeln!(out, "{}", p.red("❌ no results found"));
    }
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    for h in report.hosts.iter().filter(|h| h.counted() && !h.ok) {
        host_block(out, p, h, plan_sha);
    }
    for h in report.hosts.iter().filter(|h| h.counted() && h.ok) {
        let ip = h
            .mgmt_ip
            .as_ref()
            .map(|ip| format!(" ({})", clean(ip)))
            .unwrap_or_default();
        let warnings = match h.warnings.len() {
            0 => String::new(),
            1 => "; 1 warning".to_string(),
            n => format!("; {n} warnings"),
        };
        let ready = format!("✅ {}{ip}: {}{warnings}", clean(&h.host), h.state.as_str());
        let _ = writeln!(out, "{}", p.green(&ready));
    }
    for h in report.hosts.iter().filter(|h| !h.counted()) {
        let unplanned = format!(
            "⚠ {}: not in the plan, not counted; {}",
            clean(&h.host),
            reason(h, plan_sha)
        );
        let _ = writeln!(out, "{}", p.yellow(&unplanned));
    }
    for h in report.hosts.iter().filter(|h| h.reboot_required()) {
        let _ = writeln!(
            out,
            "ℹ {}: reboot required: firmware values take effect at the next boot",
            clean(&h.host)
        );
    }
}

/// Ready or not, what to do next, and the counts.
fn verdict(out: &mut String, p: &Paint, report: &ClusterReport) {
    if report.ok {
        let accepted = if report.require == Require::Prechecked {
            " (a clean precheck accepted)"
        } else {
            ""
        };
        let counted = report.hosts.iter().filter(|h| h.counted()).count();
        let ready = format!("✅ {} ready{accepted}", all_hosts(counted));
        let _ = writeln!(out, "{}", p.green(&ready));
    } else if report.hosts.is_empty() && report.problems.is_empty() {
        let none = "❌ not ready: no result files under the paths given";
        let _ = writeln!(out, "{}", p.red(none));
    } else {
        // Each host and file was named above with its reason: the close says only what to do.
        let fix = "❌ not ready: fix the problems above and run again";
        let _ = writeln!(out, "{}", p.red(fix));
        if let Some(next) = next_step(report, clean) {
            let _ = writeln!(out, "next: {next}");
        }
    }
    let _ = writeln!(out, "{}", hosts_line(&report.totals));
}

/// `✅ ofed: … on all 6 hosts`, or, when a host differs or the value is not the planned one,
/// `⚠ mtu (plan 4200): 1500 on 1 host` and the other values with their hosts.
fn consistency_line(out: &mut String, p: &Paint, g: &FactGroup, of: usize) {
    let Some((common, others)) = g.values.split_first() else {
        return;
    };
    let mut name = fact_name(g);
    if let Some(planned) = g.plan_note() {
        let _ = write!(name, " (plan {})", value_text(planned));
    }
    let mut text = format!(
        "{name}: {} on {}",
        value_text(&common.value),
        common_hosts(g, of)
    );
    for v in others {
        let _ = write!(text, "; {} on {}", value_text(&v.value), hosts_of(v));
    }
    let _ = if g.ok() {
        writeln!(out, "✅ {text}")
    } else {
        writeln!(out, "{}", p.yellow(&format!("⚠ {text}")))
    };
}

/// At most this many items of a group are listed; JSON has them all.
const GROUP_ITEMS: usize = 10;

/// `⚠ cabling on 16 hosts (16 ports):` and one line per host and NIC.
fn attention_group(out: &mut String, p: &Paint, g: &Group) {
    let what = match g.kind {
        Kind::Warning => clean(&g.id),
        Kind::Drift => format!("{} drifted", clean(&g.id)),
    };
    let ports = match g.ports {
        0 => String::new(),
        1 => " (1 port)".to_string(),
        n => format!(" ({n} ports)"),
    };
    let _ = writeln!(
        out,
        "{}",
        p.yellow(&format!("⚠ {what} on {}{ports}:", host_count(g.hosts)))
    );
    for f in g.findings.iter().take(GROUP_ITEMS) {
        let (hosts, nics, n) = finding_where(f);
        let at = match (n, nics.is_empty()) {
            (_, true) => hosts,
            (1, false) => format!("{hosts} {nics}"),
            (_, false) => format!("{hosts} ({nics})"),
        };
        let _ = writeln!(out, "    {at}: {}", clean(&f.message));
    }
    if g.findings.len() > GROUP_ITEMS {
        let _ = writeln!(
            out,
            "    … and {} more (--format json lists them all)",
            g.findings.len() - GROUP_ITEMS
        );
    }
}

/// A host's changes, one line per setting, indented under it.
fn write_change_lines(out: &mut String, h: &HostReport) {
    for line in &h.change_lines {
        let _ = writeln!(out, "    {}", clean(line));
    }
}

/// A host that did not pass: EasyRoCE's `❌ host: failed items:`, the ids, then one line each.
fn host_block(out: &mut String, p: &Paint, h: &HostReport, plan_sha: Option<&str>) {
    let host = clean(&h.host);
    if h.stale || h.state == State::Missing {
        let _ = writeln!(
            out,
            "{}",
            p.red(&format!("❌ {host}: {}", reason(h, plan_sha)))
        );
        return;
    }
    let (sign, paint): (&str, fn(&Paint, &str) -> String) = match h.state {
        State::Failed => ("❌", Paint::red),
        State::Drifted => ("❌", Paint::red),
        State::RolledBack => ("↩", Paint::yellow),
        _ => ("⏳", Paint::yellow),
    };
    if h.state != State::Failed {
        let _ = writeln!(
            out,
            "{}",
            paint(p, &format!("{sign} {host}: {}", reason(h, plan_sha)))
        );
        write_change_lines(out, h);
        return;
    }
    let _ = writeln!(out, "{}", p.red(&format!("❌ {host}: failed items:")));
    if h.failures.is_empty() {
        let _ = writeln!(
            out,
            "the result says fail but lists no failing check ({})",
            reason(h, plan_sha)
        );
        return;
    }
    for c in &h.failures {
        let _ = writeln!(out, "{}: {}", clean(&c.item()), clean(&c.message));
    }
}
