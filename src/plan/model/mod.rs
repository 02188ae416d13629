//! The validated cluster plan: what the scripts enforce. Nothing here can hold a value that the
//! plan format (`docs/plan-format.md`) forbids, because every field is a checked type; no calamine
//! or JSON reader type appears here. Serialized, this is the normalized JSON that `roce-gen plan`
//! prints.

mod gpu;
mod names;
mod net;
mod phases;
mod qos;

use std::net::IpAddr;

use ipnet::IpNet;
use serde::Serialize;

pub(crate) use gpu::{BusBw, Distance, Gpu, GpuDirect, GpuPath, Gpus, PcieAcs, parse_mrrs};
pub(crate) use names::{ClusterName, HostName, IbDev, IfName, Label, Version};
pub(crate) use net::{MacAddr, PciAddr, parse_prefix};
pub(crate) use phases::{ArpSysctls, Fabric, Health, TextfileDir};
pub(crate) use qos::{
    DCQCN_PARAMS, Dcbx, Dscp, EcnBits, FirmwareConfig, Mtu, OnOff, Priorities, Priority, RoceMode,
    Tos, Trust, dcqcn_param, parse_bool,
};

/// The v1.1 keys are left out of the normalized plan at their defaults, so that a plan that
/// does not use them keeps the identity it had.
fn is_true(b: &bool) -> bool {
    *b
}

/// DCQCN parameters by file name (`rpg_ai_rate` → value), in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dcqcn(pub std::collections::BTreeMap<&'static str, u32>);

impl Serialize for Dcqcn {
    /// As the `dcqcn_<name>` keys they are read from, so the normalized plan reads back.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(&format!("dcqcn_{name}"), value)?;
        }
        map.end()
    }
}

impl Plan {
    /// The normalized plan as `roce-gen plan` prints it (pretty JSON and a final newline); its
    /// sha256 is the plan's identity.
    pub fn normalized_json(&self) -> anyhow::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// The schema tag of the normalized plan JSON.
pub(crate) const PLAN_SCHEMA: &str = "roce-gen/plan/v1";

/// A whole cluster plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: &'static str,
    /// The global RoCE profile.
    pub cluster: Cluster,
    /// Every host, in plan order.
    pub hosts: Vec<Host>,
}

/// The global RoCE profile (sheet `Cluster`), defaults filled in and `roce_tos` derived.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cluster {
    /// Names the install folder and the unit.
    pub cluster_name: ClusterName,
    /// DSCP or PCP trust.
    pub trust: Trust,
    /// DSCP of RoCE data.
    pub roce_dscp: Dscp,
    /// Priority of RoCE data.
    pub roce_priority: Priority,
    /// ECN bits of the RoCE ToS.
    pub roce_ecn: EcnBits,
    /// `roce_dscp << 2 | roce_ecn`.
    pub roce_tos: Tos,
    /// Lossless priorities; empty turns PFC off.
    pub pfc_priorities: Priorities,
    /// Priorities with ECN (DCQCN); empty turns it off.
    pub ecn_priorities: Priorities,
    /// DSCP of congestion notification packets.
    pub cnp_dscp: Dscp,
    /// Priority of congestion notification packets.
    pub cnp_priority: Priority,
    /// RDMA-CM default RoCE mode.
    pub roce_mode: RoceMode,
    /// Default MTU of every RoCE port.
    pub mtu: Mtu,
    /// 802.3x link pause.
    pub global_pause: OnOff,
    /// Whether apply installs the boot unit.
    pub persistence: bool,
    /// DCBX ownership of the RoCE ports.
    pub dcbx: Dcbx,
    /// Cable length in metres for the lossless-buffer headroom (`mlnx_qos --cable_len`);
    /// `None` leaves the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cable_length: Option<u16>,
    /// DCQCN parameters; in the normalized plan each is its own `dcqcn_<name>` key.
    #[serde(flatten)]
    pub dcqcn: Dcqcn,
    /// Firmware (NV) configuration: report, apply or off.
    #[serde(skip_serializing_if = "FirmwareConfig::is_default")]
    pub firmware_config: FirmwareConfig,
    /// Whether apply writes `nccl.env`.
    #[serde(skip_serializing_if = "is_true")]
    pub nccl_env: bool,
    /// Lowest acceptable OFED/DOCA version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ofed_version: Option<Version>,
    /// Lowest acceptable firmware version (compared within one major).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_fw_version: Option<Version>,
    /// ARP and reverse-path sysctls of the planned netdevs (format v1.2).
    #[serde(skip_serializing_if = "ArpSysctls::is_default")]
    pub arp_sysctls: ArpSysctls,
    /// The fabric test (format v1.2); its `fabric_*` keys.
    #[serde(flatten)]
    pub fabric: Fabric,
    /// Live health (format v1.2); its `health*` and `drift_interval` keys.
    #[serde(flatten)]
    pub health: Health,
    /// The GPU path and NCCL (format v1.3); its `gpu_*`, `pcie_*` and `nccl_*` keys.
    #[serde(flatten)]
    pub gpu_path: GpuPath,
}

/// One server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Host {
    /// Its host name; the bundle and the `hostname` check use it.
    pub hostname: HostName,
    /// Management address.
    pub mgmt_ip: IpAddr,
    /// BMC address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmc_ip: Option<IpAddr>,
    /// Group, role or rack, for reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<Label>,
    /// Its RoCE ports, in plan order.
    pub nics: Vec<Nic>,
}

/// One RoCE port of a server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nic {
    /// RDMA device (`mlx5_0`).
    pub ib_dev: IbDev,
    /// Network interface (`ens1f0np0`).
    pub netdev: IfName,
    /// Address with its prefix length.
    pub ip: IpNet,
    /// Gateway inside the port's subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Effective MTU: the row's override or the cluster MTU.
    pub mtu: Mtu,
    /// Rail (plane) number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rail: Option<u32>,
    /// Expected PCI address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci: Option<PciAddr>,
    /// Expected MAC address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<MacAddr>,
    /// Leaf switch, for reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<Label>,
    /// Leaf switch port, for reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_port: Option<Label>,
    /// The GPUs this port serves (format v1.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpus>,
}

/// Parses an integer written as `4200`, `4200.0` or ` 4200 `; `4200.5` is not one.
pub(crate) fn parse_integer(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return Some(n);
    }
    let f: f64 = s.parse().ok()?;
    integer_from_float(f)
}

/// The integer a float cell holds, when it holds one exactly (Excel stores `4200` as `4200.0`).
pub(crate) fn integer_from_float(f: f64) -> Option<i64> {
    // 2^53: beyond it a float no longer holds every integer, and nothing in a plan is that big.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    #[allow(clippy::cast_possible_truncation)] // integral and below 2^53, so exact
    (f.is_finite() && f.fract() == 0.0 && f.abs() < EXACT).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_from_text_and_floats() {
        assert_eq!(parse_integer("4200"), Some(4200));
        assert_eq!(parse_integer(" 4200.0 "), Some(4200));
        assert_eq!(parse_integer("4200.5"), None);
        assert_eq!(parse_integer("1e3"), Some(1000));
        assert_eq!(parse_integer("NaN"), None);
        assert_eq!(parse_integer("inf"), None);
        assert_eq!(integer_from_float(1e300), None);
    }
}
