//! `--format junit`: the report as JUnit XML so CI systems (GitLab, Jenkins, GitHub test
//! reporters) show it: one test suite per planned host with one test case per check of its
//! latest result (failed checks fail, skipped ones are skipped, warnings pass with the warning
//! as output), a failing `result` case for a missing host, a failing `plan` case for a stale
//! one and a failing `state` case for one that is not ready for another reason (pending,
//! drifted, rolled back); unreadable files are errors of an `ingest` suite. Laid out by
//! `templates/ingest/junit.xml.j2`.

use anyhow::Result;
use serde::Serialize;

use crate::ingest::attention::{change_line, changes, ports_of};
use crate::ingest::render::{reason, render_template, short_sha};
use crate::ingest::report::{ClusterReport, HostReport, State};
use crate::ingest::result::Status;

#[derive(Serialize)]
struct Suites {
    name: String,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    suites: Vec<Suite>,
}

#[derive(Serialize)]
struct Suite {
    name: String,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    properties: Vec<(&'static str, String)>,
    cases: Vec<Case>,
}

#[derive(Serialize)]
struct Case {
    classname: String,
    name: String,
    /// `pass`, `failure`, `error` or `skipped`.
    outcome: &'static str,
    message: String,
    /// The failure's body, or the passing case's output.
    text: String,
}

impl Suite {
    fn new(name: String, properties: Vec<(&'static str, String)>, cases: Vec<Case>) -> Self {
        let count = |o: &str| cases.iter().filter(|c| c.outcome == o).count();
        Suite {
            name,
            tests: cases.len(),
            failures: count("failure"),
            errors: count("error"),
            skipped: count("skipped"),
            properties,
            cases,
        }
    }
}

fn host_suite(h: &HostReport, plan_sha: Option<&str>) -> Suite {
    let case = |name: &str, outcome, message: String, text: String| Case {
        classname: h.host.clone(),
        name: name.to_string(),
        outcome,
        message,
        text,
    };
    let mut properties = vec![("state", h.state.as_str().to_string())];
    if let Some(ip) = &h.mgmt_ip {
        properties.push(("mgmt_ip", ip.clone()));
    }
    let mut cases = Vec::new();
    match &h.latest {
        None => cases.push(case(
            "result",
            "failure",
            "no result for this host".into(),
            String::new(),
        )),
        Some(run) => {
            properties.push(("phase", crate::ingest::render::run_name(run)));
            properties.push(("finished_at", run.finished_at.clone()));
            properties.push(("result_file", run.path.clone()));
            properties.push(("plan_sha256", short_sha(&run.plan_sha256)));
            if h.stale {
                cases.push(case(
                    "plan",
                    "failure",
                    "the results are made from another plan".into(),
                    reason(h, plan_sha),
                ));
            }
            // A host that is not ready without a failed check (pending, drifted, rolled back,
            // a precheck not accepted) still fails its suite, through one `state` case.
            if !h.stale
                && h.counted()
                && !h.ok
                && !matches!(h.state, State::Failed | State::Missing)
            {
                let lines: Vec<String> = changes(&h.changes)
                    .iter()
                    .map(|c| change_line(c, ports_of(&h.changes)))
                    .collect();
                cases.push(case(
                    "state",
                    "failure",
                    format!("{} is not ready: {}", h.host, h.state.as_str()),
                    [reason(h, plan_sha)]
                        .into_iter()
                        .chain(lines)
                        .collect::<Vec<_>>()
                        .join("\n"),
                ));
            }
            if h.state == State::Failed && h.failures.is_empty() {
                cases.push(case(
                    "result",
                    "failure",
                    "the result says fail but lists no failing check".into(),
                    reason(h, plan_sha),
                ));
            }
        }
    }
    for c in &h.checks {
        let detail = format!("expected: {}\nactual: {}", c.expected, c.actual);
        cases.push(match c.status {
            Status::Fail => case(&c.item(), "failure", c.message.clone(), detail),
            Status::Skip => case(&c.item(), "skipped", c.message.clone(), String::new()),
            Status::Warn => case(
                &c.item(),
                "pass",
                String::new(),
                format!("warn: {}", c.message),
            ),
            Status::Changed => case(
                &c.item(),
                "pass",
                String::new(),
                format!("changed: {}", c.message),
            ),
            Status::Pass => case(&c.item(), "pass", String::new(), String::new()),
        });
    }
    Suite::new(h.host.clone(), properties, cases)
}

/// The report as JUnit XML.
pub fn render(report: &ClusterReport) -> Result<String> {
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    let mut suites: Vec<Suite> = report
        .hosts
        .iter()
        .filter(|h| h.counted())
        .map(|h| host_suite(h, plan_sha))
        .collect();
    let mut files: Vec<Case> = report
        .problems
        .iter()
        .map(|f| Case {
            classname: "ingest".into(),
            name: f.path.clone(),
            outcome: "error",
            message: f.reason.clone(),
            text: String::new(),
        })
        .collect();
    files.extend(report.hosts.iter().filter(|h| !h.counted()).map(|h| Case {
        classname: "ingest".into(),
        name: h.host.clone(),
        outcome: "skipped",
        message: format!("not in the plan: {}", reason(h, plan_sha)),
        text: String::new(),
    }));
    if report.hosts.is_empty() && report.problems.is_empty() {
        files.push(Case {
            classname: "ingest".into(),
            name: "results".into(),
            outcome: "failure",
            message: "no result files under the paths given".into(),
            text: String::new(),
        });
    }
    if !files.is_empty() {
        suites.push(Suite::new("ingest".into(), Vec::new(), files));
    }
    let sum = |f: fn(&Suite) -> usize| suites.iter().map(f).sum();
    let doc = Suites {
        name: match &report.cluster {
            Some(c) => format!("roce-gen ingest: {c}"),
            None => "roce-gen ingest".into(),
        },
        tests: sum(|s| s.tests),
        failures: sum(|s| s.failures),
        errors: sum(|s| s.errors),
        skipped: sum(|s| s.skipped),
        suites,
    };
    render_template("ingest/junit.xml", doc)
}
