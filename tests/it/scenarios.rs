//! Scenarios as data: each `tests/it/scenarios/NAME.toml` describes a simulated host (its kind,
//! the plan host it is, the NICs it lacks, plan overrides, files set before the runs) and the
//! script runs to make on it. Every scenario runs under every bash and gives one snapshot
//! (`scenario_NAME`): per run its exit code, counts, the checks that did not pass with their
//! messages, what it printed, the commands that changed the host and the state it changed. The
//! same text under every bash, and the invariants every scenario keeps, are checked here:
//!
//! - precheck and any `--dry-run` change nothing (state and commands);
//! - an apply after an apply that passed changes nothing;
//! - a rollback after apply restores the state from before the first apply (link flaps and
//!   systemd's and udev's reload counters aside: they are the traces a change leaves).
//!
//! Each scenario is a test of its own (`scenarios::file::NAME`). Adding one is adding its file
//! and its name to `scenarios!` below; `INSTA_UPDATE=always cargo test --test it scenarios --
//! --include-ignored NAME` writes its snapshot, to be reviewed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::fakehost::{FakeHost, ScriptRun, changes, for_each_bash, is_trace};

/// One scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// What it shows, the snapshot's first line.
    description: String,
    /// `ofed` or `inbox`.
    kind: String,
    /// Which host of golden/lab-2node the machine is (`node-a` by default).
    #[serde(default)]
    plan_host: Option<String>,
    /// The host name the machine reports, when not its plan host's.
    #[serde(default)]
    host: Option<String>,
    /// NICs of the plan the machine lacks.
    #[serde(default)]
    without: Vec<String>,
    /// The name the plan gives the host, when not its plan host's (an FQDN, say).
    #[serde(default)]
    plan_name: Option<String>,
    /// More options of `fakehost.sh create` (`--rootfs tmpfs`).
    #[serde(default)]
    create: Vec<String>,
    /// `fakehost.sh` steps once the host is set up, each `VERB ARGS…` (`rename IF NEWNAME`).
    #[serde(default)]
    setup: Vec<String>,
    /// The plan's RDMA device names for the host's NICs, in order, when not the kernel's
    /// (`rocep26s0f0` on a host created with `--naming rdma`).
    #[serde(default)]
    ib_dev: Vec<String>,
    /// The plan's netdevs for the host's NICs, in order, when not the golden plan's (`bond0`
    /// for a RoCE LAG row).
    #[serde(default)]
    netdev: Vec<String>,
    /// Cluster keys set in the plan (its JSON form) before the bundles are generated.
    #[serde(default)]
    cluster: BTreeMap<String, toml::Value>,
    /// Files of the host's root written before the first run: path → content.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// Tools the host has installed besides those of its kind (`mlxconfig`): each a link to the
    /// stand-ins' dispatcher in the host's `bin/`.
    #[serde(default)]
    tools: Vec<String>,
    /// Files of the bundle changed (a line appended) after generation, before the first run.
    #[serde(default)]
    tampered: Vec<String>,
    /// Environment variables of every script run (`ROCE_GEN_TOOL_TIMEOUT = "2"`).
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// State lines (`PATH=`, a prefix) a rollback cannot restore and says so in a check of its
    /// own (DCBX handed back to the firmware on the dcb backend): left out of "rollback
    /// restores", and they must differ, so the exception stays true.
    #[serde(default)]
    unrestored: Vec<String>,
    /// The runs, in order: a script and its options (`apply.sh --dry-run`), or a `fakehost.sh`
    /// step on the whole host, `reload [--how HOW]` or `reboot`, after which the snapshot shows
    /// what systemd did with the unit and the result of the unit's run.
    runs: Vec<String>,
}

/// What the state snapshot covers: the fake sysfs and tool state, what apply installs, and the
/// network sysctls (`arp_sysctls = set`).
const STATE: [&str; 6] = [
    "sys",
    ".fake",
    "etc",
    "opt",
    "var/lib/roce-gen",
    "proc/sys/net",
];

fn state(h: &FakeHost) -> Vec<String> {
    h.snapshot_of(&STATE).lines().map(str::to_string).collect()
}

/// `- old` and `+ new` lines between two states; long values elided (`=…`), and
/// the installed copy of the bundle (the same files as the bundle) counted, not listed, so a
/// change to the scripts does not rewrite every scenario.
fn diff(before: &[String], after: &[String]) -> Vec<String> {
    let short = |l: &String| match l.split_once('=') {
        Some((path, value)) if value.chars().count() > 72 => format!("{path}=…"),
        _ => l.clone(),
    };
    let installed = |l: &String| l.starts_with("opt/roce-gen/") && !l.contains("/nccl.env=");
    let mut out = Vec::new();
    for (sign, from, to) in [("-", before, after), ("+", after, before)] {
        let lines: Vec<&String> = from.iter().filter(|l| !to.contains(l)).collect();
        let copies = lines.iter().filter(|l| installed(l)).count();
        out.extend(
            lines
                .iter()
                .filter(|l| !installed(l))
                .map(|l| format!("{sign} {}", short(l))),
        );
        if copies > 0 {
            out.push(format!(
                "{sign} opt/roce-gen/: {copies} files of the installed bundle"
            ));
        }
    }
    out
}

/// The state less the traces of what happened: the reload counters and flaps, and the results
/// the unit's runs wrote (records of the runs, which a rollback keeps).
fn without_traces(state: &[String]) -> Vec<&String> {
    state
        .iter()
        .filter(|l| !(is_trace(l) || is_result(l)))
        .collect()
}

/// A result file a run wrote in the state folder (the unit's runs write theirs there).
fn is_result(line: &str) -> bool {
    line.starts_with("var/lib/roce-gen/") && line.contains("/results/")
}

/// Runs `scenario` under `bash`; returns the snapshot text and checks the invariants.
fn play(name: &str, sc: &Scenario, bash: &str) -> String {
    let mut b = FakeHost::of(&sc.kind).bash(bash);
    if let Some(p) = &sc.plan_host {
        b = b.plan_host(p);
    }
    if let Some(host) = &sc.host {
        b = b.host(host);
    }
    for dev in &sc.without {
        b = b.without(dev);
    }
    if let Some(name) = &sc.plan_name {
        b = b.plan_name(name);
    }
    let create: Vec<&str> = sc.create.iter().map(String::as_str).collect();
    b = b.create_args(&create);
    for step in &sc.setup {
        let words: Vec<&str> = step.split_whitespace().collect();
        b = b.setup(&words);
    }
    let overrides: Vec<(String, Value)> = sc
        .cluster
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap()))
        .collect();
    let (plan_host, ib_dev, netdev) = (
        sc.plan_host.clone().unwrap_or_else(|| "node-a".into()),
        sc.ib_dev.clone(),
        sc.netdev.clone(),
    );
    let h = b
        .plan(move |plan| {
            for (k, v) in overrides {
                plan["cluster"][k] = v;
            }
            for host in plan["hosts"].as_array_mut().unwrap() {
                if host["hostname"] == plan_host.as_str() {
                    for (nic, name) in host["nics"].as_array_mut().unwrap().iter_mut().zip(&ib_dev)
                    {
                        nic["ib_dev"] = Value::from(name.as_str());
                    }
                    for (nic, name) in host["nics"].as_array_mut().unwrap().iter_mut().zip(&netdev)
                    {
                        nic["netdev"] = Value::from(name.as_str());
                    }
                }
            }
        })
        .build();
    for (path, content) in &sc.files {
        let file = h.fake(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }
    for tool in &sc.tools {
        std::os::unix::fs::symlink("stub", h.fake(&format!("bin/{tool}"))).unwrap();
    }
    for name in &sc.tampered {
        let file = h.bundle.join(name);
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("\n# tampered\n");
        std::fs::write(file, text).unwrap();
    }
    let _ = h.take_commands();
    let pristine = state(&h);
    let mut text = format!("# {}\n", sc.description);
    let mut applied = false;
    let mut last_apply_passed = false;
    // The state before each run is the state the run before it left: nothing touches the host
    // between two runs (the stand-ins' log and systemd's are outside STATE), so it is not read
    // again. Were anything to change it in between, the next run's diff would show it.
    let mut before = pristine.clone();
    for line in &sc.runs {
        let mut words = line.split_whitespace();
        let script = words.next().expect("a run names a script");
        let args: Vec<&str> = words.collect();
        let ctx = format!("{name} under {bash}: {line}");
        if script == "reload" || script == "reboot" {
            let _ = h.take_unit_log();
            let (code, _, err) = h.host_step(script, &args);
            assert_eq!(code, 0, "{ctx}: {err}");
            let changed = changes(&h.take_commands());
            let after = state(&h);
            text += &describe_host_step(&h, line, &changed, &diff(&before, &after));
            before = after;
            continue;
        }
        let env: Vec<(&str, &str)> = sc
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let run = h.run_env(script, &args, &env);
        let changed = changes(&h.take_commands());
        let after = state(&h);
        let dry = script == "precheck.sh" || args.contains(&"--dry-run");
        if dry {
            assert_eq!(after, before, "{ctx}: changed the host\n{}", run.stdout);
            assert!(changed.is_empty(), "{ctx}: ran {changed:?}");
        }
        if script == "apply.sh" && !dry {
            if last_apply_passed {
                assert_eq!(
                    run.count("changed"),
                    0,
                    "{ctx}: a second apply changed {:?}",
                    run.statuses()
                );
                assert!(changed.is_empty(), "{ctx}: a second apply ran {changed:?}");
                assert_eq!(without_traces(&after), without_traces(&before), "{ctx}");
            }
            applied = true;
            last_apply_passed = run.code == 0;
        }
        if script == "rollback.sh" && !dry && applied && run.code == 0 {
            let kept = |state: &[String]| -> Vec<String> {
                without_traces(state)
                    .into_iter()
                    .filter(|l| !sc.unrestored.iter().any(|u| l.starts_with(u.as_str())))
                    .cloned()
                    .collect()
            };
            assert_eq!(
                kept(&after),
                kept(&pristine),
                "{ctx}: rollback did not restore the host"
            );
            for u in &sc.unrestored {
                let of = |state: &[String]| -> Vec<String> {
                    state
                        .iter()
                        .filter(|l| l.starts_with(u.as_str()))
                        .cloned()
                        .collect()
                };
                assert_ne!(
                    of(&after),
                    of(&pristine),
                    "{ctx}: {u} was restored after all"
                );
            }
            applied = false;
            last_apply_passed = false;
        }
        text += &describe(&h, line, &run, &changed, &diff(&before, &after));
        before = after;
    }
    text
}

/// One titled list of the snapshot: `title: none`, or the title and one indented line each.
fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        *out += &format!("{title}: none\n");
    } else {
        *out += &format!("{title}:\n");
        for l in lines {
            *out += &format!("  {l}\n");
        }
    }
}

/// A reload or reboot as the snapshot shows it: what systemd did with the units, the result the
/// unit's run wrote (its status, counts and the checks that did not pass), the commands that
/// changed the host (the unit's among them) and the state it changed.
fn describe_host_step(h: &FakeHost, line: &str, changed: &[String], diff: &[String]) -> String {
    let units = h.take_unit_log();
    let mut out = format!("\n## {line}\n");
    section(&mut out, "systemd", &units);
    let mut result = Vec::new();
    if units.iter().any(|l| l.contains("ExecStart ran")) {
        let dir = h.fake("var/lib/roce-gen/lab/results");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(".apply.json"))
        {
            let r: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            result.push(format!(
                "{}: {} (pass {}, warn {}, fail {}, changed {}, skip {})",
                f.file_name().unwrap().to_string_lossy(),
                r["status"].as_str().unwrap_or("?"),
                r["counts"]["pass"],
                r["counts"]["warn"],
                r["counts"]["fail"],
                r["counts"]["changed"],
                r["counts"]["skip"]
            ));
            for c in r["checks"].as_array().unwrap() {
                if c["status"] != "pass" {
                    let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    result.push(format!(
                        "  {}:{}={}",
                        field("id"),
                        field("nic"),
                        field("status")
                    ));
                }
            }
        }
    }
    section(&mut out, "the unit's result", &result);
    section(&mut out, "commands that changed the host", changed);
    section(&mut out, "state changed", diff);
    out
}

/// One run as the snapshot shows it; what it printed with the host's temporary folder as `DIR`
/// and the test's result file name without its process id.
fn describe(
    h: &FakeHost,
    line: &str,
    run: &ScriptRun,
    changed: &[String],
    diff: &[String],
) -> String {
    let dir = h.root.parent().unwrap().display().to_string();
    // The folder's own name too (the `next:` line names the results folder by it).
    let base = h
        .root
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let pid = format!(".{}.json", std::process::id());
    let mut out = format!(
        "\n## {line}: exit {}, {} (pass {}, warn {}, fail {}, changed {}, skip {})\n",
        run.code,
        run.result["status"].as_str().unwrap_or("?"),
        run.count("pass"),
        run.count("warn"),
        run.count("fail"),
        run.count("changed"),
        run.count("skip"),
    );
    let not_passed: Vec<String> = run.result["checks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|c| c["status"] != "pass")
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            format!(
                "{}:{}={}: {}",
                field("id"),
                field("nic"),
                field("status"),
                field("message")
            )
        })
        .collect();
    // What a person at the console sees: the summary, and on stderr the refusals and errors.
    let printed: Vec<String> = run
        .stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|l| !l.starts_with("fakehost "))
        .map(|l| {
            l.replace(&dir, "DIR")
                .replace(&base, "DIR")
                .replace(&pid, ".json")
        })
        .collect();
    section(&mut out, "checks not passed", &not_passed);
    section(&mut out, "printed", &printed);
    section(&mut out, "commands that changed the host", changed);
    section(&mut out, "state changed", diff);
    out
}

/// The scenario folder.
fn scenario_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/scenarios")
}

/// Plays scenario `name` (its file's stem, `-` as `_`) under every bash, insists that every bash
/// gives the same text, and compares that text with the snapshot `scenario_NAME`.
fn run_scenario(name: &str) {
    let file = scenario_dir().join(format!("{}.toml", name.replace('_', "-")));
    let text = std::fs::read_to_string(&file).unwrap();
    let sc: Scenario = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut first: Option<String> = None;
    for_each_bash(|bash| {
        let text = play(name, &sc, bash);
        match &first {
            None => first = Some(text),
            Some(t) => assert_eq!(&text, t, "{name}: {bash} differs from bash"),
        }
    });
    crate::common::snapshot(&format!("scenario_{name}"), first.unwrap());
}

/// One test per scenario file, so that the test runner spreads them over the cores and a failure
/// names its scenario; [`every_scenario_file_has_its_test`] keeps this list and the folder equal.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        /// The scenarios that have a test, by the names of their tests.
        const SCENARIOS: &[&str] = &[$(stringify!($name)),*];
        /// The tests, one per scenario file.
        mod file {
            $(
                #[test]
                #[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
                fn $name() {
                    super::run_scenario(stringify!($name));
                }
            )*
        }
    };
}

scenarios!(
    arp_sysctls_set,
    bluefield_dpu_mode,
    cable_length_buffer_owner,
    dcb_backend_rollback,
    dcb_read_fails,
    firmware_owned_dcbx,
    firmware_query_fails,
    firewalld_default_zone,
    firmware_restricted_refused,
    fqdn_plan_short_host,
    inbox_lifecycle,
    iproute2_5_11,
    lag_firmware,
    lag_inbox,
    lag_lifecycle,
    lag_slave_down,
    lag_slave_missing,
    lag_vfs_representors,
    link_flap,
    link_never_returns,
    missing_nic,
    nccl_conf_site_file,
    netplan_ifcfg_owned,
    networkd_owned,
    networkmanager_owned,
    ofed_lifecycle,
    pfc_buffer_zero_xoff,
    plan_format_1_1,
    rail_route_other_interface,
    reload_inbox_rdma_names,
    reload_ofed,
    renamed_netdev,
    sriov_vfs,
    sriov_vfs_inbox,
    sriov_vfs_exclusive_netns,
    tampered_bundle,
    tmpfs_root,
    traffic_class_rules,
    wedged_driver_file,
    wrong_host,
    wrong_mac_at_pci
);

#[test]
fn every_scenario_file_has_its_test() {
    let mut files: Vec<String> = std::fs::read_dir(scenario_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().replace('-', "_"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = SCENARIOS.iter().map(|s| (*s).to_string()).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "a scenario file without its line in scenarios!() (or a line without its file)"
    );
}
