//! Prometheus alerting rules derived from the plan, over the series the bundles' health runs
//! write (`health.sh`, docs/monitoring.md): which priorities are lossless (PFC) and so must
//! never drop, which are lossy and so must never see pause, whether 802.3x pause is planned,
//! how often the health file is refreshed; and over the fabric matrix `ingest --format
//! prometheus` exports, a port whose newest fabric test failed. Pure: a plan in, the rules
//! file's text out.
//!
//! The file is YAML whose every string is a JSON string (a JSON string is a YAML scalar), so no
//! plan value can break its structure.

use std::fmt::Write as _;

use crate::ingest::metrics::FABRIC_PORT_OK;
use crate::plan::model::{Plan, Priority};

/// One alerting rule.
struct Rule {
    alert: &'static str,
    expr: String,
    /// How long the condition must hold; `None` fires on the first evaluation.
    hold: Option<&'static str>,
    severity: &'static str,
    summary: String,
    description: String,
}

/// The metric names of the health run (lib-health.sh, docs/monitoring.md), one place for the
/// rules and the dashboard's live panels.
pub(crate) mod series {
    pub(crate) const PRIO_BYTES: &str = "roce_gen_health_priority_bytes_total";
    pub(crate) const PAUSE: &str = "roce_gen_health_priority_pause_frames_total";
    pub(crate) const GLOBAL_PAUSE: &str = "roce_gen_health_global_pause_frames_total";
    pub(crate) const STORM: &str = "roce_gen_health_pause_storm_events_total";
    pub(crate) const PRIO_DISCARDS: &str = "roce_gen_health_priority_discards_total";
    pub(crate) const RDMA: &str = "roce_gen_health_rdma_events_total";
    pub(crate) const DRIFT: &str = "roce_gen_health_drift";
    pub(crate) const DRIFT_UNREAD: &str = "roce_gen_health_drift_unread";
    pub(crate) const LINK_UP: &str = "roce_gen_health_link_up";
    pub(crate) const PRESENT: &str = "roce_gen_health_port_present";
    pub(crate) const TEMP: &str = "roce_gen_health_module_temperature_celsius";
    pub(crate) const TEMP_HIGH: &str = "roce_gen_health_module_temperature_high_celsius";
    pub(crate) const RX: &str = "roce_gen_health_module_rx_power_dbm";
    pub(crate) const RX_LOW: &str = "roce_gen_health_module_rx_power_low_dbm";
    pub(crate) const RX_HIGH: &str = "roce_gen_health_module_rx_power_high_dbm";
    pub(crate) const REBOOT: &str = "roce_gen_health_reboot_required";
    pub(crate) const RUN_TIME: &str = "roce_gen_health_run_timestamp_seconds";
    pub(crate) const RUN_OK: &str = "roce_gen_health_run_ok";
    pub(crate) const GPU_DIRECT: &str = "roce_gen_health_gpu_direct";
}

/// The port a per-port alert names, in its description.
const PORT: &str = "{{ $labels.nic }} ({{ $labels.netdev }}) on {{ $labels.host }}";
/// The labels that name a port, for matching one series of a port with another.
const ON_PORT: &str = "on (cluster, host, nic, netdev)";

/// The rules file for the plan's cluster.
pub(crate) fn rules(plan: &Plan) -> String {
    let mut out = String::new();
    let c = &plan.cluster;
    let _ = writeln!(
        out,
        "# Prometheus alerting rules of cluster {}, derived from its plan by roce-gen {} (roce-gen alerts).",
        c.cluster_name,
        env!("CARGO_PKG_VERSION")
    );
    out.push_str("# Over the series of the bundles' health runs and of ingest's fabric matrix (docs/monitoring.md). Regenerate after a plan change.\n");
    out.push_str("groups:\n");
    let _ = writeln!(
        out,
        "  - name: {}",
        q(&format!("roce-gen-{}", c.cluster_name))
    );
    out.push_str("    rules:\n");
    for rule in rule_list(plan) {
        let _ = writeln!(out, "      - alert: {}", rule.alert);
        let _ = writeln!(out, "        expr: {}", q(&rule.expr));
        if let Some(hold) = rule.hold {
            let _ = writeln!(out, "        for: {hold}");
        }
        out.push_str("        labels:\n");
        let _ = writeln!(out, "          severity: {}", rule.severity);
        out.push_str("        annotations:\n");
        let _ = writeln!(out, "          summary: {}", q(&rule.summary));
        let _ = writeln!(out, "          description: {}", q(&rule.description));
    }
    out
}

/// A YAML scalar: a JSON string.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `3`, `3,4` or `none`.
fn list(prios: &[u8]) -> String {
    if prios.is_empty() {
        "none".into()
    } else {
        prios
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A label matcher `priority=~"3|4"` for these priorities (never empty: `[0-7]` for all).
fn prio_re(prios: &[u8]) -> String {
    prios
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join("|")
}

fn rule_list(plan: &Plan) -> Vec<Rule> {
    let c = &plan.cluster;
    let cl = format!("cluster={}", q(c.cluster_name.as_str()));
    let lossless: Vec<u8> = c.pfc_priorities.iter().map(Priority::get).collect();
    let lossy: Vec<u8> = (0..8).filter(|p| !lossless.contains(p)).collect();
    let profile = format!(
        "the plan: trust {}, RoCE DSCP {} on priority {}, CNP DSCP {} on priority {}, PFC on {}, ECN on {}, global pause {}",
        c.trust.as_str(),
        c.roce_dscp.get(),
        c.roce_priority.get(),
        c.cnp_dscp.get(),
        c.cnp_priority.get(),
        list(&lossless),
        list(
            &c.ecn_priorities
                .iter()
                .map(Priority::get)
                .collect::<Vec<_>>()
        ),
        c.global_pause.as_str()
    );
    // Three missed runs, and a minute for the scrape.
    let stale = 3 * u64::from(c.health.interval) + 60;
    let mut rules = Vec::new();
    if !lossy.is_empty() {
        rules.push(Rule {
            alert: "RoceGenPauseOnLossyPriority",
            expr: format!(
                "increase({}{{{cl},priority=~\"{}\"}}[5m]) > 0",
                series::PAUSE,
                prio_re(&lossy)
            ),
            hold: None,
            severity: "warning",
            summary: "PFC pause frames on a priority the plan keeps lossy".into(),
            description: format!(
                "{PORT} counted {{{{ $value | printf \"%.0f\" }}}} {{{{ $labels.direction }}}} pause frames on priority {{{{ $labels.priority }}}} in 5 minutes; the plan has PFC on {} only, so PFC is on where it should not be (the host's or the switch's): compare mlnx_qos -i {{{{ $labels.netdev }}}} with {profile}",
                list(&lossless)
            ),
        });
    }
    if c.global_pause.as_str() == "off" {
        rules.push(Rule {
            alert: "RoceGenGlobalPauseWhilePlannedOff",
            expr: format!("increase({}{{{cl}}}[5m]) > 0", series::GLOBAL_PAUSE),
            hold: None,
            severity: "warning",
            summary: "802.3x pause frames while the plan turns global pause off".into(),
            description: format!(
                "{PORT} counted {{{{ $value | printf \"%.0f\" }}}} {{{{ $labels.direction }}}} 802.3x pause frames in 5 minutes; the plan says global_pause = off: check ethtool -a {{{{ $labels.netdev }}}} and the switch port"
            ),
        });
    }
    rules.push(Rule {
        alert: "RoceGenPauseStorm",
        expr: format!("increase({}{{{cl}}}[5m]) > 0", series::STORM),
        hold: None,
        severity: "critical",
        summary: "PFC pause storm".into(),
        description: format!(
            "{PORT}: the NIC's stall watchdog saw {{{{ $value | printf \"%.0f\" }}}} pause storm {{{{ $labels.level }}}} events in 5 minutes (a receiver that stops draining its lossless queue, priority {} in {profile}): find the host that pauses without end",
            list(&lossless)
        ),
    });
    rules.push(Rule {
        alert: "RoceGenEcnMarksWithoutCnp",
        expr: format!(
            "increase({rdma}{{{cl},counter=\"np_ecn_marked_roce_packets\"}}[10m]) > 0 and {ON_PORT} increase({rdma}{{{cl},counter=\"np_cnp_sent\"}}[10m]) == 0",
            rdma = series::RDMA
        ),
        hold: None,
        severity: "warning",
        summary: "ECN-marked RoCE packets arrive but no CNP is sent".into(),
        description: format!(
            "{PORT} received {{{{ $value | printf \"%.0f\" }}}} ECN-marked RoCE packets in 10 minutes and sent no CNP: DCQCN's notification point is off (ecn/roce_np/enable of the marked priority) where {profile}"
        ),
    });
    rules.push(Rule {
        alert: "RoceGenCnpsNotHandled",
        expr: format!(
            "sum by (cluster) (increase({rdma}{{{cl},counter=\"np_cnp_sent\"}}[10m])) > 0 and on (cluster) sum by (cluster) (increase({rdma}{{{cl},counter=\"rp_cnp_handled\"}}[10m])) == 0",
            rdma = series::RDMA
        ),
        hold: None,
        severity: "warning",
        summary: "CNPs are sent in the cluster but no sender handles them".into(),
        description: format!(
            "Cluster {{{{ $labels.cluster }}}} sent {{{{ $value | printf \"%.0f\" }}}} CNPs in 10 minutes and no port handled one: DCQCN's reaction point is off (ecn/roce_rp/enable), or the CNPs (DSCP {} on priority {}) are lost on the way",
            c.cnp_dscp.get(),
            c.cnp_priority.get()
        ),
    });
    if !lossless.is_empty() {
        rules.push(Rule {
            alert: "RoceGenLosslessDiscards",
            expr: format!(
                "increase({}{{{cl},priority=~\"{}\"}}[5m]) > 0",
                series::PRIO_DISCARDS,
                prio_re(&lossless)
            ),
            hold: None,
            severity: "critical",
            summary: "Discards on a lossless priority".into(),
            description: format!(
                "{PORT} discarded {{{{ $value | printf \"%.0f\" }}}} packets ({{{{ $labels.kind }}}}) on priority {{{{ $labels.priority }}}} in 5 minutes, which the plan keeps lossless (PFC on {}): buffers too small for the cable length or PFC off on a hop",
                list(&lossless)
            ),
        });
    }
    rules.push(Rule {
        alert: "RoceGenSequenceErrors",
        expr: format!(
            "increase({}{{{cl},counter=~\"out_of_sequence|packet_seq_err\"}}[5m]) > 0",
            series::RDMA
        ),
        hold: None,
        severity: "warning",
        summary: "RoCE packets lost on a lossless fabric".into(),
        description: format!(
            "{PORT} counted {{{{ $value | printf \"%.0f\" }}}} {{{{ $labels.counter }}}} in 5 minutes: RoCE packets were lost although priority {} is planned lossless (PFC on {})",
            c.roce_priority.get(),
            list(&lossless)
        ),
    });
    // The fabric test runs once, after apply; ingest exports its newest result per port, so the
    // alert stands until a new fabric result that passes is ingested.
    rules.push(Rule {
        alert: "RoceGenFabricPortFailed",
        expr: format!("{FABRIC_PORT_OK}{{{cl}}} == 0"),
        hold: None,
        severity: "warning",
        summary: "A port failed the fabric test".into(),
        description: format!(
            "{PORT} failed its newest fabric test on rail {{{{ $labels.rail }}}}, sending to {{{{ $labels.peer }}}}: roce_gen_fabric_check_status names the check and the report's fabric matrix both ends and their switch ports. The plan wants at least {}% of the link on priority {} without loss; fix the link, then run fabric.sh on the hosts again and ingest the results",
            c.fabric.min_pct,
            c.roce_priority.get()
        ),
    });
    rules.push(Rule {
        alert: "RoceGenDrift",
        expr: format!("{}{{{cl}}} == 1", series::DRIFT),
        hold: None,
        severity: "warning",
        summary: "A planned setting no longer reads as planned".into(),
        description: format!(
            "{{{{ $labels.setting }}}} of {PORT} no longer reads as planned ({profile}; the MTU and DCQCN values per port in the bundle's plan.sh): a firmware update, driver reload or another tool changed it; run apply.sh again"
        ),
    });
    rules.push(Rule {
        alert: "RoceGenDriftUnread",
        expr: format!("{}{{{cl}}} == 1", series::DRIFT_UNREAD),
        hold: None,
        severity: "warning",
        summary: "The drift check cannot read a planned setting".into(),
        description: format!(
            "The drift check could not read {{{{ $labels.setting }}}} of {PORT}, so its drift is unknown: journalctl -u roce-gen-health-{}.service says why",
            c.cluster_name
        ),
    });
    rules.push(Rule {
        alert: "RoceGenLinkDown",
        expr: format!(
            "{}{{{cl}}} == 0 or {}{{{cl}}} == 0",
            series::LINK_UP,
            series::PRESENT
        ),
        hold: Some("1m"),
        severity: "critical",
        summary: "A planned RoCE port is down or missing".into(),
        description: format!(
            "{PORT} is down or missing for a minute: the plan has it as a RoCE port of cluster {}",
            c.cluster_name
        ),
    });
    rules.push(Rule {
        alert: "RoceGenOpticsHot",
        expr: format!(
            "{}{{{cl}}} > {ON_PORT} {}",
            series::TEMP,
            series::TEMP_HIGH
        ),
        hold: Some("5m"),
        severity: "warning",
        summary: "An optic runs above its temperature warning threshold".into(),
        description: format!(
            "The module of {PORT} is at {{{{ $value | printf \"%.1f\" }}}} C, above its own high temperature warning threshold: check the airflow, then clean or replace the optic"
        ),
    });
    rules.push(Rule {
        alert: "RoceGenOpticsRxPower",
        expr: format!(
            "{rx}{{{cl}}} < {ON_PORT} group_left {} or {rx}{{{cl}}} > {ON_PORT} group_left {}",
            series::RX_LOW,
            series::RX_HIGH,
            rx = series::RX
        ),
        hold: Some("5m"),
        severity: "warning",
        summary: "An optic's receive power is outside its warning thresholds".into(),
        description: format!(
            "Lane {{{{ $labels.lane }}}} of the module of {PORT} receives {{{{ $value | printf \"%.1f\" }}}} dBm, outside the module's own warning thresholds: clean or replace the optic or the cable"
        ),
    });
    rules.push(Rule {
        alert: "RoceGenRebootPending",
        expr: format!("{}{{{cl}}} == 1", series::REBOOT),
        hold: None,
        severity: "info",
        summary: "Firmware values wait for a reboot".into(),
        description: format!(
            "{{{{ $labels.host }}}}: apply set firmware (NV) values that take effect at the next boot (firmware_config = {}); reboot the host",
            c.firmware_config.as_str()
        ),
    });
    rules.push(Rule {
        alert: "RoceGenHealthStale",
        expr: format!("time() - {}{{{cl}}} > {stale}", series::RUN_TIME),
        hold: None,
        severity: "warning",
        summary: "The health file is not refreshed".into(),
        description: format!(
            "{{{{ $labels.host }}}}: the last health run wrote its file {{{{ $value | printf \"%.0f\" }}}} s ago, more than {stale} s; it runs every {} s (roce-gen-health-{}.timer): check systemctl status roce-gen-health-{}.service",
            c.health.interval, c.cluster_name, c.cluster_name
        ),
    });
    if c.health.enabled {
        // A host whose health run never wrote its file has no series for the rules above to
        // judge (a textfile folder the service cannot write, a node_exporter that reads another
        // folder): the plan knows how many hosts should report.
        let n = plan.hosts.len();
        rules.push(Rule {
            alert: "RoceGenHealthMissing",
            expr: format!(
                "(count by (cluster) ({}{{{cl}}}) or label_replace(vector(0), \"cluster\", {}, \"\", \"\")) < {n}",
                series::RUN_TIME,
                q(c.cluster_name.as_str())
            ),
            hold: Some("5m"),
            severity: "warning",
            summary: "Planned hosts write no health file".into(),
            description: format!(
                "Only {{{{ $value | printf \"%.0f\" }}}} of the {n} planned hosts of cluster {} have a health series ({}): on a host without one, apply's check health says whether roce-gen-health-{}.timer is installed and can write health_textfile_dir, and node_exporter must read that folder (--collector.textfile.directory)",
                c.cluster_name,
                series::RUN_TIME,
                c.cluster_name
            ),
        });
    }
    // Only a host whose plan names GPUs has the series; a rule without one never fires.
    rules.push(Rule {
        alert: "RoceGenGpuDirectOff",
        expr: format!("{}{{{cl}}} == 0", series::GPU_DIRECT),
        hold: Some("5m"),
        severity: "critical",
        summary: "NCCL will run without GPUDirect RDMA".into(),
        description: format!(
            "{{{{ $labels.host }}}}: NCCL will not use GPUDirect RDMA there (no peer-memory path its version looks for and no DMA-BUF route: a peer-memory module gone after a driver upgrade, as a rule), so GPU memory is staged through host memory at a fraction of the line rate: run precheck.sh of cluster {}, whose check gpu_direct says why and what to load",
            c.cluster_name
        ),
    });
    rules.push(Rule {
        alert: "RoceGenHealthIncomplete",
        expr: format!("{}{{{cl}}} == 0", series::RUN_OK),
        hold: Some("5m"),
        severity: "warning",
        summary: "The health run cannot read every planned port".into(),
        description: format!(
            "{{{{ $labels.host }}}}: the health run of cluster {} misses a planned port or its counters (see roce_gen_health_port_present and journalctl -u roce-gen-health-{}.service)",
            c.cluster_name, c.cluster_name
        ),
    });
    rules
}
