//! The cluster report's types: what a host's state is, what each host, run and count says, and
//! the groups and notes beside them. This is the contract between the verdict, which makes the
//! report ([`crate::ingest::verdict`]), and the formats, which read nothing else
//! ([`crate::ingest::render`]). The report is `Serialize`: `--format json` writes it as it is;
//! fields marked `serde(skip)` are for the other formats: what they would otherwise derive
//! (a host's changes as lines, a run's name, PCIe speeds as numbers), made once by the verdict.

use std::collections::BTreeMap;

use serde::Serialize;

// The parts of the report made where they are made, named here too: the formats read the
// report alone.
pub(crate) use crate::ingest::attention::{Group, Kind};
pub(crate) use crate::ingest::consistency::{FactGroup, FactValue};
pub(crate) use crate::ingest::intake::FileNote;
pub(crate) use crate::ingest::result::{Check, Counts, GpuPair, NicHealth, Phase, Status};

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
    pub attention: Vec<Group>,
    /// Facts that should agree across the hosts, and how they differ.
    pub consistency: Vec<FactGroup>,
    /// Files that could not be read as results: counted, and they fail the verdict.
    pub problems: Vec<FileNote>,
    /// Files that are not results (other JSON, other archive formats).
    pub skipped: Vec<FileNote>,
    /// Results not used: older ones, stale ones beside current ones, copies.
    pub superseded: Vec<FileNote>,
    /// The fabric matrix (rail × host) every format shows; absent when no host has a fabric
    /// result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricMatrix>,
    /// The GPU path across the hosts that record one (each host's is in its report); absent
    /// when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuTotals>,
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
    /// The changes as text, one line per setting (`trust: 8 ports pcp → dscp`).
    #[serde(skip)]
    pub change_lines: Vec<String>,
    /// How many changes on how many ports: `7 settings to change on 8 ports, 1 host-wide
    /// change` (`drifted` instead of `to change` for a drifted host); empty without changes.
    #[serde(skip)]
    pub changes_size: String,
    /// Per NIC (`ib_dev`), the monitoring facts of the latest result: transceiver, link, PCIe,
    /// counters and LLDP neighbour. Absent when the result records none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nics: BTreeMap<String, NicHealth>,
    /// Per NIC of `nics`, its PCIe speeds as numbers.
    #[serde(skip)]
    pub pcie: BTreeMap<String, PcieSpeeds>,
    /// Per NIC (`ib_dev`), what the latest result records of its RoCE configuration besides
    /// the checks: the DCBX owner, the RoCE v2 GID index of the planned address, the NV values.
    /// Absent when the result records none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nic_config: BTreeMap<String, NicConfig>,
    /// Per NIC (`ib_dev`), the netdev the latest result names, for labels.
    #[serde(skip)]
    pub netdevs: BTreeMap<String, String>,
    /// The fabric test's newest result, port by port (the fabric matrix); empty without one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fabric: Vec<FabricPort>,
    /// That result, summarised (JUnit times the fabric cases by it).
    #[serde(skip)]
    pub fabric_run: Option<Run>,
    /// Every check of that result (JUnit lists them as cases).
    #[serde(skip)]
    pub fabric_checks: Vec<Check>,
    /// The GPU path its latest result records: what NCCL will do with its planned GPUs and
    /// ports; absent where the plan names no GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuHost>,
    /// The NCCL self-test of its newest fabric result; absent where it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclRun>,
}

/// A host's NCCL self-test (the fabric result's `nccl_gdr` and `nccl_busbw`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NcclRun {
    /// Per planned HCA: NCCL's GPUDirect word (`Enabled`, `Disabled`, `unused`) and the check's
    /// status; empty where the test did not run.
    pub gdr: Vec<NcclHca>,
    /// `nccl_busbw`: its status, the bus bandwidth (GB/s) and the mark it was held to.
    pub busbw_check: Option<Status>,
    pub busbw: String,
    pub mark: String,
    /// The messages of its checks that did not pass (a skip's reason included).
    pub problems: Vec<String>,
}

/// One HCA in the NCCL self-test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NcclHca {
    pub nic: String,
    pub gdr: String,
    pub status: Status,
}

// The GPU path, made by `crate::ingest::gpu`.

/// A host's GPU path (plan format 1.3), from its latest result's `facts.gpu_path` and checks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GpuHost {
    /// The NCCL version judged by, and where it came from (the plan's, the host's library).
    pub nccl_version: String,
    pub nccl_version_from: String,
    /// How NCCL reaches GPU memory: `peermem`, `dmabuf` or `none` (no GPUDirect RDMA).
    pub route: String,
    /// The GPU driver's and `nvidia_peermem`'s versions; empty where not loaded.
    pub driver: String,
    pub peermem: String,
    /// `gpu_direct`'s status: whether NCCL will use GPUDirect RDMA.
    pub gpu_direct: Option<Status>,
    /// `iommu`'s status: the DMA mode of the planned devices.
    pub iommu: Option<Status>,
    /// The worst status of its GPU path checks.
    pub status: Status,
    /// Its planned pairs, in plan order.
    pub pairs: Vec<GpuPairRow>,
}

/// One planned GPU↔port pair with the checks of its port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GpuPairRow {
    /// As the result records it.
    #[serde(flatten)]
    pub pair: GpuPair,
    /// `acs`: `off`, `on at BRIDGE, …`, or `unknown` (configuration space read short).
    pub acs: String,
    /// The worst status of the port's GPU path checks.
    pub status: Status,
    /// `gpu_pair`, `pcie_acs`, `pcie_link`, `pcie_mrrs`: each check's status.
    pub relation_check: Option<Status>,
    pub acs_check: Option<Status>,
    pub link_check: Option<Status>,
    pub mrrs_check: Option<Status>,
}

/// The GPU path across the hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct GpuTotals {
    /// Counted hosts that record a GPU path, and how many of them NCCL will use GPUDirect RDMA on.
    pub hosts: usize,
    pub gpu_direct: usize,
    /// Their pairs, and how many passed, warned and failed (a pair's status is its port's).
    pub pairs: usize,
    pub passed: usize,
    pub warned: usize,
    pub failed: usize,
    pub skipped: usize,
    /// The counted hosts where NCCL will run without GPUDirect RDMA.
    pub without_gpu_direct: Vec<String>,
}

/// One port's row of the fabric matrix, from the host's newest `fabric` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricPort {
    /// The planned RDMA device.
    pub nic: String,
    /// Its rail, from the plan.
    pub rail: Option<String>,
    /// The worst status of its fabric checks.
    pub status: Status,
    /// What it sends to and serves (`fabric_peer`'s expectation).
    pub peers: String,
    /// The host it sends to (the ring's next port on its rail).
    pub to: Option<String>,
    /// The measured rate (`fabric_bw`'s reading), empty when no traffic ran.
    pub rate: String,
    /// The same in Gb/s, when it reads as a number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
    /// The port's negotiated link speed in Gb/s, as the fabric run read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_gbps: Option<f64>,
    /// The RDMA device of the port it sends to, from the plan (the next host's port on its rail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_nic: Option<String>,
    /// That port's switch port, from the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_plan_switch: Option<String>,
    /// `fabric_peer`, `fabric_bw`, `fabric_priority`, `fabric_loss`, `fabric_congestion`: each
    /// check's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<Status>,
    pub bw: Option<Status>,
    pub priority: Option<Status>,
    pub loss: Option<Status>,
    pub congestion: Option<Status>,
    /// `fabric_memory`'s status, and the memory its flows moved on this host (`GPU 0
    /// (0000:18:00.0)` or `host`); absent where the plan names no GPU for the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used: Option<String>,
    /// The switch port the plan cables it to.
    pub plan_switch: Option<String>,
    /// The switch port LLDP saw on it (the fabric result's, else the latest result's).
    pub lldp_switch: Option<String>,
    /// The messages of its fabric checks that did not pass: they name both ends.
    pub problems: Vec<String>,
}

impl FabricPort {
    /// Its rail, and without a plan its device: the row of the matrix it is in.
    pub(crate) fn rail_key(&self) -> String {
        match &self.rail {
            Some(rail) => rail.clone(),
            None => format!("{} (not planned)", self.nic),
        }
    }
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

impl HostReport {
    /// Counted in the verdict: planned, or any host without a plan.
    pub(crate) fn counted(&self) -> bool {
        self.planned != Some(false)
    }

    /// Its latest result says a firmware value waits for the next boot.
    pub(crate) fn reboot_required(&self) -> bool {
        self.latest.as_ref().is_some_and(|r| r.reboot_required)
    }
}

/// A NIC's PCIe link speeds in GT/s per lane, from sysfs's wording (`16.0 GT/s PCIe`); `None`
/// when the result gives none, or not as a number.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PcieSpeeds {
    /// The current speed.
    pub gts: Option<f64>,
    /// The fastest the device supports.
    pub max_gts: Option<f64>,
}

/// One result, summarised.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    /// The script.
    pub phase: Phase,
    /// `apply.sh --dry-run`.
    pub dry_run: bool,
    /// Its run kind as people read it: `precheck`, `apply (dry run)`.
    #[serde(skip)]
    pub name: String,
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

// The fabric matrix, made by `crate::ingest::fabric`.

/// Rails × hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricMatrix {
    /// The hosts with a fabric result, in the report's (name) order: the matrix's hosts.
    pub hosts: Vec<String>,
    /// One row per rail, in rail order (rail numbers by value).
    pub rails: Vec<FabricRail>,
    /// The links a port failed on, in rail and host order.
    pub links: Vec<FabricLink>,
    /// Counted hosts without a fabric result (the test did not run there, or its result is
    /// missing).
    pub not_run: Vec<String>,
    /// Ports in the matrix, and how many of them passed, warned, failed and were skipped (a rail
    /// with one port has no pair).
    pub ports: usize,
    pub passed: usize,
    pub warned: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// One rail's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricRail {
    /// The plan's rail (its number, else the subnet); without a plan, the device and
    /// `(not planned)`.
    pub rail: String,
    /// Per host of [`FabricMatrix::hosts`], its ports on the rail: usually one, none when the
    /// host has no port there.
    pub cells: Vec<Vec<FabricCell>>,
}

/// One port of one host on a rail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricCell {
    pub host: String,
    /// The RDMA device.
    pub nic: String,
    /// The worst status of its fabric checks.
    pub status: Status,
    /// The measured rate as the result gives it (`388.00 Gb/s`); empty when no traffic ran.
    pub rate: String,
    /// The rate in Gb/s, and the link's negotiated speed, when known.
    pub gbps: Option<f64>,
    pub link_gbps: Option<f64>,
    /// The rate in percent of the link speed, rounded down.
    pub pct: Option<u64>,
    /// Each fabric check's status: the peer reached, the rate, the priority proof, loss,
    /// congestion (the incast step).
    pub peer: Option<Status>,
    pub bw: Option<Status>,
    pub priority: Option<Status>,
    pub loss: Option<Status>,
    pub congestion: Option<Status>,
    /// `fabric_memory`'s status and the memory the flows moved (`GPU 0 (0000:18:00.0)`, `host`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used: Option<String>,
    /// The host it sends to.
    pub to: Option<String>,
    /// Its switch port from the plan and from LLDP.
    pub plan_switch: Option<String>,
    pub lldp_switch: Option<String>,
    /// Its failed link, an index into [`FabricMatrix::links`].
    pub link: Option<usize>,
    /// A port that warned and did not fail: its warnings' messages (such as an incast step
    /// whose senders did not overlap), so the report says why; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A port that failed and the link it sends on: from it to the next host's port on its rail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricLink {
    pub rail: String,
    /// The port that failed.
    pub from: FabricEnd,
    /// The port it sends to; `None` when the result names no peer.
    pub to: Option<FabricEnd>,
    /// The fabric checks that failed on it (`fabric_bw`, …).
    pub failed: Vec<&'static str>,
    /// Whom it sends to and serves, as the result says (`sends to h1 (10.10.0.11, TCP 18515),
    /// serves h2 (10.10.0.12)`).
    pub peers: String,
    /// The messages of its checks that did not pass.
    pub problems: Vec<String>,
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricEnd {
    pub host: String,
    /// Its RDMA device; `None` when the plan does not say (a peer without a plan).
    pub nic: Option<String>,
    /// The switch port the plan cables it to.
    pub plan_switch: Option<String>,
    /// The switch port LLDP saw on it; `None` when not seen or the host sent no result.
    pub lldp_switch: Option<String>,
}

impl FabricEnd {
    /// `h1 mlx5_0`, or `h1` without a device.
    pub(crate) fn name(&self) -> String {
        match &self.nic {
            Some(nic) => format!("{} {nic}", self.host),
            None => self.host.clone(),
        }
    }

    /// `plan leaf-1 Eth1/2, LLDP not seen`.
    pub(crate) fn switch_ports(&self) -> String {
        format!(
            "plan {}, LLDP {}",
            self.plan_switch.as_deref().unwrap_or("not planned"),
            self.lldp_switch.as_deref().unwrap_or("not seen")
        )
    }
}

/// The fabric checks of a port, in the order the formats show them.
pub(crate) const FABRIC_CHECKS: [&str; 5] = [
    "fabric_peer",
    "fabric_bw",
    "fabric_priority",
    "fabric_loss",
    "fabric_congestion",
];

impl FabricCell {
    /// Each check of [`FABRIC_CHECKS`] with its status.
    pub(crate) fn statuses(&self) -> [(&'static str, Option<Status>); 5] {
        [
            (FABRIC_CHECKS[0], self.peer),
            (FABRIC_CHECKS[1], self.bw),
            (FABRIC_CHECKS[2], self.priority),
            (FABRIC_CHECKS[3], self.loss),
            (FABRIC_CHECKS[4], self.congestion),
        ]
    }
}
