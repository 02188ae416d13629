//! The cluster report: from the files found to each host's state, the totals and the verdict.
//! Pure. The rules:
//!
//! - identical files (the same result copied twice) count once;
//! - with a plan, results whose `plan_sha256` is not the plan's are stale: they are used for a
//!   host only when it has no result from the plan, and then the host is `stale`, not passed;
//! - per host, phase and dry-run-ness the newest result (`finished_at`) wins, the others are
//!   superseded; the latest winner that changed something (not a dry run) gives the host's state;
//! - planned hosts without a result are missing; hosts not in the plan are unplanned, reported
//!   but not part of the verdict.
//!
//! The report is `Serialize`: `--format json` and the HTML template use it as it is.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::ingest::consistency::{self, FactGroup};
use crate::ingest::intake::{HostResults, Intake, Item};
use crate::ingest::result::{Check, Counts, NicHealth, Phase, ResultFile, Status};

impl PlanView {
    /// Whether a result's `plan_sha256` names this plan, in either identity.
    pub fn made_from(&self, plan_sha256: &str) -> bool {
        plan_sha256 == self.sha256 || plan_sha256 == self.file_sha256
    }
}

/// What `ingest` needs of a plan.
#[derive(Debug, Clone)]
pub struct PlanView {
    /// The plan file as named on the command line.
    pub file: String,
    /// sha256 of the normalized plan: what results of its bundles carry as `plan_sha256`.
    pub sha256: String,
    /// sha256 of the file's bytes: what bundles made before the plan's identity was its
    /// normalized form carry; such results are this plan's too.
    pub file_sha256: String,
    /// The cluster name.
    pub cluster: String,
    /// The hosts, in plan order.
    pub hosts: Vec<PlannedHost>,
}

/// A host of the plan.
#[derive(Debug, Clone)]
pub struct PlannedHost {
    /// Its name.
    pub name: String,
    /// Its management address.
    pub mgmt_ip: String,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct ClusterReport {
    /// The plan's cluster name, or the one most results name.
    pub cluster: Option<String>,
    /// The plan the results were compared with.
    pub plan: Option<PlanSummary>,
    /// Every planned host passed (every host, without a plan) and every file was readable.
    pub ok: bool,
    /// Every host, by name.
    pub hosts: Vec<HostReport>,
    /// Facts that should agree across the hosts, and how they differ.
    pub consistency: Vec<FactGroup>,
    /// Files that could not be read as results: counted, and they fail the verdict.
    pub problems: Vec<FileNote>,
    /// Files that are not results (other JSON, other archive formats).
    pub skipped: Vec<FileNote>,
    /// Results not used: older ones, stale ones beside current ones, copies.
    pub superseded: Vec<FileNote>,
    /// The counts.
    pub totals: Totals,
}

/// The plan, as the report names it.
#[derive(Debug, Serialize)]
pub struct PlanSummary {
    /// As named on the command line.
    pub file: String,
    /// sha256 of the file.
    pub sha256: String,
    /// Its number of hosts.
    pub hosts: usize,
}

/// A file and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileNote {
    /// The path, and inside an archive `archive.tar.gz:member`.
    pub path: String,
    /// Why it is listed.
    pub reason: String,
}

/// Where a host stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Its latest result is an apply that did not fail.
    Configured,
    /// Its latest result is a precheck (or a dry run) that did not fail.
    Prechecked,
    /// Its latest result is a rollback that did not fail.
    RolledBack,
    /// Its latest result failed.
    Failed,
    /// The plan has it, no result does.
    Missing,
}

impl State {
    /// The name used in every format.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Configured => "configured",
            State::Prechecked => "prechecked",
            State::RolledBack => "rolled back",
            State::Failed => "failed",
            State::Missing => "missing",
        }
    }

    /// Every state, in report order.
    pub const ALL: [State; 5] = [
        State::Configured,
        State::Prechecked,
        State::RolledBack,
        State::Failed,
        State::Missing,
    ];
}

/// One host.
#[derive(Debug, Serialize)]
pub struct HostReport {
    /// The host name the results (or the plan) give.
    pub host: String,
    /// Its management address, from the plan.
    pub mgmt_ip: Option<String>,
    /// In the plan; `None` without a plan.
    pub planned: Option<bool>,
    /// What its latest result says.
    pub state: State,
    /// Its results are all made from another plan than the one given.
    pub stale: bool,
    /// It has a result from this plan that did not fail.
    pub ok: bool,
    /// The result that gives the state.
    pub latest: Option<Run>,
    /// The newest result of each phase, in phase order (the latest among them).
    pub runs: Vec<Run>,
    /// Every check of the latest result (JUnit and Prometheus list them all; JSON only the
    /// failures and warnings below, the result files have the rest).
    #[serde(skip)]
    pub checks: Vec<Check>,
    /// The failed checks of the latest result.
    pub failures: Vec<Check>,
    /// The checks of the latest result that warned.
    pub warnings: Vec<Check>,
    /// Per NIC (`ib_dev`), the monitoring facts of the latest result: transceiver, link, PCIe,
    /// counters and LLDP neighbour. Absent when the result records none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nics: BTreeMap<String, NicHealth>,
    /// Per NIC (`ib_dev`), the netdev the latest result names, for labels.
    #[serde(skip)]
    pub netdevs: BTreeMap<String, String>,
}

impl HostReport {
    /// Counted in the verdict: planned, or any host without a plan.
    pub fn counted(&self) -> bool {
        self.planned != Some(false)
    }
}

/// One result, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The script.
    pub phase: Phase,
    /// `apply.sh --dry-run`.
    pub dry_run: bool,
    /// The run's status.
    pub status: Status,
    /// When it finished, RFC 3339.
    pub finished_at: String,
    /// Where the file was found.
    pub path: String,
    /// The plan its bundle was made from.
    pub plan_sha256: String,
    /// The roce-gen version that made the bundle.
    pub tool_version: String,
    /// The host name the machine reported.
    pub observed_hostname: String,
    /// Its checks by status, counted from the checks.
    pub counts: Counts,
}

/// The counts of the report.
#[derive(Debug, Default, Serialize)]
pub struct Totals {
    /// Hosts in the report (planned and unplanned).
    pub hosts: usize,
    /// Hosts of the plan, when one was given.
    pub planned: Option<usize>,
    /// Counted hosts that passed.
    pub passed: usize,
    /// Counted hosts that passed, by state.
    pub configured: usize,
    /// …
    pub prechecked: usize,
    /// …
    pub rolled_back: usize,
    /// Counted hosts whose latest result failed.
    pub failed: usize,
    /// Planned hosts without a result.
    pub missing: usize,
    /// Counted hosts with only results from another plan.
    pub stale: usize,
    /// Hosts with results that the plan does not have.
    pub unplanned: usize,
    /// Results read (used, superseded and copies).
    pub results: usize,
    /// Results that give a host's state or a phase of it.
    pub used: usize,
    /// Results not used: older, stale beside current, or copies.
    pub superseded: usize,
    /// Files that are not results.
    pub skipped: usize,
    /// Files that could not be read as results.
    pub problems: usize,
}

/// Builds the report from the results taken in, compared with the plan when there is one.
pub fn build(plan: Option<&PlanView>, taken: Intake) -> ClusterReport {
    let Intake {
        mut problems,
        mut skipped,
        mut superseded,
        mut by_host,
        results,
    } = taken;

    let planned: BTreeMap<&str, &PlannedHost> = plan
        .map(|p| p.hosts.iter().map(|h| (h.name.as_str(), h)).collect())
        .unwrap_or_default();
    let mut names: BTreeSet<String> = by_host.keys().cloned().collect();
    names.extend(planned.keys().map(|n| (*n).to_string()));

    let mut hosts = Vec::new();
    let mut facts_of = Vec::new();
    for name in names {
        let results = by_host.remove(&name).unwrap_or_default();
        let planned_host = planned.get(name.as_str());
        let (host, latest) =
            host_report(name, plan, planned_host.copied(), results, &mut superseded);
        if let Some(latest) = latest
            && host.counted()
        {
            facts_of.push((host.host.clone(), latest));
        }
        hosts.push(host);
    }
    let consistency = consistency::groups(&facts_of, plan.is_none());

    problems.sort();
    skipped.sort();
    superseded.sort();
    let totals = totals(plan, &hosts, results, &problems, &skipped, &superseded);
    let cluster = plan.map_or_else(|| common_cluster(&facts_of), |p| Some(p.cluster.clone()));
    let ok = problems.is_empty()
        && hosts.iter().any(HostReport::counted)
        && hosts.iter().filter(|h| h.counted()).all(|h| h.ok);
    ClusterReport {
        cluster,
        plan: plan.map(|p| PlanSummary {
            file: p.file.clone(),
            sha256: p.sha256.clone(),
            hosts: p.hosts.len(),
        }),
        ok,
        hosts,
        consistency,
        problems,
        skipped,
        superseded,
        totals,
    }
}

/// One host's report, and the result that gives its state (for the consistency section).
fn host_report(
    name: String,
    plan: Option<&PlanView>,
    planned_host: Option<&PlannedHost>,
    results: HostResults,
    superseded: &mut Vec<FileNote>,
) -> (HostReport, Option<ResultFile>) {
    // Results of this plan first; stale ones only when there is nothing else.
    let is_stale = results.current.is_empty() && !results.stale.is_empty();
    let mut winners = if is_stale {
        results.stale
    } else {
        for i in results.stale.into_values() {
            superseded.push(FileNote {
                path: i.path,
                reason: format!("made from another plan; {name} has results from this one"),
            });
        }
        results.current
    };
    // The latest run that changed something (not a dry run) gives the state; a tie in time
    // goes to the later phase of the lifecycle.
    let latest_key = winners
        .iter()
        .max_by_key(|((phase, dry), item)| (!*dry, item.result.finished_at, *phase))
        .map(|(k, _)| *k);
    let runs: Vec<Run> = winners.values().map(run_of).collect();
    let latest = latest_key.and_then(|k| winners.remove(&k));

    let state = match &latest {
        None => State::Missing,
        Some(i) if i.result.status == Status::Fail => State::Failed,
        Some(i) if i.result.dry_run => State::Prechecked,
        Some(i) => match i.result.phase {
            Phase::Precheck => State::Prechecked,
            Phase::Apply => State::Configured,
            Phase::Rollback => State::RolledBack,
        },
    };
    let pick = |status: Status| -> Vec<Check> {
        latest.as_ref().map_or_else(Vec::new, |i| {
            i.result
                .checks
                .iter()
                .filter(|c| c.status == status)
                .cloned()
                .collect()
        })
    };
    let host = HostReport {
        mgmt_ip: planned_host.map(|h| h.mgmt_ip.clone()),
        planned: plan.map(|_| planned_host.is_some()),
        ok: !is_stale && !matches!(state, State::Failed | State::Missing),
        stale: is_stale,
        state,
        latest: latest.as_ref().map(run_of),
        runs,
        checks: latest
            .as_ref()
            .map_or_else(Vec::new, |i| i.result.checks.clone()),
        failures: pick(Status::Fail),
        warnings: pick(Status::Warn),
        nics: latest
            .as_ref()
            .map(|i| i.result.facts.health.clone())
            .unwrap_or_default(),
        netdevs: latest
            .as_ref()
            .map(|i| {
                i.result
                    .facts
                    .nics
                    .iter()
                    .filter_map(|(dev, f)| Some((dev.clone(), f.get("netdev")?.clone())))
                    .collect()
            })
            .unwrap_or_default(),
        host: name,
    };
    (host, latest.map(|i| i.result))
}

fn run_of(item: &Item) -> Run {
    let r = &item.result;
    let mut counts = Counts::default();
    for c in &r.checks {
        *match c.status {
            Status::Pass => &mut counts.pass,
            Status::Warn => &mut counts.warn,
            Status::Fail => &mut counts.fail,
            Status::Skip => &mut counts.skip,
            Status::Changed => &mut counts.changed,
        } += 1;
    }
    Run {
        phase: r.phase,
        dry_run: r.dry_run,
        status: r.status,
        finished_at: r.finished_at.to_string(),
        path: item.path.clone(),
        plan_sha256: r.plan_sha256.clone(),
        tool_version: r.tool_version.clone(),
        observed_hostname: r.observed_hostname.clone(),
        counts,
    }
}

fn totals(
    plan: Option<&PlanView>,
    hosts: &[HostReport],
    results: usize,
    problems: &[FileNote],
    skipped: &[FileNote],
    superseded: &[FileNote],
) -> Totals {
    let mut t = Totals {
        hosts: hosts.len(),
        planned: plan.map(|p| p.hosts.len()),
        results,
        used: hosts.iter().map(|h| h.runs.len()).sum(),
        superseded: superseded.len(),
        skipped: skipped.len(),
        problems: problems.len(),
        ..Totals::default()
    };
    for h in hosts {
        if !h.counted() {
            t.unplanned += 1;
            continue;
        }
        match (h.stale, h.state) {
            (true, _) => t.stale += 1,
            (false, State::Failed) => t.failed += 1,
            (false, State::Missing) => t.missing += 1,
            (false, state) => {
                t.passed += 1;
                match state {
                    State::Configured => t.configured += 1,
                    State::RolledBack => t.rolled_back += 1,
                    _ => t.prechecked += 1,
                }
            }
        }
    }
    t
}

/// Without a plan, the cluster most hosts' results name (ties: the first by name).
fn common_cluster(facts_of: &[(String, ResultFile)]) -> Option<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, r) in facts_of {
        if !r.cluster.is_empty() {
            *count.entry(r.cluster.as_str()).or_default() += 1;
        }
    }
    let best = count.values().copied().max()?;
    count
        .into_iter()
        .find(|(_, n)| *n == best)
        .map(|(c, _)| c.to_string())
}
