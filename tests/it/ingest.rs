//! `ingest`: the result fixtures of `fixtures/results/` (a 7-host plan; results from two USB
//! sticks and an archive, with an old run, a copy, a stale result, a truncated file, a future
//! schema, strays and a host outside the plan) reported in every format and snapshotted; the
//! Prometheus output parsed as exposition format, the JUnit output as XML, the HTML page
//! rendered by headless Chromium; damaged input; and the results the simulated hosts of
//! `hosts.rs` write, ingested end to end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Run, roce_gen, tmp};
use crate::hosts::FakeHost;

const FORMATS: [&str; 6] = ["text", "json", "markdown", "junit", "prometheus", "html"];

/// The arguments of the scenario: both sticks, the archive, and the plan.
const SCENARIO: [&str; 6] = [
    "ingest",
    "usb-1",
    "usb-2",
    "collected.tar.gz",
    "--plan",
    "plan.json",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/results")
}

/// A gzip'd tar of `files` (name, bytes), with fixed headers.
fn tar_gz(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        builder.append_data(&mut h, name, bytes.as_slice()).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&builder.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// The fixture tree copied into a temporary folder, with `archived/` packed as
/// `collected.tar.gz` (as results come back from a fan-out run).
fn scenario() -> tempfile::TempDir {
    let dir = tmp();
    let src = fixtures();
    let mut archived = Vec::new();
    for entry in walkdir::WalkDir::new(&src).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&src).unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        if let Ok(inside) = rel.strip_prefix("archived") {
            archived.push((
                inside.display().to_string(),
                std::fs::read(entry.path()).unwrap(),
            ));
            continue;
        }
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(entry.path(), &to).unwrap();
    }
    assert_eq!(archived.len(), 2);
    std::fs::write(dir.path().join("collected.tar.gz"), tar_gz(&archived)).unwrap();
    dir
}

fn ingest(dir: &Path, extra: &[&str]) -> Run {
    let mut args = SCENARIO.to_vec();
    args.extend_from_slice(extra);
    roce_gen(dir, &args)
}

/// `roce-gen ingest results --plan plan.json EXTRA…` in `dir`.
fn ingest_results(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["ingest", "results", "--plan", "plan.json"];
    args.extend_from_slice(extra);
    roce_gen(dir, &args)
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn every_format_of_the_scenario_report() {
    let dir = scenario();
    for format in FORMATS {
        let run = ingest(dir.path(), &["--format", format]);
        assert_eq!(run.code, 1, "{format}: {}", run.transcript());
        snapshot(&format!("ingest_{format}"), &run.transcript());
    }
}

#[test]
fn the_text_report_names_every_host_that_did_not_pass_and_why() {
    let dir = scenario();
    let run = ingest(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_eq!(run.stderr, "");
    for needle in [
        // EasyRoCE-NC's shape: the host, its failing item ids, then each with its reason.
        "❌ gpu-002: failed items:\n\
         fw_ver:mlx5_0, ib_dev:mlx5_1, netdev:mlx5_1\n\
         fw_ver:mlx5_0: firmware 28.36.1010 is older than 28.39.1002\n\
         ib_dev:mlx5_1: mlx5_1 is not in /sys/class/infiniband/ (present: mlx5_0)\n",
        "❌ gpu-005: stale: apply at 2026-11-28T10:00:03Z (usb-2/gpu-005.apply.json) was made from another plan",
        "❌ gpu-006: missing: no result\n",
        // The old failed apply of gpu-003 is superseded by the newer one.
        "✅ gpu-003 (10.230.1.13): all checks passed (configured; 2 warnings)\n",
        "✅ gpu-001 (10.230.1.11): all checks passed (configured)\n",
        "✅ gpu-004 (10.230.1.14): all checks passed (prechecked; 6 warnings)\n",
        // From inside the archive: applied, then rolled back.
        "✅ gpu-007 (10.230.1.17): all checks passed (rolled back)\n",
        "⚠ node-x: not in the plan, not counted",
        "note: usb-1/manifest.json: skipped: not a result (schema \"roce-gen/manifest/v1\")\n",
        "note: usb-1/notes.json: skipped: not a result (no schema)\n",
        "error: usb-2/gpu-006.precheck.json: not valid JSON: EOF while parsing",
        "error: usb-2/future.json: result schema \"roce-gen/result/v2\" is not supported",
        "⚠ firmware [28.x]: 28.39.1002 on 5 hosts; 28.36.1010 on gpu-002\n",
        "⚠ trust (plan dscp): dscp on 3 hosts; pcp on gpu-002, gpu-004, gpu-007\n",
        "✅ ofed: MLNX_OFED_LINUX-24.10-1.1.4.0 on all 6 hosts\n",
        "7 planned hosts: 4 passed (2 configured, 1 prechecked, 1 rolled back), 1 failed, 1 missing, 1 stale; 1 not in plan\n",
        "results: 11 results read, 9 used, 2 superseded; 2 files skipped, 2 problems\n",
    ] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            run.stdout
        );
    }
    // No colour when not on a terminal; the README beside the results is not even mentioned.
    assert!(!run.stdout.contains('\u{1b}'));
    assert!(!run.stdout.contains("README.txt"));
}

#[test]
fn the_json_report_follows_its_schema() {
    let dir = scenario();
    let run = ingest(dir.path(), &["--format", "json"]);
    assert_eq!(run.code, 1);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["schema"], "roce-gen/ingest/v1");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["cluster"], "demo");
    let state: Vec<String> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{} {} stale={} ok={} planned={}",
                h["host"].as_str().unwrap(),
                h["state"].as_str().unwrap(),
                h["stale"],
                h["ok"],
                h["planned"]
            )
        })
        .collect();
    assert_eq!(
        state,
        [
            "gpu-001 configured stale=false ok=true planned=true",
            "gpu-002 failed stale=false ok=false planned=true",
            "gpu-003 configured stale=false ok=true planned=true",
            "gpu-004 prechecked stale=false ok=true planned=true",
            "gpu-005 configured stale=true ok=false planned=true",
            "gpu-006 missing stale=false ok=false planned=true",
            "gpu-007 rolled_back stale=false ok=true planned=true",
            "node-x prechecked stale=true ok=false planned=false",
        ]
    );
    let superseded: Vec<&str> = doc["superseded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        superseded,
        [
            "a copy of usb-1/gpu-001.apply.json",
            "older apply result of gpu-003 than usb-2/gpu-003.apply.json",
        ]
    );
    assert_eq!(doc["totals"]["problems"], 2);
    assert_eq!(
        doc["hosts"][1]["failures"][1]["message"],
        "mlx5_1 is not in /sys/class/infiniband/ (present: mlx5_0)"
    );
}

#[test]
fn prometheus_output_parses_as_exposition_format() {
    use openmetrics_parser::PrometheusValue;
    let dir = scenario();
    let run = ingest(dir.path(), &["--format", "prometheus"]);
    // The parser rejects malformed lines and repeated series, as node_exporter does.
    let exposition = openmetrics_parser::prometheus::parse_prometheus(&run.stdout)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", run.stdout));
    // `labels` as name=value; the parser keeps label names sorted.
    let value = |family: &str, labels: &[&str]| -> f64 {
        let f = exposition
            .families
            .get(family)
            .unwrap_or_else(|| panic!("no family {family}"));
        let labels: Vec<String> = f
            .get_label_names()
            .iter()
            .map(|name| {
                labels
                    .iter()
                    .find_map(|l| l.strip_prefix(&format!("{name}=")))
                    .unwrap_or_else(|| panic!("{family}: no label {name} in {labels:?}"))
                    .to_string()
            })
            .collect();
        match &f
            .get_sample_by_label_values(&labels)
            .unwrap_or_else(|| panic!("no {family}{labels:?} among {:?}", f.get_label_names()))
            .value
        {
            PrometheusValue::Gauge(n) => n.as_f64(),
            other => panic!("{family} is not a gauge: {other:?}"),
        }
    };
    let c = "cluster=demo";
    assert_eq!(value("roce_gen_ok", &[c]), 0.0);
    assert_eq!(value("roce_gen_host_ok", &[c, "host=gpu-001"]), 1.0);
    assert_eq!(value("roce_gen_host_ok", &[c, "host=gpu-002"]), 0.0);
    let state = ["host=gpu-006", "state=missing"];
    assert_eq!(value("roce_gen_host_state", &[c, state[0], state[1]]), 1.0);
    let check = |host: &str, check: &str, nic: &str| {
        value(
            "roce_gen_check_failed",
            &[
                c,
                &format!("host={host}"),
                &format!("check={check}"),
                &format!("nic={nic}"),
            ],
        )
    };
    assert_eq!(check("gpu-002", "ib_dev", "mlx5_1"), 1.0);
    assert_eq!(check("gpu-002", "ib_dev", "mlx5_0"), 0.0);
    assert_eq!(check("gpu-001", "hostname", ""), 0.0);
    assert_eq!(
        value(
            "roce_gen_host_result_timestamp_seconds",
            &[c, "host=gpu-007", "phase=rollback"]
        ),
        // 2026-11-30T09:00:02Z
        1_796_029_202.0
    );
    assert_eq!(
        value(
            "roce_gen_fact_outlier",
            &[
                c,
                "host=gpu-002",
                "fact=firmware",
                "scope=28.x",
                "value=28.36.1010"
            ]
        ),
        1.0
    );
    assert_eq!(value("roce_gen_hosts", &[c, "status=missing"]), 1.0);

    // The NIC facts of gpu-003's latest result, under the documented names and labels.
    let nic = |n: &str, ifc: &str| [c, "host=gpu-003", n, ifc].map(str::to_string);
    let l0 = nic("nic=mlx5_0", "netdev=ens1f0np0");
    let l1 = nic("nic=mlx5_1", "netdev=ens2f0np0");
    let with = |base: &[String; 4], extra: &str| {
        let mut l: Vec<String> = base.to_vec();
        l.push(extra.to_string());
        l
    };
    let v = |family: &str, labels: &[String]| {
        value(
            family,
            &labels.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };
    assert_eq!(v("roce_gen_nic_module_temperature_celsius", &l1), 51.75);
    assert_eq!(
        v("roce_gen_nic_module_rx_power_dbm", &with(&l1, "lane=3")),
        -11.2
    );
    assert_eq!(
        v("roce_gen_nic_module_rx_power_dbm", &with(&l1, "lane=4")),
        f64::NEG_INFINITY,
        "a dark lane"
    );
    assert_eq!(v("roce_gen_nic_link_speed_mbps", &l1), 200_000.0);
    assert_eq!(v("roce_gen_nic_link_max_speed_mbps", &l1), 400_000.0);
    assert_eq!(v("roce_gen_nic_pcie_speed_gts", &l1), 16.0);
    assert_eq!(v("roce_gen_nic_pcie_max_speed_gts", &l1), 32.0);
    assert_eq!(
        v("roce_gen_nic_counter", &with(&l0, "counter=np_cnp_sent")),
        1532.0
    );
    let mut neighbour = l1.to_vec();
    neighbour.extend(["switch=leaf-2", "port=Eth1/7", "source=lldpd"].map(str::to_string));
    assert_eq!(v("roce_gen_nic_neighbor_info", &neighbour), 1.0);
    assert_eq!(
        v("roce_gen_check_status", &with(&l1, "check=cabling")),
        3.0,
        "warn"
    );
    assert_eq!(
        v("roce_gen_check_status", &with(&l0, "check=cabling")),
        0.0,
        "pass"
    );
    // Host-wide checks have empty nic and netdev; failures are 4.
    assert_eq!(
        value(
            "roce_gen_check_status",
            &[c, "host=gpu-002", "nic=mlx5_1", "netdev=", "check=ib_dev"]
        ),
        4.0
    );
    // Every family is a gauge with the cluster label; per-NIC ones carry host, nic, netdev.
    for (name, family) in &exposition.families {
        let labels = family.get_label_names();
        assert!(labels.iter().any(|l| l == "cluster"), "{name}: {labels:?}");
        if name.starts_with("roce_gen_nic_") || name == "roce_gen_check_status" {
            for l in ["host", "nic", "netdev"] {
                assert!(labels.iter().any(|x| x == l), "{name} has no {l}");
            }
        }
    }
}

/// Every element of an XML document, with its attributes, in document order; panics on
/// anything that is not well-formed.
fn xml_elements(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut out = Vec::new();
    let mut depth = 0usize;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|e| panic!("not XML at {}: {e}", reader.buffer_position()));
        let element = match &event {
            Event::Start(e) | Event::Empty(e) => e,
            Event::End(_) => {
                depth -= 1;
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        if matches!(event, Event::Start(_)) {
            depth += 1;
        }
        let attrs = element
            .attributes()
            .map(|a| {
                let a = a.expect("a well-formed attribute");
                (
                    a.key.as_ref().to_string(),
                    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .expect("an escaped value")
                        .into_owned(),
                )
            })
            .collect();
        out.push((element.name().as_ref().to_string(), attrs));
    }
    assert_eq!(depth, 0, "unclosed elements");
    out
}

fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> &'a str {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map_or_else(|| panic!("no {key} in {attrs:?}"), |(_, v)| v.as_str())
}

#[test]
fn junit_output_parses_as_xml_with_a_case_per_host_and_check() {
    let dir = scenario();
    let run = ingest(dir.path(), &["--format", "junit"]);
    let elements = xml_elements(&run.stdout);
    let count = |name: &str| elements.iter().filter(|(n, _)| n == name).count();
    let (root, root_attrs) = &elements[0];
    assert_eq!(root, "testsuites");
    assert_eq!(attr(root_attrs, "tests"), count("testcase").to_string());
    assert_eq!(attr(root_attrs, "failures"), count("failure").to_string());
    assert_eq!(attr(root_attrs, "errors"), count("error").to_string());
    assert_eq!(attr(root_attrs, "skipped"), count("skipped").to_string());
    let suites: Vec<&str> = elements
        .iter()
        .filter(|(n, _)| n == "testsuite")
        .map(|(_, a)| attr(a, "name"))
        .collect();
    assert_eq!(
        suites,
        [
            "gpu-001", "gpu-002", "gpu-003", "gpu-004", "gpu-005", "gpu-006", "gpu-007", "ingest"
        ]
    );
    // gpu-002's failing checks, the stale and the missing host fail; the unreadable files are
    // errors.
    let failing: Vec<String> = elements
        .windows(2)
        .filter(|w| w[1].0 == "failure" || w[1].0 == "error")
        .map(|w| format!("{} {}", attr(&w[0].1, "classname"), attr(&w[0].1, "name")))
        .collect();
    assert_eq!(
        failing,
        [
            "gpu-002 fw_ver:mlx5_0",
            "gpu-002 ib_dev:mlx5_1",
            "gpu-002 netdev:mlx5_1",
            "gpu-005 plan",
            "gpu-006 result",
            "ingest usb-2/future.json",
            "ingest usb-2/gpu-006.precheck.json",
        ]
    );
}

#[test]
fn the_html_page_is_self_contained_and_renders_in_chromium() {
    let dir = scenario();
    let run = ingest(dir.path(), &["--format", "html", "-o", "report.html"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for external in [
        "<script", "<link", "src=", "url(", "http://", "https://", "@import",
    ] {
        assert!(!html.contains(external), "the page loads {external}");
    }

    let chromium = Command::new("sh")
        .args(["-c", "command -v chromium"])
        .output()
        .unwrap();
    assert!(
        chromium.status.success(),
        "chromium is not installed: run `bash .ci/run`, which installs it"
    );
    let png = dir.path().join("report.png");
    let profile = dir.path().join("chromium-profile");
    std::fs::create_dir(&profile).unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!(
            "file://{}",
            dir.path().join("report.html").display()
        ))
        .output()
        .unwrap();
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // A blank or error page compresses to a few kilobytes; this one has text and colour.
    assert!(bytes.len() > 50_000, "screenshot of {} bytes", bytes.len());
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1280, 1600));
    let channels = frame.color_type.samples();
    let colours: std::collections::BTreeSet<&[u8]> =
        pixels[..frame.buffer_size()].chunks(channels).collect();
    assert!(colours.len() > 200, "only {} colours", colours.len());
    // The status colours are there: the failed badge's red and the configured badge's green.
    let has = |rgb: [u8; 3]| colours.iter().any(|c| c[..3] == rgb);
    assert!(has([0xc6, 0x28, 0x28]), "no red on the page");
    assert!(has([0x18, 0x79, 0x4e]), "no green on the page");
}

#[test]
fn without_a_plan_every_host_with_results_is_reported() {
    let dir = scenario();
    let run = roce_gen(
        dir.path(),
        &["ingest", "usb-1", "usb-2", "collected.tar.gz"],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    snapshot("ingest_text_without_plan", &run.transcript());
    // Without a plan nothing is missing, stale or unplanned; the plans differ in consistency.
    assert!(
        run.stdout
            .contains("✅ gpu-005: all checks passed (configured)\n")
    );
    assert!(
        run.stdout
            .contains("✅ node-x: all checks passed (prechecked)\n")
    );
    assert!(run.stdout.contains("⚠ plan_sha256: 0ec49b73ee99d309b878ba55d078f4cc72b81ed69ff2dd5c84697235254d154c on 5 hosts; 4c65cf5476"));
}

/// A one-host plan and gpu-001's results, re-stamped with that plan's sha256.
fn one_good_host() -> tempfile::TempDir {
    let dir = tmp();
    let mut plan: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("plan.json")).unwrap()).unwrap();
    plan["hosts"].as_array_mut().unwrap().truncate(1);
    let text = serde_json::to_string_pretty(&plan).unwrap();
    std::fs::write(dir.path().join("plan.json"), &text).unwrap();
    let sha = roce_gen::digest::sha256_hex(text.as_bytes());
    std::fs::create_dir(dir.path().join("results")).unwrap();
    for phase in ["precheck", "apply"] {
        let name = format!("gpu-001.{phase}.json");
        let mut result: Value =
            serde_json::from_slice(&std::fs::read(fixtures().join("usb-1").join(&name)).unwrap())
                .unwrap();
        result["plan_sha256"] = Value::String(sha.clone());
        std::fs::write(
            dir.path().join("results").join(&name),
            serde_json::to_vec_pretty(&result).unwrap(),
        )
        .unwrap();
    }
    dir
}

#[test]
fn every_planned_host_passed_is_exit_0() {
    let dir = one_good_host();
    let run = ingest_results(dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("✅ gpu-001 (10.230.1.11): all checks passed (configured)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("✅ 1 host passed\n"), "{}", run.stdout);
    for format in FORMATS {
        let run = ingest_results(dir.path(), &["--format", format]);
        assert_eq!(run.code, 0, "{format}: {}", run.transcript());
        assert_eq!(run.stderr, "", "{format}");
    }
}

#[test]
fn damaged_unreadable_and_odd_files_are_reported_never_fatal() {
    let dir = one_good_host();
    let r = dir.path().join("results");
    let good = std::fs::read(r.join("gpu-001.apply.json")).unwrap();
    std::os::unix::fs::symlink("nowhere.json", r.join("lost.json")).unwrap();
    std::fs::write(r.join("empty.json"), b"").unwrap();
    std::fs::write(r.join("binary.json"), b"\x00\xff\xfe garbage").unwrap();
    std::fs::write(r.join("list.json"), b"[1, 2, 3]").unwrap();
    std::fs::write(
        r.join("no-host.json"),
        br#"{"schema": "roce-gen/result/v1", "phase": "apply", "status": "pass", "finished_at": "2026-11-30T08:00:00Z", "checks": []}"#,
    )
    .unwrap();
    std::fs::write(r.join("broken.tar.gz"), b"\x1f\x8b\x08 not really gzip").unwrap();
    std::fs::write(r.join("old.zip"), b"PK\x03\x04").unwrap();
    // An archive cut short on the way: what was read before the cut is kept.
    let precheck = std::fs::read(r.join("gpu-001.precheck.json")).unwrap();
    let whole = tar_gz(&[
        ("a/gpu-001.precheck.json".into(), precheck),
        ("a/padding.bin".into(), vec![7u8; 200_000]),
    ]);
    std::fs::write(r.join("cut.tar.gz"), &whole[..whole.len() / 2]).unwrap();
    // An archive inside an archive, as a fan-out collector may produce.
    let inner = tar_gz(&[("node/gpu-001.apply.json".into(), good)]);
    std::fs::write(
        r.join("outer.tgz"),
        tar_gz(&[("inner.tar.gz".into(), inner)]),
    )
    .unwrap();

    let run = ingest_results(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    for needle in [
        "error: results/binary.json: not valid JSON",
        "error: results/broken.tar.gz: not a readable archive",
        "error: results/cut.tar.gz:",
        "error: results/empty.json: not valid JSON: EOF while parsing a value at line 1 column 0",
        "error: results/lost.json: could not read: No such file or directory",
        "error: results/no-host.json: not a valid roce-gen/result/v1 result: missing field `host`",
        "note: results/list.json: skipped: not a result (not a JSON object)",
        "note: results/old.zip: skipped: an archive format ingest does not read",
        "✅ gpu-001 (10.230.1.11): all checks passed (configured)",
        "results: 3 results read, 2 used, 1 superseded; 2 files skipped, 6 problems",
    ] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            run.stdout
        );
    }
    let json = ingest_results(dir.path(), &["--format", "json"]);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        doc["superseded"][0]["reason"], "a copy of results/gpu-001.apply.json",
        "the copy inside the nested archive: {}",
        doc["superseded"]
    );
    assert_eq!(
        doc["superseded"][0]["path"],
        "results/outer.tgz:inner.tar.gz:node/gpu-001.apply.json"
    );
}

#[test]
fn command_line_failures_exit_2_and_an_invalid_plan_exits_1() {
    let dir = one_good_host();
    let run = roce_gen(dir.path(), &["ingest", "nowhere"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: nowhere: could not read: No such file or directory (os error 2)\n"
    );
    let run = roce_gen(dir.path(), &["ingest", "results", "--plan", "nope.xlsx"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let run = roce_gen(dir.path(), &["ingest"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let run = roce_gen(
        dir.path(),
        &["ingest", "results", "-o", "no/such/dir/report.txt"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with("error: no/such/dir/report.txt: could not write the report"),
        "{}",
        run.stderr
    );

    let mut plan: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("plan.json")).unwrap()).unwrap();
    plan["cluster"]["mtu"] = Value::from(99_999);
    std::fs::write(
        dir.path().join("bad.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["ingest", "results", "--plan", "bad.json"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with("error: bad.json: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "error: bad.json: invalid plan: 1 error, 0 warnings, 0 notes; no report made"
        ),
        "{}",
        run.stderr
    );

    let empty = tmp();
    let run = roce_gen(empty.path(), &["ingest", "."]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains("❌ no results found\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_output_file_is_replaced_atomically_and_matches_stdout() {
    let dir = scenario();
    let printed = ingest(dir.path(), &["--format", "prometheus"]);
    for _ in 0..2 {
        let run = ingest(
            dir.path(),
            &["--format", "prometheus", "-o", "roce-gen.prom"],
        );
        assert_eq!(run.code, 1, "{}", run.transcript());
        assert_eq!(
            run.stdout,
            "wrote roce-gen.prom: 7 planned hosts: 4 passed (2 configured, 1 prechecked, 1 rolled back), 1 failed, 1 missing, 1 stale; 1 not in plan\n"
        );
        // The unreadable files still reach the person running it.
        assert!(
            run.stderr.contains("error: usb-2/future.json: "),
            "{}",
            run.stderr
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("roce-gen.prom")).unwrap(),
            printed.stdout
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "collected.tar.gz",
            "plan.json",
            "roce-gen.prom",
            "usb-1",
            "usb-2"
        ],
        "a temporary file was left behind"
    );
    // The same input gives the same bytes.
    assert_eq!(
        ingest(dir.path(), &["--format", "prometheus"]).stdout,
        printed.stdout
    );
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let dir = one_good_host();
    // `script` gives the command a terminal; its output comes back through the pty.
    let on_tty = |no_color: Option<&str>| -> String {
        let mut cmd = Command::new("script");
        cmd.args(["-qec"])
            .arg(format!(
                "{} ingest results --plan plan.json",
                env!("CARGO_BIN_EXE_roce-gen")
            ))
            .arg("/dev/null")
            .current_dir(dir.path())
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = cmd.output().expect("script (util-linux) runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_tty(None);
    assert!(
        coloured.contains("\u{1b}[32m✅ gpu-001"),
        "no colour on a terminal: {coloured:?}"
    );
    let plain = on_tty(Some("1"));
    assert!(plain.contains("✅ gpu-001"), "{plain:?}");
    assert!(
        !plain.contains('\u{1b}'),
        "colour despite NO_COLOR: {plain:?}"
    );
    // An empty NO_COLOR does not count (no-color.org).
    assert!(on_tty(Some("")).contains('\u{1b}'));
    let piped = ingest_results(dir.path(), &[]);
    assert!(!piped.stdout.contains('\u{1b}'));
}

#[test]
fn hostile_strings_stay_inert_in_every_format() {
    let dir = tmp();
    let mut result: Value = serde_json::from_slice(
        &std::fs::read(fixtures().join("usb-1/gpu-002.precheck.json")).unwrap(),
    )
    .unwrap();
    let evil = "\u{1b}[2J<script>alert(1)</script> | *x* & \"q\" 'a'\nsecond line\u{0}";
    result["host"] = Value::String(format!("gpu-<b>{evil}"));
    result["facts"]["ofed"] = Value::String(evil.into());
    let checks = result["checks"].as_array_mut().unwrap();
    for c in checks.iter_mut() {
        if c["status"] == "fail" {
            c["message"] = Value::String(evil.into());
            c["actual"] = Value::String(evil.into());
        }
    }
    // The same check twice: Prometheus must still get one series.
    let again = checks
        .iter()
        .find(|c| c["status"] == "fail")
        .unwrap()
        .clone();
    checks.push(again);
    std::fs::write(
        dir.path().join("evil.json"),
        serde_json::to_vec(&result).unwrap(),
    )
    .unwrap();

    for format in FORMATS {
        let run = roce_gen(dir.path(), &["ingest", "evil.json", "--format", format]);
        assert_eq!(run.code, 1, "{format}: {}", run.transcript());
        let out = &run.stdout;
        if format == "json" {
            let doc: Value = serde_json::from_str(out).unwrap();
            assert_eq!(doc["hosts"][0]["failures"][0]["message"], evil);
            continue;
        }
        assert!(!out.contains('\u{1b}'), "{format}: raw escape");
        assert!(!out.contains('\u{0}'), "{format}: raw NUL");
        if ["markdown", "junit", "html"].contains(&format) {
            assert!(!out.contains("<script>"), "{format}: raw markup");
        }
        match format {
            "junit" => drop(xml_elements(out)),
            "html" => drop(xml_elements(
                // The doctype and the void meta tags are HTML, not XML; the rest must nest.
                &out.replace("<!DOCTYPE html>", "")
                    .lines()
                    .filter(|l| !l.starts_with("<meta"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            "prometheus" => {
                openmetrics_parser::prometheus::parse_prometheus(out)
                    .unwrap_or_else(|e| panic!("{e:?}\n{out}"));
            }
            "text" => assert!(out.contains("\\u{1b}[2J<script>"), "{out}"),
            "markdown" => assert!(out.contains("&lt;script&gt;"), "{out}"),
            _ => {}
        }
    }
}

/// The results the simulated hosts of `hosts.rs` write, collected in two rounds, ingested with
/// the plan their bundles were made from.
#[test]
fn results_of_simulated_hosts_become_a_report() {
    let dir = tmp();
    let save = |rel: &str, result: &Value| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec_pretty(result).unwrap()).unwrap();
    };
    let plan_of = |h: &FakeHost| {
        h.bundle
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("plan.json")
    };

    // Round 1: node-a's second card is missing; its precheck fails.
    let broken = FakeHost::new("ofed", "node-a", &["mlx5_1"], "bash");
    let pre = broken.run("precheck.sh", &[]);
    assert_eq!(pre.code, 1, "{}", pre.stdout);
    save("round-1/node-a.precheck.json", &pre.result);
    std::fs::copy(plan_of(&broken), dir.path().join("plan.json")).unwrap();

    let run = roce_gen(dir.path(), &["ingest", "round-1", "--plan", "plan.json"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(
            "❌ node-a: failed items:\n\
             ib_dev:mlx5_1, netdev:mlx5_1\n\
             ib_dev:mlx5_1: mlx5_1 is not in /sys/class/infiniband/ (present: mlx5_0)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("❌ node-b: missing: no result\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("2 planned hosts: 0 passed, 1 failed, 1 missing, 0 stale\n")
    );

    // Round 2: the card is back and apply configures the host; an old run made from the inbox
    // variant of the plan turns up too.
    let healthy = FakeHost::new("ofed", "node-a", &[], "bash");
    assert_eq!(
        std::fs::read(plan_of(&healthy)).unwrap(),
        std::fs::read(dir.path().join("plan.json")).unwrap(),
        "both hosts' bundles come from the same plan"
    );
    let apply = healthy.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{}", apply.stdout);
    // What apply changed on the driver-faithful host: per NIC the trust, the DSCP map that
    // `--trust dscp` programs, PFC, the pause that a PFC change clears, RoCE mode and ToS, the
    // traffic class and the MTU (ECN and CNP are at the firmware defaults, as planned); then
    // the boot unit and the driver-reload hook.
    let changed: Vec<String> = apply
        .statuses()
        .into_iter()
        .filter_map(|s| s.strip_suffix("=changed").map(str::to_string))
        .collect();
    let mut expected: Vec<String> = ["mlx5_0", "mlx5_1"]
        .iter()
        .flat_map(|nic| {
            [
                "trust",
                "dscp2prio",
                "pfc",
                "pause",
                "roce_mode",
                "roce_tos",
                "traffic_class",
                "mtu",
            ]
            .map(|id| format!("{id}:{nic}"))
        })
        .collect();
    expected.extend([
        "persistence:".to_string(),
        "persistence_reload:".to_string(),
    ]);
    assert_eq!(changed, expected, "{}", apply.stdout);
    save("round-2/node-a.apply.json", &apply.result);
    let inbox = FakeHost::new("inbox", "node-a", &[], "bash");
    let old = inbox.run("apply.sh", &[]);
    assert_eq!(old.code, 0, "{}", old.stdout);
    save("old/node-a.apply.json", &old.result);

    let run = roce_gen(
        dir.path(),
        &["ingest", "round-1", "round-2", "old", "--plan", "plan.json"],
    );
    assert_eq!(run.code, 1, "node-b is still missing: {}", run.transcript());
    assert!(
        run.stdout
            .contains("✅ node-a (192.168.1.10): all checks passed (configured)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("❌ node-b: missing: no result\n"));
    assert!(
        run.stdout
            .contains("2 planned hosts: 1 passed (1 configured), 0 failed, 1 missing, 0 stale\n"),
        "{}",
        run.stdout
    );

    let json = roce_gen(
        dir.path(),
        &[
            "ingest",
            "round-1",
            "round-2",
            "old",
            "--plan",
            "plan.json",
            "--format",
            "json",
        ],
    );
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    let node_a = &doc["hosts"][0];
    assert_eq!(node_a["state"], "configured");
    assert_eq!(node_a["latest"]["phase"], "apply");
    assert_eq!(
        node_a["latest"]["counts"]["changed"], 18,
        "the changes listed above"
    );
    assert_eq!(
        node_a["runs"].as_array().unwrap().len(),
        2,
        "precheck and apply"
    );
    assert_eq!(
        doc["superseded"][0]["reason"],
        "made from another plan; node-a has results from this one"
    );
    let mtu = doc["consistency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["fact"] == "mtu")
        .unwrap();
    assert_eq!(mtu["values"][0]["value"], "4200");
    assert_eq!(mtu["planned"], "4200");

    // Without the plan, the inbox run is newer than nothing: per phase the newest wins.
    let run = roce_gen(
        dir.path(),
        &["ingest", "round-1", "round-2", "old", "--format", "json"],
    );
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["hosts"][0]["state"], "configured");
    assert_eq!(doc["totals"]["superseded"], 1);
}

/// Results stamped with the plan's identity (its normalized form) are this plan's; so are those
/// of bundles made before that, stamped with the file's bytes; any other hash is stale.
#[test]
fn results_of_either_plan_identity_count_and_others_are_stale() {
    let dir = one_good_host();
    let printed = roce_gen(dir.path(), &["plan", "plan.json"]);
    assert_eq!(printed.code, 0, "{}", printed.transcript());
    let identity = roce_gen::digest::sha256_hex(printed.stdout.as_bytes());
    let restamp = |sha: &str| {
        for phase in ["precheck", "apply"] {
            let path = dir
                .path()
                .join("results")
                .join(format!("gpu-001.{phase}.json"));
            let mut result: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            result["plan_sha256"] = Value::String(sha.to_string());
            std::fs::write(&path, serde_json::to_vec_pretty(&result).unwrap()).unwrap();
        }
    };
    // one_good_host stamped the file's bytes.
    assert_eq!(ingest_results(dir.path(), &[]).code, 0);
    restamp(&identity);
    let run = ingest_results(dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    restamp(&"0".repeat(64));
    let run = ingest_results(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains("made from another plan"),
        "{}",
        run.stdout
    );
}

/// Results each padded to 15 MiB, packed as one `.tar.gz`: by turns with spaces after the
/// object, one 15 MiB check message, and one 15 MiB unknown field. The run of spaces is
/// compressed once and spliced into every member (a full flush leaves deflate byte-aligned and
/// referring to nothing before it), so a few MiB of archive stand for gigabytes of results
/// without the test compressing them.
fn padded_results(n: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    const PAD: usize = 15 << 20;
    const MARK: &str = "@PAD@";
    /// A gzip stream made of raw deflate parts, with the trailer's CRC and size.
    struct Gz {
        c: Compress,
        crc: crc32fast::Hasher,
        size: u64,
        out: Vec<u8>,
    }
    impl Gz {
        fn deflate(c: &mut Compress, data: &[u8], flush: FlushCompress, out: &mut Vec<u8>) {
            let mut input = data;
            loop {
                out.reserve(1 << 20);
                let before = c.total_in();
                c.compress_vec(input, out, flush).unwrap();
                input = &input[usize::try_from(c.total_in() - before).unwrap()..];
                if input.is_empty() && out.len() < out.capacity() {
                    return;
                }
            }
        }
        fn plain(&mut self, bytes: &[u8], flush: FlushCompress) {
            self.crc.update(bytes);
            self.size += bytes.len() as u64;
            Self::deflate(&mut self.c, bytes, flush, &mut self.out);
        }
    }
    let spaces = vec![b' '; PAD];
    let mut pad = Vec::new();
    Gz::deflate(
        &mut Compress::new(Compression::fast(), false),
        &spaces,
        FlushCompress::Full,
        &mut pad,
    );
    let mut pad_crc = crc32fast::Hasher::new();
    pad_crc.update(&spaces);

    let mut gz = Gz {
        c: Compress::new(Compression::fast(), false),
        crc: crc32fast::Hasher::new(),
        size: 0,
        out: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff],
    };
    for i in 0..n {
        let host = format!("gpu-{i:04}");
        let mut doc = serde_json::json!({
            "schema": "roce-gen/result/v1", "host": host, "phase": "apply", "status": "pass",
            "finished_at": "2026-11-30T08:00:00Z",
            "checks": [{"id": "mtu", "status": "pass", "message": "mtu is 4200"}],
        });
        match i % 3 {
            0 => {}
            1 => doc["checks"][0]["message"] = MARK.into(),
            _ => doc["padding"] = MARK.into(),
        }
        let mut text = doc.to_string();
        if i % 3 == 0 {
            text.push_str(MARK);
        }
        let (pre, post) = text.split_once(MARK).unwrap();
        let len = pre.len() + PAD + post.len();
        let mut h = tar::Header::new_gnu();
        h.set_path(format!("results/{host}.apply.json")).unwrap();
        h.set_size(len as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        let mut head = h.as_bytes().to_vec();
        head.extend_from_slice(pre.as_bytes());
        gz.plain(&head, FlushCompress::Full);
        gz.out.extend_from_slice(&pad);
        gz.crc.combine(&pad_crc);
        gz.size += PAD as u64;
        let mut tail = post.as_bytes().to_vec();
        tail.resize(tail.len() + (512 - len % 512) % 512, 0);
        gz.plain(&tail, FlushCompress::Full);
    }
    gz.plain(&[0; 1024], FlushCompress::Finish);
    let (crc, size) = (gz.crc.finalize(), gz.size);
    gz.out.extend_from_slice(&crc.to_le_bytes());
    // The gzip trailer holds the size modulo 2^32.
    gz.out
        .extend_from_slice(&((size & 0xffff_ffff) as u32).to_le_bytes());
    gz.out
}

#[test]
fn an_archive_of_huge_results_is_read_in_bounded_memory() {
    // Few enough for a debug build to parse in seconds; `benches/scale.sh` reads 500.
    const RESULTS: usize = 36;
    let dir = tmp();
    let archive = dir.path().join("padded.tar.gz");
    std::fs::write(&archive, padded_results(RESULTS)).unwrap();
    // 540 MB of results: held all at once, as ingest once did, they do not fit in the 384 MiB
    // of address space given; read as a stream they take well under half of it (two workers,
    // so that thread stacks and malloc arenas do not grow with the machine).
    let out = Command::new("sh")
        .args([
            "-c",
            r#"ulimit -v 393216 && exec "$0" ingest padded.tar.gz"#,
        ])
        .arg(env!("CARGO_BIN_EXE_roce-gen"))
        .current_dir(dir.path())
        .env("RAYON_NUM_THREADS", "2")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("{RESULTS} results read, {RESULTS} used")),
        "{stdout}"
    );
}
