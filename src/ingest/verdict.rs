//! The verdict: from the results taken in to each host's state, the totals and whether the
//! cluster is ready, as a [`ClusterReport`]. Pure. The rules:
//!
//! - identical files (the same result copied twice) count once;
//! - with a plan, results whose `plan_sha256` is not the plan's are stale: they are used for a
//!   host only when it has no result from the plan, and then the host is `stale`, not passed;
//! - per host, phase and dry-run-ness the newest result (`finished_at`) wins, the others are
//!   superseded; the latest winner that changed something (not a dry run) gives the host's state,
//!   and a rollback's dry run never stands over another result;
//! - planned hosts without a result are missing; hosts not in the plan are unplanned, reported
//!   but not part of the verdict.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::ingest::attention;
use crate::ingest::consistency;
use crate::ingest::fabric;
use crate::ingest::gpu;
use crate::ingest::intake::{
    FileNote, HostResults, Intake, Item, PlanView, PlannedHost, RunKey, run_kind_name,
};
use crate::ingest::report::{
    ClusterReport, FabricPort, HostReport, NicConfig, PcieSpeeds, PlanSummary, Require, Run, State,
    Totals,
};
use crate::ingest::result::{
    Check, Counts, NicFacts, NicHealth, Phase, ResultFile, Status, pcie_gts,
};

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
    fabric_peers(plan, &mut hosts);
    let fabric = fabric::matrix(&hosts);
    let gpu = gpu::totals(&hosts);

    problems.sort();
    skipped.sort();
    superseded.sort();
    let totals = totals(plan, &hosts, results, &problems, &skipped, &superseded);
    let cluster = plan.map_or_else(|| common_cluster(&clusters), |p| Some(p.cluster.clone()));
    let attention = attention::groups(hosts.iter().filter(|h| h.counted() && !h.stale).map(|h| {
        attention::Row {
            host: &h.host,
            netdevs: &h.netdevs,
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
        fabric,
        gpu,
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
            superseded.push(FileNote::new(
                i.path,
                format!("made from another plan; {name} has results from this one"),
            ));
        }
        results.current
    };
    let runs: Vec<Run> = winners.values().map(run_of).collect();
    // The fabric test says nothing of the settings: it does not give the state, but a failed
    // one fails the host.
    let fabric_run = winners.remove(&(Phase::Fabric, false));
    winners.remove(&(Phase::Fabric, true));
    let Evidence {
        latest,
        state,
        changes,
        checking,
    } = evidence(&mut winners);
    let fabric_run_summary = fabric_run.as_ref().map(run_of);
    let fabric_checks = fabric_run
        .as_ref()
        .map(|i| i.result.checks.clone())
        .unwrap_or_default();
    let (mut fabric, fabric_failures) = fabric_ports(fabric_run, planned_host);
    let state = if fabric_failures.is_empty() {
        state
    } else {
        State::Failed
    };
    let (mut failures, mut warnings, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    // Summarised before its checks move out.
    let latest_run = latest.as_ref().map(run_of);
    let gpu = latest.as_ref().and_then(|i| gpu::host(&i.result));
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
    failures.extend(fabric_failures);
    let ok = !is_stale && ready(state, require);
    let change_lines = attention::change_lines(&changes);
    let what = if state == State::Drifted {
        "drifted"
    } else {
        "to change"
    };
    let changes_size = attention::changes_size(&changes, what);
    let nics: BTreeMap<String, NicHealth> = latest
        .as_mut()
        .map(|i| std::mem::take(&mut i.result.facts.health))
        .unwrap_or_default();
    let pcie = nics
        .iter()
        .filter_map(|(nic, n)| Some((nic.clone(), pcie_speeds(n)?)))
        .collect();
    // A fabric run without LLDP (no lldpcli at that time) names the neighbour the latest run saw.
    for f in fabric.iter_mut().filter(|f| f.lldp_switch.is_none()) {
        f.lldp_switch = nics.get(&f.nic).and_then(neighbor_port);
    }
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
        change_lines,
        changes_size,
        nics,
        pcie,
        nic_config: per_nic(latest.as_ref(), nic_config),
        netdevs: per_nic(latest.as_ref(), |f| Some(f.get("netdev")?.to_string())),
        fabric,
        fabric_run: fabric_run_summary,
        nccl: gpu::nccl(&fabric_checks),
        fabric_checks,
        gpu,
        host: name,
    }
}

/// The fabric matrix's rows of a host's newest fabric result, in plan order where the plan has
/// the port, and its checks that failed (a run that failed without a port's check, such as a
/// missing ib_write_bw, fails with its own checks).
fn fabric_ports(run: Option<Item>, planned: Option<&PlannedHost>) -> (Vec<FabricPort>, Vec<Check>) {
    let Some(item) = run else {
        return (Vec::new(), Vec::new());
    };
    let r = &item.result;
    let failures: Vec<Check> = r
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .cloned()
        .collect();
    let mut nics: Vec<String> = Vec::new();
    for c in &r.checks {
        let nic = c
            .nic
            .as_ref()
            .filter(|_| c.id.as_str().starts_with("fabric_"));
        if let Some(nic) = nic.filter(|n| !nics.iter().any(|m| m == n.as_str())) {
            nics.push(nic.as_str().to_string());
        }
    }
    let planned_port = |nic: &str| planned.and_then(|h| h.ports.iter().find(|p| p.ib_dev == nic));
    let order = |nic: &String| {
        planned
            .and_then(|h| h.ports.iter().position(|p| &p.ib_dev == nic))
            .unwrap_or(usize::MAX)
    };
    nics.sort_by_key(order);
    let rows = nics
        .into_iter()
        .map(|nic| {
            let of = |id: &str| {
                r.checks.iter().find(|c| {
                    c.id.as_str() == id && c.nic.as_ref().is_some_and(|n| n.as_str() == nic)
                })
            };
            let status = |id: &str| of(id).map(|c| c.status);
            let mine: Vec<&Check> = r
                .checks
                .iter()
                .filter(|c| {
                    c.id.as_str().starts_with("fabric_")
                        && c.nic.as_ref().is_some_and(|n| n.as_str() == nic)
                })
                .collect();
            let worst = if mine.iter().any(|c| c.status == Status::Fail) {
                Status::Fail
            } else if mine.iter().any(|c| c.status == Status::Warn) {
                Status::Warn
            } else if mine.iter().all(|c| c.status == Status::Skip) {
                Status::Skip
            } else {
                Status::Pass
            };
            let health = r.facts.health.get(&nic);
            let lldp = health.and_then(neighbor_port);
            let planned_port = planned_port(&nic);
            let rate = of("fabric_bw")
                .map(|c| c.actual.as_str().to_string())
                .unwrap_or_default();
            FabricPort {
                rail: planned_port.map(|p| p.rail.clone()),
                plan_switch: planned_port.and_then(|p| p.switch.clone()),
                lldp_switch: lldp,
                status: worst,
                to: of("fabric_peer").and_then(|c| {
                    let t = c.expected.as_str().strip_prefix("sends to ")?;
                    Some(t.split_once(' ')?.0.to_string())
                }),
                peers: of("fabric_peer")
                    .map(|c| c.expected.as_str().to_string())
                    .unwrap_or_default(),
                // fabric_bw's reading is `388.00 Gb/s` (lib-fabric.sh).
                gbps: rate
                    .strip_suffix(" Gb/s")
                    .and_then(|n| n.trim().parse::<f64>().ok())
                    .filter(|n| n.is_finite() && *n >= 0.0),
                link_gbps: health
                    .and_then(|h| h.speed_mbps)
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(|s| s / 1000.0),
                to_nic: None,
                to_plan_switch: None,
                rate,
                peer: status("fabric_peer"),
                bw: status("fabric_bw"),
                priority: status("fabric_priority"),
                loss: status("fabric_loss"),
                congestion: status("fabric_congestion"),
                memory: status("fabric_memory"),
                memory_used: of("fabric_memory")
                    .map(|c| c.actual.as_str().to_string())
                    .filter(|a| !a.is_empty()),
                problems: mine
                    .iter()
                    .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
                    .map(|c| c.message.as_str().to_string())
                    .collect(),
                nic,
            }
        })
        .collect();
    (rows, failures)
}

/// `leaf-1 Eth1/2`: the switch and port LLDP saw on a NIC.
fn neighbor_port(h: &NicHealth) -> Option<String> {
    h.neighbor
        .as_ref()
        .map(|n| format!("{} {}", n.switch, n.port).trim().to_string())
}

/// Each fabric port's successor from the plan: the device and switch port of the next host's
/// port on its rail, also when that host sent no result.
fn fabric_peers(plan: Option<&PlanView>, hosts: &mut [HostReport]) {
    let Some(plan) = plan else { return };
    for f in hosts.iter_mut().flat_map(|h| h.fabric.iter_mut()) {
        let (Some(to), Some(rail)) = (f.to.as_deref(), f.rail.as_deref()) else {
            continue;
        };
        let port = plan
            .hosts
            .iter()
            .find(|h| h.name == to)
            .and_then(|h| h.ports.iter().find(|p| p.rail == rail));
        if let Some(port) = port {
            f.to_nic = Some(port.ib_dev.clone());
            f.to_plan_switch.clone_from(&port.switch);
        }
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
///
/// A rollback's dry run says what a rollback would restore, nothing about the plan: it gives the
/// state only when the host has no other result (a rolled-back host stays rolled back).
fn evidence(winners: &mut BTreeMap<RunKey, Item>) -> Evidence {
    let order = |((phase, dry), item): (&RunKey, &Item)| (item.result.finished_at, *phase, !*dry);
    let says_of_plan = |(phase, dry): &RunKey| !(*dry && *phase == Phase::Rollback);
    let Some(key) = winners
        .iter()
        .max_by_key(|e| (says_of_plan(e.0), order(*e)))
        .map(|(k, _)| *k)
    else {
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

/// What `of` finds in the facts of each NIC of the latest result, by device; NICs where it
/// finds nothing left out.
fn per_nic<T>(latest: Option<&Item>, of: impl Fn(&NicFacts) -> Option<T>) -> BTreeMap<String, T> {
    latest
        .map(|i| {
            i.result
                .facts
                .nics
                .iter()
                .filter_map(|(dev, f)| Some((dev.clone(), of(f)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The configuration a NIC's facts record; `None` when they record none of it.
fn nic_config(facts: &NicFacts) -> Option<NicConfig> {
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

/// A NIC's PCIe speeds as numbers; `None` when it has neither.
fn pcie_speeds(n: &NicHealth) -> Option<PcieSpeeds> {
    let speeds = PcieSpeeds {
        gts: n.pcie_speed.as_deref().and_then(pcie_gts),
        max_gts: n.pcie_max_speed.as_deref().and_then(pcie_gts),
    };
    (speeds != PcieSpeeds::default()).then_some(speeds)
}

/// Whether a host in this state is ready under the requirement.
fn ready(state: State, require: Require) -> bool {
    match state {
        State::Configured => true,
        State::Prechecked => require == Require::Prechecked,
        _ => false,
    }
}

/// A check of a precheck or dry run that says apply would change a setting: a `warn` whose kind
/// is `setting` or `action` (what the script recorded it as: a value apply sets, or a host-wide
/// change). A warning of kind `check` is about a value apply does not set (DCBX under
/// `dcbx = check`, a cable length the firmware's buffers ignore): a warning, never a change or
/// drift. A result of an older bundle has no kinds: there, a `warn` on a setting (the ids of
/// `RG_SETTINGS` in the bundle's `lib-settings.sh`, and those of plan format v1.1) or on
/// persistence (a dry run's "would install"), except a `persistence` warning that expects
/// [`SURVIVES_A_REBOOT`] (the root does not survive a reboot, which no apply changes).
pub(crate) fn is_change(c: &Check) -> bool {
    if c.status != Status::Warn {
        return false;
    }
    match c.kind.as_deref() {
        Some(kind) => kind == "setting" || kind == "action",
        None => {
            is_setting(&c.id) && !(&*c.id == "persistence" && &*c.expected == SURVIVES_A_REBOOT)
        }
    }
}

/// What the scripts' `persistence` warning expects on a root that does not survive a reboot
/// (lib-checks.sh `rg_check_volatile`, `rg_persist_volatile`).
pub(crate) const SURVIVES_A_REBOOT: &str = "survives a reboot";

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
        name: run_kind_name((r.phase, r.dry_run)),
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
        if h.reboot_required() {
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
    use super::{SURVIVES_A_REBOOT, is_change, is_setting};
    use crate::ingest::result::{Check, CheckData, Status};

    fn warn(id: &str, expected: &str) -> Check {
        Check::new(CheckData {
            id: id.into(),
            nic: None,
            kind: None,
            status: Status::Warn,
            severity: "warning".into(),
            expected: expected.into(),
            actual: "/: tmpfs".into(),
            message: "".into(),
        })
    }

    /// A dry run's "would install" is a change apply makes; a root that does not survive a
    /// reboot is a warning no apply clears, and so is a netdev found under another name.
    #[test]
    fn a_volatile_root_and_a_renamed_netdev_are_warnings_to_act_on_not_changes() {
        assert!(is_change(&warn("persistence", "installed")));
        assert!(!is_change(&warn("persistence", SURVIVES_A_REBOOT)));
        assert!(!is_change(&warn("netdev", "ens1f0np0")));
    }

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
