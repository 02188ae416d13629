//! `--format html`: one self-contained page a delivery engineer hands to the customer: the
//! verdict with the date of the newest result and the plan checked against, count tiles, what
//! needs attention (each host not ready with its reason, failing checks and settings to change;
//! the missing hosts in one block; the hosts a firmware value waits on a reboot for; warnings and
//! drift grouped by check), a table of every host, per NIC its RoCE v2 GID index, the optics (module, temperature, weakest TX and RX power), link, PCIe and cabling
//! (the switch port LLDP saw beside the planned one) or why the NIC is absent, the GPU path (per
//! host GPUDirect, per GPU↔port pair relation, ACS, links), the fabric matrix, the consistency
//! table and the files not used. Inline CSS only, no scripts, fonts or other resources, so it
//! opens anywhere offline; laid out to fit a 1024 px screen and an A4 or Letter page. This
//! module prepares the rows; the layout is `templates/ingest/report.html.j2`, auto-escaped.

use std::collections::BTreeSet;

use anyhow::Result;
use serde::Serialize;

use crate::ingest::gpu::worse;
use crate::ingest::render::{
    common_hosts, compared_hosts, fabric_line, files_line, finding_where, gpu_line, gpu_versions,
    host_count, hosts_line, hosts_of, nccl_line, reason_detail, render_template, short_sha,
    shown_run, standing,
};
use crate::ingest::report::{
    Check, ClusterReport, Counts, FabricCell, FabricEnd, FabricMatrix, FactGroup, FileNote,
    GpuTotals, Group, HostReport, Kind, NicHealth, Require, State, Status, Totals,
};

#[derive(Serialize)]
struct Page<'a> {
    cluster: Option<&'a str>,
    ok: bool,
    hosts_line: String,
    files_line: String,
    as_of: Option<AsOf>,
    plan: Option<PlanLine<'a>>,
    require: &'static str,
    version: &'static str,
    tiles: Vec<Tile>,
    hosts: Vec<HostRow>,
    attention: Vec<Attention>,
    missing: Vec<String>,
    /// Hosts whose latest result says a firmware value waits for the next boot.
    reboot: Vec<String>,
    groups: Vec<GroupBlock>,
    nics: Vec<NicRow>,
    consistency: Vec<FactRow>,
    gpu: Option<GpuView>,
    fabric: Option<FabricView>,
    problems: &'a [FileNote],
    skipped: &'a [FileNote],
    superseded: &'a [FileNote],
}

#[derive(Serialize)]
struct PlanLine<'a> {
    file: &'a str,
    sha: String,
    hosts: String,
}

/// The report's date: RFC 3339 for `<time datetime>`, and as people read it.
#[derive(Serialize)]
struct AsOf {
    iso: String,
    text: String,
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
    /// A firmware value waits for the next boot.
    reboot: bool,
}

/// One NIC's monitoring facts and the checks on them; `*_tone` are CSS classes.
#[derive(Serialize)]
struct NicRow {
    host: String,
    nic: String,
    netdev: String,
    /// The RoCE v2 GID index of the planned address, when the result records one.
    gid_index: String,
    module: String,
    temperature: String,
    tx: String,
    rx: String,
    optics_tone: &'static str,
    link: String,
    /// `max 400G` when the link runs below what the port supports.
    link_max: String,
    link_tone: &'static str,
    pcie: String,
    /// `max 32 GT/s x16` when the PCIe link runs below what the slot and card support.
    pcie_max: String,
    pcie_tone: &'static str,
    seen: String,
    planned: String,
    cabling_tone: &'static str,
    /// What the optics and cabling checks said when they did not pass.
    notes: Vec<String>,
    /// The NIC is not there (its `ib_dev` check failed): the row says so, with the message.
    absent: bool,
    /// Why the row has no facts: the failed check's message, or that none were recorded.
    absent_note: String,
}

#[derive(Serialize)]
struct Attention {
    name: String,
    ip: String,
    tone: &'static str,
    standing: &'static str,
    reason: String,
    /// Settings to change (pending) or drifted, one line per setting.
    changes: Vec<String>,
    checks: Vec<CheckRow>,
}

/// One check id's warnings or drift across the hosts.
#[derive(Serialize)]
struct GroupBlock {
    id: String,
    drift: bool,
    /// `16 hosts · 16 ports`.
    size: String,
    items: Vec<GroupItem>,
}

#[derive(Serialize)]
struct GroupItem {
    host: String,
    nic: String,
    message: String,
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
    /// Every host agrees on the planned value (or the plan names none): the only green row.
    ok: bool,
    matches_plan: bool,
    common: String,
    common_hosts: String,
    others: Vec<Other>,
}

#[derive(Serialize)]
struct Other {
    value: String,
    hosts: String,
}

/// The fabric matrix as the page lays it out: hosts as rows and rails as columns, at most
/// [`FABRIC_RAILS`] rails to a table, so that a cluster of any size grows down the page (and
/// breaks between rows on paper) rather than past its right edge.
#[derive(Serialize)]
struct FabricView {
    /// `6 ports on 2 rails: 4 passed, 2 failed`.
    summary: String,
    failed: bool,
    tables: Vec<FabricTable>,
    links: Vec<LinkRow>,
    /// The ports that only warned, with why (an incast step whose senders did not overlap).
    warned: Vec<WarnRow>,
    /// Each host's NCCL self-test.
    nccl: Vec<NcclRow>,
}

/// One host's NCCL self-test: GPUDirect per HCA and the bus bandwidth in a line, and the
/// messages of its checks that did not pass.
#[derive(Serialize)]
struct NcclRow {
    host: String,
    tone: &'static str,
    line: String,
    problems: Vec<String>,
}

#[derive(Serialize)]
struct WarnRow {
    rail: String,
    /// `h0 mlx5_0`.
    port: String,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct FabricTable {
    rails: Vec<String>,
    /// The width of each rail's column, a CSS class.
    width: &'static str,
    rows: Vec<FabricRow>,
}

#[derive(Serialize)]
struct FabricRow {
    host: String,
    tone: &'static str,
    /// Per rail of the table, the host's ports on it (none: it has no port there).
    cells: Vec<Vec<PortCell>>,
}

/// One port in a cell: a symbol beside the colour, so the grid reads in print and without
/// colour vision; a failing one names its link's ends and switch ports.
#[derive(Serialize)]
struct PortCell {
    nic: String,
    tone: &'static str,
    symbol: &'static str,
    rate: String,
    pct: String,
    marks: Vec<Mark>,
    /// `h1 mlx5_0`: the port it sends to, when it failed.
    to: String,
    /// `leaf-1 Eth1/1 → leaf-1 Eth1/2`: both ends' switch ports, when it failed.
    switches: String,
}

#[derive(Serialize)]
struct Mark {
    label: &'static str,
    tone: &'static str,
    symbol: &'static str,
}

/// A failing link, both ends with their switch ports, and what failed.
#[derive(Serialize)]
struct LinkRow {
    rail: String,
    from: String,
    from_switch: String,
    to: String,
    to_switch: String,
    failed: Vec<&'static str>,
    problems: Vec<String>,
}

/// The GPU path as the page lays it out: a group of rows per host (its GPUDirect decision on the
/// first), a row per planned GPU↔port pair.
#[derive(Serialize)]
struct GpuView {
    /// `4 pairs on 2 hosts: 3 passed, 1 warned; GPUDirect RDMA on 1 of 2 hosts (not on h2)`.
    summary: String,
    failed: bool,
    hosts: Vec<GpuHostRows>,
}

#[derive(Serialize)]
struct GpuHostRows {
    host: String,
    /// `gpu_direct`'s tone and symbol, and the route in words.
    tone: &'static str,
    symbol: &'static str,
    route: &'static str,
    /// NCCL's version and where it came from, and the driver.
    detail: String,
    pairs: Vec<GpuPairCells>,
}

#[derive(Serialize)]
struct GpuPairCells {
    gpu: String,
    gpu_pci: String,
    nic: String,
    nic_pci: String,
    tone: &'static str,
    symbol: &'static str,
    relation: String,
    relation_tone: &'static str,
    acs: String,
    acs_tone: &'static str,
    /// `GPU x16 32.0 GT/s`, `port x8 (of x16) 32.0 GT/s`, `MRRS 512`.
    links: Vec<String>,
    links_tone: &'static str,
}

fn gpu_view(report: &ClusterReport, t: &GpuTotals) -> GpuView {
    let tone_of = |s: Option<Status>| status_mark(s).0;
    let hosts = report
        .hosts
        .iter()
        .filter(|h| h.counted())
        .filter_map(|h| {
            let g = h.gpu.as_ref()?;
            let (tone, symbol) = status_mark(g.gpu_direct);
            let pairs = g
                .pairs
                .iter()
                .map(|p| {
                    let (tone, symbol) = status_mark(Some(p.status));
                    let mut links = Vec::new();
                    for (end, link) in [("GPU", &p.pair.gpu_link), ("port", &p.pair.nic_link)] {
                        if let Some(link) = link {
                            links.push(format!("{end} {}", link.text()));
                        }
                    }
                    if let Some(mrrs) = p.pair.mrrs {
                        links.push(format!("MRRS {mrrs}"));
                    }
                    let checks = [p.link_check, p.mrrs_check].into_iter().flatten();
                    let links_tone = status_mark(Some(checks.fold(Status::Pass, worse))).0;
                    GpuPairCells {
                        gpu: p.pair.gpu.clone(),
                        gpu_pci: if p.pair.gpu_pci == p.pair.gpu {
                            String::new()
                        } else {
                            p.pair.gpu_pci.clone()
                        },
                        nic: p.pair.nic.clone(),
                        nic_pci: p.pair.nic_pci.clone(),
                        tone,
                        symbol,
                        relation: p.pair.relation.clone(),
                        relation_tone: tone_of(p.relation_check),
                        acs: p.acs.clone(),
                        acs_tone: tone_of(p.acs_check),
                        links,
                        links_tone,
                    }
                })
                .collect();
            Some(GpuHostRows {
                host: h.host.clone(),
                tone,
                symbol,
                route: match g.route.as_str() {
                    "peermem" => "GPUDirect RDMA (peer memory)",
                    "dmabuf" => "GPUDirect RDMA (DMA-BUF)",
                    "none" => "no GPUDirect RDMA",
                    _ => "not decided",
                },
                detail: {
                    let (nccl, driver) = gpu_versions(g);
                    match driver {
                        Some(d) => format!("{nccl} · {d}"),
                        None => nccl,
                    }
                },
                pairs,
            })
        })
        .collect();
    GpuView {
        summary: gpu_line(t),
        failed: t.failed > 0,
        hosts,
    }
}

/// Rails per table of the fabric matrix: eight rails, a GPU server's ports, fit A4 portrait.
const FABRIC_RAILS: usize = 8;

/// A status's CSS class and symbol (`&#10003;` and the like, written as characters).
fn status_mark(s: Option<Status>) -> (&'static str, &'static str) {
    match s {
        Some(Status::Pass | Status::Changed) => ("ok", "✓"),
        Some(Status::Warn) => ("warn", "⚠"),
        Some(Status::Fail) => ("bad", "✗"),
        Some(Status::Skip) | None => ("muted", "–"),
    }
}

/// `leaf-1 Eth1/1`, with what LLDP saw when it differs: `leaf-1 Eth1/1 (LLDP leaf-2 Eth1/7)`.
fn switch_text(end: &FabricEnd) -> String {
    let plan = end.plan_switch.as_deref().unwrap_or("not planned");
    match end.lldp_switch.as_deref() {
        Some(lldp) if lldp != plan => format!("{plan} (LLDP {lldp})"),
        Some(_) => format!("{plan} (LLDP agrees)"),
        None => format!("{plan} (LLDP not seen)"),
    }
}

fn port_cell(c: &FabricCell, m: &FabricMatrix) -> PortCell {
    let (tone, symbol) = status_mark(Some(c.status));
    let memory = match c.memory_used.as_deref() {
        Some("host") => "host mem",
        _ => "GPU mem",
    };
    let marks = [
        ("prio", c.priority),
        ("loss", c.loss),
        ("ECN", c.congestion),
    ]
    .into_iter()
    .chain(c.memory.map(|m| (memory, Some(m))))
    .map(|(label, s)| {
        let (tone, symbol) = status_mark(s);
        Mark {
            label,
            tone,
            symbol,
        }
    })
    .collect();
    let link = c.link.and_then(|i| m.links.get(i));
    let short = |e: &FabricEnd| e.plan_switch.clone().unwrap_or_else(|| "?".to_string());
    PortCell {
        nic: c.nic.clone(),
        tone,
        symbol,
        rate: if c.rate.is_empty() {
            "no traffic".to_string()
        } else {
            c.rate.clone()
        },
        pct: c.pct.map(|p| format!("{p}%")).unwrap_or_default(),
        marks,
        to: link
            .and_then(|l| l.to.as_ref())
            .map(FabricEnd::name)
            .unwrap_or_default(),
        switches: link
            .map(|l| match &l.to {
                Some(to) => format!("{} → {}", short(&l.from), short(to)),
                None => short(&l.from),
            })
            .unwrap_or_default(),
    }
}

fn fabric_view(m: &FabricMatrix, hosts: &[HostReport]) -> FabricView {
    let tables = m
        .rails
        .chunks(FABRIC_RAILS)
        .map(|rails| {
            let rows =
                m.hosts
                    .iter()
                    .enumerate()
                    .map(|(i, host)| {
                        let cells: Vec<Vec<PortCell>> = rails
                            .iter()
                            .map(|r| r.cells[i].iter().map(|c| port_cell(c, m)).collect())
                            .collect();
                        let worst =
                            cells.iter().flatten().map(|p| p.tone).fold("ok", |w, t| {
                                match (w, t) {
                                    ("bad", _) | (_, "bad") => "bad",
                                    ("warn", _) | (_, "warn") => "warn",
                                    _ => "ok",
                                }
                            });
                        FabricRow {
                            host: host.clone(),
                            tone: worst,
                            cells,
                        }
                    })
                    .collect();
            FabricTable {
                rails: rails.iter().map(|r| r.rail.clone()).collect(),
                width: match rails.len() {
                    1 => "w40",
                    2 => "w30",
                    3 | 4 => "w20",
                    5 | 6 => "w14",
                    _ => "w11",
                },
                rows,
            }
        })
        .collect();
    FabricView {
        summary: fabric_line(m),
        failed: m.failed > 0,
        tables,
        links: m
            .links
            .iter()
            .map(|l| LinkRow {
                rail: l.rail.clone(),
                from: l.from.name(),
                from_switch: switch_text(&l.from),
                to: l.to.as_ref().map(FabricEnd::name).unwrap_or_default(),
                to_switch: l.to.as_ref().map(switch_text).unwrap_or_default(),
                failed: l.failed.clone(),
                problems: l.problems.clone(),
            })
            .collect(),
        warned: m
            .rails
            .iter()
            .flat_map(|r| {
                r.cells
                    .iter()
                    .flatten()
                    .filter(|c| !c.warnings.is_empty())
                    .map(|c| WarnRow {
                        rail: r.rail.clone(),
                        port: format!("{} {}", c.host, c.nic),
                        warnings: c.warnings.clone(),
                    })
            })
            .collect(),
        nccl: hosts
            .iter()
            .filter(|h| h.counted())
            .filter_map(|h| {
                let n = h.nccl.as_ref()?;
                let statuses = n.gdr.iter().map(|g| g.status).chain(n.busbw_check);
                let worst = status_mark(Some(statuses.fold(Status::Pass, worse))).0;
                Some(NcclRow {
                    host: h.host.clone(),
                    tone: worst,
                    line: nccl_line(n),
                    problems: n.problems.clone(),
                })
            })
            .collect(),
    }
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

/// `-1.32` (dBm): the weakest lane, `dark lane` when one has no light, empty without lanes.
fn weakest(lanes: &[Option<f64>]) -> String {
    if lanes.iter().any(Option::is_none) {
        return "dark lane".to_string();
    }
    lanes
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .map(|v| format!("{v:.2}"))
        .unwrap_or_default()
}

/// The NIC rows, per host: every NIC its latest result records monitoring facts for, and every
/// NIC its `ib_dev` check found absent, so a card that vanished is a row saying so rather than a
/// row fewer. On a host that records facts, a NIC its checks name without facts gets a row too.
fn nic_rows(report: &ClusterReport) -> Vec<NicRow> {
    let mut rows = Vec::new();
    for h in &report.hosts {
        let absent: BTreeSet<&str> = h
            .checks
            .iter()
            .filter(|c| c.id == "ib_dev" && c.status == Status::Fail)
            .filter_map(|c| c.nic.as_deref())
            .collect();
        let mut names: BTreeSet<&str> = h.nics.keys().map(String::as_str).collect();
        names.extend(&absent);
        if !h.nics.is_empty() {
            names.extend(h.checks.iter().filter_map(|c| c.nic.as_deref()));
        }
        for nic in names {
            rows.push(match h.nics.get(nic) {
                Some(n) => nic_row(h, nic, n),
                None => absent_row(h, nic, absent.contains(nic)),
            });
        }
    }
    rows
}

/// A NIC without monitoring facts: absent (its `ib_dev` check failed, whose message says what
/// the host has instead), or present but recording none.
fn absent_row(h: &HostReport, nic: &str, absent: bool) -> NicRow {
    let check = |id: &str| {
        h.checks
            .iter()
            .find(|c| c.id == id && c.nic.as_deref() == Some(nic))
    };
    let netdev = h
        .netdevs
        .get(nic)
        .cloned()
        .or_else(|| check("netdev").map(|c| c.expected.to_string()))
        .unwrap_or_default();
    let absent_note = match check("ib_dev") {
        Some(c) if absent => c.message.to_string(),
        _ => "no monitoring facts recorded".to_string(),
    };
    NicRow {
        host: h.host.clone(),
        nic: nic.to_string(),
        netdev,
        gid_index: gid_index(h, nic),
        module: String::new(),
        temperature: String::new(),
        tx: String::new(),
        rx: String::new(),
        optics_tone: "muted",
        link: String::new(),
        link_max: String::new(),
        link_tone: "muted",
        pcie: String::new(),
        pcie_max: String::new(),
        pcie_tone: "muted",
        seen: String::new(),
        planned: String::new(),
        cabling_tone: "muted",
        notes: Vec::new(),
        absent,
        absent_note,
    }
}

/// A NIC's monitoring facts beside the checks on them.
fn nic_row(h: &HostReport, nic: &str, n: &NicHealth) -> NicRow {
    let check = |id: &str| {
        h.checks
            .iter()
            .find(|c| c.id == id && c.nic.as_deref() == Some(nic))
    };
    let (optics, cabling) = (check("optics"), check("cabling"));
    let note = |c: Option<&Check>| {
        c.filter(|c| c.status != Status::Pass)
            .map(|c| c.message.to_string())
    };
    let (module, temperature, tx, rx) = match &n.transceiver {
        Some(t) => (
            format!("{} {}", t.vendor, t.part_number).trim().to_string(),
            t.temperature_c
                .map(|c| format!("{c:.1}"))
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
    let link = n.speed_mbps.map(|s| gbps(s, n.width)).unwrap_or_default();
    let link_max = match (n.speed_mbps, n.max_speed_mbps) {
        (Some(s), Some(max)) if s < max => format!("max {}", gbps(max, None)),
        _ => String::new(),
    };
    let gts = h.pcie.get(nic).copied().unwrap_or_default();
    let pcie = pcie_link(n.pcie_speed.as_deref(), gts.gts, n.pcie_width);
    let pcie_max = pcie_link(n.pcie_max_speed.as_deref(), gts.max_gts, n.pcie_max_width);
    let pcie_max = if pcie_max.is_empty() || pcie_max == pcie || pcie.is_empty() {
        String::new()
    } else {
        format!("max {pcie_max}")
    };
    let (planned, seen) = match cabling {
        Some(c) => (c.expected.to_string(), c.actual.to_string()),
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
    // The sentences go in a line of their own under the row, where they have the table's width.
    let mut notes: Vec<String> = Vec::new();
    notes.extend(note(optics).or_else(|| {
        n.transceiver_note
            .clone()
            .filter(|_| n.transceiver.is_none())
    }));
    notes.extend(note(cabling));
    NicRow {
        host: h.host.clone(),
        nic: nic.to_string(),
        netdev: n.netdev.clone(),
        gid_index: gid_index(h, nic),
        module,
        temperature,
        tx,
        rx,
        optics_tone: check_tone(optics),
        link,
        link_max,
        link_tone: check_tone(check("link_speed")),
        pcie,
        pcie_max,
        pcie_tone: check_tone(check("pcie")),
        seen,
        planned,
        cabling_tone: check_tone(cabling),
        notes,
        absent: false,
        absent_note: String::new(),
    }
}

/// The GID index a host's latest result records for a NIC, empty when none.
fn gid_index(h: &HostReport, nic: &str) -> String {
    h.nic_config
        .get(nic)
        .and_then(|c| c.gid_index)
        .map(|i| i.to_string())
        .unwrap_or_default()
}

/// `400G ×4`: a link speed in Mb/s as Ethernet names it, with its lanes.
fn gbps(mbps: f64, lanes: Option<f64>) -> String {
    let lanes = lanes.map(|w| format!(" ×{w}")).unwrap_or_default();
    format!("{}G{lanes}", mbps / 1000.0)
}

/// `16 GT/s x16` from sysfs's `16.0 GT/s PCIe` (its number in `gts`) and the width; empty
/// without both.
fn pcie_link(speed: Option<&str>, gts: Option<f64>, width: Option<f64>) -> String {
    match (speed, width) {
        (Some(s), Some(w)) => match gts {
            Some(gts) => format!("{gts} GT/s x{w}"),
            None => format!("{} x{w}", s.trim_end_matches(" PCIe")),
        },
        _ => String::new(),
    }
}

/// `2026-11-30 09:00:02 UTC` from RFC 3339; the text as it is when it does not parse.
fn as_of(iso: &str) -> AsOf {
    let text = iso.parse::<jiff::Timestamp>().map_or_else(
        |_| iso.to_string(),
        |t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
    );
    AsOf {
        iso: iso.to_string(),
        text,
    }
}

/// A group of warnings or drift: `16 hosts · 16 ports`, then host, NIC and message per item.
fn group_block(g: &Group) -> GroupBlock {
    let mut size = host_count(g.hosts);
    match g.ports {
        0 => {}
        1 => size.push_str(" · 1 port"),
        n => size.push_str(&format!(" · {n} ports")),
    }
    GroupBlock {
        id: g.id.clone(),
        drift: g.kind == Kind::Drift,
        size,
        // One row per finding: the same message on several ports and hosts is one row.
        items: g
            .findings
            .iter()
            .map(|f| {
                let (host, nic, _) = finding_where(f);
                GroupItem {
                    host,
                    nic,
                    message: f.message.clone(),
                }
            })
            .collect(),
    }
}

/// The count tiles: the hosts, one per state, the files not used (unreadable, or not to be trusted).
fn tiles(t: &Totals) -> Vec<Tile> {
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
        ("pending", t.pending, "warn"),
        ("drifted", t.drifted, "bad"),
        ("rolled back", t.rolled_back, "muted"),
        ("failed", t.failed, "bad"),
        ("missing", t.missing, "warn"),
        ("stale", t.stale, "stale"),
        ("not in plan", t.unplanned, "muted"),
        ("files not used", t.problems, "bad"),
    ] {
        // Tiles that cannot apply without a plan are left out rather than shown as 0.
        let planless = matches!(label, "missing" | "stale" | "not in plan");
        if t.planned.is_some() || !planless {
            tiles.push(Tile { label, count, tone });
        }
    }
    tiles
}

/// A host's row in the table of every host; its result is the one that says why it stands
/// where it does (a host failed by its fabric test alone shows that run).
fn host_row(h: &HostReport) -> HostRow {
    HostRow {
        name: h.host.clone(),
        ip: h.mgmt_ip.clone().unwrap_or_default(),
        tone: tone(h),
        standing: standing(h),
        run: shown_run(h).map(|r| r.name.clone()).unwrap_or_default(),
        finished: shown_run(h)
            .map(|r| r.finished_at.clone())
            .unwrap_or_default(),
        path: shown_run(h).map(|r| r.path.clone()).unwrap_or_default(),
        counts: shown_run(h).map(|r| r.counts),
        items: h.failures.iter().map(Check::item).collect(),
        reboot: h.reboot_required(),
    }
}

/// A host not ready (but not only missing), with its reason, changes and failed checks.
fn attention_row(h: &HostReport, plan_sha: Option<&str>) -> Attention {
    Attention {
        name: h.host.clone(),
        ip: h.mgmt_ip.clone().unwrap_or_default(),
        tone: tone(h),
        standing: standing(h),
        reason: reason_detail(h, plan_sha),
        // A failed precheck lists settings too, but the failures come first there.
        changes: if matches!(h.state, State::Pending | State::Drifted) {
            h.change_lines.clone()
        } else {
            Vec::new()
        },
        checks: h
            .failures
            .iter()
            .map(|c| CheckRow {
                item: c.item(),
                expected: c.expected.to_string(),
                actual: c.actual.to_string(),
                message: c.message.to_string(),
            })
            .collect(),
    }
}

/// A fact's row in the consistency table, compared across `of` hosts.
fn fact_row(g: &FactGroup, of: usize) -> Option<FactRow> {
    let (common, others) = g.values.split_first()?;
    Some(FactRow {
        name: match &g.scope {
            Some(scope) => format!("{} ({scope})", g.fact),
            None => g.fact.clone(),
        },
        planned: g.planned.clone(),
        ok: g.ok(),
        matches_plan: g.matches_plan,
        common: common.value.clone(),
        common_hosts: common_hosts(g, of),
        others: others
            .iter()
            .map(|v| Other {
                value: v.value.clone(),
                hosts: hosts_of(v),
            })
            .collect(),
    })
}

/// The report as an HTML page.
pub(crate) fn render(report: &ClusterReport) -> Result<String> {
    let t = &report.totals;
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    let hosts = report.hosts.iter().map(host_row).collect();
    let reboot = report
        .hosts
        .iter()
        .filter(|h| h.reboot_required())
        .map(|h| h.host.clone())
        .collect();
    // Missing hosts have nothing to tell apart but their names: one block names them all.
    let not_ready: Vec<&HostReport> = report
        .hosts
        .iter()
        .filter(|h| h.counted() && !h.ok)
        .collect();
    let missing = not_ready
        .iter()
        .filter(|h| h.state == State::Missing && !h.stale)
        .map(|h| h.host.clone())
        .collect();
    let attention = not_ready
        .iter()
        .filter(|h| h.state != State::Missing || h.stale)
        .map(|h| attention_row(h, plan_sha))
        .collect();
    let of = compared_hosts(&report.consistency);
    let consistency = report
        .consistency
        .iter()
        .filter_map(|g| fact_row(g, of))
        .collect();
    let page = Page {
        cluster: report.cluster.as_deref(),
        ok: report.ok,
        hosts_line: hosts_line(t),
        files_line: files_line(t),
        as_of: report.as_of.as_deref().map(as_of),
        plan: report.plan.as_ref().map(|p| PlanLine {
            file: &p.file,
            sha: short_sha(&p.sha256),
            hosts: host_count(p.hosts),
        }),
        require: match report.require {
            Require::Configured => "a host is ready when the plan is applied (configured)",
            Require::Prechecked => {
                "a host is ready when configured or prechecked (--require prechecked)"
            }
        },
        version: env!("CARGO_PKG_VERSION"),
        tiles: tiles(t),
        hosts,
        attention,
        missing,
        reboot,
        groups: report.attention.iter().map(group_block).collect(),
        nics: nic_rows(report),
        consistency,
        gpu: report.gpu.as_ref().map(|t| gpu_view(report, t)),
        fabric: report
            .fabric
            .as_ref()
            .map(|m| fabric_view(m, &report.hosts)),
        problems: &report.problems,
        skipped: &report.skipped,
        superseded: &report.superseded,
    };
    render_template("ingest/report.html", page)
}
