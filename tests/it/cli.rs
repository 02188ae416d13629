//! The command line itself: help, usage errors (exit 2), the embedded sample, and `sample`.

use crate::common::{Book, roce_gen, s, tmp};

#[test]
fn help_lists_the_commands() {
    let run = roce_gen(std::path::Path::new("."), &["--help"]);
    assert_eq!(run.code, 0);
    crate::common::snapshot("help", run.stdout);
}

#[test]
fn usage_errors_exit_2() {
    let dir = tmp();
    for args in [
        &["validate"][..],
        &["validate", "a.xlsx", "--sample"],
        &["frobnicate"],
        &["validate", "--format", "yaml", "a.xlsx"],
    ] {
        let run = roce_gen(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.transcript());
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    }
}

#[test]
fn the_embedded_sample_is_valid() {
    let run = roce_gen(std::path::Path::new("."), &["validate", "--sample"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stdout,
        "<sample>: valid plan for cluster demo: 4 hosts, 32 NICs (0 errors, 0 warnings, 0 notes)\n"
    );
    assert_eq!(run.stderr, "next: run `roce-gen generate --sample`\n");
}

/// The sample workbook is of the current format: every Cluster key of formats 1.0 to 1.3 but the
/// DCQCN parameters has its row, and none is refused or warned about (above).
#[test]
fn the_sample_has_a_row_for_every_key_of_the_current_format() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["sample", "-o", "plan.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let book: std::collections::BTreeSet<String> = {
        use calamine::{Reader, open_workbook_auto};
        let mut wb = open_workbook_auto(dir.path().join("plan.xlsx")).unwrap();
        let range = wb.worksheet_range("Cluster").unwrap();
        range.rows().skip(1).map(|r| r[0].to_string()).collect()
    };
    let missing: Vec<&str> = roce_gen::testing::KEYS
        .iter()
        .map(|k| k.name)
        .filter(|k| !k.starts_with("dcqcn_") && !book.contains(*k))
        .collect();
    assert!(missing.is_empty(), "the sample has no row for {missing:?}");
}

#[test]
fn sample_writes_the_embedded_plan_and_never_clobbers() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["sample", "-o", "mine.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let written = std::fs::read(dir.path().join("mine.xlsx")).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("mine.xlsx"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(
        mode & 0o777,
        0o644,
        "a written file is readable by others, not private like a temp file"
    );

    let from_file = roce_gen(dir.path(), &["plan", "mine.xlsx"]);
    let embedded = roce_gen(dir.path(), &["plan", "--sample"]);
    assert_eq!(from_file.stdout, embedded.stdout);

    std::fs::write(dir.path().join("mine.xlsx"), b"keep me").unwrap();
    let again = roce_gen(dir.path(), &["sample", "-o", "mine.xlsx"]);
    assert_eq!(again.code, 2, "{}", again.transcript());
    assert_eq!(
        again.stderr,
        "error: mine.xlsx exists; use --force to overwrite\n"
    );
    assert_eq!(
        std::fs::read(dir.path().join("mine.xlsx")).unwrap(),
        b"keep me"
    );

    let forced = roce_gen(dir.path(), &["sample", "-o", "mine.xlsx", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.transcript());
    assert_eq!(
        std::fs::read(dir.path().join("mine.xlsx")).unwrap(),
        written,
        "the sample is byte-identical every time"
    );

    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
}

#[test]
fn sample_refuses_other_formats_and_missing_folders() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["sample", "-o", "plan.csv"]);
    assert_eq!(run.code, 2);
    let run = roce_gen(dir.path(), &["sample", "-o", "no/such/dir/plan.xlsx"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
}

#[test]
fn plan_prints_nothing_on_stdout_for_an_invalid_plan() {
    let dir = tmp();
    std::fs::write(dir.path().join("plan.json"), r#"{"cluster":{},"hosts":[]}"#).unwrap();
    let run = roce_gen(dir.path(), &["plan", "plan.json"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("error: plan.json: cluster: no `cluster_name` key (required)"),
        "{}",
        run.stderr
    );
}

#[test]
fn bash_completion_completes_commands_and_options() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["completions", "bash"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    std::fs::write(dir.path().join("roce-gen.bash"), &run.stdout).unwrap();
    // The script as bash loads it, asked what follows `roce-gen in` and `roce-gen ingest --f`.
    let complete = |words: &str, cword: usize| {
        let script = format!(
            ". ./roce-gen.bash; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _roce__gen roce-gen \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(complete("roce-gen in", 1).trim(), "ingest");
    let options = complete("roce-gen ingest --f", 2);
    assert!(options.lines().any(|l| l == "--format"), "{options}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let run = roce_gen(dir.path(), &["completions", shell]);
        assert_eq!(run.code, 0, "{shell}");
        assert!(run.stdout.contains("ingest"), "{shell}");
    }
}

#[test]
fn the_manual_page_renders_with_every_command() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["man"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains(".TH roce-gen 1"), "{}", run.stdout);
    std::fs::write(dir.path().join("roce-gen.1"), &run.stdout).unwrap();
    // man-db renders it through groff; warnings would mean broken roff.
    let out = std::process::Command::new("man")
        .args(["--warnings", "-E", "UTF-8", "-l", "roce-gen.1"])
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .current_dir(dir.path())
        .output()
        .expect("man (man-db) is needed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    for command in [
        "generate",
        "validate",
        "plan",
        "ingest",
        "verify",
        "sample",
        "dashboard",
    ] {
        assert!(text.contains(command), "{command} not in:\n{text}");
    }
}

/// `man --dir` writes roce-gen(1) and a page per subcommand; every roce-gen-NAME(1) any page
/// names is one of them, each renders without a warning through man-db and through groff's
/// strictest checks, and `man NAME` prints the same page.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn every_manual_page_is_written_and_every_reference_resolves() {
    crate::common::require("groff");
    let dir = tmp();
    let run = roce_gen(dir.path(), &["man", "--dir", "pages"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let pages = dir.path().join("pages");
    let mut files: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(
        run.stderr
            .contains(&format!("wrote {} manual pages in pages", files.len())),
        "{}",
        run.stderr
    );
    for command in [
        "generate",
        "validate",
        "plan",
        "ingest",
        "verify",
        "dashboard",
        "completions",
        "man",
        "sample",
    ] {
        assert!(
            files.contains(&format!("roce-gen-{command}.1")),
            "no page for {command}: {files:?}"
        );
    }
    assert!(files.contains(&"roce-gen.1".to_string()), "{files:?}");
    let mut references = 0;
    for file in &files {
        let roff = std::fs::read_to_string(pages.join(file)).unwrap();
        assert!(roff.is_ascii(), "{file} is not ASCII");
        // roff spells the hyphens of a name `\-`.
        for (at, _) in roff.match_indices("roce\\-gen") {
            let rest = &roff[at..];
            let end = rest.find("(1)").filter(|&e| e < 40);
            let Some(end) = end else { continue };
            let name = rest[..end].replace("\\-", "-");
            if name.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                references += 1;
                assert!(
                    files.contains(&format!("{name}.1")),
                    "{file} names {name}(1), which is not written: {files:?}"
                );
            }
        }
        let out = std::process::Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(pages.join(file))
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .expect("man (man-db) is needed");
        assert!(out.status.success(), "{file}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "man -l {file}");
        let title = file.trim_end_matches(".1");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("{title}(1)")),
            "{file} is not titled {title}(1)"
        );
        let out = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(pages.join(file))
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff -ww {file}");
        if let Some(sub) = title.strip_prefix("roce-gen-") {
            let one = roce_gen(dir.path(), &["man", sub]);
            assert_eq!(one.code, 0, "{}", one.transcript());
            assert_eq!(one.stdout, roff, "roce-gen man {sub}");
            assert!(
                roff.ends_with(".SH \"SEE ALSO\"\nroce\\-gen(1)\n"),
                "{file}"
            );
        }
    }
    // The subcommands of roce-gen(1), and SEE ALSO of each of theirs.
    assert!(
        references >= 2 * (files.len() - 1),
        "{references} references"
    );
    assert!(
        !files.iter().any(|f| f.contains("help")),
        "no page for `help`: {files:?}"
    );
    let wrong = roce_gen(dir.path(), &["man", "frobnicate"]);
    assert_eq!(wrong.code, 2, "{}", wrong.transcript());
    assert!(
        wrong
            .stderr
            .contains("no manual page for 'frobnicate': the subcommands are generate, validate"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn validate_strict_makes_warnings_errors() {
    let dir = tmp();
    let mut book = crate::common::Book::base();
    book.key("roce_mode", crate::common::s("v1"));
    book.write(dir.path(), "plan.xlsx");
    let lenient = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    assert_eq!(lenient.code, 0, "{}", lenient.transcript());
    let strict = roce_gen(dir.path(), &["validate", "--strict", "plan.xlsx"]);
    assert_eq!(strict.code, 1, "{}", strict.transcript());
    assert!(
        strict
            .stderr
            .contains("error: plan.xlsx: --strict: 1 warning count as errors"),
        "{}",
        strict.stderr
    );
    let clean = roce_gen(dir.path(), &["validate", "--strict", "--sample"]);
    assert_eq!(clean.code, 0, "{}", clean.transcript());
}

#[test]
fn quiet_verbose_and_json_for_generate_and_verify() {
    let dir = tmp();
    let p = dir.path();
    let quiet = roce_gen(p, &["-q", "generate", "--sample", "-o", "out"]);
    assert_eq!(quiet.code, 0, "{}", quiet.transcript());
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    let verbose = roce_gen(p, &["generate", "--sample", "-o", "out", "-v"]);
    assert_eq!(verbose.code, 0);
    assert_eq!(
        verbose
            .stderr
            .lines()
            .filter(|l| l.starts_with("wrote gpu-"))
            .count(),
        4,
        "{}",
        verbose.stderr
    );

    let json = roce_gen(
        p,
        &[
            "generate", "--sample", "-o", "out", "--hosts", "gpu-002", "--format", "json",
        ],
    );
    assert_eq!(json.code, 0, "{}", json.transcript());
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["schema"], "roce-gen/generate/v1");
    assert_eq!(doc["cluster"], "demo");
    assert_eq!(doc["written"][0]["bundle"], "gpu-002.tar.gz");
    assert_eq!(doc["written"].as_array().unwrap().len(), 1);
    assert_eq!(
        doc["kept"],
        serde_json::json!(["gpu-001", "gpu-003", "gpu-004"])
    );

    std::fs::write(p.join("out/gpu-003.tar.gz"), b"damaged").unwrap();
    let verify = roce_gen(p, &["verify", "out", "--format", "json"]);
    assert_eq!(verify.code, 1, "{}", verify.transcript());
    let doc: serde_json::Value = serde_json::from_str(&verify.stdout).unwrap();
    assert_eq!(doc["schema"], "roce-gen/verify/v1");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["paths"][0]["path"], "out");
    let problems = doc["paths"][0]["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains("gpu-003.tar.gz")),
        "{problems:?}"
    );
    let quiet = roce_gen(p, &["verify", "-q", "out/gpu-001.tar.gz"]);
    assert_eq!((quiet.code, quiet.stdout.as_str()), (0, ""));
}

#[test]
fn color_always_and_never_override_the_terminal_test() {
    let dir = tmp();
    let p = dir.path();
    assert_eq!(roce_gen(p, &["generate", "--sample", "-o", "out"]).code, 0);
    std::fs::create_dir(p.join("results")).unwrap();
    let result = serde_json::json!({
        "schema": "roce-gen/result/v1", "host": "gpu-001", "phase": "apply",
        "finished_at": "2026-11-30T08:00:00Z", "status": "pass", "checks": [],
    });
    std::fs::write(p.join("results/gpu-001.apply.json"), result.to_string()).unwrap();
    // Not a terminal here: auto is plain, always colours, never stays plain even when asked
    // twice.
    let auto = roce_gen(p, &["ingest", "results"]);
    let always = roce_gen(p, &["ingest", "results", "--color", "always"]);
    let never = roce_gen(p, &["--color", "never", "ingest", "results"]);
    assert!(!auto.stdout.contains('\u{1b}'));
    assert!(always.stdout.contains("\u{1b}["), "{}", always.stdout);
    assert!(!never.stdout.contains('\u{1b}'));
}

#[test]
fn hostile_plan_paths_and_cells_are_printed_escaped() {
    let dir = tmp();
    let p = dir.path();
    let title = "\u{1b}]0;T\u{7}.xlsx";
    // Missing: the `error:` line of a command that could not run.
    let run = roce_gen(p, &["validate", title]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    crate::verify::assert_escaped(&run);
    assert!(
        run.stderr.starts_with("error: \\u{1b}]0;T\\u{7}.xlsx: "),
        "{}",
        run.stderr
    );

    // There, with a hostile cell: every diagnostic and the closing line.
    let mut book = Book::base();
    book.sheet("Servers")
        .set(1, "group", s("g\u{9b}31m\u{202e}1"));
    book.sheet("NICs").set(1, "ip", s("\u{1b}[2K\r10.1.0.1/24"));
    book.write(p, title);
    let run = roce_gen(p, &["validate", title]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    crate::verify::assert_escaped(&run);
    assert!(
        run.stderr
            .contains("error: \\u{1b}]0;T\\u{7}.xlsx: NICs!D2: ip \"\\u{1b}[2K\\r10.1.0.1/24\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.ends_with(
            "error: \\u{1b}]0;T\\u{7}.xlsx: invalid plan: 2 errors, 0 warnings, 0 notes\n"
        ),
        "{}",
        run.stderr
    );
    let json = roce_gen(p, &["validate", "--format", "json", title]);
    crate::verify::assert_escaped(&json);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["file"], title);

    // A valid plan under a name with a bidi override: the summary line and the next step.
    let name = "\u{202e}nalp.xlsx";
    Book::base().write(p, name);
    let run = roce_gen(p, &["validate", name]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    crate::verify::assert_escaped(&run);
    assert!(
        run.stdout.starts_with("\\u{202e}nalp.xlsx: valid plan"),
        "{}",
        run.stdout
    );

    // generate, sample and dashboard name the files they wrote and the next step.
    for args in [
        &["generate", name, "-o", "d\u{1b}[31m"][..],
        &["-v", "sample", "-o", "\u{1b}[2Ks.xlsx"],
        &["dashboard", "-o", "\u{1b}[2Kd.json"],
    ] {
        let run = roce_gen(p, args);
        assert_eq!(run.code, 0, "{}", run.transcript());
        crate::verify::assert_escaped(&run);
        assert!(run.stderr.contains("\\u{1b}["), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn validate_and_generate_end_with_the_next_step_unless_quiet() {
    let dir = tmp();
    let p = dir.path();
    Book::base().write(p, "my plan.xlsx");
    let run = roce_gen(p, &["validate", "my plan.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stderr, "next: run `roce-gen generate 'my plan.xlsx'`\n");
    let run = roce_gen(p, &["generate", "my plan.xlsx", "-o", "usb stick"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[0].starts_with("generated 2 bundles for cluster t1 in usb stick ("),
        "{}",
        run.stderr
    );
    // The trust anchor: run-here.sh's own sha256, to give to the hosts by another channel.
    let anchor =
        roce_gen::testing::sha256_hex(&std::fs::read(p.join("usb stick/run-here.sh")).unwrap());
    assert_eq!(
        lines[1],
        format!(
            "trust anchor: run-here.sh has sha256 {anchor}; on each host, check it (`sha256sum \
             run-here.sh`) against this value, not one from the folder, before running it"
        )
    );
    assert_eq!(
        lines[2..],
        [
            "next: copy 'usb stick' to the hosts (USB stick, share or web server) and run \
             `bash run-here.sh precheck` on each;",
            "      then bring 'usb stick/results' back and run `roce-gen ingest 'usb \
             stick/results' --plan 'my plan.xlsx'`",
        ]
    );
    // The embedded sample has no file to name.
    let run = roce_gen(p, &["generate", "--sample"]);
    assert!(
        run.stderr.ends_with("run `roce-gen ingest dist/results`\n"),
        "{}",
        run.stderr
    );
    for args in [
        &["-q", "validate", "my plan.xlsx"][..],
        &["-q", "generate", "my plan.xlsx", "-o", "quiet"],
    ] {
        let run = roce_gen(p, args);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{args:?}");
    }
}

#[test]
fn color_always_colours_every_commands_error_and_warning_labels() {
    let dir = tmp();
    let p = dir.path();
    let mut book = Book::base();
    book.sheet("NICs").set(1, "ip", s("10.1.0.300/24"));
    book.key("mtu", crate::common::C::N(1500.0));
    book.write(p, "bad.xlsx");
    let red = "\u{1b}[1m\u{1b}[31merror:\u{1b}[0m ";
    let yellow = "\u{1b}[1m\u{1b}[33mwarning:\u{1b}[0m ";
    let run = roce_gen(p, &["--color", "always", "validate", "bad.xlsx"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    for line in run.stderr.lines() {
        assert!(
            line.starts_with(red) || line.starts_with(yellow),
            "{line:?}"
        );
    }
    assert!(run.stderr.contains(&format!("{yellow}bad.xlsx: Cluster!B")));
    assert!(run.stderr.contains(&format!("{red}bad.xlsx: NICs!D2: ip")));
    // The error of a command that could not run, too; and never, or a pipe, stays plain.
    let run = roce_gen(p, &["verify", "--color", "always", "nowhere"]);
    assert!(run.stderr.starts_with(red), "{:?}", run.stderr);
    for args in [
        &["--color", "never", "validate", "bad.xlsx"][..],
        &["validate", "bad.xlsx"],
    ] {
        let run = roce_gen(p, args);
        assert!(!run.stderr.contains('\u{1b}'), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("warning: ") || run.stderr.starts_with("error: "));
    }
}

#[test]
fn verbose_verify_lists_every_file_it_checked() {
    let dir = tmp();
    let p = dir.path();
    Book::base().write(p, "plan.xlsx");
    assert_eq!(
        roce_gen(p, &["-q", "generate", "plan.xlsx", "-o", "out"]).code,
        0
    );
    let members =
        roce_gen::testing::read_tarball(&std::fs::read(p.join("out/h1.tar.gz")).unwrap()).unwrap();
    let run = roce_gen(p, &["-v", "verify", "out/h1.tar.gz", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let mut want: Vec<String> = members
        .keys()
        .map(|m| format!("ok: out/h1.tar.gz: {m}"))
        .collect();
    want.push("ok: out/h1.tar.gz".into());
    want.push("ok: out: index.json".into());
    for h in ["h1", "h2"] {
        want.extend(members.keys().map(|m| format!("ok: out: {h}.tar.gz: {m}")));
    }
    want.push("ok: out: run-here.sh".into());
    want.push("ok: out: SHA256SUMS".into());
    for line in std::fs::read_to_string(p.join("out/SHA256SUMS"))
        .unwrap()
        .lines()
    {
        want.push(format!("ok: out: {}", line.split_once("  ").unwrap().1));
    }
    want.push("ok: out".into());
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), want);
    // A failing path lists its problems only: no file is said to be ok when its bundle is not.
    std::fs::write(p.join("out/h2.tar.gz"), b"damaged").unwrap();
    let run = roce_gen(p, &["-v", "verify", "out"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(!run.stdout.contains("ok:"), "{}", run.stdout);
}
