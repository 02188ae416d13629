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

use rayon::prelude::*;
use serde::Serialize;

use crate::ingest::attention;
use crate::ingest::consistency::{self, FactGroup};
use crate::ingest::intake::{FileNote, HostResults, Intake, Item, PlanView, PlannedHost, RunKey};
use crate::ingest::result::{Check, Counts, NicFacts, NicHealth, Phase, ResultFile, Status};

/// The whole report.
#[derive(Debug, Serialize)]
pub(crate) struct ClusterReport {
    /// The plan's cluster name, or the one most results name.
    pub cluster: Option<String>,
    /// The plan the results were compared with.
    pub plan: Option<PlanSummary>,
    /// Every planned host passed (every host, without a plan) and every file was readable.
    pub ok: bool,
    /// What a host had to show to pass.
    pub require: Require,
    /// When the newest result used finished (RFC 3339): the report's date, taken from the
    /// results so that the same results give the same report.
    pub as_of: Option<String>,
    /// Every host, by name.
    pub hosts: Vec<HostReport>,
    /// The warnings and drift of the counted hosts, grouped by check.
    pub attention: Vec<attention::Group>,
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
pub(crate) struct PlanSummary {
    /// As named on the command line.
    pub file: String,
    /// sha256 of the file.
    pub sha256: String,
    /// Its number of hosts.
    pub hosts: usize,
}

/// Where a host stands, from its latest evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum State {
    /// The plan is in force: an apply passed, and no later precheck found anything to change.
    Configured,
    /// A precheck (or dry run) found nothing to change, but no apply made it so: the settings
    /// match today and nothing keeps them after a reboot. Ready only under
    /// `--require prechecked`.
    Prechecked,
    /// A precheck (or dry run) found settings apply will change; no apply has run.
    Pending,
    /// An apply passed, and a later precheck (or dry run) found settings that differ again.
    Drifted,
    /// Its latest run is a rollback that did not fail.
    RolledBack,
    /// Its latest result failed.
    Failed,
    /// The plan has it, no result does.
    Missing,
}

impl State {
    /// The name used in every format.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Configured => "configured",
            State::Prechecked => "prechecked",
            State::Pending => "pending",
            State::Drifted => "drifted",
            State::RolledBack => "rolled back",
            State::Failed => "failed",
            State::Missing => "missing",
        }
    }

    /// Whether a host in this state is ready under the requirement.
    pub(crate) fn passes(self, require: Require) -> bool {
        match self {
            State::Configured => true,
            State::Prechecked => require == Require::Prechecked,
            _ => false,
        }
    }

    /// Every state, in report order.
    pub(crate) const ALL: [State; 7] = [
        State::Configured,
        State::Prechecked,
        State::Pending,
        State::Drifted,
        State::RolledBack,
        State::Failed,
        State::Missing,
    ];
}

/// What a host must show to be ready (`ingest --require`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Require {
    /// The plan applied: an apply that passed, or a clean precheck after one (the default).
    #[default]
    Configured,
    /// A clean precheck is enough (a report before delivery, on hosts configured by other
    /// means): `prechecked` hosts are ready too.
    Prechecked,
}

/// One host.
#[derive(Debug, Serialize)]
pub(crate) struct HostReport {
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
    /// The checks of the latest result that warned, other than `changes`.
    pub warnings: Vec<Check>,
    /// Settings the latest precheck or dry run found different from the plan: what apply will
    /// change (`pending`), or what drifted after apply (`drifted`).
    pub changes: Vec<Check>,
    /// Per NIC (`ib_dev`), the monitoring facts of the latest result: transceiver, link, PCIe,
    /// counters and LLDP neighbour. Absent when the result records none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nics: BTreeMap<String, NicHealth>,
    /// Per NIC (`ib_dev`), what the latest result records of its RoCE configuration besides
    /// the checks: the DCBX owner, the RoCE v2 GID index of the planned address, the NV values.
    /// Absent when the result records none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nic_config: BTreeMap<String, NicConfig>,
    /// Per NIC (`ib_dev`), the netdev the latest result names, for labels.
    #[serde(skip)]
    pub netdevs: BTreeMap<String, String>,
}

/// One NIC's recorded configuration (`facts.nics.<ib_dev>` of a result).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct NicConfig {
    /// Who owns DCBX: `os` or `fw` (the firmware's LLDP agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcbx: Option<String>,
    /// The index of the RoCE v2 GID that carries the planned address (`NCCL_IB_GID_INDEX`);
    /// `None` when the port has none, or the result does not say.
    pub gid_index: Option<u32>,
    /// The NV values the firmware runs with now, by name (`CNP_DSCP_P1`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub firmware: BTreeMap<String, String>,
}

impl NicConfig {
    /// The configuration a NIC's facts record; `None` when they record none of it.
    fn of(facts: &NicFacts) -> Option<Self> {
        // The NIC's few facts looked up among those compared, not each of those among them.
        let firmware: BTreeMap<String, String> = facts
            .iter()
            .filter(|(k, _)| consistency::nic_fact_order(k).is_some())
            .filter_map(|(k, v)| Some((k.strip_prefix("fw_")?.to_string(), v.to_string())))
            .collect();
        let dcbx = facts
            .get("dcbx")
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let gid_index = facts.get("gid_index").and_then(|v| v.parse().ok());
        (dcbx.is_some() || facts.contains_key("gid_index") || !firmware.is_empty()).then_some(
            NicConfig {
                dcbx,
                gid_index,
                firmware,
            },
        )
    }
}

impl HostReport {
    /// Counted in the verdict: planned, or any host without a plan.
    pub(crate) fn counted(&self) -> bool {
        self.planned != Some(false)
    }
}

/// One result, summarised.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    /// The script.
    pub phase: Phase,
    /// `apply.sh --dry-run`.
    pub dry_run: bool,
    /// A firmware value it read or set takes effect only at the next boot.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reboot_required: bool,
    /// The run's status.
    pub status: Status,
    /// When it started, RFC 3339, when the result says so readably.
    pub started_at: Option<String>,
    /// When it finished, RFC 3339.
    pub finished_at: String,
    /// The same, to compare.
    #[serde(skip)]
    pub finished: jiff::Timestamp,
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
pub(crate) struct Totals {
    /// Hosts in the report (planned and unplanned).
    pub hosts: usize,
    /// Hosts of the plan, when one was given.
    pub planned: Option<usize>,
    /// Counted hosts that passed.
    pub passed: usize,
    /// Counted hosts that are configured.
    pub configured: usize,
    /// Counted hosts by state (`prechecked` hosts passed only under `--require prechecked`).
    pub prechecked: usize,
    /// …
    pub pending: usize,
    /// …
    pub drifted: usize,
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
    /// Hosts whose latest result says a firmware value waits for the next boot.
    pub reboot_required: usize,
}

/// Builds the report from the results taken in, compared with the plan when there is one.
pub(crate) fn build(plan: Option<&PlanView>, taken: Intake, require: Require) -> ClusterReport {
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

    // Each counted host's latest result feeds the consistency tally and the cluster name as
    // the host is built; then the result goes, its checks moved into the host's report. Hosts
    // are built on every core, a run of names at a time, and the runs joined in name order.
    let todo: Vec<(String, HostResults)> = names
        .into_iter()
        .map(|name| {
            let results = by_host.remove(&name).unwrap_or_default();
            (name, results)
        })
        .collect();
    let runs: Vec<Built> = todo
        .into_par_iter()
        .with_min_len(HOSTS_AT_ONCE)
        .fold(
            || Built::new(plan.is_none()),
            |mut built, (name, results)| {
                let planned_host = planned.get(name.as_str()).copied();
                let (tally, clusters) = (&mut built.tally, &mut built.clusters);
                let host = host_report(
                    name,
                    plan,
                    planned_host,
                    results,
                    require,
                    &mut built.superseded,
                    &mut |host, latest| {
                        tally.add(host, latest);
                        if !latest.cluster.is_empty() {
                            *clusters.entry(latest.cluster.clone()).or_default() += 1;
                        }
                    },
                );
                built.hosts.push(host);
                built
            },
        )
        .collect();
    let mut hosts = Vec::new();
    let mut tally = consistency::Tally::new(plan.is_none());
    let mut clusters: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        hosts.extend(run.hosts);
        tally.merge(run.tally);
        for (cluster, n) in run.clusters {
            *clusters.entry(cluster).or_default() += n;
        }
        superseded.extend(run.superseded);
    }
    // The runs come back in order; were they not, the report would still be.
    if !hosts.is_sorted_by(|a, b| a.host <= b.host) {
        hosts.sort_by(|a, b| a.host.cmp(&b.host));
    }
    let consistency = tally.finish();

    problems.sort();
    skipped.sort();
    superseded.sort();
    let totals = totals(plan, &hosts, results, &problems, &skipped, &superseded);
    let cluster = plan.map_or_else(|| common_cluster(&clusters), |p| Some(p.cluster.clone()));
    let attention = attention::groups(hosts.iter().filter(|h| h.counted() && !h.stale).map(|h| {
        attention::Row {
            host: &h.host,
            warnings: &h.warnings,
            drifted: if h.state == State::Drifted {
                &h.changes
            } else {
                &[]
            },
        }
    }));
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
        require,
        as_of: hosts
            .iter()
            .flat_map(|h| &h.runs)
            .max_by_key(|r| r.finished)
            .map(|r| r.finished_at.clone()),
        attention,
        hosts,
        consistency,
        problems,
        skipped,
        superseded,
        totals,
    }
}

/// Hosts built by one thread in a row, with what they add to the consistency tally, the
/// cluster names and the superseded notes.
struct Built {
    hosts: Vec<HostReport>,
    tally: consistency::Tally,
    clusters: BTreeMap<String, usize>,
    superseded: Vec<FileNote>,
}

impl Built {
    fn new(with_plan_sha: bool) -> Self {
        Built {
            hosts: Vec::new(),
            tally: consistency::Tally::new(with_plan_sha),
            clusters: BTreeMap::new(),
            superseded: Vec::new(),
        }
    }
}

/// Hosts a thread builds at least in a row: fewer, and joining the tallies costs more than
/// building them.
const HOSTS_AT_ONCE: usize = 512;

/// One host's report. `counted` sees the latest result of a host that counts in the verdict,
/// before its checks move into the report (for the consistency section).
fn host_report(
    name: String,
    plan: Option<&PlanView>,
    planned_host: Option<&PlannedHost>,
    results: HostResults,
    require: Require,
    superseded: &mut Vec<FileNote>,
    counted: &mut dyn FnMut(&str, &ResultFile),
) -> HostReport {
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
    let runs: Vec<Run> = winners.values().map(run_of).collect();
    let Evidence {
        latest,
        state,
        changes,
        checking,
    } = evidence(&mut winners);
    let (mut failures, mut warnings, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    // Summarised before its checks move out.
    let latest_run = latest.as_ref().map(run_of);
    let mut latest = latest;
    if let Some(i) = latest.as_mut() {
        // Planned, or any host without a plan (see `HostReport::counted`).
        if plan.is_none() || planned_host.is_some() {
            counted(&name, &i.result);
        }
        checks = std::mem::take(&mut i.result.checks);
        for c in &checks {
            match c.status {
                Status::Fail => failures.push(c.clone()),
                Status::Warn if !(checking && is_change(c)) => warnings.push(c.clone()),
                _ => {}
            }
        }
    }
    let ok = !is_stale && state.passes(require);
    HostReport {
        mgmt_ip: planned_host.map(|h| h.mgmt_ip.clone()),
        planned: plan.map(|_| planned_host.is_some()),
        ok,
        stale: is_stale,
        state,
        latest: latest_run,
        runs,
        checks,
        failures,
        warnings,
        changes,
        nics: latest
            .as_mut()
            .map(|i| std::mem::take(&mut i.result.facts.health))
            .unwrap_or_default(),
        nic_config: latest
            .as_ref()
            .map(|i| {
                i.result
                    .facts
                    .nics
                    .iter()
                    .filter_map(|(dev, f)| Some((dev.clone(), NicConfig::of(f)?)))
                    .collect()
            })
            .unwrap_or_default(),
        netdevs: latest
            .as_ref()
            .map(|i| {
                i.result
                    .facts
                    .nics
                    .iter()
                    .filter_map(|(dev, f)| Some((dev.clone(), f.get("netdev")?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
        host: name,
    }
}

/// What a host's newest results show: the one that gives its state, the state, and the
/// settings that differ from the plan (to change, or drifted).
struct Evidence {
    latest: Option<Item>,
    state: State,
    changes: Vec<Check>,
    /// The latest is a precheck or a dry run: its warnings on settings are `changes`.
    checking: bool,
}

/// The latest run gives the state (a tie in time goes to the later phase of the lifecycle, and
/// a real run beats a dry run). A precheck or dry run is judged by what it says apply would
/// change, and by whether an apply that passed came before it: after one, it confirms the host
/// `configured` or shows it `drifted`; without one, the host is `prechecked` or `pending`.
fn evidence(winners: &mut BTreeMap<RunKey, Item>) -> Evidence {
    let order = |((phase, dry), item): (&RunKey, &Item)| (item.result.finished_at, *phase, !*dry);
    let Some(key) = winners.iter().max_by_key(|e| order(*e)).map(|(k, _)| *k) else {
        return Evidence {
            latest: None,
            state: State::Missing,
            changes: Vec::new(),
            checking: false,
        };
    };
    let Some(item) = winners.remove(&key) else {
        return Evidence {
            latest: None,
            state: State::Missing,
            changes: Vec::new(),
            checking: false,
        };
    };
    let r = &item.result;
    let checking = r.dry_run || r.phase == Phase::Precheck;
    let changes: Vec<Check> = if checking {
        r.checks.iter().filter(|c| is_change(c)).cloned().collect()
    } else {
        Vec::new()
    };
    let state = if r.status == Status::Fail {
        State::Failed
    } else if !checking {
        match r.phase {
            Phase::Rollback => State::RolledBack,
            _ => State::Configured,
        }
    } else {
        // The last real change before this check: an apply that passed means the plan was put
        // in force, and this check confirms it or finds drift.
        let applied = winners
            .iter()
            .filter(|((phase, dry), i)| {
                !*dry && *phase != Phase::Precheck && i.result.finished_at <= r.finished_at
            })
            .max_by_key(|e| order(*e))
            .is_some_and(|((phase, _), i)| {
                *phase == Phase::Apply && i.result.status != Status::Fail
            });
        match (applied, changes.is_empty()) {
            (true, true) => State::Configured,
            (true, false) => State::Drifted,
            (false, true) => State::Prechecked,
            (false, false) => State::Pending,
        }
    };
    Evidence {
        latest: Some(item),
        state,
        changes,
        checking,
    }
}

/// A check of a precheck or dry run that says apply would change a setting: a `warn` on a
/// setting (the ids of `RG_SETTINGS` in the bundle's `lib-settings.sh`, and those of plan format
/// v1.1) or on persistence (a dry run's "would install").
pub(crate) fn is_change(c: &Check) -> bool {
    c.status == Status::Warn && is_setting(&c.id)
}

/// Whether a check id names a setting apply writes.
pub(crate) fn is_setting(id: &str) -> bool {
    const SETTINGS: [&str; 16] = [
        "dcbx",
        "trust",
        "dscp2prio",
        "pfc",
        "pause",
        "ecn_np",
        "ecn_rp",
        "cnp_dscp",
        "cnp_priority",
        "roce_mode",
        "roce_tos",
        "traffic_class",
        "mtu",
        "cable_length",
        "persistence",
        "nccl_env",
    ];
    // Firmware (`fw_*`) values are not here: in the plan's `report` mode apply leaves them, so
    // a contradiction is a warning to read, not a pending change.
    SETTINGS.contains(&id) || id.starts_with("dcqcn_")
}

fn run_of(item: &Item) -> Run {
    let r = &item.result;
    let mut counts = Counts {
        pass: r.passes_not_kept,
        ..Counts::default()
    };
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
        reboot_required: r.reboot_required,
        status: r.status,
        started_at: r.started_at.map(|t| t.to_string()),
        finished_at: r.finished_at.to_string(),
        finished: r.finished_at,
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
        if h.latest.as_ref().is_some_and(|r| r.reboot_required) {
            t.reboot_required += 1;
        }
        if !h.counted() {
            t.unplanned += 1;
            continue;
        }
        if h.ok {
            t.passed += 1;
        }
        if h.stale {
            t.stale += 1;
            continue;
        }
        *match h.state {
            State::Configured => &mut t.configured,
            State::Prechecked => &mut t.prechecked,
            State::Pending => &mut t.pending,
            State::Drifted => &mut t.drifted,
            State::RolledBack => &mut t.rolled_back,
            State::Failed => &mut t.failed,
            State::Missing => &mut t.missing,
        } += 1;
    }
    t
}

/// Without a plan, the cluster most hosts' results name (ties: the first by name).
fn common_cluster(count: &BTreeMap<String, usize>) -> Option<String> {
    let best = count.values().copied().max()?;
    count
        .iter()
        .find(|(_, n)| **n == best)
        .map(|(c, _)| c.clone())
}

#[cfg(test)]
mod tests {
    use super::is_setting;

    #[test]
    fn the_settings_of_plan_format_1_1_are_changes_and_its_read_only_checks_are_not() {
        for id in ["cable_length", "dcqcn_rpg_ai_rate", "nccl_env"] {
            assert!(is_setting(id), "{id}");
        }
        // Read-only: apply never changes what they look at.
        for id in ["gid", "pfc_buffer"] {
            assert!(!is_setting(id), "{id}");
        }
    }
}
