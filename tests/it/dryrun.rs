//! `apply.sh --dry-run` against apply itself. On simulated hosts of several kinds (fresh, drifted
//! after an apply, far from the defaults) and plans (a DSCP map that trust dscp does not program,
//! DCBX to take over, PFC off with 802.3x pause on), under both backends (`mlnx_qos`, `dcb`) and
//! every bash: the dry run changes nothing, reports as would-change exactly the settings apply
//! then changes, from and to the same values, prints the very commands and writes apply runs, in
//! the same order, and groups the changes in its summary exactly as apply's summary does.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::fakehost::{FakeHost, ScriptRun, changes, for_each_bash};

/// Runs a command on the host and insists that it worked.
fn on_host(h: &FakeHost, cmd: &[&str]) {
    let (code, out, err) = h.run_cmd(cmd);
    assert_eq!(code, 0, "{cmd:?}: {out}{err}");
}

/// One check of a result, by (id, nic).
#[derive(Debug)]
struct Check {
    status: String,
    expected: String,
    actual: String,
    message: String,
}

fn checks(run: &ScriptRun) -> BTreeMap<(String, String), Check> {
    let field = |c: &Value, k: &str| c[k].as_str().unwrap_or("").to_string();
    run.result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                (field(c, "id"), field(c, "nic")),
                Check {
                    status: field(c, "status"),
                    expected: field(c, "expected"),
                    actual: field(c, "actual"),
                    message: field(c, "message"),
                },
            )
        })
        .collect()
}

/// The pid in the names of apply's temporary install folders (`lab.new.1234`) differs per run.
fn without_pid(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = [".new.", ".old."].iter().filter_map(|m| rest.find(m)).min() {
        out.push_str(&rest[..at + 5]);
        rest = rest[at + 5..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("PID");
    }
    out.push_str(rest);
    out
}

/// What a run changes on the host as it says so with `-v`, in order: `run CMD`, `write FILE
/// VALUE` or `write FILE`. The dry run prints `would run: …` and `would write: V > F` on stdout;
/// apply logs `run: …` and `write: V > F` on stderr.
fn actions(text: &str, run: &str, write: &str, to: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            if let Some(cmd) = l.strip_prefix(run) {
                return Some(format!("run {cmd}"));
            }
            l.strip_prefix(write).map(|w| match w.split_once(to) {
                Some((value, file)) => format!("write {file} {value}"),
                None => format!("write {w}"),
            })
        })
        .map(|l| without_pid(&l))
        .collect()
}

fn dry_actions(stdout: &str) -> Vec<String> {
    actions(stdout, "would run: ", "would write: ", " > ")
}

fn apply_actions(stderr: &str) -> Vec<String> {
    actions(stderr, "run: ", "write: ", " > ")
}

/// The tools the simulated host has stand-ins for, as installed in its `bin/` (the others,
/// mkdir, cp, mv, are real): read from the host, so that a new stand-in needs no edit here.
fn stand_ins(h: &FakeHost) -> Vec<String> {
    std::fs::read_dir(h.fake("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The summary's entries for settings (`  trust: 2 ports pcp → dscp` and their group lines),
/// between the heading and the host-wide changes.
fn setting_entries(stdout: &str, heading: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("  persistence"))
        .map(str::to_string)
        .collect()
}

/// The links the summary says a PFC change flaps (or would).
fn flaps(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .filter(|l| l.contains("(the driver toggles the link to apply PFC"))
        .find_map(|l| l.split_once("): "))
        .map(|(_, links)| links.to_string())
}

/// The summary's list of changes: its entries, the links that would flap and the count
/// (`Plan: …` or `nothing to change…`), after the heading.
fn change_list(stdout: &str, heading: &str) -> Vec<String> {
    let mut lines: Vec<String> = stdout
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("next: "))
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        // Nothing to change: no heading, the count line alone.
        lines = stdout
            .lines()
            .filter(|l| l.starts_with("nothing to change"))
            .map(str::to_string)
            .collect();
    }
    lines
}

/// Runs `precheck.sh`, `apply.sh --dry-run -v`, then `apply.sh -v`: precheck's "apply will
/// change" is the dry run's plan, host-wide changes included, and the dry run is held to what
/// apply did. Returns the dry run and apply for the scenario's own assertions.
pub(crate) fn dry_run_matches_apply(h: &FakeHost, ctx: &str) -> (ScriptRun, ScriptRun) {
    let _ = h.take_commands();
    let before = h.snapshot();
    let pre = h.run("precheck.sh", &[]);
    assert_eq!(pre.code, 0, "{ctx}: {}\n{}", pre.stdout, pre.stderr);
    assert_eq!(h.snapshot(), before, "{ctx}: precheck changed the host");
    let dry = h.run("apply.sh", &["--dry-run", "-v"]);
    assert_eq!(dry.code, 0, "{ctx}: {}\n{}", dry.stdout, dry.stderr);
    assert_eq!(h.snapshot(), before, "{ctx}: the dry run changed the host");
    let predicted = change_list(&pre.stdout, "apply will change:");
    assert!(!predicted.is_empty(), "{ctx}: {}", pre.stdout);
    assert_eq!(
        predicted,
        change_list(&dry.stdout, "apply would change:"),
        "{ctx}: precheck and the dry run predict different changes\n{}\n{}",
        pre.stdout,
        dry.stdout
    );
    assert!(
        changes(&h.take_commands()).is_empty(),
        "{ctx}: the dry run ran a changing command"
    );

    let apply = h.run("apply.sh", &["-v"]);
    assert_eq!(apply.code, 0, "{ctx}: {}\n{}", apply.stdout, apply.stderr);
    let ran = changes(&h.take_commands());

    // Every check of apply is in the dry run; a would-change (warn, `dry run: …`) is a change
    // of apply, from the value the dry run read to the one it predicted, and nothing else is.
    let dry_checks = checks(&dry);
    let apply_checks = checks(&apply);
    assert_eq!(
        dry_checks.keys().collect::<Vec<_>>(),
        apply_checks.keys().collect::<Vec<_>>(),
        "{ctx}: the runs checked different things"
    );
    let mut would = Vec::new();
    let mut changed = Vec::new();
    for (key, d) in &dry_checks {
        let a = &apply_checks[key];
        let (id, nic) = key;
        if a.status == "changed" {
            changed.push(key.clone());
        }
        if d.status == "warn" && d.message.starts_with("dry run: ") {
            would.push(key.clone());
            // Host-wide changes (the unit, the reload hook) say what they do in words.
            if nic.is_empty() {
                continue;
            }
            assert_eq!(a.expected, d.expected, "{ctx}: {id} {nic}");
            assert_eq!(a.actual, d.expected, "{ctx}: {id} {nic}: {}", a.message);
            let from = if d.actual.is_empty() {
                "unset"
            } else {
                &d.actual
            };
            let said = format!("{id} changed from {from} to {}", d.expected);
            assert!(
                a.message.starts_with(&said),
                "{ctx}: {id} {nic}: the dry run said {:?}, apply {:?}",
                d.message,
                a.message
            );
        } else if id == "pfc_buffer"
            && d.status == "skip"
            && d.message.contains("not yet as planned")
        {
            // Read-only, on buffers the firmware re-sizes when apply changes PFC: a dry run
            // cannot read them as apply leaves them, so it says it does not check them.
            continue;
        } else {
            assert_eq!(
                a.status, d.status,
                "{ctx}: {id} {nic}: dry run {:?}, apply {:?}",
                d.message, a.message
            );
        }
    }
    assert_eq!(would, changed, "{ctx}: would-change against changed");

    // The same commands and writes, in the same order; apply's log of them is what the tools
    // received.
    let printed = dry_actions(&dry.stdout);
    let logged = apply_actions(&apply.stderr);
    assert!(
        printed == logged,
        "{ctx}: the dry run printed other commands than apply ran\n{}",
        similar::TextDiff::from_lines(printed.join("\n").as_str(), logged.join("\n").as_str())
            .unified_diff()
            .header("dry run", "apply")
    );
    let tools = stand_ins(h);
    assert!(
        tools.iter().any(|t| t == "ip"),
        "no stand-ins in bin/: {tools:?}"
    );
    let stubbed: Vec<String> = logged
        .iter()
        .filter_map(|l| l.strip_prefix("run "))
        .filter(|c| {
            let tool = c.split(' ').next().unwrap_or("");
            tools.iter().any(|t| t == tool)
        })
        .map(str::to_string)
        .collect();
    assert_eq!(stubbed, ran, "{ctx}: apply's log of its commands");

    // The summaries group the changes alike and name the same flapping links.
    let entries = setting_entries(&dry.stdout, "apply would change:");
    assert_eq!(
        entries,
        setting_entries(&apply.stdout, "changed:"),
        "{ctx}:\n{}\n{}",
        dry.stdout,
        apply.stdout
    );
    assert_eq!(flaps(&dry.stdout), flaps(&apply.stdout), "{ctx}");

    // Done: nothing is left to change, and the dry run says so.
    let again = h.run("apply.sh", &["--dry-run"]);
    assert!(
        !checks(&again)
            .values()
            .any(|c| c.message.starts_with("dry run: ")),
        "{ctx}: {:?}",
        again.statuses()
    );
    assert!(
        again.stdout.contains(&format!(
            "\nnothing to change: the host matches the plan\nnext: bash {}/apply.sh\n",
            h.bundle.display()
        )),
        "{ctx}: {}",
        again.stdout
    );
    (dry, apply)
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_fresh_host() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = FakeHost::of(kind).bash(bash).build();
            if kind == "ofed" {
                // A site's own post-start hook, which apply keeps and chains.
                let hook = h.fake("etc/infiniband/post-start-hook.sh");
                std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
                std::fs::write(&hook, "#!/bin/bash\ntrue\n").unwrap();
            }
            let (dry, apply) = dry_run_matches_apply(&h, &format!("fresh {kind} {bash}"));
            assert!(apply.count("changed") > 10, "{:?}", apply.statuses());
            if kind == "ofed" {
                assert!(
                    dry.stdout
                        .contains("/etc/infiniband/post-start-hook.sh.roce-gen-chained\n"),
                    "{}",
                    dry.stdout
                );
            }
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_that_drifted_after_an_apply() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = FakeHost::of(kind).bash(bash).build();
            let first = h.run("apply.sh", &[]);
            assert_eq!(first.code, 0, "{}", first.stdout);
            on_host(
                &h,
                &["ip", "link", "set", "dev", "ens1f0np0", "mtu", "9000"],
            );
            if kind == "ofed" {
                on_host(
                    &h,
                    &["mlnx_qos", "-i", "ens2f0np0", "--pfc", "0,0,0,0,0,0,0,0"],
                );
                on_host(
                    &h,
                    &["mlnx_qos", "-i", "ens2f0np0", "--dscp2prio", "set,26,5"],
                );
            } else {
                on_host(
                    &h,
                    &["dcb", "pfc", "set", "dev", "ens2f0np0", "prio-pfc", "3:off"],
                );
                on_host(
                    &h,
                    &[
                        "dcb",
                        "app",
                        "replace",
                        "dev",
                        "ens2f0np0",
                        "dscp-prio",
                        "26:5",
                    ],
                );
            }
            on_host(&h, &["ethtool", "-A", "ens2f0np0", "rx", "on", "tx", "on"]);
            let ctx = format!("drifted {kind} {bash}");
            let (_, apply) = dry_run_matches_apply(&h, &ctx);
            apply.expect(&["mtu"], "mlx5_0", "changed", &ctx);
            apply.expect(&["trust", "pfc"], "mlx5_0", "pass", &ctx);
            apply.expect(&["pfc", "dscp2prio", "pause"], "mlx5_1", "changed", &ctx);
            assert_eq!(apply.status("persistence", ""), "pass", "{ctx}");
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_far_from_the_defaults() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = crate::field::unusual_host(kind, bash);
            let ctx = format!("unusual {kind} {bash}");
            let (dry, _) = dry_run_matches_apply(&h, &ctx);
            // Port 1 is in DSCP trust with 26→5: PFC and the map change together, in one
            // mlnx_qos start, and the dry run says so.
            if kind == "ofed" {
                assert!(
                    dry.stdout.contains(
                        "would run: mlnx_qos -i ens2f0np0 --pfc 0,0,0,1,0,0,0,0 --dscp2prio set,26,3 --dscp2prio set,48,6\n"
                    ),
                    "{ctx}: {}",
                    dry.stdout
                );
            }
        }
    });
}

/// RoCE on priority 4: `trust dscp` maps DSCP 26 to 3 (26 >> 3), so the map changes after it,
/// together with PFC; and apply takes DCBX over from the firmware on port 0.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_plan_whose_dscp_map_trust_does_not_program() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = FakeHost::of(kind)
                .bash(bash)
                .plan(|plan| {
                    let c = &mut plan["cluster"];
                    c["roce_priority"] = Value::from(4);
                    c["pfc_priorities"] = serde_json::json!([4]);
                    c["ecn_priorities"] = serde_json::json!([4]);
                    c["dcbx"] = Value::from("os");
                })
                .build();
            std::fs::write(h.fake(".fake/dcb/ens1f0np0/dcbx"), "cee ieee\n").unwrap();
            let ctx = format!("priority 4 {kind} {bash}");
            let (dry, apply) = dry_run_matches_apply(&h, &ctx);
            if kind == "ofed" {
                assert!(
                    dry.stdout.contains(
                        "would run: mlnx_qos -i ens1f0np0 --pfc 0,0,0,0,1,0,0,0 --dscp2prio set,26,4 --dscp2prio set,48,6\n"
                    ),
                    "{ctx}: {}",
                    dry.stdout
                );
            }
            apply.expect(
                &["dcbx", "trust", "dscp2prio", "pfc"],
                "mlx5_0",
                "changed",
                &ctx,
            );
            apply.expect(&["dcbx"], "mlx5_1", "pass", &ctx);
        }
    });
}

/// PFC off and 802.3x pause on: turning off the PFC a host had clears pause, which apply then
/// sets again; the dry run prints that command too, and neither calls pause changed.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_plan_with_pause_on_and_pfc_off() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = FakeHost::of(kind)
                .bash(bash)
                .plan(|plan| {
                    plan["cluster"]["pfc_priorities"] = serde_json::json!([]);
                    plan["cluster"]["global_pause"] = Value::from("on");
                })
                .build();
            if kind == "ofed" {
                on_host(
                    &h,
                    &["mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1,0,0,0,0"],
                );
            } else {
                on_host(
                    &h,
                    &["dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc", "3:on"],
                );
            }
            on_host(&h, &["ethtool", "-A", "ens1f0np0", "rx", "on", "tx", "on"]);
            let ctx = format!("pause on {kind} {bash}");
            let (dry, apply) = dry_run_matches_apply(&h, &ctx);
            assert!(
                dry.stdout
                    .contains("would run: ethtool -A ens1f0np0 rx on tx on\n"),
                "{ctx}: {}",
                dry.stdout
            );
            assert_eq!(
                dry.message("pause", "mlx5_0"),
                "pause is rx on tx on as planned; an earlier change alters it, so apply sets it again"
            );
            apply.expect(&["pfc"], "mlx5_0", "changed", &ctx);
            apply.expect(&["pause"], "mlx5_0", "pass", &ctx);
            assert_eq!(
                apply.message("pause", "mlx5_0"),
                "pause is rx on tx on as planned; set again after an earlier change altered it"
            );
            apply.expect(&["pfc", "pause"], "mlx5_1", "pass", &ctx);
        }
    });
}

/// What `roce-gen ingest DIR --plan PLAN --format json` makes of a host: its exit status, the
/// cluster's `ok` and the host's state.
pub(crate) fn verdict(h: &FakeHost, dir: &std::path::Path, host: &str) -> (i32, Value, Value) {
    let plan = h.plan().display().to_string();
    let run = crate::common::roce_gen(dir, &["ingest", ".", "--plan", &plan, "--format", "json"]);
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("ingest: {e}\n{}", run.transcript()));
    let state = report["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["host"] == host)
        .map(|r| r["state"].clone())
        .unwrap_or_else(|| panic!("no {host} in\n{}", run.stdout));
    (run.code, report["ok"].clone(), state)
}

/// The result files of a folder, by name, byte for byte.
pub(crate) fn results_in(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Asserts that `after` holds `before`'s files unchanged and one more: the dry run's result,
/// named `<host>.<phase>.dry-run.json`, phase `phase`, `"dry_run": true`.
pub(crate) fn only_a_dry_run_result_added(
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
    name: &str,
    phase: &str,
    ctx: &str,
) {
    for (file, bytes) in before {
        assert!(
            after.get(file) == Some(bytes),
            "{ctx}: the dry run replaced or removed {file}"
        );
    }
    let added: Vec<&String> = after.keys().filter(|f| !before.contains_key(*f)).collect();
    assert_eq!(added, [name], "{ctx}");
    let dry: Value = serde_json::from_slice(&after[name]).unwrap();
    assert_eq!(dry["phase"], phase, "{ctx}");
    assert_eq!(dry["dry_run"], true, "{ctx}");
}

/// A dry run after an apply, in the bundle folder (its `results/`) and from a stick
/// (`run-here.sh`, the copy on the stick and the one on the host): the apply's result stays
/// byte for byte, the dry run's goes beside it, and ingest's verdict on the host is unchanged.
/// Rollback's dry run after a rollback likewise leaves the rollback's result.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_dry_run_never_replaces_the_result_of_a_real_run() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let results = h.bundle.join("results");
        let apply = h.bundle.join("apply.sh").display().to_string();
        let rollback = h.bundle.join("rollback.sh").display().to_string();
        on_host(&h, &[bash, &apply, "--no-persist"]);
        let before = results_in(&results);
        let verdict_before = verdict(&h, &results, "node-a");
        assert_eq!(verdict_before.2, "configured", "{bash}");
        // As the apply ran, so that it predicts no change.
        on_host(&h, &[bash, &apply, "--dry-run", "--no-persist"]);
        let after = results_in(&results);
        only_a_dry_run_result_added(
            &before,
            &after,
            "node-a.apply.dry-run.json",
            "apply",
            &format!("{bash} bundle"),
        );
        assert_eq!(verdict(&h, &results, "node-a"), verdict_before, "{bash}");

        on_host(&h, &[bash, &rollback]);
        let before = results_in(&results);
        // Nothing to restore now, and the dry run says so in a file of its own.
        on_host(&h, &[bash, &rollback, "--dry-run"]);
        only_a_dry_run_result_added(
            &before,
            &results_in(&results),
            "node-a.rollback.dry-run.json",
            "rollback",
            &format!("{bash} bundle rollback"),
        );

        // From a stick.
        let stick = h.dist().join("results");
        let kept = h.fake("var/lib/roce-gen/lab/results");
        let run_here = h.dist().join("run-here.sh").display().to_string();
        on_host(&h, &[bash, &run_here, "apply", "--no-persist"]);
        let (on_stick, on_host_) = (results_in(&stick), results_in(&kept));
        let verdict_before = verdict(&h, &stick, "node-a");
        assert_eq!(verdict_before.2, "configured", "{bash}");
        let (code, stdout, stderr) =
            h.run_cmd(&[bash, &run_here, "apply", "--dry-run", "--no-persist"]);
        assert_eq!(code, 0, "{bash}: {stdout}{stderr}");
        assert!(
            stdout.contains(&format!(
                "run-here: result copied to {}/node-a.apply.dry-run.json\n",
                stick.display()
            )),
            "{bash}: {stdout}"
        );
        for (dir, before, what) in [(&stick, &on_stick, "stick"), (&kept, &on_host_, "host")] {
            only_a_dry_run_result_added(
                before,
                &results_in(dir),
                "node-a.apply.dry-run.json",
                "apply",
                &format!("{bash} run-here.sh, the {what}'s copy"),
            );
        }
        assert_eq!(verdict(&h, &stick, "node-a"), verdict_before, "{bash}");
    });
}
