//! The command line itself: help, usage errors (exit 2), the embedded sample, and `sample`.

use crate::common::{roce_gen, tmp};

#[test]
fn help_lists_the_commands() {
    let run = roce_gen(std::path::Path::new("."), &["--help"]);
    assert_eq!(run.code, 0);
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("help", run.stdout);
    });
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
    assert_eq!(run.stderr, "");
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
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
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
