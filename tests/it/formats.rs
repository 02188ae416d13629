//! Every input format reads the same plan: `.xlsx` written here, `.xlsm` with a real VBA
//! project, LibreOffice's `.ods`, `.xls` and `.xlsx` of the sample, and the normalized JSON,
//! which round-trips.

use std::path::Path;

use crate::common::{Book, roce_gen, tmp};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn sample_plan_json() -> String {
    let run = roce_gen(Path::new("."), &["plan", "--sample"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    run.stdout
}

#[test]
fn libreoffice_saved_workbooks_read_like_the_sample() {
    let expected = sample_plan_json();
    for file in ["sample.ods", "sample.xls", "sample-libreoffice.xlsx"] {
        let run = roce_gen(Path::new("."), &["plan", &fixture(file)]);
        assert_eq!(run.code, 0, "{file}: {}", run.transcript());
        assert_eq!(run.stdout, expected, "{file}");
    }
}

#[test]
fn xlsm_with_macros_reads_like_xlsx() {
    let dir = tmp();
    let book = Book::base();
    book.write(dir.path(), "plan.xlsx");
    book.write(dir.path(), "plan.xlsm");
    let xlsm = std::fs::read(dir.path().join("plan.xlsm")).unwrap();
    assert!(
        xlsm.windows(14).any(|w| w == b"vbaProject.bin"),
        "the .xlsm carries a VBA project"
    );
    let a = roce_gen(dir.path(), &["plan", "plan.xlsx"]);
    let b = roce_gen(dir.path(), &["plan", "plan.xlsm"]);
    assert_eq!(a.code, 0, "{}", a.transcript());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn the_normalized_json_is_itself_a_plan_and_round_trips() {
    let dir = tmp();
    let first = sample_plan_json();
    std::fs::write(dir.path().join("plan.json"), &first).unwrap();
    let again = roce_gen(dir.path(), &["plan", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(again.stdout, first);
    assert_eq!(again.stderr, "");
}

#[test]
fn json_plans_get_the_same_rules_with_json_paths() {
    let dir = tmp();
    let mut plan: serde_json::Value = serde_json::from_str(&sample_plan_json()).unwrap();
    plan["hosts"][1]["nics"][2]["ip"] = "10.100.2.300/24".into();
    plan["hosts"][2]["hostname"] = "gpu-001".into();
    plan["cluster"]["roce_tos"] = 100.into();
    plan["cluster"]["pfc_priorities"] = serde_json::json!([]);
    plan["hosts"][0]["nics"][0]["comment"] = "spare".into();
    std::fs::write(
        dir.path().join("plan.json"),
        serde_json::to_string(&plan).unwrap(),
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["validate", "plan.json"]);
    crate::common::snapshot("json_plan_rules", run.transcript());
}

#[test]
fn a_json_plan_of_the_wrong_shape_is_invalid_not_unreadable() {
    let dir = tmp();
    for (doc, expect) in [
        ("[1,2]", "a JSON plan must be an object"),
        (
            r#"{"schema":"roce-gen/result/v1","cluster":{},"hosts":[]}"#,
            "schema is \"roce-gen/result/v1\"",
        ),
        (
            r#"{"cluster":[],"hosts":{}}"#,
            "`cluster` must be an object",
        ),
        (
            r#"{"cluster":{"cluster_name":"x"},"hosts":[{"hostname":"a","mgmt_ip":"10.0.0.1","nics":[{"ib_dev":{"x":1}}]}]}"#,
            "ib_dev is a JSON object, not a value",
        ),
    ] {
        std::fs::write(dir.path().join("plan.json"), doc).unwrap();
        let run = roce_gen(dir.path(), &["validate", "plan.json"]);
        assert_eq!(run.code, 1, "{doc}: {}", run.transcript());
        assert!(run.stderr.contains(expect), "{doc}: {}", run.stderr);
    }
}

#[test]
fn formulas_without_saved_results_are_errors_until_recalculated() {
    let run = roce_gen(
        Path::new(&fixture("")),
        &["validate", "formulas-no-cache.xlsx"],
    );
    crate::common::snapshot("formulas_no_cache", run.transcript());
    // The same workbook after LibreOffice recalculated and saved it.
    let run = roce_gen(
        Path::new(&fixture("")),
        &["plan", "formulas-recalculated.xlsx"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(plan["cluster"]["mtu"], 4200);
    assert_eq!(plan["hosts"][0]["nics"][0]["mtu"], 4200);
    assert_eq!(plan["hosts"][0]["nics"][1]["ip"], "10.1.1.1/24");
}

#[test]
fn formulas_without_saved_results_are_reported_once_per_range() {
    // A script filled Servers' mgmt_ip (a column run) and NICs' ip and mtu (a block); Cluster's
    // one formula stays a cell of its own that names its key.
    let run = roce_gen(
        Path::new(&fixture("")),
        &["validate", "formulas-ranges.xlsx"],
    );
    crate::common::snapshot("formulas_ranges", run.transcript());
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr.matches("no saved result").count(),
        3,
        "{}",
        run.stderr
    );
    // The JSON report locates the range as the text does.
    let run = roce_gen(
        Path::new(&fixture("")),
        &["validate", "formulas-ranges.xlsx", "--format", "json"],
    );
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let ranges: Vec<(&str, &str)> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["cell"].as_str().is_some_and(|c| c.contains(':')))
        .map(|d| (d["sheet"].as_str().unwrap(), d["cell"].as_str().unwrap()))
        .collect();
    assert_eq!(ranges, [("Servers", "B2:B6"), ("NICs", "D2:E11")]);
}
