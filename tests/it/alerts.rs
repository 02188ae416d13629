//! `roce-gen alerts`: the rules follow the plan (the lossless and lossy priorities, global pause,
//! the health interval), pass `promtool check rules`, and `promtool test rules` shows each alert
//! firing on the series that should fire it, with its severity and a description naming the
//! host, the port and the plan's value, and every alert silent on a healthy host's series.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{require, roce_gen, tmp};
use crate::fakehost::repo;

/// The rules of a plan (golden/lab-2node's, edited), written by `roce-gen alerts -o`.
fn rules_of(dir: &Path, edit: impl FnOnce(&mut Value)) -> String {
    let mut plan: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("golden/lab-2node/plan.json")).unwrap(),
    )
    .unwrap();
    edit(&mut plan);
    std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
    let run = roce_gen(dir, &["alerts", "plan.json", "-o", "rules.yml"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    std::fs::read_to_string(dir.join("rules.yml")).unwrap()
}

/// Each alert's severity and description template, from the rules file (its strings are JSON).
fn alerts(rules: &str) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    let mut name = String::new();
    let mut severity = String::new();
    for line in rules.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("- alert: ") {
            name = n.to_string();
        } else if let Some(s) = line.strip_prefix("severity: ") {
            severity = s.to_string();
        } else if let Some(d) = line.strip_prefix("description: ") {
            let d: String = serde_json::from_str(d).unwrap();
            out.insert(name.clone(), (severity.clone(), d));
        }
    }
    out
}

/// The description as Prometheus renders it: `{{ $labels.X }}` and `{{ $value | printf "%.Nf" }}`
/// are the only template actions the rules use.
fn render(template: &str, labels: &BTreeMap<&str, &str>, value: f64) -> String {
    let mut out = template.to_string();
    for (k, v) in labels {
        out = out.replace(&format!("{{{{ $labels.{k} }}}}"), v);
    }
    out = out.replace(r#"{{ $value | printf "%.0f" }}"#, &format!("{value:.0}"));
    out = out.replace(r#"{{ $value | printf "%.1f" }}"#, &format!("{value:.1}"));
    assert!(
        !out.contains("{{"),
        "an action the test does not render: {out}"
    );
    out
}

const PORT: &str = r#"cluster="lab",host="node-a",nic="mlx5_0",netdev="ens1f0np0""#;
const HOST: &str = r#"cluster="lab",host="node-a""#;

/// One alert's firing case: its input series, the labels it fires with, its value.
struct Case {
    alert: &'static str,
    series: Vec<(String, &'static str)>,
    labels: Vec<(&'static str, &'static str)>,
    value: f64,
}

fn port_labels(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut l = vec![
        ("cluster", "lab"),
        ("host", "node-a"),
        ("nic", "mlx5_0"),
        ("netdev", "ens1f0np0"),
    ];
    l.extend_from_slice(extra);
    l
}

fn s(name: &str, labels: &str, values: &'static str) -> (String, &'static str) {
    (format!("roce_gen_health_{name}{{{labels}}}"), values)
}

/// A series of the port in hand, with its `extra` labels.
fn port(name: &str, extra: &str, values: &'static str) -> (String, &'static str) {
    s(name, &format!("{PORT},{extra}"), values)
}

/// Every alert of lab-2node's rules with the series that fire it (samples each minute; a
/// counter rising by N a minute increases by 5N in 5 minutes).
fn cases() -> Vec<Case> {
    vec![
        Case {
            alert: "RoceGenPauseOnLossyPriority",
            series: vec![port(
                "priority_pause_frames_total",
                r#"direction="rx",priority="0""#,
                "0+10x20",
            )],
            labels: port_labels(&[("direction", "rx"), ("priority", "0")]),
            value: 50.0,
        },
        Case {
            alert: "RoceGenGlobalPauseWhilePlannedOff",
            series: vec![port(
                "global_pause_frames_total",
                r#"direction="tx""#,
                "0+10x20",
            )],
            labels: port_labels(&[("direction", "tx")]),
            value: 50.0,
        },
        Case {
            alert: "RoceGenPauseStorm",
            series: vec![port(
                "pause_storm_events_total",
                r#"level="error""#,
                "0+2x20",
            )],
            labels: port_labels(&[("level", "error")]),
            value: 10.0,
        },
        Case {
            alert: "RoceGenEcnMarksWithoutCnp",
            series: vec![
                port(
                    "rdma_events_total",
                    r#"counter="np_ecn_marked_roce_packets""#,
                    "0+100x20",
                ),
                port("rdma_events_total", r#"counter="np_cnp_sent""#, "5x20"),
            ],
            labels: port_labels(&[("counter", "np_ecn_marked_roce_packets")]),
            value: 1000.0,
        },
        Case {
            alert: "RoceGenCnpsNotHandled",
            series: vec![
                port("rdma_events_total", r#"counter="np_cnp_sent""#, "0+10x20"),
                port("rdma_events_total", r#"counter="rp_cnp_handled""#, "7x20"),
            ],
            labels: vec![("cluster", "lab")],
            value: 100.0,
        },
        Case {
            alert: "RoceGenLosslessDiscards",
            series: vec![port(
                "priority_discards_total",
                r#"priority="3",kind="buf_discard""#,
                "0+1x20",
            )],
            labels: port_labels(&[("priority", "3"), ("kind", "buf_discard")]),
            value: 5.0,
        },
        Case {
            alert: "RoceGenSequenceErrors",
            series: vec![port(
                "rdma_events_total",
                r#"counter="out_of_sequence""#,
                "0+3x20",
            )],
            labels: port_labels(&[("counter", "out_of_sequence")]),
            value: 15.0,
        },
        Case {
            alert: "RoceGenDrift",
            series: vec![port("drift", r#"setting="trust""#, "1x20")],
            labels: port_labels(&[("setting", "trust")]),
            value: 1.0,
        },
        Case {
            alert: "RoceGenLinkDown",
            series: vec![s("link_up", PORT, "0x20"), s("port_present", PORT, "1x20")],
            labels: port_labels(&[]),
            value: 0.0,
        },
        Case {
            alert: "RoceGenOpticsHot",
            series: vec![
                s("module_temperature_celsius", PORT, "80.25x20"),
                s("module_temperature_high_celsius", PORT, "75x20"),
            ],
            labels: port_labels(&[]),
            value: 80.25,
        },
        Case {
            alert: "RoceGenOpticsRxPower",
            series: vec![
                port("module_rx_power_dbm", r#"lane="2""#, "-12.5x20"),
                port("module_rx_power_dbm", r#"lane="1""#, "-1.1x20"),
                s("module_rx_power_low_dbm", PORT, "-9.9x20"),
                s("module_rx_power_high_dbm", PORT, "4x20"),
            ],
            labels: port_labels(&[("lane", "2")]),
            value: -12.5,
        },
        Case {
            alert: "RoceGenFabricPortFailed",
            series: vec![(
                format!(r#"roce_gen_fabric_port_ok{{{PORT},rail="0",peer="node-b"}}"#),
                "0x20",
            )],
            labels: port_labels(&[("rail", "0"), ("peer", "node-b")]),
            value: 0.0,
        },
        Case {
            alert: "RoceGenRebootPending",
            series: vec![s("reboot_required", HOST, "1x20")],
            labels: vec![("cluster", "lab"), ("host", "node-a")],
            value: 1.0,
        },
        Case {
            alert: "RoceGenHealthStale",
            // Last written at 0 s; at 10 m it is 600 s old, past 3 x 30 s + 60 s.
            series: vec![s("run_timestamp_seconds", HOST, "0x20")],
            labels: vec![("cluster", "lab"), ("host", "node-a")],
            value: 600.0,
        },
        Case {
            alert: "RoceGenDriftUnread",
            series: vec![port("drift_unread", r#"setting="roce_tos""#, "1x20")],
            labels: port_labels(&[("setting", "roce_tos")]),
            value: 1.0,
        },
        Case {
            // node-b never wrote its file: 1 of the plan's 2 hosts has the series.
            alert: "RoceGenHealthMissing",
            series: vec![s("run_timestamp_seconds", HOST, "0+60x20")],
            labels: vec![("cluster", "lab")],
            value: 1.0,
        },
        Case {
            alert: "RoceGenGpuDirectOff",
            series: vec![s("gpu_direct", HOST, "0x20")],
            labels: vec![("cluster", "lab"), ("host", "node-a")],
            value: 0.0,
        },
        Case {
            alert: "RoceGenHealthIncomplete",
            series: vec![s("run_ok", HOST, "0x20")],
            labels: vec![("cluster", "lab"), ("host", "node-a")],
            value: 0.0,
        },
    ]
}

/// A healthy host of the plan: traffic and PFC pause on the lossless priority 3, discards on the
/// lossy priority 0, ECN marks answered by CNPs that are handled, links up, optics inside their
/// thresholds, nothing drifted, the file fresh.
fn healthy() -> Vec<(String, &'static str)> {
    vec![
        port(
            "priority_pause_frames_total",
            r#"direction="rx",priority="3""#,
            "0+50x20",
        ),
        port(
            "priority_bytes_total",
            r#"direction="rx",priority="3""#,
            "0+1000000x20",
        ),
        port(
            "priority_discards_total",
            r#"priority="0",kind="discards""#,
            "0+4x20",
        ),
        port(
            "priority_discards_total",
            r#"priority="3",kind="buf_discard""#,
            "9x20",
        ),
        port("pause_storm_events_total", r#"level="warning""#, "0x20"),
        port(
            "rdma_events_total",
            r#"counter="np_ecn_marked_roce_packets""#,
            "0+100x20",
        ),
        port("rdma_events_total", r#"counter="np_cnp_sent""#, "0+90x20"),
        port(
            "rdma_events_total",
            r#"counter="rp_cnp_handled""#,
            "0+80x20",
        ),
        port("rdma_events_total", r#"counter="out_of_sequence""#, "3x20"),
        port("rdma_events_total", r#"counter="packet_seq_err""#, "0x20"),
        port("drift", r#"setting="trust""#, "0x20"),
        port("drift", r#"setting="pfc""#, "0x20"),
        s("link_up", PORT, "1x20"),
        s("port_present", PORT, "1x20"),
        s("module_temperature_celsius", PORT, "40.5x20"),
        s("module_temperature_high_celsius", PORT, "75x20"),
        port("module_rx_power_dbm", r#"lane="1""#, "-1.1x20"),
        s("module_rx_power_low_dbm", PORT, "-9.9x20"),
        s("module_rx_power_high_dbm", PORT, "4x20"),
        s("reboot_required", HOST, "0x20"),
        (
            format!(r#"roce_gen_fabric_port_ok{{{PORT},rail="0",peer="node-b"}}"#),
            "1x20",
        ),
        s("run_timestamp_seconds", HOST, "0+60x20"),
        s("run_ok", HOST, "1x20"),
        s("gpu_direct", HOST, "1x20"),
        // The plan's other host writes its file too (RoceGenHealthMissing counts the hosts).
        s(
            "run_timestamp_seconds",
            r#"cluster="lab",host="node-b""#,
            "0+60x20",
        ),
    ]
}

/// promtool's unit-test file: each case in a test group of its own, then the healthy host with
/// every alert expected silent.
fn test_file(rules: &str) -> String {
    let known = alerts(rules);
    // Every alert of the rules has a case that fires it.
    let fired: Vec<&str> = cases().iter().map(|c| c.alert).collect();
    for a in known.keys() {
        assert!(fired.contains(&a.as_str()), "{a} has no promtool case");
    }
    let mut tests = Vec::new();
    for case in cases() {
        let (severity, template) = known
            .get(case.alert)
            .unwrap_or_else(|| panic!("{} is not in the rules", case.alert));
        let labels: BTreeMap<&str, &str> = case.labels.iter().copied().collect();
        let mut exp_labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
        exp_labels.insert("severity".into(), json!(severity));
        let summary = summary_of(rules, case.alert);
        tests.push(json!({
            "interval": "1m",
            "input_series": case.series.iter().map(|(s, v)| json!({"series": s, "values": v})).collect::<Vec<_>>(),
            "alert_rule_test": [{
                "eval_time": "10m",
                "alertname": case.alert,
                "exp_alerts": [{
                    "exp_labels": exp_labels,
                    "exp_annotations": {
                        "summary": summary,
                        "description": render(template, &labels, case.value),
                    },
                }],
            }],
        }));
    }
    tests.push(json!({
        "interval": "1m",
        "input_series": healthy().iter().map(|(s, v)| json!({"series": s, "values": v})).collect::<Vec<_>>(),
        "alert_rule_test": known.keys().map(|a| json!({"eval_time": "10m", "alertname": a, "exp_alerts": []})).collect::<Vec<_>>(),
    }));
    // JSON is YAML.
    json!({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}).to_string()
}

fn summary_of(rules: &str, alert: &str) -> String {
    let mut seen = false;
    for line in rules.lines().map(str::trim) {
        if line == format!("- alert: {alert}") {
            seen = true;
        } else if let (true, Some(s)) = (seen, line.strip_prefix("summary: ")) {
            return serde_json::from_str(s).unwrap();
        }
    }
    panic!("{alert} has no summary")
}

#[test]
fn the_rules_follow_the_plan() {
    let dir = tmp();
    let lab = rules_of(dir.path(), |_| {});
    let names: Vec<_> = alerts(&lab).into_keys().collect();
    let mut want: Vec<_> = cases().iter().map(|c| c.alert.to_string()).collect();
    want.sort();
    assert_eq!(names, want, "every alert has a firing case");
    assert!(lab.contains(r#"priority=~\"0|1|2|4|5|6|7\""#), "{lab}");
    assert!(lab.contains(r#"priority=~\"3\""#), "{lab}");
    assert!(lab.contains("PFC on 3"), "{lab}");
    assert!(lab.contains("> 150"), "3 x 30 s + 60 s: {lab}");
    // Another plan: PFC on 3 and 4, a 60 s interval.
    let other = tmp();
    let rules = rules_of(other.path(), |p| {
        p["cluster"]["pfc_priorities"] = json!([3, 4]);
        p["cluster"]["health_interval"] = json!(60);
    });
    assert!(rules.contains(r#"priority=~\"0|1|2|5|6|7\""#), "{rules}");
    assert!(rules.contains(r#"priority=~\"3|4\""#), "{rules}");
    assert!(rules.contains("> 240"), "{rules}");
    // Without PFC, with 802.3x pause: every priority is lossy, none lossless, pause expected.
    let lossy = tmp();
    let rules = rules_of(lossy.path(), |p| {
        p["cluster"]["pfc_priorities"] = json!([]);
        p["cluster"]["global_pause"] = json!("on");
    });
    assert!(
        rules.contains(r#"priority=~\"0|1|2|3|4|5|6|7\""#),
        "{rules}"
    );
    assert!(!rules.contains("RoceGenLosslessDiscards"), "{rules}");
    assert!(
        !rules.contains("RoceGenGlobalPauseWhilePlannedOff"),
        "{rules}"
    );
    // An invalid plan: exit 1, nothing written.
    let bad = tmp();
    std::fs::write(
        bad.path().join("plan.json"),
        "{\"schema\": \"roce-gen/plan/v1\"}",
    )
    .unwrap();
    let run = roce_gen(bad.path(), &["alerts", "plan.json", "-o", "rules.yml"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(!bad.path().join("rules.yml").exists());
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn promtool_checks_the_rules_and_each_alert_fires_on_its_series_and_not_on_a_healthy_host() {
    require("promtool");
    let dir = tmp();
    let rules = rules_of(dir.path(), |_| {});
    let check = Command::new("promtool")
        .args(["check", "rules", "rules.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    std::fs::write(dir.path().join("tests.yml"), test_file(&rules)).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules", "tests.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The test can fail: an alert expected where none fires is a failure.
    let mut file: Value = serde_json::from_str(&test_file(&rules)).unwrap();
    let last = file["tests"].as_array_mut().unwrap().last_mut().unwrap();
    last["alert_rule_test"][0]["exp_alerts"] = json!([{"exp_labels": {"severity": "warning"}}]);
    std::fs::write(dir.path().join("wrong.yml"), file.to_string()).unwrap();
    let wrong = Command::new("promtool")
        .args(["test", "rules", "wrong.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        !wrong.status.success(),
        "promtool must fail a wrong expectation"
    );
}
