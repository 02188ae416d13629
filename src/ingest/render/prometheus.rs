//! `--format prometheus`: the report as a node_exporter textfile-collector file (Prometheus text
//! exposition format 0.0.4): per-host status and state, per-check failure gauges, result times,
//! consistency outliers and file counts, every sample labelled with the cluster. Write it with
//! `-o DIR/roce-gen.prom`, which replaces the file atomically as the collector requires.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::ingest::render::clean;
use crate::ingest::report::{ClusterReport, HostReport, State};
use crate::ingest::result::Status;

/// One metric family: its samples are written together under one HELP and TYPE, sorted by
/// labels. A label set added twice (a result listing a check twice) keeps the larger value:
/// the collector rejects a whole file with a repeated series.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: BTreeMap<Vec<(&'static str, String)>, i64>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Self {
        Family {
            name,
            help,
            samples: BTreeMap::new(),
        }
    }

    fn add(&mut self, labels: Vec<(&'static str, String)>, value: impl TryInto<i64>) {
        let value = value.try_into().unwrap_or(i64::MAX);
        self.samples
            .entry(labels)
            .and_modify(|v| *v = (*v).max(value))
            .or_insert(value);
    }

    fn write(&self, out: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.samples {
            let labels: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = writeln!(out, "{}{{{}}} {value}", self.name, labels.join(","));
        }
    }
}

/// A label value: control characters made visible, then `\`, `"` and newline escaped as the
/// exposition format requires.
fn escape_label(v: &str) -> String {
    clean(v)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn state_label(state: State) -> &'static str {
    match state {
        State::Configured => "configured",
        State::Prechecked => "prechecked",
        State::RolledBack => "rolled_back",
        State::Failed => "failed",
        State::Missing => "missing",
    }
}

/// The report in the Prometheus text format.
pub fn render(report: &ClusterReport) -> String {
    let cluster = report.cluster.clone().unwrap_or_default();
    let c = || ("cluster", cluster.clone());
    let host_labels = |h: &HostReport| vec![c(), ("host", h.host.clone())];

    let mut ok = Family::new(
        "roce_gen_ok",
        "1 when every planned host passed and every result file was readable (ingest exit status 0).",
    );
    ok.add(vec![c()], u8::from(report.ok));

    let mut hosts = Family::new(
        "roce_gen_hosts",
        "Hosts by status: configured, prechecked, rolled_back, failed, missing, stale, unplanned.",
    );
    let t = &report.totals;
    for (status, n) in [
        ("configured", t.configured),
        ("prechecked", t.prechecked),
        ("rolled_back", t.rolled_back),
        ("failed", t.failed),
        ("missing", t.missing),
        ("stale", t.stale),
        ("unplanned", t.unplanned),
    ] {
        hosts.add(vec![c(), ("status", status.to_string())], n);
    }

    let mut files = Family::new(
        "roce_gen_ingest_files",
        "Files ingest read, by outcome: used, superseded, skipped (not results), problem (unreadable).",
    );
    for (outcome, n) in [
        ("used", t.used),
        ("superseded", t.superseded),
        ("skipped", t.skipped),
        ("problem", t.problems),
    ] {
        files.add(vec![c(), ("outcome", outcome.to_string())], n);
    }

    let mut host_ok = Family::new(
        "roce_gen_host_ok",
        "1 when the host's latest result is from this plan and did not fail, 0 when it failed, is missing or stale.",
    );
    let mut planned = Family::new(
        "roce_gen_host_planned",
        "1 when the host is in the plan given to ingest, 0 when only results name it.",
    );
    let mut stale = Family::new(
        "roce_gen_host_stale",
        "1 when the host's results were all made from another plan than the one given.",
    );
    let mut state = Family::new(
        "roce_gen_host_state",
        "The state the host's latest result gives: 1 for the state it is in, 0 for the others.",
    );
    let mut checks = Family::new(
        "roce_gen_host_checks",
        "Checks of the host's latest result, by check status.",
    );
    let mut finished = Family::new(
        "roce_gen_host_result_timestamp_seconds",
        "When the host's latest result was written (finished_at), in seconds since the epoch.",
    );
    let mut failed = Family::new(
        "roce_gen_check_failed",
        "1 when the check failed in the host's latest result, 0 when it did not; nic is empty for host-wide checks.",
    );
    for h in &report.hosts {
        host_ok.add(host_labels(h), u8::from(h.ok));
        if let Some(p) = h.planned {
            planned.add(host_labels(h), u8::from(p));
        }
        if report.plan.is_some() {
            stale.add(host_labels(h), u8::from(h.stale));
        }
        for s in State::ALL {
            let mut labels = host_labels(h);
            labels.push(("state", state_label(s).to_string()));
            state.add(labels, u8::from(h.state == s));
        }
        let Some(run) = &h.latest else {
            continue;
        };
        for (status, n) in [
            ("pass", run.counts.pass),
            ("warn", run.counts.warn),
            ("fail", run.counts.fail),
            ("skip", run.counts.skip),
            ("changed", run.counts.changed),
        ] {
            let mut labels = host_labels(h);
            labels.push(("status", status.to_string()));
            checks.add(labels, n);
        }
        if let Ok(ts) = run.finished_at.parse::<jiff::Timestamp>() {
            let mut labels = host_labels(h);
            labels.push(("phase", run.phase.as_str().to_string()));
            finished.add(labels, ts.as_second());
        }
    }
    // Every check gets a series, 0 or 1, so a fixed failure shows as a drop to 0 rather than a
    // series that disappears.
    for h in &report.hosts {
        for check in &h.checks {
            let mut labels = host_labels(h);
            labels.push(("check", check.id.clone()));
            labels.push(("nic", check.nic.clone().unwrap_or_default()));
            failed.add(labels, u8::from(check.status == Status::Fail));
        }
    }

    let mut outlier = Family::new(
        "roce_gen_fact_outlier",
        "1 for a host whose value of a fact differs from the one most hosts have.",
    );
    let mut fact_hosts = Family::new(
        "roce_gen_fact_hosts",
        "Hosts that have each value of a fact that should agree across hosts.",
    );
    for g in &report.consistency {
        let scope = g.scope.clone().unwrap_or_default();
        for (i, v) in g.values.iter().enumerate() {
            fact_hosts.add(
                vec![
                    c(),
                    ("fact", g.fact.clone()),
                    ("scope", scope.clone()),
                    ("value", v.value.clone()),
                ],
                v.count,
            );
            if i == 0 {
                continue;
            }
            for host in &v.hosts {
                outlier.add(
                    vec![
                        c(),
                        ("host", host.clone()),
                        ("fact", g.fact.clone()),
                        ("scope", scope.clone()),
                        ("value", v.value.clone()),
                    ],
                    1,
                );
            }
        }
    }

    let mut out = String::new();
    for family in [
        &ok,
        &hosts,
        &files,
        &host_ok,
        &planned,
        &stale,
        &state,
        &checks,
        &finished,
        &failed,
        &fact_hosts,
        &outlier,
    ] {
        family.write(&mut out);
    }
    out
}
