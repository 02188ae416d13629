//! `--format markdown`: the report for a ticket, a wiki page or a merge request: the verdict and
//! totals, a table of hosts, per host not ready why (failures, settings to change), the warnings
//! grouped by check, the consistency table, the GPU path, the fabric matrix and the files that
//! were not used. Every string from a result is escaped so it stays text inside a table cell.

use std::fmt::Write;

use crate::ingest::render::{
    clean, common_hosts, compared_hosts, fabric_line, fabric_mark, fabric_rate, files_line,
    finding_where, gpu_host_text, gpu_line, gpu_pair_facts, gpu_pair_name,
    gpu_relations_all_passed, host_count, hosts_line, hosts_of, nccl_line, next_step, reason,
    short_sha, standing,
};
use crate::ingest::report::{ClusterReport, FabricCell, FileNote, HostReport, Kind, State, Status};

/// Markdown text from an untrusted string: Markdown and HTML punctuation escaped, and `|` so a
/// table cell stays one cell.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in clean(s).chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

/// An identifier, value or path as inline code, which needs no escaping but of `|` (GFM table
/// cells); text with a backtick or markup falls back to [`md`] (some renderers pass HTML
/// through even in code).
fn code(s: &str) -> String {
    let s = clean(s);
    if s.is_empty() {
        String::new()
    } else if s.contains(['`', '<']) {
        md(&s)
    } else {
        format!("`{}`", s.replace('|', "\\|"))
    }
}

fn mark(h: &HostReport) -> &'static str {
    match (h.counted(), h.ok, h.state) {
        (false, _, _) => "⚠",
        (true, true, _) => "✅",
        (true, false, State::Pending | State::Prechecked) if !h.stale => "⏳",
        (true, false, State::RolledBack) if !h.stale => "↩",
        (true, false, _) => "❌",
    }
}

/// The report as a Markdown document.
pub(crate) fn render(report: &ClusterReport) -> String {
    let mut out = String::new();
    heading(&mut out, report);
    hosts(&mut out, report);
    not_ready(&mut out, report);
    needs_attention(&mut out, report);
    consistency(&mut out, report);
    gpu(&mut out, report);
    fabric(&mut out, report);
    for (title, notes) in [
        ("Problems", &report.problems),
        ("Skipped files", &report.skipped),
        ("Superseded results", &report.superseded),
    ] {
        files(&mut out, title, notes);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The GPU path: the counts, a row per host (GPUDirect, NCCL, its pairs in a word), then the
/// pairs that did not pass with their relation, ACS, links and MRRS.
fn gpu(out: &mut String, report: &ClusterReport) {
    let Some(t) = &report.gpu else {
        return;
    };
    let _ = writeln!(
        out,
        "## GPU path
"
    );
    let _ = writeln!(
        out,
        "{}.
",
        md(&gpu_line(t))
    );
    let _ = writeln!(
        out,
        "| host | GPUDirect | NCCL, route, GPU driver | pairs |"
    );
    let _ = writeln!(out, "| --- | --- | --- | --- |");
    let hosts: Vec<&HostReport> = report.hosts.iter().filter(|h| h.counted()).collect();
    for h in &hosts {
        let Some(g) = &h.gpu else { continue };
        let pairs = match gpu_relations_all_passed(g) {
            Some(relations) => format!("{} ({relations}), all passed", g.pairs.len()),
            None => {
                let not_passed = g.pairs.iter().filter(|p| p.status != Status::Pass).count();
                format!("{not_passed} of {} not passed", g.pairs.len())
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            md(&h.host),
            fabric_mark(g.gpu_direct),
            md(&gpu_host_text(g)),
            md(&pairs)
        );
    }
    out.push('\n');
    let rows: Vec<String> = hosts
        .iter()
        .filter_map(|h| Some((h, h.gpu.as_ref()?)))
        .flat_map(|(h, g)| {
            g.pairs
                .iter()
                .filter(|p| p.status != Status::Pass)
                .map(move |p| {
                    format!(
                        "| {} | {} | {} | {} |",
                        md(&h.host),
                        fabric_mark(Some(p.status)),
                        md(&gpu_pair_name(p)),
                        md(&gpu_pair_facts(p))
                    )
                })
        })
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(out, "Pairs that did not pass:\n");
        let _ = writeln!(out, "| host | | GPU ↔ port | relation, ACS, links, MRRS |");
        let _ = writeln!(out, "| --- | --- | --- | --- |");
        for row in rows {
            let _ = writeln!(out, "{row}");
        }
        out.push('\n');
    }
}

/// The fabric matrix: one row per rail and host port, then each failing link with both ends,
/// their switch ports and what failed, then each port that only warned with its warnings.
fn fabric(out: &mut String, report: &ClusterReport) {
    let Some(m) = &report.fabric else {
        return;
    };
    let _ = writeln!(out, "## Fabric\n");
    let _ = writeln!(out, "{}.\n", md(&fabric_line(m)));
    let _ = writeln!(
        out,
        "| rail | host | port | | rate | priority | loss | congestion | switch port (plan / LLDP) | sends to |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | --- | ---: | --- | --- | --- | --- | --- |"
    );
    let switch = |s: Option<&str>| md(s.unwrap_or("–"));
    for rail in &m.rails {
        for c in rail.cells.iter().flatten() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} |",
                md(&rail.rail),
                md(&c.host),
                md(&c.nic),
                fabric_mark(Some(c.status)),
                md(&fabric_rate(c)),
                fabric_mark(c.priority),
                fabric_mark(c.loss),
                fabric_mark(c.congestion),
                switch(c.plan_switch.as_deref()),
                switch(c.lldp_switch.as_deref()),
                md(c.to.as_deref().unwrap_or("–")),
            );
        }
    }
    out.push('\n');
    if !m.links.is_empty() {
        let _ = writeln!(out, "Failing links:\n");
    }
    for l in &m.links {
        let to = l.to.as_ref().map_or_else(String::new, |t| {
            format!(" → {} ({})", md(&t.name()), md(&t.switch_ports()))
        });
        let _ = writeln!(
            out,
            "- rail {}: {} ({}){to}: {} failed",
            md(&l.rail),
            md(&l.from.name()),
            md(&l.from.switch_ports()),
            l.failed
                .iter()
                .map(|id| code(id))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for message in &l.problems {
            let _ = writeln!(out, "  - {}", md(message));
        }
    }
    if !m.links.is_empty() {
        out.push('\n');
    }
    let warned: Vec<(&str, &FabricCell)> = m
        .rails
        .iter()
        .flat_map(|r| r.cells.iter().flatten().map(move |c| (r.rail.as_str(), c)))
        .filter(|(_, c)| !c.warnings.is_empty())
        .collect();
    let runs: Vec<_> = report
        .hosts
        .iter()
        .filter(|h| h.counted())
        .filter_map(|h| Some((h, h.nccl.as_ref()?)))
        .collect();
    if !runs.is_empty() {
        let _ = writeln!(
            out,
            "NCCL self-test (GPUDirect per HCA as NCCL says, bus bandwidth):\n"
        );
        for (h, n) in runs {
            let _ = writeln!(out, "- {}: {}", md(&h.host), md(&nccl_line(n)));
            for message in &n.problems {
                let _ = writeln!(out, "  - {}", md(message));
            }
        }
        out.push('\n');
    }
    if !warned.is_empty() {
        let _ = writeln!(out, "Ports that warned:\n");
        for (rail, c) in warned {
            let _ = writeln!(out, "- rail {}: {} {}", md(rail), md(&c.host), md(&c.nic));
            for message in &c.warnings {
                let _ = writeln!(out, "  - {}", md(message));
            }
        }
        out.push('\n');
    }
}

/// The title, the verdict with the next step, the plan and the results read.
fn heading(out: &mut String, report: &ClusterReport) {
    let t = &report.totals;
    let _ = writeln!(
        out,
        "# RoCE report: {}\n",
        report
            .cluster
            .as_deref()
            .map_or_else(|| "results".to_string(), |c| format!("cluster {}", md(c)))
    );
    let verdict = if report.ok {
        "✅ ready"
    } else {
        "❌ not ready"
    };
    let _ = writeln!(out, "**{verdict}**: {}.\n", hosts_line(t));
    if let Some(next) = next_step(report, md) {
        let _ = writeln!(out, "Next: {next}.\n");
    }
    if let Some(plan) = &report.plan {
        let _ = writeln!(
            out,
            "Plan: {} (sha256 {}, {}).",
            code(&plan.file),
            code(&short_sha(&plan.sha256)),
            host_count(plan.hosts)
        );
    }
    let _ = write!(out, "Results: {}", files_line(t));
    if let Some(at) = &report.as_of {
        let _ = write!(out, "; the newest finished at {}", md(at));
    }
    let _ = writeln!(out, ".\n");
}

/// The table of every host, and the hosts a reboot waits for.
fn hosts(out: &mut String, report: &ClusterReport) {
    let _ = writeln!(out, "## Hosts\n");
    if report.hosts.is_empty() {
        let _ = writeln!(out, "No results found.\n");
    } else {
        let _ = writeln!(
            out,
            "| | host | mgmt IP | state | latest result | finished | pass | warn | fail | skip | changed |"
        );
        let _ = writeln!(
            out,
            "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        for h in &report.hosts {
            let (run, finished, c) = match &h.latest {
                Some(r) => (
                    r.name.clone(),
                    r.finished_at.clone(),
                    [
                        r.counts.pass,
                        r.counts.warn,
                        r.counts.fail,
                        r.counts.skip,
                        r.counts.changed,
                    ]
                    .map(|n| n.to_string()),
                ),
                None => (
                    "none".into(),
                    String::new(),
                    [(); 5].map(|()| String::new()),
                ),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {run} | {finished} | {} |",
                mark(h),
                md(&h.host),
                md(h.mgmt_ip.as_deref().unwrap_or_default()),
                standing(h),
                c.join(" | ")
            );
        }
        out.push('\n');
    }
    let reboot: Vec<String> = report
        .hosts
        .iter()
        .filter(|h| h.reboot_required())
        .map(|h| md(&h.host))
        .collect();
    if !reboot.is_empty() {
        let _ = writeln!(
            out,
            "Reboot required (firmware values take effect at the next boot): {}.\n",
            reboot.join(", ")
        );
    }
}

/// Per host not ready: why, its settings to change and its failed checks.
fn not_ready(out: &mut String, report: &ClusterReport) {
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    let failing: Vec<&HostReport> = report
        .hosts
        .iter()
        .filter(|h| h.counted() && !h.ok)
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "## Not ready\n");
        for h in failing {
            let _ = writeln!(out, "### {} {}\n", mark(h), md(&h.host));
            let _ = writeln!(out, "{}\n", md(&reason(h, plan_sha)));
            for line in &h.change_lines {
                let _ = writeln!(out, "- {}", md(line));
            }
            if !h.changes.is_empty() {
                out.push('\n');
            }
            if !h.failures.is_empty() {
                let _ = writeln!(out, "| item | expected | actual | message |");
                let _ = writeln!(out, "| --- | --- | --- | --- |");
                for c in &h.failures {
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} |",
                        code(&c.item()),
                        code(&c.expected),
                        code(&c.actual),
                        md(&c.message)
                    );
                }
                out.push('\n');
            }
        }
    }
}

/// The warnings and drift, a table per check.
fn needs_attention(out: &mut String, report: &ClusterReport) {
    if !report.attention.is_empty() {
        let _ = writeln!(out, "## Needs attention\n");
        for g in &report.attention {
            let what = match g.kind {
                Kind::Warning => code(&g.id),
                Kind::Drift => format!("{} drifted", code(&g.id)),
            };
            let ports = match g.ports {
                0 => String::new(),
                1 => ", 1 port".to_string(),
                n => format!(", {n} ports"),
            };
            let _ = writeln!(out, "### ⚠ {what}: {}{ports}\n", host_count(g.hosts));
            let _ = writeln!(out, "| host | NIC | message |");
            let _ = writeln!(out, "| --- | --- | --- |");
            // One row per finding: the same message on several ports and hosts is one row.
            for f in &g.findings {
                let (hosts, nics, _) = finding_where(f);
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    md(&hosts),
                    md(&nics),
                    md(&f.message)
                );
            }
            out.push('\n');
        }
    }
}

/// The facts compared across hosts, a row per value.
fn consistency(out: &mut String, report: &ClusterReport) {
    if !report.consistency.is_empty() {
        let of = compared_hosts(&report.consistency);
        let _ = writeln!(out, "## Consistency\n");
        let _ = writeln!(out, "| | fact | value | hosts |");
        let _ = writeln!(out, "| --- | --- | --- | --- |");
        for g in &report.consistency {
            let mut name = match &g.scope {
                Some(scope) => format!("{} ({})", md(&g.fact), md(scope)),
                None => md(&g.fact),
            };
            if let Some(planned) = g.plan_note() {
                let _ = write!(name, " (plan {})", code(planned));
            }
            for (i, v) in g.values.iter().enumerate() {
                let (sign, fact, hosts) = match i {
                    0 => (
                        if g.ok() { "✅" } else { "⚠" },
                        name.as_str(),
                        common_hosts(g, of),
                    ),
                    _ => ("", "", md(&hosts_of(v))),
                };
                let _ = writeln!(out, "| {sign} | {fact} | {} | {hosts} |", code(&v.value));
            }
        }
        out.push('\n');
    }
}

fn files(out: &mut String, title: &str, notes: &[FileNote]) {
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## {title}\n");
    for f in notes {
        let _ = writeln!(out, "- {}: {}", code(&f.path), md(&f.reason));
    }
    out.push('\n');
}
