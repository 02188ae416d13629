//! `--format prometheus`: the report as a node_exporter textfile-collector file (Prometheus text
//! exposition format 0.0.4): per-host status and state, per-check failure and status gauges,
//! result times, consistency outliers and file counts, and the NIC facts each host's latest
//! result records (transceiver temperature and power, link and PCIe speed and width, RoCE
//! counters, LLDP neighbour), every sample labelled with the cluster, per-NIC ones also with
//! `host`, `nic` (the planned `ib_dev`) and `netdev`. Write it with `-o DIR/roce-gen.prom`,
//! which replaces the file atomically as the collector requires. The metric names are constants
//! here because `roce-gen dashboard` queries them: renaming one breaks dashboards in the field.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::ingest::render::clean;
use crate::ingest::report::{ClusterReport, HostReport, State};
use crate::ingest::result::{Status, pcie_gts};

/// `roce_gen_host_ok`: 1 when the host passed.
pub const HOST_OK: &str = "roce_gen_host_ok";
/// `roce_gen_check_status{check}`: 0 pass, 1 changed, 2 skip, 3 warn, 4 fail.
pub const CHECK_STATUS: &str = "roce_gen_check_status";
/// `roce_gen_nic_module_temperature_celsius`.
pub const MODULE_TEMPERATURE: &str = "roce_gen_nic_module_temperature_celsius";
/// `roce_gen_nic_module_tx_power_dbm{lane}`.
pub const MODULE_TX_POWER: &str = "roce_gen_nic_module_tx_power_dbm";
/// `roce_gen_nic_module_rx_power_dbm{lane}`.
pub const MODULE_RX_POWER: &str = "roce_gen_nic_module_rx_power_dbm";
/// `roce_gen_nic_module_info{vendor,part_number}`: always 1.
pub const MODULE_INFO: &str = "roce_gen_nic_module_info";
/// `roce_gen_nic_link_speed_mbps`.
pub const LINK_SPEED: &str = "roce_gen_nic_link_speed_mbps";
/// `roce_gen_nic_link_max_speed_mbps`.
pub const LINK_MAX_SPEED: &str = "roce_gen_nic_link_max_speed_mbps";
/// `roce_gen_nic_link_width`: lanes.
pub const LINK_WIDTH: &str = "roce_gen_nic_link_width";
/// `roce_gen_nic_pcie_speed_gts`.
pub const PCIE_SPEED: &str = "roce_gen_nic_pcie_speed_gts";
/// `roce_gen_nic_pcie_max_speed_gts`.
pub const PCIE_MAX_SPEED: &str = "roce_gen_nic_pcie_max_speed_gts";
/// `roce_gen_nic_pcie_width`.
pub const PCIE_WIDTH: &str = "roce_gen_nic_pcie_width";
/// `roce_gen_nic_pcie_max_width`.
pub const PCIE_MAX_WIDTH: &str = "roce_gen_nic_pcie_max_width";
/// `roce_gen_nic_counter{counter}`.
pub const NIC_COUNTER: &str = "roce_gen_nic_counter";
/// `roce_gen_nic_neighbor_info{switch,port,source}`: always 1.
pub const NEIGHBOR_INFO: &str = "roce_gen_nic_neighbor_info";

/// One metric family: its samples are written together under one HELP and TYPE, sorted by
/// labels. A label set added twice (a result listing a check twice) keeps the larger value:
/// the collector rejects a whole file with a repeated series.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: BTreeMap<Vec<(&'static str, String)>, f64>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Self {
        Family {
            name,
            help,
            samples: BTreeMap::new(),
        }
    }

    fn add(&mut self, labels: Vec<(&'static str, String)>, value: impl TryInto<i64>) {
        // Counts are far below 2^53, where f64 is exact.
        #[allow(clippy::cast_precision_loss)]
        let value = value.try_into().unwrap_or(i64::MAX) as f64;
        self.add_f64(labels, value);
    }

    fn add_f64(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        self.samples
            .entry(labels)
            .and_modify(|v| *v = v.max(value))
            .or_insert(value);
    }

    fn write(&self, out: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.samples {
            let labels: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = writeln!(
                out,
                "{}{{{}}} {}",
                self.name,
                labels.join(","),
                number(*value)
            );
        }
    }
}

/// A sample value as the text format writes it: integers without a fraction (as before floats
/// were carried), infinities as `+Inf`/`-Inf`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        // In range and integral: the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let n = v as i64;
        n.to_string()
    } else {
        v.to_string()
    }
}

fn status_code(s: Status) -> i64 {
    match s {
        Status::Pass => 0,
        Status::Changed => 1,
        Status::Skip => 2,
        Status::Warn => 3,
        Status::Fail => 4,
    }
}

/// A label value: control characters made visible, then `\`, `"` and newline escaped as the
/// exposition format requires.
fn escape_label(v: &str) -> String {
    clean(v)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn state_label(state: State) -> &'static str {
    match state {
        State::Configured => "configured",
        State::Prechecked => "prechecked",
        State::Pending => "pending",
        State::Drifted => "drifted",
        State::RolledBack => "rolled_back",
        State::Failed => "failed",
        State::Missing => "missing",
    }
}

/// The report in the Prometheus text format.
pub fn render(report: &ClusterReport) -> String {
    let cluster = report.cluster.clone().unwrap_or_default();
    let c = || ("cluster", cluster.clone());
    let host_labels = |h: &HostReport| vec![c(), ("host", h.host.clone())];

    let mut ok = Family::new(
        "roce_gen_ok",
        "1 when every planned host passed and every result file was readable (ingest exit status 0).",
    );
    ok.add(vec![c()], u8::from(report.ok));

    let mut hosts = Family::new(
        "roce_gen_hosts",
        "Hosts by status: configured, prechecked, rolled_back, failed, missing, stale, unplanned.",
    );
    let t = &report.totals;
    for (status, n) in [
        ("configured", t.configured),
        ("prechecked", t.prechecked),
        ("rolled_back", t.rolled_back),
        ("failed", t.failed),
        ("missing", t.missing),
        ("stale", t.stale),
        ("unplanned", t.unplanned),
    ] {
        hosts.add(vec![c(), ("status", status.to_string())], n);
    }

    let mut files = Family::new(
        "roce_gen_ingest_files",
        "Files ingest read, by outcome: used, superseded, skipped (not results), problem (unreadable).",
    );
    for (outcome, n) in [
        ("used", t.used),
        ("superseded", t.superseded),
        ("skipped", t.skipped),
        ("problem", t.problems),
    ] {
        files.add(vec![c(), ("outcome", outcome.to_string())], n);
    }

    let mut host_ok = Family::new(
        HOST_OK,
        "1 when the host's latest result is from this plan and did not fail, 0 when it failed, is missing or stale.",
    );
    let mut planned = Family::new(
        "roce_gen_host_planned",
        "1 when the host is in the plan given to ingest, 0 when only results name it.",
    );
    let mut stale = Family::new(
        "roce_gen_host_stale",
        "1 when the host's results were all made from another plan than the one given.",
    );
    let mut state = Family::new(
        "roce_gen_host_state",
        "The state the host's latest result gives: 1 for the state it is in, 0 for the others.",
    );
    let mut checks = Family::new(
        "roce_gen_host_checks",
        "Checks of the host's latest result, by check status.",
    );
    let mut finished = Family::new(
        "roce_gen_host_result_timestamp_seconds",
        "When the host's latest result was written (finished_at), in seconds since the epoch.",
    );
    let mut failed = Family::new(
        "roce_gen_check_failed",
        "1 when the check failed in the host's latest result, 0 when it did not; nic is empty for host-wide checks.",
    );
    for h in &report.hosts {
        host_ok.add(host_labels(h), u8::from(h.ok));
        if let Some(p) = h.planned {
            planned.add(host_labels(h), u8::from(p));
        }
        if report.plan.is_some() {
            stale.add(host_labels(h), u8::from(h.stale));
        }
        for s in State::ALL {
            let mut labels = host_labels(h);
            labels.push(("state", state_label(s).to_string()));
            state.add(labels, u8::from(h.state == s));
        }
        let Some(run) = &h.latest else {
            continue;
        };
        for (status, n) in [
            ("pass", run.counts.pass),
            ("warn", run.counts.warn),
            ("fail", run.counts.fail),
            ("skip", run.counts.skip),
            ("changed", run.counts.changed),
        ] {
            let mut labels = host_labels(h);
            labels.push(("status", status.to_string()));
            checks.add(labels, n);
        }
        if let Ok(ts) = run.finished_at.parse::<jiff::Timestamp>() {
            let mut labels = host_labels(h);
            labels.push(("phase", run.phase.as_str().to_string()));
            finished.add(labels, ts.as_second());
        }
    }
    let mut check_status = Family::new(
        CHECK_STATUS,
        "Status of each check of the host's latest result: 0 pass, 1 changed, 2 skip, 3 warn, 4 fail; nic and netdev are empty for host-wide checks.",
    );
    // Every check gets a series, 0 or 1, so a fixed failure shows as a drop to 0 rather than a
    // series that disappears.
    for h in &report.hosts {
        for check in &h.checks {
            let mut labels = host_labels(h);
            labels.push(("check", check.id.clone()));
            labels.push(("nic", check.nic.clone().unwrap_or_default()));
            failed.add(labels, u8::from(check.status == Status::Fail));
            let nic = check.nic.clone().unwrap_or_default();
            let netdev = h.netdevs.get(&nic).cloned().unwrap_or_default();
            check_status.add(
                vec![
                    c(),
                    ("host", h.host.clone()),
                    ("nic", nic),
                    ("netdev", netdev),
                    ("check", check.id.clone()),
                ],
                status_code(check.status),
            );
        }
    }
    let nic_families = nic_facts(report, &cluster);

    let mut outlier = Family::new(
        "roce_gen_fact_outlier",
        "1 for a host whose value of a fact differs from the one most hosts have.",
    );
    let mut fact_hosts = Family::new(
        "roce_gen_fact_hosts",
        "Hosts that have each value of a fact that should agree across hosts.",
    );
    for g in &report.consistency {
        let scope = g.scope.clone().unwrap_or_default();
        for (i, v) in g.values.iter().enumerate() {
            fact_hosts.add(
                vec![
                    c(),
                    ("fact", g.fact.clone()),
                    ("scope", scope.clone()),
                    ("value", v.value.clone()),
                ],
                v.count,
            );
            if i == 0 {
                continue;
            }
            for host in &v.hosts {
                outlier.add(
                    vec![
                        c(),
                        ("host", host.clone()),
                        ("fact", g.fact.clone()),
                        ("scope", scope.clone()),
                        ("value", v.value.clone()),
                    ],
                    1,
                );
            }
        }
    }

    let mut out = String::new();
    for family in [
        &ok,
        &hosts,
        &files,
        &host_ok,
        &planned,
        &stale,
        &state,
        &checks,
        &finished,
        &failed,
        &fact_hosts,
        &outlier,
        &check_status,
    ] {
        family.write(&mut out);
    }
    for family in &nic_families {
        family.write(&mut out);
    }
    out
}

/// The families of the NIC facts, each sample labelled cluster, host, nic, netdev.
fn nic_facts(report: &ClusterReport, cluster: &str) -> Vec<Family> {
    let mut temp = Family::new(
        MODULE_TEMPERATURE,
        "Transceiver module temperature in degrees Celsius (ethtool -m).",
    );
    let mut tx = Family::new(
        MODULE_TX_POWER,
        "Transceiver transmit power per lane in dBm (ethtool -m); -Inf for a dark lane.",
    );
    let mut rx = Family::new(
        MODULE_RX_POWER,
        "Transceiver receive power per lane in dBm (ethtool -m); -Inf for a dark lane.",
    );
    let mut info = Family::new(
        MODULE_INFO,
        "The transceiver module: vendor and part number in labels; always 1.",
    );
    let mut speed = Family::new(LINK_SPEED, "Link speed in Mb/s (sysfs).");
    let mut max_speed = Family::new(
        LINK_MAX_SPEED,
        "The fastest link mode the port supports, in Mb/s (ethtool).",
    );
    let mut width = Family::new(LINK_WIDTH, "Lanes of the link (ethtool).");
    let mut pcie_speed = Family::new(PCIE_SPEED, "Current PCIe link speed in GT/s (sysfs).");
    let mut pcie_max_speed = Family::new(
        PCIE_MAX_SPEED,
        "The fastest PCIe link speed the device supports, in GT/s (sysfs).",
    );
    let mut pcie_width = Family::new(PCIE_WIDTH, "Current PCIe link width in lanes (sysfs).");
    let mut pcie_max_width = Family::new(
        PCIE_MAX_WIDTH,
        "The widest PCIe link the device supports, in lanes (sysfs).",
    );
    let mut counter = Family::new(
        NIC_COUNTER,
        "RoCE health and pause counters (hw_counters, ethtool -S) as the run found them: a baseline, not a live counter.",
    );
    let mut neighbor = Family::new(
        NEIGHBOR_INFO,
        "The switch and port LLDP shows at the other end of the NIC's cable; always 1.",
    );
    for h in &report.hosts {
        for (nic, n) in &h.nics {
            let base = || {
                vec![
                    ("cluster", cluster.to_string()),
                    ("host", h.host.clone()),
                    ("nic", nic.clone()),
                    ("netdev", n.netdev.clone()),
                ]
            };
            let with = |k: &'static str, v: String| {
                let mut l = base();
                l.push((k, v));
                l
            };
            if let Some(t) = &n.transceiver {
                let mut l = base();
                l.push(("vendor", t.vendor.clone()));
                l.push(("part_number", t.part_number.clone()));
                info.add(l, 1);
                if let Some(c) = t.temperature_c {
                    temp.add_f64(base(), c);
                }
                for (family, lanes) in [(&mut tx, &t.tx_power_dbm), (&mut rx, &t.rx_power_dbm)] {
                    for (lane, dbm) in (1..).zip(lanes) {
                        family.add_f64(
                            with("lane", format!("{lane}")),
                            dbm.unwrap_or(f64::NEG_INFINITY),
                        );
                    }
                }
            }
            for (family, value) in [
                (&mut speed, n.speed_mbps),
                (&mut max_speed, n.max_speed_mbps),
                (&mut width, n.width),
                (&mut pcie_speed, n.pcie_speed.as_deref().and_then(pcie_gts)),
                (
                    &mut pcie_max_speed,
                    n.pcie_max_speed.as_deref().and_then(pcie_gts),
                ),
                (&mut pcie_width, n.pcie_width),
                (&mut pcie_max_width, n.pcie_max_width),
            ] {
                if let Some(v) = value {
                    family.add_f64(base(), v);
                }
            }
            for (name, v) in &n.counters {
                counter.add_f64(with("counter", name.clone()), *v);
            }
            if let Some(nb) = &n.neighbor
                && !(nb.switch.is_empty() && nb.port.is_empty())
            {
                let mut l = base();
                l.push(("switch", nb.switch.clone()));
                l.push(("port", nb.port.clone()));
                l.push(("source", nb.source.clone()));
                neighbor.add(l, 1);
            }
        }
    }
    vec![
        temp,
        tx,
        rx,
        info,
        speed,
        max_speed,
        width,
        pcie_speed,
        pcie_max_speed,
        pcie_width,
        pcie_max_width,
        counter,
        neighbor,
    ]
}
