//! The Prometheus series `ingest --format prometheus` exports, by name, and how many one host
//! may have. The names live here because `roce-gen dashboard` queries them too: renaming one
//! breaks dashboards in the field. They follow Prometheus naming (base units, `_info` for a value
//! of 1 with the facts in labels, no type in the name). A host has at most [`SERIES_PER_HOST`] +
//! [`SERIES_PER_NIC`] × its NICs + one per check that warned or failed series, whatever its
//! result says: results are untrusted, and a collector scraping thousands of hosts must not be
//! flooded by one odd file.

use crate::ingest::consistency;
use crate::ingest::report::State;
use crate::ingest::result::Status;

/// `roce_gen_ok`: 1 when every planned host passed and every file was readable.
pub(crate) const OK: &str = "roce_gen_ok";
/// `roce_gen_hosts{status}`: hosts by status.
pub(crate) const HOSTS: &str = "roce_gen_hosts";
/// `roce_gen_ingest_files{outcome}`: files ingest read, by what became of them.
pub(crate) const INGEST_FILES: &str = "roce_gen_ingest_files";
/// `roce_gen_host_ok`: 1 when the host passed.
pub(crate) const HOST_OK: &str = "roce_gen_host_ok";
/// `roce_gen_host_planned`: 1 when the plan has the host (only with a plan).
pub(crate) const HOST_PLANNED: &str = "roce_gen_host_planned";
/// `roce_gen_host_stale`: 1 when the host's results are all from another plan (only with a plan).
pub(crate) const HOST_STALE: &str = "roce_gen_host_stale";
/// `roce_gen_host_state{state}`: 1 for the host's state, 0 for the others.
pub(crate) const HOST_STATE: &str = "roce_gen_host_state";
/// `roce_gen_host_checks{status}`: the checks of the host's latest result, by status.
pub(crate) const HOST_CHECKS: &str = "roce_gen_host_checks";
/// `roce_gen_host_result_timestamp_seconds{phase}`: when the latest result was written.
pub(crate) const HOST_RESULT_TIMESTAMP: &str = "roce_gen_host_result_timestamp_seconds";
/// `roce_gen_host_reboot_required`: 1 when a firmware (NV) value the host's latest result read
/// or set takes effect only at the next boot.
pub(crate) const HOST_REBOOT_REQUIRED: &str = "roce_gen_host_reboot_required";
/// `roce_gen_check_status{check,nic,netdev}`: 3 warn, 4 fail, for the checks that warned or
/// failed; the others have no series (`roce_gen_host_checks` counts them).
pub(crate) const CHECK_STATUS: &str = "roce_gen_check_status";
/// `roce_gen_fact_hosts{fact,scope,value}`: hosts with each value of a compared fact.
pub(crate) const FACT_HOSTS: &str = "roce_gen_fact_hosts";
/// `roce_gen_fact_outlier{host,fact,scope,value}`: 1 for a host that differs from most.
pub(crate) const FACT_OUTLIER: &str = "roce_gen_fact_outlier";
/// `roce_gen_fact_matches_plan{fact,scope,planned,value}`: 1 when most hosts' value of a fact
/// is the planned one, 0 when it is another (also when every host has it); only for the facts
/// the plan names.
pub(crate) const FACT_MATCHES_PLAN: &str = "roce_gen_fact_matches_plan";
/// `roce_gen_nic_module_temperature_celsius`.
pub(crate) const MODULE_TEMPERATURE: &str = "roce_gen_nic_module_temperature_celsius";
/// `roce_gen_nic_module_tx_power_dbm{lane}`: dBm, as optics are specified and their alarm
/// thresholds given; a logarithmic unit with no base-unit form that reads the same.
pub(crate) const MODULE_TX_POWER: &str = "roce_gen_nic_module_tx_power_dbm";
/// `roce_gen_nic_module_rx_power_dbm{lane}`.
pub(crate) const MODULE_RX_POWER: &str = "roce_gen_nic_module_rx_power_dbm";
/// `roce_gen_nic_module_info{vendor,part_number}`: always 1.
pub(crate) const MODULE_INFO: &str = "roce_gen_nic_module_info";
/// `roce_gen_nic_link_speed_bytes_per_second`.
pub(crate) const LINK_SPEED: &str = "roce_gen_nic_link_speed_bytes_per_second";
/// `roce_gen_nic_link_max_speed_bytes_per_second`.
pub(crate) const LINK_MAX_SPEED: &str = "roce_gen_nic_link_max_speed_bytes_per_second";
/// `roce_gen_nic_link_width`: lanes.
pub(crate) const LINK_WIDTH: &str = "roce_gen_nic_link_width";
/// `roce_gen_nic_pcie_speed_transfers_per_second`.
pub(crate) const PCIE_SPEED: &str = "roce_gen_nic_pcie_speed_transfers_per_second";
/// `roce_gen_nic_pcie_max_speed_transfers_per_second`.
pub(crate) const PCIE_MAX_SPEED: &str = "roce_gen_nic_pcie_max_speed_transfers_per_second";
/// `roce_gen_nic_pcie_width`: lanes.
pub(crate) const PCIE_WIDTH: &str = "roce_gen_nic_pcie_width";
/// `roce_gen_nic_pcie_max_width`: lanes.
pub(crate) const PCIE_MAX_WIDTH: &str = "roce_gen_nic_pcie_max_width";
/// `roce_gen_nic_events{counter}`: a NIC counter's value when the run read it.
pub(crate) const NIC_EVENTS: &str = "roce_gen_nic_events";
/// `roce_gen_nic_gid_index`: the index of the RoCE v2 GID that carries the planned address
/// (what `NCCL_IB_GID_INDEX` must be).
pub(crate) const GID_INDEX: &str = "roce_gen_nic_gid_index";
/// `roce_gen_nic_neighbor_info{switch,port,source}`: always 1.
pub(crate) const NEIGHBOR_INFO: &str = "roce_gen_nic_neighbor_info";

/// `roce_gen_fabric_rate_bytes_per_second{rail,peer}`: the rate the fabric test measured from
/// a port to the next host's port on its rail.
pub(crate) const FABRIC_RATE: &str = "roce_gen_fabric_rate_bytes_per_second";
/// `roce_gen_fabric_rate_ratio{rail,peer}`: that rate over the port's link speed.
pub(crate) const FABRIC_RATE_RATIO: &str = "roce_gen_fabric_rate_ratio";
/// `roce_gen_fabric_port_ok{rail,peer}`: 1 when none of the port's fabric checks failed.
pub(crate) const FABRIC_PORT_OK: &str = "roce_gen_fabric_port_ok";
/// `roce_gen_fabric_check_status{rail,check}`: each fabric check of a port, 0 pass, 2 skip, 3
/// warn, 4 fail (the codes of `roce_gen_check_status`).
pub(crate) const FABRIC_CHECK_STATUS: &str = "roce_gen_fabric_check_status";

/// The most series one port of a host's fabric result adds: its rate, the rate's share of the
/// link, whether it passed, and a status per fabric check.
pub const SERIES_PER_FABRIC_PORT: usize = 3 + crate::ingest::report::FABRIC_CHECKS.len();

/// The most ports of one host's fabric result exported: a result that names more is odd.
pub const MAX_FABRIC_PORTS: usize = 16;

/// Check statuses, as `roce_gen_host_checks` labels them.
pub(crate) const STATUSES: [Status; 5] = [
    Status::Pass,
    Status::Warn,
    Status::Fail,
    Status::Skip,
    Status::Changed,
];

/// Lanes exported per direction: QSFP-DD and OSFP modules have 8; a result listing more is odd.
pub(crate) const MAX_LANES: usize = 8;

/// The NIC counters the bundles record (`RG_HW_COUNTERS` of `lib-probe.sh`, and the global pause
/// counters of `ethtool -S`); with `{rx,tx}_prio<0-7>_pause` the only ones exported, so a result
/// cannot add label values at will.
pub(crate) const COUNTERS: [&str; 9] = [
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "roce_adp_retrans",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "rp_cnp_handled",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
];

/// `roce_gen_gpu_direct{route}`: 1 when NCCL will use GPUDirect RDMA on the host (the peer-memory
/// module or DMA-BUF), 0 when it will stage GPU memory through host memory; only for hosts whose
/// plan names GPUs.
pub(crate) const GPU_DIRECT: &str = "roce_gen_gpu_direct";
/// `roce_gen_gpu_port_status{nic,netdev,gpus,relation}`: the worst of a planned port's GPU path
/// checks (`gpu_pair`, `pcie_acs`, `pcie_link`, `pcie_mrrs`), 0 pass, 2 skip, 3 warn, 4 fail.
pub(crate) const GPU_PORT_STATUS: &str = "roce_gen_gpu_port_status";

/// Priorities of the per-priority pause counters.
pub(crate) const PRIORITIES: usize = 8;

/// The most counters one NIC exports.
pub(crate) const MAX_COUNTERS: usize = COUNTERS.len() + 2 * PRIORITIES;

/// Host-wide facts the consistency section compares (OFED, kernel, tool version, plan, and the
/// GPU path's); each gives a host at most one outlier series.
pub(crate) const HOST_FACTS: usize = 4 + consistency::GPU_HOST_FACTS.len();

/// The most series one host has, NIC facts and check series aside: `host_ok`, `host_planned`,
/// `host_stale`, one `host_state` per state, one `host_checks` per check status, the result
/// time, `host_reboot_required`, `gpu_direct`, and a `fact_outlier` per host-wide fact and per
/// NIC fact compared (settings, DCQCN parameters, DCBX owner, GID index, NV values, GPU relation).
pub const SERIES_PER_HOST: usize =
    3 + State::ALL.len() + STATUSES.len() + 3 + HOST_FACTS + consistency::PER_NIC;

/// The most series one NIC adds: temperature, TX and RX power per lane, module info, link speed,
/// maximum speed and width, PCIe speed, maximum speed, width and maximum width, the counters,
/// the neighbour, the GID index, a firmware `fact_outlier` (a NIC model is one firmware group),
/// and its GPU path's status.
pub const SERIES_PER_NIC: usize = 1 + 2 * MAX_LANES + 1 + 3 + 4 + MAX_COUNTERS + 1 + 1 + 1 + 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::result::{Parsed, parse};

    #[test]
    fn the_facts_compared_are_those_the_bound_counts() {
        let result = br#"{"schema": "roce-gen/result/v1", "host": "h", "phase": "precheck",
            "finished_at": "2026-11-30T08:00:00Z", "status": "pass", "tool_version": "1",
            "plan_sha256": "ab", "checks": [
                {"id": "mtu", "nic": "mlx5_0", "status": "pass", "actual": "4200"},
                {"id": "trust", "nic": "mlx5_0", "status": "warn", "actual": "pcp"},
                {"id": "dcqcn_rpg_ai_rate", "nic": "mlx5_0", "status": "pass", "actual": "5"},
                {"id": "dcqcn_made_up", "nic": "mlx5_0", "status": "pass", "actual": "5"}],
            "facts": {"kernel": "6.1", "ofed": "24.10", "nics": {"mlx5_0": {"fw_ver": "28.1",
                "dcbx": "os", "gid_index": 3, "fw_CNP_DSCP_P1": "48", "fw_MADE_UP_P1": "1"}},
                "gpu_path": {"nccl_version": "2.23.4", "route": "peermem", "driver": "550",
                    "made_up": "1", "pairs": [{"nic": "mlx5_0", "relation": "PIX"}]}}}"#;
        let Parsed::Result(r) = parse(result) else {
            panic!("not a result");
        };
        let groups = consistency::groups(&[("h".to_string(), *r)], true);
        let host_wide = groups.iter().filter(|g| g.per == "host").count();
        assert_eq!(host_wide, HOST_FACTS, "{groups:?}");
        for g in groups.iter().filter(|g| g.per == "nic") {
            assert!(
                g.fact == "firmware"
                    || consistency::SETTINGS.contains(&g.fact.as_str())
                    || consistency::DCQCN.contains(&g.fact.as_str())
                    || consistency::NIC_FACTS.contains(&g.fact.as_str())
                    || g.fact == consistency::GPU_NIC_FACT,
                "{} is compared per NIC but not counted",
                g.fact
            );
        }
        let nic_facts: Vec<&str> = groups
            .iter()
            .filter(|g| g.per == "nic")
            .map(|g| g.fact.as_str())
            .collect();
        assert_eq!(
            nic_facts,
            [
                "firmware",
                "mtu",
                "trust",
                "dcqcn_rpg_ai_rate",
                "dcbx",
                "gid_index",
                "fw_CNP_DSCP_P1",
                "gpu_relation"
            ],
            "names a result makes up are not compared"
        );
    }
}
