//! `--format prometheus`: the report as a node_exporter textfile-collector file (Prometheus text
//! exposition format 0.0.4): the cluster's verdict and counts; per host its state, check counts,
//! result time, whether a firmware value waits for a reboot, and the facts it differs from most
//! hosts in; a series per check that warned or failed; and the NIC facts each host's latest
//! result records (transceiver temperature and power, link and PCIe speed and width, RoCE
//! counters, RoCE v2 GID index, LLDP neighbour); and the fabric matrix (per port its measured
//! rate, its share of the link, pass or fail, each fabric check); and the GPU path (per host
//! whether NCCL will use GPUDirect RDMA, per planned port its GPU path checks' worst status).
//! Every sample is labelled
//! with the cluster, per-host ones with `host`, per-NIC ones also with `nic` (the planned
//! `ib_dev`) and `netdev`. Write it with `-o DIR/roce-gen.prom`, which replaces the file
//! atomically as the collector requires.
//!
//! The names and the series bound are in [`crate::ingest::metrics`], which `roce-gen dashboard`
//! queries too; `promtool check metrics` finds nothing in the output.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::ingest::metrics::*;
use crate::ingest::render::clean;
use crate::ingest::report::{ClusterReport, HostReport, State, Status};

/// Whether a NIC counter is one of those exported.
fn exported_counter(name: &str) -> bool {
    if COUNTERS.contains(&name) {
        return true;
    }
    let prio = name
        .strip_prefix("rx_prio")
        .or_else(|| name.strip_prefix("tx_prio"))
        .and_then(|rest| rest.strip_suffix("_pause"));
    prio.is_some_and(|p| p.len() == 1 && p.parse::<usize>().is_ok_and(|n| n < PRIORITIES))
}

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

/// The `state` label of a host state: the one place the metrics name the states.
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

/// What `roce_gen_hosts` counts a host as: not in the plan, stale, or its state.
fn host_status(h: &HostReport) -> &'static str {
    if !h.counted() {
        "unplanned"
    } else if h.stale {
        "stale"
    } else {
        state_label(h.state)
    }
}

/// The report in the Prometheus text format.
pub(crate) fn render(report: &ClusterReport) -> String {
    let cluster = report.cluster.clone().unwrap_or_default();
    let (fact_hosts, outlier, matches_plan) = facts(report, &cluster);
    let mut out = String::new();
    for family in cluster_families(report, &cluster)
        .iter()
        .chain(&host_families(report, &cluster))
        .chain([&fact_hosts, &outlier, &matches_plan])
        .chain(&nic_facts(report, &cluster))
        .chain(&fabric_families(report, &cluster))
        .chain(&gpu_families(report, &cluster))
    {
        family.write(&mut out);
    }
    out
}

/// `roce_gen_ok`, `roce_gen_hosts` and `roce_gen_ingest_files`: the verdict and the counts.
fn cluster_families(report: &ClusterReport, cluster: &str) -> [Family; 3] {
    let c = || ("cluster", cluster.to_string());
    let mut ok = Family::new(
        OK,
        "1 when every planned host passed and every result file was readable (ingest exit status 0).",
    );
    ok.add(vec![c()], u8::from(report.ok));

    let mut hosts = Family::new(
        HOSTS,
        "Hosts by status: the state of their latest result, stale (only results of another plan) or unplanned (not in the plan).",
    );
    // Every status has a series, 0 included, so a sum over time has no gaps.
    let mut by_status: BTreeMap<&str, usize> = State::ALL
        .iter()
        .map(|s| state_label(*s))
        .chain(["stale", "unplanned"])
        .map(|s| (s, 0))
        .collect();
    for h in &report.hosts {
        *by_status.entry(host_status(h)).or_default() += 1;
    }
    for (status, n) in by_status {
        hosts.add(vec![c(), ("status", status.to_string())], n);
    }

    let t = &report.totals;
    let mut files = Family::new(
        INGEST_FILES,
        "Files ingest read, by outcome: used, superseded, skipped (not results), problem (unreadable, or named or dated so that it cannot be used).",
    );
    for (outcome, n) in [
        ("used", t.used),
        ("superseded", t.superseded),
        ("skipped", t.skipped),
        ("problem", t.problems),
    ] {
        files.add(vec![c(), ("outcome", outcome.to_string())], n);
    }

    [ok, hosts, files]
}

/// The per-host families: readiness, plan membership, staleness, state, check counts, result
/// time, reboot, and a series per check that did not pass.
fn host_families(report: &ClusterReport, cluster: &str) -> [Family; 8] {
    let c = || ("cluster", cluster.to_string());
    let host_labels = |h: &HostReport| vec![c(), ("host", h.host.clone())];
    let mut host_ok = Family::new(
        HOST_OK,
        "1 when the host is ready (ingest's verdict): its latest result is from this plan and shows the plan in force (configured, or prechecked under --require prechecked); 0 when it is pending, drifted, rolled back, failed, missing or stale, or only prechecked.",
    );
    let mut planned = Family::new(
        HOST_PLANNED,
        "1 when the host is in the plan given to ingest, 0 when only results name it.",
    );
    let mut stale = Family::new(
        HOST_STALE,
        "1 when the host's results were all made from another plan than the one given.",
    );
    let mut state = Family::new(
        HOST_STATE,
        "The state the host's latest result gives: 1 for the state it is in, 0 for the others.",
    );
    let mut checks = Family::new(
        HOST_CHECKS,
        "Checks of the host's latest result, by check status.",
    );
    let mut finished = Family::new(
        HOST_RESULT_TIMESTAMP,
        "When the host's latest result was written (finished_at), in seconds since the epoch.",
    );
    let mut reboot = Family::new(
        HOST_REBOOT_REQUIRED,
        "1 when a firmware (NV) value the host's latest result read or set takes effect only at the next boot.",
    );
    let mut check_status = Family::new(
        CHECK_STATUS,
        "Checks of the host's latest result that did not pass: 3 warn, 4 fail; nic and netdev are empty for host-wide checks. Checks that pass, change or skip have no series.",
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
        // A check that stops failing loses its series; `roce_gen_host_checks` drops with it,
        // and one series per passing check would grow with every NIC and check there is.
        for check in h
            .checks
            .iter()
            .filter(|c| matches!(c.status, Status::Warn | Status::Fail))
        {
            let nic = check
                .nic
                .as_ref()
                .map(std::string::ToString::to_string)
                .unwrap_or_default();
            let netdev = h.netdevs.get(&nic).cloned().unwrap_or_default();
            check_status.add(
                vec![
                    c(),
                    ("host", h.host.clone()),
                    ("nic", nic),
                    ("netdev", netdev),
                    ("check", check.id.to_string()),
                ],
                status_code(check.status),
            );
        }
        let Some(run) = &h.latest else {
            continue;
        };
        for status in STATUSES {
            let counts = &run.counts;
            let n = match status {
                Status::Pass => counts.pass,
                Status::Warn => counts.warn,
                Status::Fail => counts.fail,
                Status::Skip => counts.skip,
                Status::Changed => counts.changed,
            };
            let mut labels = host_labels(h);
            labels.push(("status", status.as_str().to_string()));
            checks.add(labels, n);
        }
        if let Ok(ts) = run.finished_at.parse::<jiff::Timestamp>() {
            let mut labels = host_labels(h);
            labels.push(("phase", run.phase.as_str().to_string()));
            finished.add(labels, ts.as_second());
        }
        reboot.add(host_labels(h), u8::from(run.reboot_required));
    }

    [
        host_ok,
        planned,
        stale,
        state,
        checks,
        finished,
        reboot,
        check_status,
    ]
}

/// The fabric matrix, per host and port (at most [`MAX_FABRIC_PORTS`] a host): the rate
/// measured to the next host on the rail, its share of the link, whether the port passed, and
/// each fabric check's status. Labelled with the rail and, for the rate, the peer.
fn fabric_families(report: &ClusterReport, cluster: &str) -> [Family; 4] {
    let mut rate = Family::new(
        FABRIC_RATE,
        "The rate the fabric test measured from the port to the next host's port on its rail, in bytes per second (ib_write_bw).",
    );
    let mut ratio = Family::new(
        FABRIC_RATE_RATIO,
        "The fabric test's measured rate over the port's negotiated link speed.",
    );
    let mut ok = Family::new(
        FABRIC_PORT_OK,
        "1 when none of the port's fabric checks failed in the host's newest fabric result, 0 when one did.",
    );
    let mut checks = Family::new(
        FABRIC_CHECK_STATUS,
        "Each fabric check of the port in the host's newest fabric result: 0 pass, 2 skip, 3 warn, 4 fail.",
    );
    let Some(m) = &report.fabric else {
        return [rate, ratio, ok, checks];
    };
    let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
    for rail in &m.rails {
        for c in rail.cells.iter().flatten() {
            let n = per_host.entry(c.host.as_str()).or_default();
            *n += 1;
            if *n > MAX_FABRIC_PORTS {
                continue;
            }
            let netdev = report
                .hosts
                .iter()
                .find(|h| h.host == c.host)
                .and_then(|h| h.netdevs.get(&c.nic).cloned())
                .unwrap_or_default();
            let labels = || {
                vec![
                    ("cluster", cluster.to_string()),
                    ("host", c.host.clone()),
                    ("nic", c.nic.clone()),
                    ("netdev", netdev.clone()),
                    ("rail", rail.rail.clone()),
                ]
            };
            let with_peer = || {
                let mut l = labels();
                l.push(("peer", c.to.clone().unwrap_or_default()));
                l
            };
            if let Some(gbps) = c.gbps {
                rate.add_f64(with_peer(), gbps * 1e9 / 8.0);
                if let Some(link) = c.link_gbps.filter(|l| *l > 0.0) {
                    ratio.add_f64(with_peer(), gbps / link);
                }
            }
            ok.add(with_peer(), u8::from(c.status != Status::Fail));
            for (id, status) in c.statuses() {
                if let Some(status) = status {
                    let mut l = labels();
                    l.push(("check", id.to_string()));
                    checks.add(l, status_code(status));
                }
            }
        }
    }
    [rate, ratio, ok, checks]
}

/// `roce_gen_gpu_direct` per host whose latest result records a GPU path, and
/// `roce_gen_gpu_port_status` per planned port of it that its GPU checks name (a port a result
/// lists only among its pairs is not exported: a result cannot add NICs to the bound).
fn gpu_families(report: &ClusterReport, cluster: &str) -> [Family; 2] {
    let mut direct = Family::new(
        GPU_DIRECT,
        "1 when NCCL will use GPUDirect RDMA on the host (route peermem or dmabuf), 0 when it will stage GPU memory through host memory.",
    );
    let mut ports = Family::new(
        GPU_PORT_STATUS,
        "The worst of a planned port's GPU path checks (gpu_pair, pcie_acs, pcie_link, pcie_mrrs): 0 pass, 2 skip, 3 warn, 4 fail.",
    );
    for h in &report.hosts {
        let Some(g) = &h.gpu else { continue };
        let host = || vec![("cluster", cluster.to_string()), ("host", h.host.clone())];
        let mut l = host();
        l.push(("route", g.route.clone()));
        direct.add(l, u8::from(g.uses_gpu_direct()));
        let mut by_nic: BTreeMap<&str, (Vec<&str>, Vec<&str>, Status)> = BTreeMap::new();
        for p in g.pairs.iter().filter(|p| {
            [p.relation_check, p.acs_check, p.link_check, p.mrrs_check]
                .iter()
                .any(Option::is_some)
        }) {
            let e = by_nic
                .entry(p.pair.nic.as_str())
                .or_insert((Vec::new(), Vec::new(), p.status));
            e.0.push(&p.pair.gpu);
            e.1.push(&p.pair.relation);
            e.2 = p.status;
        }
        for (nic, (gpus, relations, status)) in by_nic {
            let mut l = host();
            l.push(("nic", nic.to_string()));
            l.push(("netdev", h.netdevs.get(nic).cloned().unwrap_or_default()));
            l.push(("gpus", gpus.join(",")));
            l.push(("relation", relations.join(",")));
            ports.add(l, status_code(status));
        }
    }
    [direct, ports]
}

/// `roce_gen_fact_hosts`, `roce_gen_fact_outlier` and `roce_gen_fact_matches_plan`. A host
/// whose NICs differ from most in more than one way (MTU 1500 on one, 9000 on another) has one
/// outlier series per fact, its values joined, so its series stay one per fact however many
/// NICs it has; the plan's series are one per fact of the cluster.
fn facts(report: &ClusterReport, cluster: &str) -> (Family, Family, Family) {
    let mut matches_plan = Family::new(
        FACT_MATCHES_PLAN,
        "1 when the value most hosts have of a fact is the planned one, 0 when it is another (also when every host has it); value is that most common value.",
    );
    let mut fact_hosts = Family::new(
        FACT_HOSTS,
        "Hosts that have each value of a fact that should agree across hosts.",
    );
    let mut outlier = Family::new(
        FACT_OUTLIER,
        "1 for a host whose value of a fact differs from the one most hosts have; value lists the host's values that differ.",
    );
    let mut outliers: BTreeMap<(&str, &str, String), BTreeSet<&str>> = BTreeMap::new();
    for g in &report.consistency {
        let scope = g.scope.clone().unwrap_or_default();
        if let (Some(planned), Some(common)) = (&g.planned, g.values.first()) {
            matches_plan.add(
                vec![
                    ("cluster", cluster.to_string()),
                    ("fact", g.fact.clone()),
                    ("scope", scope.clone()),
                    ("planned", planned.clone()),
                    ("value", common.value.clone()),
                ],
                u8::from(g.matches_plan),
            );
        }
        for (i, v) in g.values.iter().enumerate() {
            fact_hosts.add(
                vec![
                    ("cluster", cluster.to_string()),
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
                outliers
                    .entry((host.as_str(), g.fact.as_str(), scope.clone()))
                    .or_default()
                    .insert(v.value.as_str());
            }
        }
    }
    for ((host, fact, scope), values) in outliers {
        outlier.add(
            vec![
                ("cluster", cluster.to_string()),
                ("host", host.to_string()),
                ("fact", fact.to_string()),
                ("scope", scope),
                ("value", values.into_iter().collect::<Vec<_>>().join(", ")),
            ],
            1,
        );
    }
    (fact_hosts, outlier, matches_plan)
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
    let mut speed = Family::new(LINK_SPEED, "Link speed in bytes per second (sysfs).");
    let mut max_speed = Family::new(
        LINK_MAX_SPEED,
        "The fastest link mode the port supports, in bytes per second (ethtool).",
    );
    let mut width = Family::new(LINK_WIDTH, "Lanes of the link (ethtool).");
    let mut pcie_speed = Family::new(
        PCIE_SPEED,
        "Current PCIe link speed in transfers per second per lane (sysfs).",
    );
    let mut pcie_max_speed = Family::new(
        PCIE_MAX_SPEED,
        "The fastest PCIe link speed the device supports, in transfers per second per lane (sysfs).",
    );
    let mut pcie_width = Family::new(PCIE_WIDTH, "Current PCIe link width in lanes (sysfs).");
    let mut pcie_max_width = Family::new(
        PCIE_MAX_WIDTH,
        "The widest PCIe link the device supports, in lanes (sysfs).",
    );
    let mut events = Family::new(
        NIC_EVENTS,
        "RoCE health and pause counters (hw_counters, ethtool -S) as the run read them: a baseline, not a live counter.",
    );
    let mut gid_index = Family::new(
        GID_INDEX,
        "Index of the RoCE v2 GID that carries the NIC's planned address (NCCL_IB_GID_INDEX).",
    );
    let mut neighbor = Family::new(
        NEIGHBOR_INFO,
        "The switch and port LLDP shows at the other end of the NIC's cable; always 1.",
    );
    // Mb/s and GT/s as sysfs and ethtool give them, in base units.
    let bytes_per_second = |mbps: f64| mbps * 1e6 / 8.0;
    let per_second = |gts: f64| gts * 1e9;
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
            let pcie = h.pcie.get(nic).copied().unwrap_or_default();
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
                    for (lane, dbm) in (1..).zip(lanes.iter().take(MAX_LANES)) {
                        family.add_f64(
                            with("lane", format!("{lane}")),
                            dbm.unwrap_or(f64::NEG_INFINITY),
                        );
                    }
                }
            }
            for (family, value) in [
                (&mut speed, n.speed_mbps.map(bytes_per_second)),
                (&mut max_speed, n.max_speed_mbps.map(bytes_per_second)),
                (&mut width, n.width),
                (&mut pcie_speed, pcie.gts.map(per_second)),
                (&mut pcie_max_speed, pcie.max_gts.map(per_second)),
                (&mut pcie_width, n.pcie_width),
                (&mut pcie_max_width, n.pcie_max_width),
                (
                    &mut gid_index,
                    h.nic_config
                        .get(nic)
                        .and_then(|c| c.gid_index)
                        .map(f64::from),
                ),
            ] {
                if let Some(v) = value {
                    family.add_f64(base(), v);
                }
            }
            for (name, v) in n.counters.iter().filter(|(k, _)| exported_counter(k)) {
                events.add_f64(with("counter", name.clone()), *v);
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
        events,
        gid_index,
        neighbor,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_the_bundles_record_are_exported_and_others_are_not() {
        let probe = include_str!("../../../templates/host/lib-probe.sh");
        let hw = probe
            .lines()
            .find_map(|l| l.strip_prefix("RG_HW_COUNTERS=\""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("RG_HW_COUNTERS in lib-probe.sh");
        for name in hw.split_whitespace() {
            assert!(
                exported_counter(name),
                "{name} is recorded but not exported"
            );
        }
        for name in ["rx_pause_ctrl_phy", "tx_prio0_pause", "rx_prio7_pause"] {
            assert!(exported_counter(name), "{name}");
        }
        for name in [
            "rx_prio8_pause",
            "rx_prio33_pause",
            "tx_prio_pause",
            "rx_bytes",
            "",
        ] {
            assert!(!exported_counter(name), "{name}");
        }
        assert_eq!(MAX_COUNTERS, 25);
    }

    #[test]
    fn every_state_has_its_own_label() {
        let labels: BTreeSet<&str> = State::ALL.iter().map(|s| state_label(*s)).collect();
        assert_eq!(labels.len(), State::ALL.len());
    }
}
