//! `--format html`: one self-contained page a delivery engineer hands to the customer: the
//! verdict, count tiles, a table of every host, the hosts that need attention with their failing
//! checks, per NIC the optics (module, temperature, weakest TX and RX power), link, PCIe and
//! cabling (the switch port LLDP saw beside the planned one), the consistency table and the
//! files not used. Inline CSS only, no scripts, fonts or
//! other resources, so it opens anywhere offline. This module prepares the rows; the layout is
//! `templates/ingest/report.html.j2`, auto-escaped.

use anyhow::Result;
use serde::Serialize;

use crate::ingest::render::{
    all_hosts, files_line, host_count, hosts_line, hosts_of, reason_detail, render_template,
    run_name, short_sha, standing,
};
use crate::ingest::report::{ClusterReport, FileNote, HostReport, State};
use crate::ingest::result::{Check, Counts, Status};

#[derive(Serialize)]
struct Page<'a> {
    cluster: Option<&'a str>,
    ok: bool,
    hosts_line: String,
    files_line: String,
    plan: Option<PlanLine<'a>>,
    version: &'static str,
    tiles: Vec<Tile>,
    hosts: Vec<HostRow>,
    attention: Vec<Attention>,
    nics: Vec<NicRow>,
    consistency: Vec<FactRow>,
    problems: &'a [FileNote],
    skipped: &'a [FileNote],
    superseded: &'a [FileNote],
}

#[derive(Serialize)]
struct PlanLine<'a> {
    file: &'a str,
    sha: String,
}

/// A count in the summary bar; `tone` is a CSS class.
#[derive(Serialize)]
struct Tile {
    label: &'static str,
    count: usize,
    tone: &'static str,
}

#[derive(Serialize)]
struct HostRow {
    name: String,
    ip: String,
    tone: &'static str,
    standing: &'static str,
    run: String,
    finished: String,
    path: String,
    counts: Option<Counts>,
    items: Vec<String>,
}

/// One NIC's monitoring facts and the checks on them; `*_tone` are CSS classes.
#[derive(Serialize)]
struct NicRow {
    host: String,
    nic: String,
    netdev: String,
    module: String,
    temperature: String,
    tx: String,
    rx: String,
    optics_tone: &'static str,
    optics_note: String,
    link: String,
    link_tone: &'static str,
    pcie: String,
    pcie_tone: &'static str,
    seen: String,
    planned: String,
    cabling_tone: &'static str,
    cabling_note: String,
}

#[derive(Serialize)]
struct Attention {
    name: String,
    ip: String,
    tone: &'static str,
    standing: &'static str,
    reason: String,
    checks: Vec<CheckRow>,
}

#[derive(Serialize)]
struct CheckRow {
    item: String,
    expected: String,
    actual: String,
    message: String,
}

#[derive(Serialize)]
struct FactRow {
    name: String,
    planned: Option<String>,
    agree: bool,
    common: String,
    common_hosts: String,
    others: Vec<Other>,
}

#[derive(Serialize)]
struct Other {
    value: String,
    hosts: String,
}

/// The CSS class of a host's standing.
fn tone(h: &HostReport) -> &'static str {
    if !h.counted() {
        return "muted";
    }
    if h.stale {
        return "stale";
    }
    match h.state {
        State::Configured => "ok",
        State::Prechecked if h.ok => "ok",
        State::Prechecked => "info",
        State::Pending => "warn",
        State::Drifted => "bad",
        State::RolledBack => "muted",
        State::Failed => "bad",
        State::Missing => "warn",
    }
}

/// The CSS class of a check's status, `muted` when there is no such check.
fn check_tone(check: Option<&Check>) -> &'static str {
    match check.map(|c| c.status) {
        Some(Status::Pass | Status::Changed) => "ok",
        Some(Status::Warn) => "warn",
        Some(Status::Fail) => "bad",
        Some(Status::Skip) | None => "muted",
    }
}

/// `-1.32 dBm`: the weakest lane, `dark lane` when one has no light, empty without lanes.
fn weakest(lanes: &[Option<f64>]) -> String {
    if lanes.iter().any(Option::is_none) {
        return "dark lane".to_string();
    }
    lanes
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .map(|v| format!("{v:.2} dBm"))
        .unwrap_or_default()
}

/// The NIC rows of every host whose latest result records monitoring facts.
fn nic_rows(report: &ClusterReport) -> Vec<NicRow> {
    let mut rows = Vec::new();
    for h in &report.hosts {
        for (nic, n) in &h.nics {
            let check = |id: &str| {
                h.checks
                    .iter()
                    .find(|c| c.id == id && c.nic.as_deref() == Some(nic.as_str()))
            };
            let (optics, cabling) = (check("optics"), check("cabling"));
            let note = |c: Option<&Check>| {
                c.filter(|c| c.status != Status::Pass)
                    .map(|c| c.message.clone())
                    .unwrap_or_default()
            };
            let (module, temperature, tx, rx) = match &n.transceiver {
                Some(t) => (
                    format!("{} {}", t.vendor, t.part_number).trim().to_string(),
                    t.temperature_c
                        .map(|c| format!("{c:.1} °C"))
                        .unwrap_or_default(),
                    weakest(&t.tx_power_dbm),
                    weakest(&t.rx_power_dbm),
                ),
                None => (
                    "no module data".to_string(),
                    String::new(),
                    String::new(),
                    String::new(),
                ),
            };
            let link = n
                .speed_mbps
                .map(|s| {
                    let lanes = n.width.map(|w| format!(" ×{w}")).unwrap_or_default();
                    format!("{} Gb/s{lanes}", s / 1000.0)
                })
                .unwrap_or_default();
            let pcie = match (&n.pcie_speed, n.pcie_width) {
                (Some(s), Some(w)) => format!("{} x{w}", s.trim_end_matches(" PCIe")),
                _ => String::new(),
            };
            let (planned, seen) = match cabling {
                Some(c) => (c.expected.clone(), c.actual.clone()),
                None => (String::new(), String::new()),
            };
            let seen = if seen.is_empty() {
                n.neighbor
                    .as_ref()
                    .map(|nb| format!("{} {}", nb.switch, nb.port).trim().to_string())
                    .unwrap_or_default()
            } else {
                seen
            };
            rows.push(NicRow {
                host: h.host.clone(),
                nic: nic.clone(),
                netdev: n.netdev.clone(),
                module,
                temperature,
                tx,
                rx,
                optics_tone: check_tone(optics),
                optics_note: note(optics),
                link,
                link_tone: check_tone(check("link_speed")),
                pcie,
                pcie_tone: check_tone(check("pcie")),
                seen,
                planned,
                cabling_tone: check_tone(cabling),
                cabling_note: note(cabling),
            });
        }
    }
    rows
}

/// The report as an HTML page.
pub fn render(report: &ClusterReport) -> Result<String> {
    let t = &report.totals;
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    let mut tiles = vec![Tile {
        label: if t.planned.is_some() {
            "planned hosts"
        } else {
            "hosts"
        },
        count: t.planned.unwrap_or(t.hosts),
        tone: "total",
    }];
    for (label, count, tone) in [
        ("configured", t.configured, "ok"),
        ("prechecked", t.prechecked, "info"),
        ("rolled back", t.rolled_back, "muted"),
        ("failed", t.failed, "bad"),
        ("missing", t.missing, "warn"),
        ("stale", t.stale, "stale"),
        ("not in plan", t.unplanned, "muted"),
        ("unreadable files", t.problems, "bad"),
    ] {
        // Tiles that cannot apply without a plan are left out rather than shown as 0.
        let planless = matches!(label, "missing" | "stale" | "not in plan");
        if t.planned.is_some() || !planless {
            tiles.push(Tile { label, count, tone });
        }
    }
    let hosts = report
        .hosts
        .iter()
        .map(|h| HostRow {
            name: h.host.clone(),
            ip: h.mgmt_ip.clone().unwrap_or_default(),
            tone: tone(h),
            standing: standing(h),
            run: h.latest.as_ref().map(run_name).unwrap_or_default(),
            finished: h
                .latest
                .as_ref()
                .map(|r| r.finished_at.clone())
                .unwrap_or_default(),
            path: h
                .latest
                .as_ref()
                .map(|r| r.path.clone())
                .unwrap_or_default(),
            counts: h.latest.as_ref().map(|r| r.counts),
            items: h
                .failures
                .iter()
                .map(crate::ingest::result::Check::item)
                .collect(),
        })
        .collect();
    let attention = report
        .hosts
        .iter()
        .filter(|h| h.counted() && !h.ok)
        .map(|h| Attention {
            name: h.host.clone(),
            ip: h.mgmt_ip.clone().unwrap_or_default(),
            tone: tone(h),
            standing: standing(h),
            reason: reason_detail(h, plan_sha),
            checks: h
                .failures
                .iter()
                .map(|c| CheckRow {
                    item: c.item(),
                    expected: c.expected.clone(),
                    actual: c.actual.clone(),
                    message: c.message.clone(),
                })
                .collect(),
        })
        .collect();
    let consistency = report
        .consistency
        .iter()
        .filter_map(|g| {
            let (common, others) = g.values.split_first()?;
            Some(FactRow {
                name: match &g.scope {
                    Some(scope) => format!("{} ({scope})", g.fact),
                    None => g.fact.clone(),
                },
                planned: g.planned.clone(),
                agree: g.agree,
                common: common.value.clone(),
                common_hosts: if g.agree {
                    all_hosts(common.count)
                } else {
                    host_count(common.count)
                },
                others: others
                    .iter()
                    .map(|v| Other {
                        value: v.value.clone(),
                        hosts: hosts_of(v),
                    })
                    .collect(),
            })
        })
        .collect();
    let page = Page {
        cluster: report.cluster.as_deref(),
        ok: report.ok,
        hosts_line: hosts_line(t),
        files_line: files_line(t),
        plan: report.plan.as_ref().map(|p| PlanLine {
            file: &p.file,
            sha: short_sha(&p.sha256),
        }),
        version: env!("CARGO_PKG_VERSION"),
        tiles,
        hosts,
        attention,
        nics: nic_rows(report),
        consistency,
        problems: &report.problems,
        skipped: &report.skipped,
        superseded: &report.superseded,
    };
    render_template("ingest/report.html", page)
}
