//! Property tests of every reader of untrusted input: the workbook and JSON plan readers (with
//! validation after them), the config reader and the result reader. Inputs are mutations of
//! real files (bytes flipped, cut, repeated, spliced) and arbitrary text; the property is that a
//! reader returns (a value or an error), never panics, and never allocates past a bound: this
//! test binary's allocator refuses more than [`LIMIT`] in total, which aborts the run.
//!
//! The number of cases is bounded (`PROPTEST_CASES`, default below) so `.ci/run` runs them in
//! seconds; raise it to search longer: `PROPTEST_CASES=100000 cargo test --test fuzz`.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config;

/// What the whole test binary may hold at once. Far above what a plan of the sizes below
/// needs; far below what an unbounded reader takes on a hostile input.
const LIMIT: usize = 1 << 30;

#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, LIMIT);

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(192);
    Config {
        cases,
        // A failure is reproduced from the seed proptest prints; no files are written.
        failure_persistence: None,
        ..Config::default()
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, Vec<u8>),
    Repeat(usize, usize, u8),
    Remove(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        any::<usize>().prop_map(Edit::Cut),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..64)
        )
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), 1usize..256, 1u8..8).prop_map(|(i, n, k)| Edit::Repeat(i, n, k)),
        (any::<usize>(), 1usize..512).prop_map(|(i, n)| Edit::Remove(i, n)),
    ]
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Flip(i, b) => {
                if let Some(x) = bytes.get_mut(i % len) {
                    *x ^= b | 1;
                }
            }
            Edit::Cut(i) => bytes.truncate(i % len),
            Edit::Insert(i, b) => {
                let at = (i % len).min(bytes.len());
                bytes.splice(at..at, b.iter().copied());
            }
            Edit::Repeat(i, n, k) => {
                let at = (i % len).min(bytes.len());
                let end = (at + n).min(bytes.len());
                let piece = bytes[at..end].to_vec();
                for _ in 0..*k {
                    bytes.splice(at..at, piece.iter().copied());
                }
            }
            Edit::Remove(i, n) => {
                let at = (i % len).min(bytes.len());
                let end = (at + n).min(bytes.len());
                bytes.drain(at..end);
            }
        }
    }
    bytes
}

/// `xlsx` with the edits applied to the decompressed text of its `part`-th member, zipped
/// again: what calamine's XML readers see, past the zip's checksums.
fn edit_inside_zip(xlsx: &[u8], part: usize, edits: &[Edit]) -> Vec<u8> {
    use std::io::{Cursor, Read, Write};
    let mut input = zip::ZipArchive::new(Cursor::new(xlsx)).unwrap();
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let target = part % input.len();
    for i in 0..input.len() {
        let mut member = input.by_index(i).unwrap();
        let name = member.name().unwrap().to_string();
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).unwrap();
        if i == target {
            bytes = apply(bytes, edits);
        }
        out.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// Reads plan bytes and validates them, as every command does.
fn read_plan(format: roce_gen::testing::Format, bytes: &[u8]) {
    if let Ok(source) = roce_gen::testing::read_plan_bytes("fuzz", format, bytes) {
        let _ = roce_gen::testing::validate(source.raw);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_workbook_reader_takes_any_mutation_of_a_real_workbook(
        which in 0usize..4,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let file = [
            "tests/it/fixtures/sample-libreoffice.xlsx",
            "tests/it/fixtures/sample.ods",
            "tests/it/fixtures/sample.xls",
            "tests/it/fixtures/formulas-no-cache.xlsx",
        ][which];
        read_plan(roce_gen::testing::Format::Workbook, &apply(fixture(file), &edits));
    }

    #[test]
    fn the_workbook_reader_takes_any_mutation_of_a_part_of_a_real_workbook(
        which in 0usize..2,
        part in any::<usize>(),
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let file = ["tests/it/fixtures/sample-libreoffice.xlsx", "tests/it/fixtures/sample.ods"][which];
        let bytes = edit_inside_zip(&fixture(file), part, &edits);
        read_plan(roce_gen::testing::Format::Workbook, &bytes);
    }

    #[test]
    fn the_json_plan_reader_takes_any_mutation_of_a_real_plan(
        edits in proptest::collection::vec(edit(), 1..8),
    ) {
        let plan = fixture("tests/it/fixtures/results/plan.json");
        read_plan(roce_gen::testing::Format::Json, &apply(plan, &edits));
    }

    #[test]
    fn the_json_plan_reader_takes_any_text(text in "\\PC{0,400}") {
        read_plan(roce_gen::testing::Format::Json, text.as_bytes());
    }

    #[test]
    fn the_config_reader_takes_any_text(
        toml in proptest::bool::ANY,
        text in "(\\[[a-zA-Z_]{0,8}\\]\n|[a-zA-Z_]{0,10} ?= ?(\"[^\"\n]{0,20}\"|[0-9]{0,5}|[a-z/._]{0,12})\n|\\PC{0,30}\n){0,12}",
    ) {
        let kind = if toml { roce_gen::testing::ConfigKind::Toml } else { roce_gen::testing::ConfigKind::Ini };
        let _ = roce_gen::testing::parse_config("fuzz.toml", Path::new("."), kind, &text);
    }

    #[test]
    fn the_result_reader_takes_any_mutation_of_a_real_result(
        which in 0usize..3,
        edits in proptest::collection::vec(edit(), 1..8),
    ) {
        let file = [
            "tests/it/fixtures/results/usb-1/gpu-001.apply.json",
            "tests/it/fixtures/results/usb-1/gpu-002.precheck.json",
            "tests/it/fixtures/results/usb-2/gpu-003.apply.json",
        ][which];
        let _ = roce_gen::testing::parse_result(&apply(fixture(file), &edits));
    }
}

/// The allocator's bound is real: a test that asks for more than it allows is refused (a
/// failed `try_reserve`, which does not abort), so the properties above cannot pass by an
/// allocator that never says no.
#[test]
fn the_allocation_bound_holds() {
    let mut v: Vec<u8> = Vec::new();
    assert!(v.try_reserve_exact(LIMIT + 1).is_err());
    assert!(ALLOCATOR.allocated() < LIMIT);
}
