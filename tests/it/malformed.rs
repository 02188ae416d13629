//! Files that are not plans at all: each gives exit 2, one clear `error:` line naming the file,
//! and no panic. An empty but well-formed workbook is a plan with missing sheets (exit 1).

use crate::common::{Book, roce_gen, tmp};

fn expect_unreadable(file: &str, bytes: &[u8], reason: &str) {
    let dir = tmp();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    for cmd in ["validate", "plan"] {
        let run = roce_gen(dir.path(), &[cmd, file]);
        assert_eq!(run.code, 2, "{file}: {}", run.transcript());
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.starts_with(&format!("error: {file}: ")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(reason), "{file}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn csv_renamed_to_xlsx() {
    expect_unreadable(
        "plan.xlsx",
        b"hostname,mgmt_ip\ngpu-001,10.0.0.1\n",
        "not a readable workbook",
    );
}

#[test]
fn truncated_workbooks_at_many_lengths() {
    let dir = tmp();
    let full = std::fs::read(Book::base().write(dir.path(), "full.xlsx")).unwrap();
    for len in [
        1,
        4,
        30,
        100,
        1000,
        full.len() / 2,
        full.len() - 100,
        full.len() - 1,
    ] {
        let dir = tmp();
        std::fs::write(dir.path().join("plan.xlsx"), &full[..len]).unwrap();
        let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
        assert_eq!(run.code, 2, "truncated at {len}: {}", run.transcript());
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn corrupted_workbook_bytes_never_panic() {
    let dir = tmp();
    let full = std::fs::read(Book::base().write(dir.path(), "full.xlsx")).unwrap();
    // Flip bytes across the archive (a deterministic spread, not random, so failures reproduce).
    for step in 0..40 {
        let mut bytes = full.clone();
        let at = (step * 7919) % bytes.len();
        bytes[at] ^= 0x5a;
        std::fs::write(dir.path().join("plan.xlsx"), &bytes).unwrap();
        let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
        assert!(
            [0, 1, 2].contains(&run.code),
            "byte {at}: {}",
            run.transcript()
        );
        assert!(
            !run.stderr.contains("panicked"),
            "byte {at}: {}",
            run.stderr
        );
    }
}

#[test]
fn empty_file() {
    expect_unreadable("plan.xlsx", b"", "the file is empty");
    expect_unreadable("plan.json", b"", "the file is empty");
}

#[test]
fn random_bytes_as_every_workbook_kind() {
    let noise: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    for file in ["plan.xlsx", "plan.xlsm", "plan.xls", "plan.ods"] {
        expect_unreadable(file, &noise, "not a readable workbook");
    }
}

#[test]
fn malformed_json() {
    expect_unreadable("plan.json", b"{\"cluster\": ", "not valid JSON");
}

#[test]
fn unsupported_extension() {
    expect_unreadable("plan.csv", b"a,b\n", "unsupported plan format");
}

#[test]
fn missing_file_and_directory() {
    let dir = tmp();
    let run = roce_gen(dir.path(), &["validate", "nope.xlsx"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: nope.xlsx: could not read the plan: "),
        "{}",
        run.stderr
    );
    std::fs::create_dir(dir.path().join("folder.xlsx")).unwrap();
    let run = roce_gen(dir.path(), &["validate", "folder.xlsx"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
}

#[test]
fn empty_workbook_is_a_plan_with_no_sheets() {
    let dir = tmp();
    let book = Book {
        sheets: vec![],
        merges: vec![],
    };
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    crate::common::snapshot("empty_workbook", run.transcript());
}

#[test]
fn special_files_are_refused_before_they_are_read() {
    // A FIFO would block the read forever, /dev/zero never ends, a sparse file claims 100 MiB:
    // each is refused at once, as a plan and as a config.
    let dir = tmp();
    let p = dir.path();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(p.join("fifo.xlsx"))
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", p.join("zero.json")).unwrap();
    std::os::unix::fs::symlink("fifo.xlsx", p.join("fifo.toml")).unwrap();
    let big = std::fs::File::create(p.join("big.xlsx")).unwrap();
    big.set_len(100 << 20).unwrap();
    for (file, reason) in [
        (
            "fifo.xlsx",
            "is a FIFO (named pipe), not a file: a plan must be a regular file",
        ),
        (
            "zero.json",
            "is a device, not a file: a plan must be a regular file",
        ),
        ("big.xlsx", "is larger than 64 MiB, the most a plan may be"),
    ] {
        let run = roce_gen(p, &["validate", file]);
        assert_eq!(run.code, 2, "{file}: {}", run.transcript());
        assert_eq!(run.stderr, format!("error: {file}: {reason}\n"));
    }
    let run = roce_gen(p, &["validate", "--config", "fifo.toml", "--sample"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "fifo.toml: is a FIFO (named pipe), not a file: a config file must be a regular file"
        ),
        "{}",
        run.stderr
    );
}
