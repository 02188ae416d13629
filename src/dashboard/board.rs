//! The dashboard itself: panels over the metrics `ingest --format prometheus` exports
//! ([`crate::ingest::metrics`] names them) and, live, over the health runs' series
//! ([`crate::alerts::series`]), per cluster, host and NIC, chosen with dashboard
//! variables. Pure: the JSON model is built here; `cmd::dashboard` writes it or pushes it.
//!
//! The model is Grafana's dashboard JSON (schema version 39), importable offline through
//! Dashboards → Import. Panels query one Prometheus data source: the uid given
//! (`prometheus_uid` of EasyRoCE's config), or, without one, a `datasource` variable the person
//! importing picks, so the file works on any Grafana.

use serde_json::{Value, json};

use crate::alerts::series as live;
use crate::ingest::metrics as m;

/// The dashboard's uid: stable, so a push replaces the dashboard instead of adding another.
pub(crate) const UID: &str = "roce-gen-nics";

pub(crate) const TITLE: &str = "RoCE NICs (roce-gen)";

/// Grafana's dashboard schema version the model follows.
const SCHEMA_VERSION: u32 = 39;

/// The selector every query carries: the three variables.
const SEL: &str = r#"cluster=~"$cluster",host=~"$host""#;
const SEL_NIC: &str = r#"cluster=~"$cluster",host=~"$host",nic=~"$nic""#;

/// The dashboard JSON. `datasource_uid` is the Prometheus data source's uid, or `None` for a
/// data source variable.
pub(crate) fn build(datasource_uid: Option<&str>) -> Value {
    let ds = match datasource_uid {
        Some(uid) => json!({"type": "prometheus", "uid": uid}),
        None => json!({"type": "prometheus", "uid": "${datasource}"}),
    };
    let mut variables = Vec::new();
    if datasource_uid.is_none() {
        variables.push(json!({
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "current": {},
            "hide": 0,
        }));
    }
    for (name, label, query) in [
        (
            "cluster",
            "Cluster",
            format!("label_values({}, cluster)", m::HOST_OK),
        ),
        (
            "host",
            "Host",
            format!(
                r#"label_values({}{{cluster=~"$cluster"}}, host)"#,
                m::HOST_OK
            ),
        ),
        (
            "nic",
            "NIC",
            format!("label_values({}{{{SEL}}}, nic)", m::LINK_SPEED),
        ),
    ] {
        variables.push(json!({
            "name": name,
            "label": label,
            "type": "query",
            "datasource": ds,
            "query": {"query": query, "refId": format!("{name}-values")},
            "definition": query,
            "refresh": 2,
            "includeAll": true,
            "multi": true,
            "allValue": ".*",
            "current": {"text": ["All"], "value": ["$__all"]},
            "sort": 1,
            "hide": 0,
        }));
    }

    let mut layout = Layout::default();
    let panels = vec![
        layout.stat(
            &ds,
            "Hosts that passed",
            &format!("sum({}{{{SEL}}})", m::HOST_OK),
            "green",
        ),
        layout.stat(
            &ds,
            "Checks failing",
            &format!(
                r#"sum({}{{{SEL},status="fail"}}) or vector(0)"#,
                m::HOST_CHECKS
            ),
            "red",
        ),
        layout.stat(
            &ds,
            "Checks warning",
            &format!(
                r#"sum({}{{{SEL},status="warn"}}) or vector(0)"#,
                m::HOST_CHECKS
            ),
            "orange",
        ),
        layout.stat(
            &ds,
            "Hottest module (°C)",
            &format!("max({}{{{SEL_NIC}}})", m::MODULE_TEMPERATURE),
            "blue",
        ),
        layout.timeseries(
            &ds,
            "Module temperature",
            "celsius",
            &[(
                format!("{}{{{SEL_NIC}}}", m::MODULE_TEMPERATURE),
                "{{host}} {{nic}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "Link and PCIe speed",
            "none",
            &[
                (
                    // Bytes per second and transfers per second, as people quote them.
                    format!("{}{{{SEL_NIC}}} * 8 / 1e9", m::LINK_SPEED),
                    "{{host}} {{nic}} link Gb/s",
                ),
                (
                    format!("{}{{{SEL_NIC}}} / 1e9", m::PCIE_SPEED),
                    "{{host}} {{nic}} PCIe GT/s",
                ),
            ],
        ),
        layout.timeseries(
            &ds,
            "Module TX power per lane",
            "dBm",
            &[(
                format!("{}{{{SEL_NIC}}}", m::MODULE_TX_POWER),
                "{{host}} {{nic}} lane {{lane}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "Module RX power per lane",
            "dBm",
            &[(
                format!("{}{{{SEL_NIC}}}", m::MODULE_RX_POWER),
                "{{host}} {{nic}} lane {{lane}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "RoCE health counters (at each run)",
            "short",
            &[(
                format!("{}{{{SEL_NIC}}}", m::NIC_EVENTS),
                "{{host}} {{nic}} {{counter}}",
            )],
        ),
        layout.table(
            &ds,
            "Checks that did not pass (3 warn, 4 fail)",
            // Only checks that warned or failed have a series.
            &format!("{}{{{SEL}}}", m::CHECK_STATUS),
        ),
        layout.table(
            &ds,
            "Cabling seen by LLDP",
            &format!("{}{{{SEL_NIC}}}", m::NEIGHBOR_INFO),
        ),
        layout.table(
            &ds,
            "Transceivers",
            &format!("{}{{{SEL_NIC}}}", m::MODULE_INFO),
        ),
        layout.table(
            &ds,
            "PCIe links (width)",
            &format!("{}{{{SEL_NIC}}}", m::PCIE_WIDTH),
        ),
        layout.table(
            &ds,
            "Facts a host differs in from most hosts",
            &format!("{}{{{SEL}}}", m::FACT_OUTLIER),
        ),
        layout.table(
            &ds,
            "Hosts waiting for a reboot (firmware values)",
            &format!("{}{{{SEL}}} == 1", m::HOST_REBOOT_REQUIRED),
        ),
        layout.table(
            &ds,
            "RoCE v2 GID index (NCCL_IB_GID_INDEX)",
            &format!("{}{{{SEL_NIC}}}", m::GID_INDEX),
        ),
        // The fabric test's newest result per port (fabric.sh, the fabric matrix of ingest):
        // one row per rail and host port with its peer, pass or fail, and the measured rate.
        layout.joined_table(
            &ds,
            "Fabric test per rail and host (ok: 1 passed, 0 failed)",
            &[
                (format!("{}{{{SEL_NIC}}}", m::FABRIC_PORT_OK), "ok"),
                (
                    format!("{}{{{SEL_NIC}}} * 8 / 1e9", m::FABRIC_RATE),
                    "Gb/s",
                ),
                (
                    format!("{}{{{SEL_NIC}}} * 100", m::FABRIC_RATE_RATIO),
                    "% of link",
                ),
            ],
            "rail",
        ),
        layout.table(
            &ds,
            "Fabric checks that did not pass (3 warn, 4 fail)",
            &format!("{}{{{SEL_NIC}}} >= 3", m::FABRIC_CHECK_STATUS),
        ),
        // Live: the health timer's textfile on every host (health.sh), refreshed every
        // health_interval, beside the snapshots of the script runs above.
        layout.stat(
            &ds,
            "Live: oldest health file (s)",
            &format!("max(time() - {}{{{SEL}}})", live::RUN_TIME),
            "purple",
        ),
        layout.stat(
            &ds,
            "Live: ports down",
            &format!(
                "count({}{{{SEL_NIC}}} == 0) or vector(0)",
                live::LINK_UP
            ),
            "red",
        ),
        layout.stat(
            &ds,
            "Live: settings drifted",
            &format!("sum({}{{{SEL_NIC}}}) or vector(0)", live::DRIFT),
            "orange",
        ),
        layout.stat(
            &ds,
            "Live: hosts waiting for a reboot",
            &format!("sum({}{{{SEL}}}) or vector(0)", live::REBOOT),
            "blue",
        ),
        layout.timeseries(
            &ds,
            "Live: traffic per priority",
            "bps",
            &[(
                format!(
                    "sum by (direction, priority) (rate({}{{{SEL_NIC}}}[5m])) * 8",
                    live::PRIO_BYTES
                ),
                "{{direction}} priority {{priority}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "Live: traffic per rail",
            "bps",
            &[(
                format!(
                    "sum by (rail, direction) (rate({}{{{SEL_NIC}}}[5m])) * 8",
                    live::PRIO_BYTES
                ),
                "rail {{rail}} {{direction}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "Live: PFC pause frames per priority",
            "pps",
            &[
                (
                    format!(
                        "sum by (host, nic, direction, priority) (rate({}{{{SEL_NIC}}}[5m]))",
                        live::PAUSE
                    ),
                    "{{host}} {{nic}} {{direction}} priority {{priority}}",
                ),
                (
                    format!(
                        "sum by (host, nic, level) (rate({}{{{SEL_NIC}}}[5m]))",
                        live::STORM
                    ),
                    "{{host}} {{nic}} pause storm {{level}}",
                ),
            ],
        ),
        layout.timeseries(
            &ds,
            "Live: ECN marks and CNPs per rail",
            "pps",
            &[(
                format!(
                    r#"sum by (rail, counter) (rate({}{{{SEL_NIC},counter=~"np_ecn_marked_roce_packets|np_cnp_sent|rp_cnp_handled"}}[5m]))"#,
                    live::RDMA
                ),
                "rail {{rail}} {{counter}}",
            )],
        ),
        layout.timeseries(
            &ds,
            "Live: discards and sequence errors",
            "short",
            &[
                (
                    format!(
                        "sum by (host, nic, priority, kind) (increase({}{{{SEL_NIC}}}[5m]))",
                        live::PRIO_DISCARDS
                    ),
                    "{{host}} {{nic}} priority {{priority}} {{kind}}",
                ),
                (
                    format!(
                        r#"sum by (host, nic, counter) (increase({}{{{SEL_NIC},counter=~"out_of_sequence|packet_seq_err|local_ack_timeout_err"}}[5m]))"#,
                        live::RDMA
                    ),
                    "{{host}} {{nic}} {{counter}}",
                ),
            ],
        ),
        layout.timeseries(
            &ds,
            "Live: optics",
            "none",
            &[
                (
                    format!("{}{{{SEL_NIC}}}", live::TEMP),
                    "{{host}} {{nic}} °C",
                ),
                (
                    format!("{}{{{SEL_NIC}}}", live::RX),
                    "{{host}} {{nic}} lane {{lane}} RX dBm",
                ),
            ],
        ),
        layout.table(
            &ds,
            "Live: settings that no longer read as planned",
            &format!("{}{{{SEL_NIC}}} == 1", live::DRIFT),
        ),
        layout.table(
            &ds,
            "Live: ports down or missing",
            &format!(
                "{}{{{SEL_NIC}}} == 0 or {}{{{SEL_NIC}}} == 0",
                live::LINK_UP,
                live::PRESENT
            ),
        ),
    ];

    json!({
        "uid": UID,
        "title": TITLE,
        "description": "NIC state that roce-gen's host bundles record (ingest --format prometheus): transceiver health, link and PCIe, RoCE counters, LLDP cabling and check status.",
        "tags": ["roce-gen", "roce", "rdma"],
        "timezone": "browser",
        "editable": true,
        "graphTooltip": 1,
        "time": {"from": "now-7d", "to": "now"},
        "refresh": "",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "templating": {"list": variables},
        "annotations": {"list": []},
        "panels": panels,
    })
}

/// Places panels on Grafana's 24-column grid, left to right, then down.
#[derive(Default)]
struct Layout {
    x: u32,
    y: u32,
    row_height: u32,
    next_id: u32,
}

impl Layout {
    fn place(&mut self, w: u32, h: u32) -> (u32, Value) {
        if self.x + w > 24 {
            self.x = 0;
            self.y += self.row_height;
            self.row_height = 0;
        }
        let pos = json!({"x": self.x, "y": self.y, "w": w, "h": h});
        self.x += w;
        self.row_height = self.row_height.max(h);
        self.next_id += 1;
        (self.next_id, pos)
    }

    fn stat(&mut self, ds: &Value, title: &str, expr: &str, colour: &str) -> Value {
        let (id, pos) = self.place(6, 4);
        json!({
            "id": id,
            "type": "stat",
            "title": title,
            "datasource": ds,
            "gridPos": pos,
            "targets": [{"datasource": ds, "expr": expr, "refId": "A", "instant": true}],
            "fieldConfig": {"defaults": {"color": {"mode": "fixed", "fixedColor": colour}}, "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": false}, "colorMode": "background"},
        })
    }

    fn timeseries(
        &mut self,
        ds: &Value,
        title: &str,
        unit: &str,
        queries: &[(String, &str)],
    ) -> Value {
        let (id, pos) = self.place(12, 8);
        let targets: Vec<Value> = queries
            .iter()
            .zip(["A", "B", "C", "D"])
            .map(|((expr, legend), ref_id)| {
                json!({"datasource": ds, "expr": expr, "legendFormat": legend, "refId": ref_id})
            })
            .collect();
        json!({
            "id": id,
            "type": "timeseries",
            "title": title,
            "datasource": ds,
            "gridPos": pos,
            "targets": targets,
            "fieldConfig": {"defaults": {"unit": unit, "custom": {"drawStyle": "line", "showPoints": "always"}}, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "right", "showLegend": true}, "tooltip": {"mode": "multi"}},
        })
    }

    /// A table of instant queries over the same series labels, joined into one row per label
    /// set (Grafana's `merge`), each query's value a column named as given, sorted by `sort`.
    fn joined_table(
        &mut self,
        ds: &Value,
        title: &str,
        queries: &[(String, &str)],
        sort: &str,
    ) -> Value {
        let (id, pos) = self.place(12, 8);
        let refs = ["A", "B", "C", "D"];
        let targets: Vec<Value> = queries
            .iter()
            .zip(refs)
            .map(|((expr, _), ref_id)| {
                json!({"datasource": ds, "expr": expr, "refId": ref_id, "instant": true, "format": "table"})
            })
            .collect();
        let names: serde_json::Map<String, Value> = queries
            .iter()
            .zip(refs)
            .map(|((_, name), ref_id)| (format!("Value #{ref_id}"), json!(name)))
            .collect();
        json!({
            "id": id,
            "type": "table",
            "title": title,
            "datasource": ds,
            "gridPos": pos,
            "targets": targets,
            "transformations": [
                {"id": "merge", "options": {}},
                {"id": "organize", "options": {"excludeByName": {"Time": true, "__name__": true}, "renameByName": names}},
            ],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {"showHeader": true, "sortBy": [{"displayName": sort, "desc": false}]},
        })
    }

    fn table(&mut self, ds: &Value, title: &str, expr: &str) -> Value {
        let (id, pos) = self.place(12, 8);
        json!({
            "id": id,
            "type": "table",
            "title": title,
            "datasource": ds,
            "gridPos": pos,
            "targets": [{"datasource": ds, "expr": expr, "refId": "A", "instant": true, "format": "table"}],
            "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": true, "__name__": true}}}],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {"showHeader": true},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exprs(d: &Value) -> Vec<String> {
        d["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["targets"].as_array().unwrap().clone())
            .map(|t| t["expr"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn every_panel_uses_the_given_datasource_and_no_variable_for_it() {
        let d = build(Some("prom-1"));
        for p in d["panels"].as_array().unwrap() {
            assert_eq!(p["datasource"]["uid"], "prom-1", "{p}");
        }
        let names: Vec<&str> = d["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cluster", "host", "nic"]);
    }

    #[test]
    fn without_a_uid_a_datasource_variable_is_picked_on_import() {
        let d = build(None);
        assert_eq!(d["templating"]["list"][0]["type"], "datasource");
        assert_eq!(d["panels"][0]["datasource"]["uid"], "${datasource}");
    }

    #[test]
    fn panels_query_the_exported_metrics_and_do_not_overlap() {
        let d = build(None);
        let all = exprs(&d).join("\n");
        for name in [
            m::MODULE_TEMPERATURE,
            m::MODULE_TX_POWER,
            m::MODULE_RX_POWER,
            m::LINK_SPEED,
            m::PCIE_SPEED,
            m::NIC_EVENTS,
            m::CHECK_STATUS,
            m::HOST_CHECKS,
            m::NEIGHBOR_INFO,
            m::FACT_OUTLIER,
            m::HOST_REBOOT_REQUIRED,
            m::GID_INDEX,
            m::FABRIC_PORT_OK,
            m::FABRIC_RATE,
            m::FABRIC_RATE_RATIO,
            m::FABRIC_CHECK_STATUS,
            live::PRIO_BYTES,
            live::PAUSE,
            live::STORM,
            live::RDMA,
            live::PRIO_DISCARDS,
            live::DRIFT,
            live::LINK_UP,
            live::TEMP,
            live::RX,
            live::REBOOT,
            live::RUN_TIME,
        ] {
            assert!(all.contains(name), "no panel queries {name}");
        }
        let mut cells = std::collections::BTreeSet::new();
        for p in d["panels"].as_array().unwrap() {
            let g = &p["gridPos"];
            let (x, y, w, h) = (
                g["x"].as_u64().unwrap(),
                g["y"].as_u64().unwrap(),
                g["w"].as_u64().unwrap(),
                g["h"].as_u64().unwrap(),
            );
            assert!(x + w <= 24);
            for cx in x..x + w {
                for cy in y..y + h {
                    assert!(cells.insert((cx, cy)), "panels overlap at {cx},{cy}");
                }
            }
        }
    }
}
