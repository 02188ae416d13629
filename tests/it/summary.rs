//! The summary the bundle scripts print, in the manner of `terraform plan`: the failures, then
//! each warning that needs a person on its own line, then what apply changes (will, would or
//! did) as one entry per setting with the ports grouped by value, and a count. The same under
//! every bash.

use std::process::Command;

use crate::fakehost::{FakeHost, ScriptRun, Utf8Console, for_each_bash};

/// The summary of a run: its stdout from the ✅/❌ line on (a dry run prints its commands first).
fn summary(run: &ScriptRun) -> String {
    let at = run
        .stdout
        .find("✅ ")
        .or_else(|| run.stdout.find("❌ "))
        .unwrap_or_else(|| panic!("no summary in\n{}", run.stdout));
    run.stdout[at..].to_string()
}

/// Asserts that every bash printed the same, and returns it.
fn same_under_every_bash(outputs: &[(String, String)]) -> String {
    let (first_bash, first) = &outputs[0];
    for (bash, out) in &outputs[1..] {
        assert_eq!(out, first, "{bash} and {first_bash} differ");
    }
    first.clone()
}

fn snapshot(name: &str, text: &str) {
    crate::common::snapshot(name, text);
}

/// `text` with the host's temporary folders named, for a snapshot: the bundle as `BUNDLE`, the
/// folder of the results (`--out`) as `RESULTS`.
fn placed(h: &FakeHost, text: &str) -> String {
    let results = h.root.parent().unwrap();
    let name = results.file_name().unwrap().to_string_lossy();
    text.replace(&h.bundle.display().to_string(), "BUNDLE")
        .replace(&results.display().to_string(), "RESULTS")
        .replace(&format!("ingest {name} "), "ingest RESULTS ")
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_unconfigured_host_gets_one_entry_per_setting_not_one_warning_per_port() {
    let mut outputs = Vec::new();
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        h.arp_hygienic();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stderr);
        assert!(
            !pre.stdout.contains("apply will change it"),
            "{bash}: {}",
            pre.stdout
        );
        assert!(!pre.stdout.contains('⚠'), "{bash}: {}", pre.stdout);
        outputs.push((bash.to_string(), placed(&h, &pre.stdout)));
    });
    snapshot(
        "precheck_summary_unconfigured",
        &same_under_every_bash(&outputs),
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn real_warnings_come_first_and_a_configured_host_has_nothing_to_change() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        h.arp_hygienic();
        // A link below its fastest mode and firmware-owned DCBX: warnings for a person.
        std::fs::write(h.fake("sys/class/net/ens1f0np0/speed"), "200000\n").unwrap();
        std::fs::write(h.fake(".fake/dcb/ens2f0np0/dcbx"), "cee ieee\n").unwrap();
        for (script, args, heading) in [
            ("precheck.sh", &[][..], "apply will change:"),
            ("apply.sh", &["--dry-run"][..], "apply would change:"),
        ] {
            let run = h.run(script, args);
            let text = summary(&run);
            let lines: Vec<&str> = text.lines().collect();
            let block = lines
                .iter()
                .position(|l| *l == heading)
                .unwrap_or_else(|| panic!("{bash} {script}: no {heading:?} in\n{text}"));
            let warned: Vec<usize> = (0..lines.len())
                .filter(|&n| lines[n].starts_with("⚠ "))
                .collect();
            // The warnings are exactly the result's warnings that are not changes.
            let real: Vec<String> = run.result["checks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| {
                    c["status"] == "warn"
                        && !matches!(c["kind"].as_str(), Some("setting" | "action"))
                })
                .map(|c| c["message"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(real.len(), 2, "{bash} {script}: {real:?}");
            assert_eq!(warned.len(), real.len(), "{bash} {script}:\n{text}");
            assert!(
                warned.iter().all(|&n| n < block),
                "{bash} {script}: a warning after the changes:\n{text}"
            );
            for m in &real {
                assert!(text.contains(m.as_str()), "{bash} {script}: {m}\n{text}");
            }
            assert!(
                lines[warned[0]].starts_with("⚠ link_speed:mlx5_0: ens1f0np0 runs at 200000 Mb/s")
                    && lines[warned[1]]
                        .starts_with("⚠ dcbx:mlx5_1: DCBX on ens2f0np0 is firmware-controlled"),
                "{bash} {script}:\n{text}"
            );
            assert!(
                lines.contains(&"  mtu: 2 ports 1500 → 4200"),
                "{bash} {script}:\n{text}"
            );
            let count = lines[lines.len() - 2];
            // One prediction: the boot unit, the reload hook, the health timer, /etc/nccl.conf
            // and nccl.env, in precheck as in the dry run.
            assert_eq!(
                count, "Plan: 8 settings to change on 2 ports, 5 host-wide changes.",
                "{bash} {script}:\n{text}"
            );
            // Then the real run.
            assert_eq!(
                *lines.last().unwrap(),
                format!("next: bash {}/apply.sh", h.bundle.display()),
                "{bash} {script}:\n{text}"
            );
        }

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let text = summary(&apply);
        assert!(
            text.contains("\nchanged:\n  trust: 2 ports pcp → dscp\n"),
            "{bash}:\n{text}"
        );
        // Then the result to bring back: the folder --out wrote it to.
        let ingest = format!(
            "\nnext: bring {} back and run: roce-gen ingest {} --plan PLAN\n",
            h.root.parent().unwrap().display(),
            h.root
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
        );
        assert!(
            text.ends_with(&format!(
                "\nChanged 8 settings on 2 ports, 5 host-wide changes.{ingest}"
            )),
            "{bash}:\n{text}"
        );
        let again = h.run("apply.sh", &[]);
        assert!(
            again.stdout.ends_with(&format!(
                "\nnothing changed: the host already matched the plan{ingest}"
            )),
            "{bash}:\n{}",
            again.stdout
        );
        // A precheck with nothing to change has nothing for apply to do: its result is next.
        let pre = h.run("precheck.sh", &[]);
        assert!(
            !pre.stdout.contains("apply will change:")
                && pre.stdout.ends_with(&format!(
                    "\nnothing to change: the host matches the plan{ingest}"
                )),
            "{bash}:\n{}",
            pre.stdout
        );
    });
}

/// Apply says what it is doing as it goes, on stderr: the precheck, each port, each link it
/// waits for, the install and the health timer's first run; rollback each port, its links and
/// the removal. `-q`, a dry run and precheck print none of it.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_and_rollback_say_what_they_are_doing_as_they_go() {
    let progress = |run: &ScriptRun| -> Vec<String> {
        run.stderr
            .lines()
            .filter(|l| l.starts_with("… "))
            .map(str::to_string)
            .collect()
    };
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        for (script, args) in [("precheck.sh", &[][..]), ("apply.sh", &["--dry-run"][..])] {
            let run = h.run(script, args);
            assert_eq!(progress(&run), Vec::<String>::new(), "{bash} {script}");
        }
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let port = |dev: &str, ifc: &str| {
            [
                format!(
                    "… {dev} ({ifc}): saving its values, then setting those that differ from the plan"
                ),
                format!(
                    "… waiting up to 30s for the link of {ifc} to come back (the PFC change toggled it)"
                ),
            ]
        };
        let mut want =
            vec!["… checking the bundle, the host and each NIC against the plan".to_string()];
        want.extend(port("mlx5_0", "ens1f0np0"));
        want.extend(port("mlx5_1", "ens2f0np0"));
        want.push(
            "… installing the bundle in /opt/roce-gen/lab and enabling roce-gen-lab.service".into(),
        );
        want.push("… waiting for the first health run (roce-gen-health-lab.service)".into());
        assert_eq!(progress(&apply), want, "{bash}: {}", apply.stderr);

        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        assert_eq!(
            progress(&rollback),
            [
                "… mlx5_0: restoring the values saved before the first apply",
                "… waiting up to 30s for the link of ens1f0np0 to come back (the PFC change toggled it)",
                "… mlx5_1: restoring the values saved before the first apply",
                "… waiting up to 30s for the link of ens2f0np0 to come back (the PFC change toggled it)",
                "… removing roce-gen-lab.service, the health timer and /opt/roce-gen/lab",
            ],
            "{bash}: {}",
            rollback.stderr
        );

        // -q: the same runs, without a word as they go.
        for (script, args) in [("apply.sh", ["-q"]), ("rollback.sh", ["--quiet"])] {
            let run = h.run(script, &args);
            assert_eq!(run.code, 0, "{bash} {script}: {}", run.stdout);
            assert!(
                run.count("changed") > 10,
                "{bash} {script}: {:?}",
                run.statuses()
            );
            assert_eq!(progress(&run), Vec::<String>::new(), "{bash} {script}");
        }
        // Precheck is quick and silent: it takes no -q.
        let pre = Command::new(bash)
            .arg(h.bundle.join("precheck.sh"))
            .arg("-q")
            .output()
            .unwrap();
        assert_eq!(pre.status.code(), Some(2), "{bash}");
        assert!(
            String::from_utf8_lossy(&pre.stderr).contains("error: unknown option -q"),
            "{bash}"
        );
    });
}

/// Ports that differ get a line per group of values; precheck, the dry run, apply and rollback
/// of one host, side by side.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_far_from_the_defaults_shows_its_ports_grouped_by_value() {
    let mut outputs = Vec::new();
    for_each_bash(|bash| {
        let h = crate::field::unusual_host("ofed", bash);
        let mut all = String::new();
        for (title, script, args) in [
            ("precheck", "precheck.sh", &[][..]),
            ("apply --dry-run", "apply.sh", &["--dry-run"][..]),
            ("apply", "apply.sh", &[][..]),
            ("rollback", "rollback.sh", &[][..]),
        ] {
            let run = h.run(script, args);
            assert_eq!(
                run.code, 0,
                "{bash} {title}: {}\n{}",
                run.stdout, run.stderr
            );
            all.push_str(&format!("# {title}\n{}\n", placed(&h, &summary(&run))));
        }
        outputs.push((bash.to_string(), all));
    });
    let all = same_under_every_bash(&outputs);
    assert!(
        all.contains("  mtu: 2 ports → 4200\n    from 9000 (mlx5_0)\n    from 1500 (mlx5_1)\n"),
        "{all}"
    );
    snapshot("summary_unusual_host", &all);
}

/// The layout for a host with more ports than the simulated ones: lib.sh's summary over the
/// checks of an eight-port precheck, recorded directly.
#[test]
fn eight_ports_fit_in_80_columns_and_name_only_the_odd_ones() {
    let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/host/lib.sh");
    let script = format!(
        r#"
. {lib}
RG_PHASE=precheck
RG_HOST=gpu-001
RG_NIC_IBDEV=(mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7)
RG_NIC_NETDEV=(eth0 eth1 eth2 eth3 eth4 eth5 eth6 eth7)
zeros=0,0,0,0,0,0,0,0 pfc=0,0,0,1,0,0,0,0
for i in 0 1 2 3 4 5 6 7; do
  dev=${{RG_NIC_IBDEV[i]}}
  rg_check link_state "$dev" pass warning "4: ACTIVE" "4: ACTIVE" "port 1 of $dev is ACTIVE"
  ifc=${{RG_NIC_NETDEV[i]}}
  rg_check arp_sysctls "$dev" warn warning "1 2 2" "0 0 2" "$ifc on a host with several RoCE ports: arp_ignore 0 lets every port answer ARP for the addresses of the others (ARP flux); set arp_ignore=1, arp_announce=2, rp_filter=2 on $ifc (plan arp_sysctls = set does it)"
  rg_check_change trust "$dev" warn error dscp pcp "trust is pcp, the plan says dscp (apply will change it)" pcp
  from=$zeros
  case $i in 3 | 7) from=1,1,1,1,1,1,1,1 ;; esac
  rg_check_change pfc "$dev" warn error "$pfc" "$from" "pfc is $from, the plan says $pfc (apply will change it)" "$from"
  rg_add_flap "$i"
  case $i in
    2 | 5) rg_check_change mtu "$dev" warn error 4200 9000 "mtu is 9000, the plan says 4200 (apply will change it)" 9000 ;;
    *) rg_check mtu "$dev" pass error 4200 4200 "mtu is 4200 as planned" ;;
  esac
  case $i in
    0) rg_check_change traffic_class "$dev" warn error 106 "" "traffic_class is unset, the plan says 106 (apply will change it)" "" ;;
    1) rg_check_change traffic_class "$dev" warn error 106 96 "traffic_class is 96, the plan says 106 (apply will change it)" 96 ;;
  esac
done
rg_check cabling mlx5_4 warn warning "leaf-5 Eth1/1" "leaf-5 Eth1/9" "eth4 is cabled to leaf-5 Eth1/9, plan says leaf-5 Eth1/1"
rg_summary
"#,
        lib = lib.display()
    );
    let mut outputs = Vec::new();
    for_each_bash(|bash| {
        let out = Command::new(bash)
            .args(["-c", &script])
            .utf8_console()
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{bash}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((bash.to_string(), text));
    });
    let text = same_under_every_bash(&outputs);
    // The same advice on every port but for the port's name: one line that lists the ports.
    let arp: Vec<&str> = text.lines().filter(|l| l.contains("arp_sysctls")).collect();
    assert_eq!(
        arp,
        [
            "⚠ arp_sysctls:mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7: each port on a host with several RoCE ports: arp_ignore 0 lets every port answer ARP for the addresses of the others (ARP flux); set arp_ignore=1, arp_announce=2, rp_filter=2 on each port (plan arp_sysctls = set does it)"
        ],
        "{text}"
    );
    // The entries; a tool's own message or a list of links may be longer.
    for line in text.lines().filter(|l| l.starts_with("  ")) {
        assert!(line.chars().count() <= 80, "too wide: {line:?}");
    }
    snapshot("precheck_summary_eight_ports", &text);
}

/// The result as text with the clock taken out (run times, the time stamps a tool's message
/// carries), for comparing two runs of one host.
fn timeless(run: &ScriptRun) -> String {
    let mut v = run.result.clone();
    for key in ["started_at", "finished_at"] {
        v.as_object_mut().unwrap().remove(key);
    }
    let text = serde_json::to_string_pretty(&v).unwrap();
    // 2026-12-01T03:11:24 → ####-##-##T##:##:##
    let shape = |c: u8, p: u8| {
        if p == b'#' {
            c.is_ascii_digit()
        } else {
            c == p
        }
    };
    let pattern = b"####-##-##T##:##:##";
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let stamp = bytes.len() - i >= pattern.len()
            && bytes[i..i + pattern.len()]
                .iter()
                .zip(pattern)
                .all(|(&c, &p)| shape(c, p));
        if stamp {
            out.extend_from_slice(pattern);
            i += pattern.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn non_ascii(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.is_ascii()).collect()
}

/// Serial and BMC consoles garble UTF-8: with `--ascii`, or on a locale that is not UTF-8, every
/// byte the scripts print is ASCII, the symbols in their ASCII form; the result is the same.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_plain_console_gets_an_ascii_summary_and_the_same_result() {
    for_each_bash(|bash| {
        let h = crate::field::unusual_host("ofed", bash);
        let utf8 = h.run("precheck.sh", &[]);
        assert!(
            utf8.stdout.starts_with("✅ node-a: precheck"),
            "{bash}: {}",
            utf8.stdout
        );
        for (how, args, env) in [
            ("--ascii", &["--ascii"][..], &[][..]),
            ("LANG=C", &[][..], &[("LANG", "C")][..]),
            ("LC_ALL=POSIX", &[][..], &[("LC_ALL", "POSIX")][..]),
            ("TERM=vt220", &[][..], &[("TERM", "vt220")][..]),
        ] {
            let plain = h.run_env("precheck.sh", args, env);
            assert_eq!(plain.code, 0, "{bash} {how}: {}", plain.stderr);
            assert_eq!(timeless(&plain), timeless(&utf8), "{bash} {how}");
            for out in [&plain.stdout, &plain.stderr] {
                assert!(
                    non_ascii(out).is_empty(),
                    "{bash} {how}: {:?}",
                    non_ascii(out)
                );
            }
            assert!(
                plain
                    .stdout
                    .starts_with("[OK] node-a: precheck: all checks passed"),
                "{bash} {how}: {}",
                plain.stdout
            );
            assert!(
                plain
                    .stdout
                    .contains("  mtu: 2 ports -> 4200\n    from 9000 (mlx5_0)\n"),
                "{bash} {how}: {}",
                plain.stdout
            );
        }
        // A UTF-8 locale spelled otherwise keeps the symbols.
        let spelled = h.run_env("precheck.sh", &[], &[("LANG", "en_US.utf8")]);
        assert_eq!(spelled.stdout, utf8.stdout, "{bash}");

        // Host-wide changes and a failure: the action lines and the failed items too.
        let apply = h.run_env("apply.sh", &[], &[("LANG", "C")]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert!(
            non_ascii(&apply.stdout).is_empty(),
            "{bash}: {}",
            apply.stdout
        );
        assert!(
            apply.stdout.contains(
                "  persistence: absent -> installed (roce-gen-lab.service, /opt/roce-gen/lab)\n"
            ),
            "{bash}: {}",
            apply.stdout
        );
        std::fs::write(h.fake(".fake/hostname"), "node-ü\n").unwrap();
        let wrong = h.run_env("precheck.sh", &["--ascii"], &[]);
        assert_eq!(wrong.code, 1, "{bash}: {}", wrong.stdout);
        assert!(
            non_ascii(&wrong.stdout).is_empty(),
            "{bash}: {}",
            wrong.stdout
        );
        assert!(
            wrong.stdout.starts_with(&format!(
                "[FAIL] node-a: precheck: 1 failed ({} pass, ",
                wrong.count("pass")
            )) && wrong.stdout.contains(
                "\n[FAIL] hostname: this bundle is for node-a, but this host is node-??\n"
            ),
            "{bash}: {}",
            wrong.stdout
        );
        assert!(
            wrong.stdout.ends_with(
                "\nnext: run the bundle of this host (this one is for node-a), or name the host node-a\n"
            ),
            "{bash}: {}",
            wrong.stdout
        );
        assert!(wrong.stdout.contains("node-??"), "{bash}: {}", wrong.stdout);
        assert!(wrong.message("hostname", "").contains("node-ü"), "{bash}");
    });
}

/// The rule, from the environment alone: the locale's character set (LC_ALL, else LC_CTYPE,
/// else LANG; none is POSIX) must be UTF-8, and TERM no serial terminal or Linux console.
#[test]
fn the_plain_console_rule_reads_the_locale_and_the_terminal() {
    let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/host/lib.sh");
    let script = format!(". {} && printf %s \"$RG_ASCII $RG_OK\"", lib.display());
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("LANG", "C.UTF-8")], "no ✅"),
        (
            &[("LANG", "en_US.utf8"), ("TERM", "xterm-256color")],
            "no ✅",
        ),
        (&[], "yes [OK]"),
        (&[("LANG", "C")], "yes [OK]"),
        (&[("LANG", "en_US.UTF-8"), ("LC_ALL", "C")], "yes [OK]"),
        (&[("LANG", "C"), ("LC_CTYPE", "de_DE.UTF-8")], "no ✅"),
        (&[("LANG", "en_US.ISO-8859-1")], "yes [OK]"),
        (&[("LANG", "C.UTF-8"), ("TERM", "vt100")], "yes [OK]"),
        (&[("LANG", "C.UTF-8"), ("TERM", "linux")], "yes [OK]"),
    ];
    for_each_bash(|bash| {
        for (env, want) in cases {
            let out = Command::new(bash)
                .args(["-c", &script])
                .env_remove("LANG")
                .env_remove("LC_ALL")
                .env_remove("LC_CTYPE")
                .env_remove("TERM")
                .envs(env.iter().copied())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                *want,
                "{bash} {env:?}"
            );
        }
    });
}
