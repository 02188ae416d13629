//! The cluster verdict: each host's state from its latest evidence (configured, prechecked,
//! pending, drifted, rolled back, failed, missing, stale, unplanned), followed by the exit
//! status and every format; `--require prechecked`; and the plan identity across a workbook
//! saved again by openpyxl (same plan) or edited (stale).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Book, Run, prerequisite, python_has, roce_gen, tmp};

/// The plan's identity: the sha256 of what `roce-gen plan` prints.
fn identity(dir: &Path, plan: &str) -> String {
    let run = roce_gen(dir, &["plan", plan]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    roce_gen::testing::sha256_hex(run.stdout.as_bytes())
}

/// One check: id, NIC, status, expected, actual, message.
type Ck<'a> = (&'a str, Option<&'a str>, &'a str, &'a str, &'a str, &'a str);

/// The checks every run of a healthy two-NIC host records, with `settings` as the status of the
/// settings (pass for a precheck that found them as planned, changed for a first apply).
fn healthy(settings: &'static str) -> Vec<Ck<'static>> {
    let mut checks: Vec<Ck<'static>> = vec![("hostname", None, "pass", "", "", "host name")];
    for nic in ["mlx5_0", "mlx5_1"] {
        checks.push(("ib_dev", Some(nic), "pass", "present", "present", "present"));
        let (trust_msg, mtu_msg) = if settings == "changed" {
            (
                "trust changed from pcp to dscp",
                "mtu changed from 1500 to 4200",
            )
        } else {
            ("trust is dscp as planned", "mtu is 4200 as planned")
        };
        checks.push(("trust", Some(nic), settings, "dscp", "dscp", trust_msg));
        checks.push(("mtu", Some(nic), settings, "4200", "4200", mtu_msg));
        checks.push((
            "pfc",
            Some(nic),
            if settings == "changed" {
                "changed"
            } else {
                "pass"
            },
            "0,0,0,1,0,0,0,0",
            "0,0,0,1,0,0,0,0",
            "pfc as planned",
        ));
    }
    checks
}

/// `checks` with the ones of the same id and NIC as `over` replaced.
fn with(mut checks: Vec<Ck<'static>>, over: &[Ck<'static>]) -> Vec<Ck<'static>> {
    for o in over {
        match checks.iter_mut().find(|c| c.0 == o.0 && c.1 == o.1) {
            Some(c) => *c = *o,
            None => checks.push(*o),
        }
    }
    checks
}

/// A result file of `host`.
fn result(
    host: &str,
    plan_sha: &str,
    (phase, dry_run): (&str, bool),
    minute: u32,
    checks: &[Ck<'_>],
) -> Value {
    let checks: Vec<Value> = checks
        .iter()
        .map(|(id, nic, status, expected, actual, message)| {
            let mut c = json!({"id": id, "status": status, "severity": "error",
                "expected": expected, "actual": actual, "message": message});
            if let Some(nic) = nic {
                c["nic"] = json!(nic);
            }
            c
        })
        .collect();
    let status = if checks.iter().any(|c| c["status"] == "fail") {
        "fail"
    } else if checks.iter().any(|c| c["status"] == "warn") {
        "warn"
    } else {
        "pass"
    };
    json!({
        "schema": "roce-gen/result/v1", "tool_version": "0.1.0", "cluster": "t1",
        "host": host, "observed_hostname": host, "phase": phase, "dry_run": dry_run,
        "plan_sha256": plan_sha, "bundle_sha256": "0".repeat(64),
        "started_at": format!("2026-11-30T08:{minute:02}:00Z"),
        "finished_at": format!("2026-11-30T08:{minute:02}:05Z"),
        "status": status, "checks": checks,
        "facts": {"kernel": "6.8.0", "ofed": "MLNX_OFED_LINUX-24.10-1.1.4.0",
                  "nics": {"mlx5_0": {"netdev": "ens1f0np0", "fw_ver": "28.39.1002"},
                           "mlx5_1": {"netdev": "ens2f0np0", "fw_ver": "28.39.1002"}}},
    })
}

const PRECHECK: (&str, bool) = ("precheck", false);
const APPLY: (&str, bool) = ("apply", false);
const DRY_RUN: (&str, bool) = ("apply", true);
const ROLLBACK: (&str, bool) = ("rollback", false);
const ROLLBACK_DRY_RUN: (&str, bool) = ("rollback", true);

/// Writes `results/<host>.<phase>[.dry-run].json` files, named as the bundles name them.
fn write(dir: &Path, results: &[Value]) {
    let out = dir.join("results");
    std::fs::create_dir_all(&out).unwrap();
    for r in results {
        let dry = if r["dry_run"] == true { ".dry-run" } else { "" };
        let name = format!(
            "{}.{}{dry}.json",
            r["host"].as_str().unwrap(),
            r["phase"].as_str().unwrap()
        );
        std::fs::write(out.join(name), serde_json::to_vec_pretty(r).unwrap()).unwrap();
    }
}

/// Ten planned hosts, one per state, and one the plan does not have.
fn every_state(dir: &Path) -> String {
    Book::hosts(10).write(dir, "plan.xlsx");
    let sha = identity(dir, "plan.xlsx");
    let s = sha.as_str();
    let clean = healthy("pass");
    let applied = healthy("changed");
    // Not configured yet: apply will change trust and MTU on both ports.
    let fresh = with(
        clean.clone(),
        &[
            (
                "trust",
                Some("mlx5_0"),
                "warn",
                "dscp",
                "pcp",
                "trust is pcp, the plan says dscp (apply will change it)",
            ),
            (
                "trust",
                Some("mlx5_1"),
                "warn",
                "dscp",
                "pcp",
                "trust is pcp, the plan says dscp (apply will change it)",
            ),
            (
                "mtu",
                Some("mlx5_0"),
                "warn",
                "4200",
                "1500",
                "mtu is 1500, the plan says 4200 (apply will change it)",
            ),
            (
                "mtu",
                Some("mlx5_1"),
                "warn",
                "4200",
                "1500",
                "mtu is 1500, the plan says 4200 (apply will change it)",
            ),
        ],
    );
    // After apply, a reboot without the unit left PFC off on one port; the cable of the other
    // port is in the wrong switch port.
    let drifted = with(
        clean.clone(),
        &[
            (
                "pfc",
                Some("mlx5_1"),
                "warn",
                "0,0,0,1,0,0,0,0",
                "0,0,0,0,0,0,0,0",
                "pfc is 0,0,0,0,0,0,0,0, the plan says 0,0,0,1,0,0,0,0 (apply will change it)",
            ),
            (
                "cabling",
                Some("mlx5_0"),
                "warn",
                "leaf-1 Eth1/3",
                "leaf-1 Eth1/7",
                "ens1f0np0 is cabled to leaf-1 Eth1/7, plan says leaf-1 Eth1/3",
            ),
        ],
    );
    let failed = with(
        applied.clone(),
        &[(
            "mtu",
            Some("mlx5_1"),
            "fail",
            "4200",
            "1500",
            "mtu was set to 4200 but reads back as 1500",
        )],
    );
    let dry_fresh: Vec<Ck<'static>> = fresh
        .iter()
        .map(|c| {
            if c.2 == "warn" {
                (c.0, c.1, "warn", c.3, c.4, "dry run: would change")
            } else {
                *c
            }
        })
        .collect();
    write(
        dir,
        &[
            // h1 configured by an apply that passed.
            result("h1", s, APPLY, 10, &applied),
            // h2 applied, then prechecked clean: still configured.
            result("h2", s, APPLY, 10, &applied),
            result("h2", s, PRECHECK, 20, &clean),
            // h3 applied, then a precheck found drift.
            result("h3", s, APPLY, 10, &applied),
            result("h3", s, PRECHECK, 20, &drifted),
            // h4 prechecked only, with settings to change: pending.
            result("h4", s, PRECHECK, 5, &fresh),
            // h5 applied, then rolled back.
            result("h5", s, APPLY, 10, &applied),
            result("h5", s, ROLLBACK, 30, &healthy("changed")),
            // h6 has no result: missing.
            // h7 prechecked clean, never applied: prechecked.
            result("h7", s, PRECHECK, 5, &clean),
            // h8's only result is from another plan: stale.
            result("h8", &"e".repeat(64), APPLY, 10, &applied),
            // h9's apply failed.
            result("h9", s, APPLY, 10, &failed),
            // h10: a dry run of apply on a fresh host is pending, like a precheck.
            result("h10", s, DRY_RUN, 5, &dry_fresh),
            // Not in the plan.
            result("node-x", s, APPLY, 10, &applied),
        ],
    );
    sha
}

fn ingest(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["ingest", "results", "--plan", "plan.xlsx"];
    args.extend_from_slice(extra);
    roce_gen(dir, &args)
}

#[test]
fn each_host_gets_the_state_its_latest_evidence_shows() {
    let dir = tmp();
    every_state(dir.path());
    let run = ingest(dir.path(), &["--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let states: Vec<String> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{} {} ok={} stale={}",
                h["host"].as_str().unwrap(),
                h["state"].as_str().unwrap(),
                h["ok"],
                h["stale"]
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            "h1 configured ok=true stale=false",
            "h10 pending ok=false stale=false",
            "h2 configured ok=true stale=false",
            "h3 drifted ok=false stale=false",
            "h4 pending ok=false stale=false",
            "h5 rolled_back ok=false stale=false",
            "h6 missing ok=false stale=false",
            "h7 prechecked ok=false stale=false",
            "h8 configured ok=false stale=true",
            "h9 failed ok=false stale=false",
            "node-x configured ok=true stale=false",
        ]
    );
    let t = &doc["totals"];
    let counts: Vec<String> = [
        "passed",
        "configured",
        "prechecked",
        "pending",
        "drifted",
        "rolled_back",
        "failed",
        "missing",
        "stale",
        "unplanned",
    ]
    .iter()
    .map(|k| format!("{k}={}", t[k]))
    .collect();
    assert_eq!(
        counts.join(" "),
        "passed=2 configured=2 prechecked=1 pending=2 drifted=1 rolled_back=1 failed=1 missing=1 stale=1 unplanned=1"
    );
    // What drifted and what a pending host will change are the host's `changes`; the drift
    // and the cabling warning are grouped in `attention`; the setting warnings of a precheck
    // are not listed again as warnings.
    let h3 = &doc["hosts"][3];
    assert_eq!(h3["changes"].as_array().unwrap().len(), 1);
    assert_eq!(h3["changes"][0]["id"], "pfc");
    assert_eq!(h3["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(h3["warnings"][0]["id"], "cabling");
    assert_eq!(doc["hosts"][4]["changes"].as_array().unwrap().len(), 4);
    assert_eq!(doc["hosts"][4]["warnings"].as_array().unwrap().len(), 0);
    let groups: Vec<String> = doc["attention"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            format!(
                "{} {} hosts={} ports={}",
                g["kind"].as_str().unwrap(),
                g["id"].as_str().unwrap(),
                g["hosts"],
                g["ports"]
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            "warning cabling hosts=1 ports=1",
            "drift pfc hosts=1 ports=1"
        ]
    );
    assert_eq!(doc["as_of"], "2026-11-30T08:30:05Z");
}

#[test]
fn every_format_follows_the_verdict() {
    let dir = tmp();
    every_state(dir.path());
    let text = ingest(dir.path(), &[]);
    assert_eq!(text.code, 1);
    for needle in [
        "✅ h1 (10.0.0.1): configured\n",
        "✅ h2 (10.0.0.2): configured\n",
        "❌ h3: drifted: precheck at 2026-11-30T08:20:05Z (results/h3.precheck.json) found 1 setting drifted on 1 port since the apply at 2026-11-30T08:10:05Z\n    pfc: mlx5_1 0,0,0,0,0,0,0,0 → 0,0,0,1,0,0,0,0\n",
        "⏳ h4: pending: precheck at 2026-11-30T08:05:05Z (results/h4.precheck.json) found 2 settings to change on 2 ports; run apply\n    trust: 2 ports pcp → dscp\n    mtu: 2 ports 1500 → 4200\n",
        "↩ h5: rolled back: rollback at 2026-11-30T08:30:05Z",
        "❌ h6: missing: no result\n",
        "⏳ h7: prechecked: precheck at 2026-11-30T08:05:05Z (results/h7.precheck.json) found the settings as planned, but no apply has made them persistent",
        "❌ h8: stale: apply at 2026-11-30T08:10:05Z (results/h8.apply.json) was made from another plan",
        "❌ h9: failed items:\nmtu:mlx5_1: mtu was set to 4200 but reads back as 1500\n",
        "⏳ h10: pending: apply (dry run) at",
        "needs attention:\n⚠ cabling on 1 host (1 port):\n    h3 mlx5_0: ens1f0np0 is cabled to leaf-1 Eth1/7, plan says leaf-1 Eth1/3\n⚠ pfc drifted on 1 host (1 port):\n    h3 mlx5_1: pfc is 0,0,0,0,0,0,0,0",
        "10 planned hosts: 2 ready (2 configured), 1 prechecked, 2 pending, 1 drifted, 1 rolled back, 1 failed, 1 missing, 1 stale; 1 not in plan\n",
    ] {
        assert!(
            text.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            text.stdout
        );
    }
    assert!(
        !text.stdout.contains("✅ h5"),
        "a rolled-back host is never ✅"
    );

    let md = ingest(dir.path(), &["--format", "markdown"]);
    assert_eq!(md.code, 1);
    for needle in [
        "**❌ not ready**",
        "| ⏳ | h4 | 10.0.0.4 | pending |",
        "| ↩ | h5 | 10.0.0.5 | rolled back |",
        "| ❌ | h3 | 10.0.0.3 | drifted |",
        "### ⏳ h4\n",
        "- trust: 2 ports pcp → dscp\n",
        "## Needs attention\n",
        "### ⚠ `cabling`: 1 host, 1 port\n",
        "| h3 | mlx5\\_0 | ens1f0np0 is cabled to leaf-1 Eth1/7, plan says leaf-1 Eth1/3 |",
    ] {
        assert!(
            md.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            md.stdout
        );
    }

    let html = ingest(dir.path(), &["--format", "html"]);
    assert_eq!(html.code, 1);
    assert!(html.stdout.contains("Not ready"));
    assert!(!html.stdout.contains("&#10003; Ready"));
    for (state, tone) in [
        ("pending", "warn"),
        ("drifted", "bad"),
        ("rolled back", "muted"),
    ] {
        assert!(
            html.stdout
                .contains(&format!("<span class=\"badge {tone}\">{state}</span>")),
            "no {tone} badge {state}"
        );
    }
    for needle in [
        // What apply will change on the pending host, and what drifted on the drifted one.
        "<li>trust: 2 ports pcp → dscp</li>",
        "<li>pfc: mlx5_1 0,0,0,0,0,0,0,0 → 0,0,0,1,0,0,0,0</li>",
        // Drift grouped by check after the warnings.
        "<h3><span class=\"mono\">pfc</span><span class=\"badge bad\">drifted</span><span class=\"sub\">1 host · 1 port</span></h3>",
    ] {
        assert!(
            html.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            html.stdout
        );
    }

    let junit = ingest(dir.path(), &["--format", "junit"]);
    assert_eq!(junit.code, 1);
    for host in ["h3", "h4", "h5", "h7", "h10"] {
        assert!(
            junit
                .stdout
                .contains(&format!("message=\"{host} is not ready: ")),
            "{host} has no failing state case:\n{}",
            junit.stdout
        );
    }
    assert!(!junit.stdout.contains("message=\"h1 is not ready"));

    let prom = ingest(dir.path(), &["--format", "prometheus"]);
    for (host, state) in [
        ("h3", "drifted"),
        ("h4", "pending"),
        ("h5", "rolled_back"),
        ("h1", "configured"),
    ] {
        let series = format!("host=\"{host}\",state=\"{state}\"}} 1");
        assert!(
            prom.stdout.lines().any(|l| l.contains(&series)),
            "no {series} in:\n{}",
            prom.stdout
        );
    }
    assert!(prom.stdout.contains("roce_gen_ok{cluster=\"t1\"} 0"));
}

#[test]
fn a_dry_run_newer_than_an_apply_never_stands_for_it() {
    let dir = tmp();
    Book::hosts(2).write(dir.path(), "plan.xlsx");
    let sha = identity(dir.path(), "plan.xlsx");
    let s = sha.as_str();
    // What a dry run after an apply records: the settings as planned, nothing to change.
    let nothing_to_do = healthy("pass");
    // A dry run that fails (a tool that hung, say): it shows the host as it is, but it is
    // no apply, and the apply before it still is the host's.
    let failed_dry_run = with(
        nothing_to_do.clone(),
        &[(
            "mtu",
            Some("mlx5_1"),
            "fail",
            "4200",
            "",
            "ip link show did not answer",
        )],
    );
    write(
        dir.path(),
        &[
            result("h1", s, APPLY, 10, &healthy("changed")),
            result("h1", s, DRY_RUN, 40, &nothing_to_do),
            // h2 was never applied: its newer dry run does not make it configured either.
            result("h2", s, PRECHECK, 5, &nothing_to_do),
            result("h2", s, DRY_RUN, 40, &nothing_to_do),
        ],
    );
    assert!(dir.path().join("results/h1.apply.dry-run.json").is_file());
    let run = ingest(dir.path(), &["--format", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let h1 = &doc["hosts"][0];
    assert_eq!(h1["state"], "configured", "{h1}");
    assert_eq!(h1["ok"], true, "{h1}");
    // Both runs are the host's, neither superseded by the other.
    let runs: Vec<String> = h1["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} dry_run={} {}", r["phase"], r["dry_run"], r["path"]))
        .collect();
    assert_eq!(
        runs,
        [
            r#""apply" dry_run=false "results/h1.apply.json""#,
            r#""apply" dry_run=true "results/h1.apply.dry-run.json""#,
        ]
    );
    assert_eq!(doc["superseded"], json!([]));
    assert_eq!(doc["hosts"][1]["state"], "prechecked");

    let text = ingest(dir.path(), &[]);
    assert!(
        text.stdout.contains("✅ h1 (10.0.0.1): configured\n"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains("h1: prechecked"), "{}", text.stdout);

    // However much newer, and whatever it says, a dry run is never the apply it follows.
    write(dir.path(), &[result("h1", s, DRY_RUN, 50, &failed_dry_run)]);
    let doc: Value =
        serde_json::from_str(&ingest(dir.path(), &["--format", "json"]).stdout).unwrap();
    let h1 = &doc["hosts"][0];
    assert_eq!(h1["state"], "failed", "{h1}");
    assert_eq!(h1["latest"]["dry_run"], true, "{h1}");
    let apply = h1["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dry_run"] == false)
        .unwrap();
    assert_eq!(apply["path"], "results/h1.apply.json", "{h1}");
    assert_eq!(apply["status"], "pass", "{h1}");
}

#[test]
fn a_rollback_dry_run_leaves_the_state_the_real_runs_give() {
    let dir = tmp();
    Book::hosts(2).write(dir.path(), "plan.xlsx");
    let sha = identity(dir.path(), "plan.xlsx");
    let s = sha.as_str();
    write(
        dir.path(),
        &[
            // h1 was rolled back; a later rollback dry run finds nothing to restore.
            result("h1", s, APPLY, 10, &healthy("changed")),
            result("h1", s, ROLLBACK, 20, &[]),
            result("h1", s, ROLLBACK_DRY_RUN, 30, &[]),
            // h2 is configured; a later rollback dry run says what rollback would restore.
            result("h2", s, APPLY, 10, &healthy("changed")),
            result("h2", s, ROLLBACK_DRY_RUN, 30, &healthy("warn")),
        ],
    );
    assert!(
        dir.path()
            .join("results/h1.rollback.dry-run.json")
            .is_file()
    );
    let doc: Value =
        serde_json::from_str(&ingest(dir.path(), &["--format", "json"]).stdout).unwrap();
    assert_eq!(
        doc["hosts"][0]["state"], "rolled_back",
        "{}",
        doc["hosts"][0]
    );
    assert_eq!(
        doc["hosts"][1]["state"], "configured",
        "{}",
        doc["hosts"][1]
    );
    assert_eq!(doc["hosts"][1]["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn a_clean_precheck_is_enough_only_when_required_so() {
    let dir = tmp();
    Book::hosts(3).write(dir.path(), "plan.xlsx");
    let sha = identity(dir.path(), "plan.xlsx");
    write(
        dir.path(),
        &[
            result("h1", &sha, APPLY, 10, &healthy("changed")),
            result("h2", &sha, PRECHECK, 10, &healthy("pass")),
            result("h3", &sha, PRECHECK, 10, &healthy("pass")),
        ],
    );
    let strict = ingest(dir.path(), &[]);
    assert_eq!(strict.code, 1, "{}", strict.transcript());
    assert!(
        strict
            .stdout
            .contains("3 planned hosts: 1 ready (1 configured), 2 prechecked,")
    );
    let lenient = ingest(dir.path(), &["--require", "prechecked"]);
    assert_eq!(lenient.code, 0, "{}", lenient.transcript());
    assert!(lenient.stdout.contains("✅ h2 (10.0.0.2): prechecked\n"));
    assert!(
        lenient
            .stdout
            .contains("✅ all 3 hosts ready (a clean precheck accepted)\n")
    );
    assert!(
        lenient
            .stdout
            .contains("3 planned hosts: 3 ready (1 configured, 2 prechecked),")
    );
    let json: Value = serde_json::from_str(
        &ingest(dir.path(), &["--require", "prechecked", "--format", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(json["require"], "prechecked");
    assert_eq!(json["ok"], true);

    // A pending host is never enough, whatever is required.
    write(
        dir.path(),
        &[result(
            "h3",
            &sha,
            PRECHECK,
            20,
            &with(
                healthy("pass"),
                &[(
                    "mtu",
                    Some("mlx5_0"),
                    "warn",
                    "4200",
                    "1500",
                    "mtu is 1500, the plan says 4200 (apply will change it)",
                )],
            ),
        )],
    );
    let pending = ingest(dir.path(), &["--require", "prechecked"]);
    assert_eq!(pending.code, 1, "{}", pending.transcript());
    assert!(pending.stdout.contains("⏳ h3: pending:"));
}

/// The system Python with openpyxl (Debian's python3-openpyxl, which `.ci/run` installs).
fn openpyxl() -> Option<()> {
    prerequisite(
        python_has("openpyxl"),
        "python3 with openpyxl is missing (apt-get install python3-openpyxl)",
        "a re-saved workbook",
    )
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_workbook_saved_again_is_the_same_plan_and_an_edited_one_makes_results_stale() {
    let Some(()) = openpyxl() else { return };
    let dir = tmp();
    Book::hosts(2).write(dir.path(), "plan.xlsx");
    let sha = identity(dir.path(), "plan.xlsx");
    write(
        dir.path(),
        &[
            result("h1", &sha, APPLY, 10, &healthy("changed")),
            result("h2", &sha, APPLY, 10, &healthy("changed")),
        ],
    );
    // openpyxl rewrites every part of the file (styles, shared strings, properties); only the
    // content stays. The edited copy changes the MTU.
    let script = "import openpyxl, sys\n\
        wb = openpyxl.load_workbook(sys.argv[1])\n\
        wb.save(sys.argv[2])\n\
        ws = wb['Cluster']\n\
        for row in ws.iter_rows():\n\
        \x20   if row[0].value == 'mtu':\n\
        \x20       row[1].value = 9000\n\
        wb.save(sys.argv[3])\n";
    let status = Command::new("/usr/bin/python3")
        .args(["-c", script, "plan.xlsx", "resaved.xlsx", "edited.xlsx"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    assert_ne!(
        bytes("plan.xlsx"),
        bytes("resaved.xlsx"),
        "openpyxl rewrote the file"
    );
    assert_eq!(identity(dir.path(), "resaved.xlsx"), sha);

    let resaved = roce_gen(dir.path(), &["ingest", "results", "--plan", "resaved.xlsx"]);
    assert_eq!(resaved.code, 0, "{}", resaved.transcript());
    assert!(
        resaved
            .stdout
            .contains("2 planned hosts: 2 ready (2 configured)")
    );

    let edited = roce_gen(dir.path(), &["ingest", "results", "--plan", "edited.xlsx"]);
    assert_eq!(edited.code, 1, "{}", edited.transcript());
    assert!(edited.stdout.contains("❌ h1: stale: apply at 2026-11-30T08:10:05Z (results/h1.apply.json) was made from another plan"));
    assert!(
        edited
            .stdout
            .contains("0 ready, 0 failed, 0 missing, 2 stale")
    );
}
