//! `--format junit`: the report as JUnit XML so CI systems (GitLab, Jenkins, GitHub test
//! reporters) show it: one test suite per planned host with one test case per check of its
//! latest result (failed checks fail, skipped ones are skipped, warnings pass with the warning
//! as output), a failing `result` case for a missing host, a failing `plan` case for a stale
//! one and a failing `state` case for one that is not ready for another reason (pending,
//! drifted, rolled back); a host's fabric result adds its checks as cases of the class
//! `HOST.fabric`, one per port and fabric check, a failure naming the link's two ends and switch
//! ports; a host's GPU path has its checks as cases and what NCCL will do and its pairs as the
//! `gpu_direct` and `gpu_pairs` properties; files not used (unreadable, or named or dated so that they cannot be used) are errors of an `ingest` suite.
//! Laid out by
//! `templates/ingest/junit.xml.j2`.
//!
//! The attributes are those of the Ant JUnit schema (`JUnit.xsd`), which Jenkins, GitLab and the
//! GitHub reporters read: each suite has `name`, `tests`, `failures`, `errors`, `skipped`, `time`
//! (seconds), `timestamp` (UTC, without a zone, as the schema wants), `hostname`, and in the
//! `testsuites` form `package` (the cluster) and `id`; each case `name`, `classname` and `time`.
//! Two things the Ant schema has no room for are kept because those readers show them: totals
//! on `testsuites`, and a passing case's `system-out` (its warning or change). A host's suite
//! says in its own `system-out` that a reboot is required (also the `reboot_required` property),
//! which facts it differs from most hosts in and which planned values it does not have (also
//! when every host lacks them); none of these fails it (a setting off the plan already fails its
//! check or its `state` case).

use anyhow::Result;
use jiff::Timestamp;
use serde::Serialize;

use crate::ingest::render::{
    gpu_host_text, gpu_pair_facts, gpu_pair_name, off_plan, outliers, reason, render_template,
    short_sha,
};
use crate::ingest::report::{Check, ClusterReport, FabricMatrix, HostReport, Run, State, Status};

#[derive(Serialize)]
struct Suites {
    name: String,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    time: String,
    suites: Vec<Suite>,
}

#[derive(Serialize)]
struct Suite {
    name: String,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    /// Seconds, as `xs:decimal`.
    time: String,
    #[serde(skip)]
    seconds: f64,
    /// `2026-11-30T08:00:01`: UTC without a zone.
    timestamp: String,
    hostname: String,
    /// The cluster: what the Ant schema calls the suite's package.
    package: String,
    /// 0 for the first suite, then counting up, as the Ant schema wants.
    id: usize,
    properties: Vec<(&'static str, String)>,
    cases: Vec<Case>,
    /// The suite's `system-out`: what concerns the host rather than one check (a reboot to
    /// make, the facts it differs from most hosts in), a line each.
    out: String,
}

/// When a suite ran and for how long.
#[derive(Clone, Copy)]
struct Timing {
    start: Timestamp,
    seconds: f64,
}

impl Timing {
    /// A run's timing: from its start to its end when both are known; otherwise its end, taking
    /// no time.
    fn of(started: Option<Timestamp>, finished: Timestamp) -> Self {
        match started {
            Some(start) if start <= finished => Timing {
                start,
                seconds: finished.duration_since(start).as_secs_f64(),
            },
            _ => Timing {
                start: finished,
                seconds: 0.0,
            },
        }
    }

    fn run(run: &Run) -> Option<Self> {
        let finished = run.finished_at.parse::<Timestamp>().ok()?;
        let started = run.started_at.as_deref().and_then(|s| s.parse().ok());
        Some(Timing::of(started, finished))
    }
}

/// Seconds as `xs:decimal` (Rust never writes an exponent for an `f64`).
fn seconds(s: f64) -> String {
    if s.is_finite() && s > 0.0 {
        s.to_string()
    } else {
        "0".to_string()
    }
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
    fn new(
        name: String,
        hostname: String,
        timing: Timing,
        properties: Vec<(&'static str, String)>,
        cases: Vec<Case>,
    ) -> Self {
        let count = |o: &str| cases.iter().filter(|c| c.outcome == o).count();
        Suite {
            name,
            tests: cases.len(),
            failures: count("failure"),
            errors: count("error"),
            skipped: count("skipped"),
            time: seconds(timing.seconds),
            seconds: timing.seconds,
            timestamp: timing.start.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
            hostname,
            package: String::new(),
            id: 0,
            properties,
            cases,
            out: String::new(),
        }
    }
}

/// How a host's facts compare: the lines of those it differs from most hosts in, and of those
/// whose planned value it does not have.
struct Differs<'a> {
    from_most: Option<&'a Vec<String>>,
    from_plan: Option<&'a Vec<String>>,
}

/// The cases of a host's fabric result, class `HOST.fabric`: one per check, so one per port and
/// fabric check. That is what a CI reader looks for: the failing case names the property that
/// failed (`fabric_bw:mlx5_0`, not a link that "failed" for an unknown reason), a link's two ends
/// judge their own checks (the sender its rate, each side its priority), and it reads like the
/// host's other cases. A failure's body names the link's two ends and their switch ports.
fn fabric_cases(h: &HostReport, fabric: Option<&FabricMatrix>) -> Vec<Case> {
    let link = |nic: &str| {
        let m = fabric?;
        m.links
            .iter()
            .find(|l| l.from.host == h.host && l.from.nic.as_deref() == Some(nic))
    };
    h.fabric_checks
        .iter()
        .map(|c| {
            let (outcome, message, text) = outcome(c);
            let text = match c.nic.as_deref().and_then(link) {
                Some(l) if outcome == "failure" => {
                    let to = l.to.as_ref().map_or_else(String::new, |t| {
                        format!(" → {} (switch port: {})", t.name(), t.switch_ports())
                    });
                    format!(
                        "{text}\nlink: {} (switch port: {}){to}",
                        l.from.name(),
                        l.from.switch_ports()
                    )
                }
                _ => text,
            };
            Case {
                classname: format!("{}.fabric", h.host),
                name: c.item(),
                outcome,
                message,
                text,
            }
        })
        .collect()
}

/// A check as a case's outcome, message and text: failed checks fail, skipped ones are skipped,
/// a warning or change passes with it as output.
fn outcome(c: &Check) -> (&'static str, String, String) {
    match c.status {
        Status::Fail => (
            "failure",
            c.message.to_string(),
            format!("expected: {}\nactual: {}", c.expected, c.actual),
        ),
        Status::Skip => ("skipped", c.message.to_string(), String::new()),
        Status::Warn => ("pass", String::new(), format!("warn: {}", c.message)),
        Status::Changed => ("pass", String::new(), format!("changed: {}", c.message)),
        Status::Pass => ("pass", String::new(), String::new()),
    }
}

/// `as_of` times a host without a readable result: when the report's newest result was written.
fn host_suite(
    h: &HostReport,
    plan_sha: Option<&str>,
    as_of: Timing,
    differs: &Differs,
    fabric: Option<&FabricMatrix>,
) -> Suite {
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
            properties.push(("phase", run.name.clone()));
            properties.push(("finished_at", run.finished_at.clone()));
            properties.push(("result_file", run.path.clone()));
            properties.push(("plan_sha256", short_sha(&run.plan_sha256)));
            if run.reboot_required {
                properties.push(("reboot_required", "true".to_string()));
            }
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
                cases.push(case(
                    "state",
                    "failure",
                    format!("{} is not ready: {}", h.host, h.state.as_str()),
                    [reason(h, plan_sha)]
                        .iter()
                        .chain(&h.change_lines)
                        .map(String::as_str)
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
        let (outcome, message, text) = outcome(c);
        cases.push(case(&c.item(), outcome, message, text));
    }
    // The GPU path: its checks are cases above; what NCCL will do is the suite's.
    if let Some(g) = &h.gpu {
        properties.push(("gpu_direct", gpu_host_text(g)));
        let pairs: Vec<String> = g
            .pairs
            .iter()
            .map(|p| format!("{}: {}", gpu_pair_name(p), gpu_pair_facts(p)))
            .collect();
        properties.push(("gpu_pairs", pairs.join("; ")));
    }
    if let Some(run) = &h.fabric_run {
        properties.push(("fabric_result", run.path.clone()));
        properties.push(("fabric_finished_at", run.finished_at.clone()));
    }
    cases.extend(fabric_cases(h, fabric));
    let timing = h.latest.as_ref().and_then(Timing::run).unwrap_or(as_of);
    let mut out = Vec::new();
    if h.reboot_required() {
        out.push("reboot required: firmware values take effect at the next boot".to_string());
    }
    out.extend(
        differs
            .from_most
            .into_iter()
            .flatten()
            .map(|o| format!("differs from most hosts: {o}")),
    );
    out.extend(
        differs
            .from_plan
            .into_iter()
            .flatten()
            .map(|o| format!("differs from the plan: {o}")),
    );
    let mut suite = Suite::new(h.host.clone(), h.host.clone(), timing, properties, cases);
    suite.out = out.join("\n");
    suite
}

/// The report as JUnit XML.
pub(crate) fn render(report: &ClusterReport) -> Result<String> {
    let plan_sha = report.plan.as_ref().map(|p| p.sha256.as_str());
    // Suites without a run of their own (a missing host, ingest's files) are as of the newest
    // result; with none at all, the epoch: the wall clock would make the output differ run to run.
    let as_of = Timing {
        start: report
            .as_of
            .as_deref()
            .and_then(|t| t.parse().ok())
            .unwrap_or(Timestamp::UNIX_EPOCH),
        seconds: 0.0,
    };
    let outliers = outliers(&report.consistency);
    let off_plan = off_plan(&report.consistency);
    let mut suites: Vec<Suite> = report
        .hosts
        .iter()
        .filter(|h| h.counted())
        .map(|h| {
            let differs = Differs {
                from_most: outliers.get(h.host.as_str()),
                from_plan: off_plan.get(h.host.as_str()),
            };
            host_suite(h, plan_sha, as_of, &differs, report.fabric.as_ref())
        })
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
        // ingest's own checks ran here; `localhost` is what the schema asks for a host that
        // cannot be named, and keeps the output the same wherever it is made.
        suites.push(Suite::new(
            "ingest".into(),
            "localhost".into(),
            as_of,
            Vec::new(),
            files,
        ));
    }
    let package = report
        .cluster
        .clone()
        .unwrap_or_else(|| "roce-gen".to_string());
    for (id, suite) in suites.iter_mut().enumerate() {
        suite.id = id;
        suite.package.clone_from(&package);
    }
    let time = suites.iter().map(|s| s.seconds).sum();
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
        time: seconds(time),
        suites,
    };
    render_template("ingest/junit.xml", doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_run_takes_from_its_start_to_its_end_and_never_less_than_nothing() {
        let end = at("2026-11-30T08:12:03Z");
        let t = Timing::of(Some(at("2026-11-30T08:12:00.5Z")), end);
        assert_eq!(
            (t.start, seconds(t.seconds)),
            (at("2026-11-30T08:12:00.5Z"), "2.5".to_string())
        );
        // A start after the end (a clock set back mid-run) or none: the end, taking no time.
        for start in [Some(at("2026-11-30T09:00:00Z")), None] {
            let t = Timing::of(start, end);
            assert_eq!((t.start, seconds(t.seconds)), (end, "0".to_string()));
        }
        assert_eq!(seconds(86_400.0 * 365.0 * 100.0), "3153600000");
        assert_eq!(seconds(f64::NAN), "0");
    }
}
