//! The plan format v1.3 keys and column of the GPU path: which GPU each RoCE port serves (`gpu`),
//! how the GPUDirect RDMA path is judged (`gpu_direct`, `gpu_nic_distance`), the PCIe settings of
//! the planned paths (`pcie_acs`, `pcie_mrrs`) and NCCL's (`nccl_version`, `nccl_test`,
//! `nccl_min_busbw`). Each key is left out of the normalized plan at its default, so that a plan
//! without them keeps its identity; the defaults of `gpu_direct` and `nccl_test` depend on whether
//! a NIC row names a GPU, and are settled once the rows are read ([`GpuPath::settle`]).

use serde::{Serialize, Serializer};

use super::{PciAddr, Version};

/// One GPU a port serves: its PCI address, or its index in PCI address order among the host's
/// NVIDIA GPUs (vendor 0x10de, display class), which is how `nvidia-smi` numbers them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Gpu {
    /// `0000:18:00.0`, normalized.
    Pci(PciAddr),
    /// 0 to 31.
    Index(u8),
}

impl Gpu {
    /// Parses a PCI address (`0000:18:00.0` or `18:00.0`) or an index 0–31.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            return t
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= 31)
                .map(Self::Index)
                .ok_or_else(|| "is not a GPU index (0 to 31)".to_string());
        }
        PciAddr::parse(t).map(Self::Pci).map_err(|_| {
            "is neither a GPU's PCI address (`0000:18:00.0` or `18:00.0`) nor its index (0 to 31)"
                .to_string()
        })
    }
}

impl std::fmt::Display for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pci(p) => write!(f, "{p}"),
            Self::Index(i) => write!(f, "GPU {i}"),
        }
    }
}

impl Serialize for Gpu {
    /// An address as a string, an index as a number: what the JSON form reads back.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Pci(p) => s.serialize_str(p.as_str()),
            Self::Index(i) => s.serialize_u8(*i),
        }
    }
}

/// The GPUs one port serves, in the order written (two GPUs may share one port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Gpus(pub Vec<Gpu>);

impl Gpus {
    /// Parses one GPU or several separated by commas.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out: Vec<Gpu> = Vec::new();
        for part in s.split([',', '，']) {
            let gpu = Gpu::parse(part).map_err(|why| {
                if s.contains([',', '，']) {
                    format!(
                        "has {} that {why}",
                        crate::plan::diagnostic::quoted(part.trim())
                    )
                } else {
                    why
                }
            })?;
            if out.contains(&gpu) {
                return Err(format!("names {gpu} twice"));
            }
            out.push(gpu);
        }
        Ok(Self(out))
    }
}

/// How the bundles judge the GPUDirect RDMA path of each planned GPU↔port pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuDirect {
    /// Problems are warnings.
    Check,
    /// Problems are failures: the host is not ready.
    Require,
    /// Nothing about GPUs.
    No,
}

impl GpuDirect {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Require => "require",
            Self::No => "no",
        }
    }

    /// Parses `check`, `require` or `no` (also the plan's booleans for `no`).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "check" => Ok(Self::Check),
            "require" | "required" => Ok(Self::Require),
            "no" | "off" | "false" | "关闭" | "禁用" => Ok(Self::No),
            _ => Err("is not a gpu_direct choice (`check`, `require` or `no`)".into()),
        }
    }
}

/// The farthest PCIe relation allowed between a planned GPU and its port, in `nvidia-smi topo -m`'s
/// words, nearest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Distance {
    /// One PCIe switch between them.
    Pix,
    /// Several switches, no host bridge.
    #[default]
    Pxb,
    /// Through a PCIe host bridge.
    Phb,
    /// Across host bridges of one NUMA node.
    Node,
}

impl Distance {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pix => "PIX",
            Self::Pxb => "PXB",
            Self::Phb => "PHB",
            Self::Node => "NODE",
        }
    }

    /// Parses `PIX`, `PXB`, `PHB` or `NODE`, in any case.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PIX" => Ok(Self::Pix),
            "PXB" => Ok(Self::Pxb),
            "PHB" => Ok(Self::Phb),
            "NODE" => Ok(Self::Node),
            "SYS" => Err(
                "is a path across NUMA nodes, where NCCL does not use GPUDirect RDMA: the limit is PIX, PXB, PHB or NODE"
                    .into(),
            ),
            _ => Err("is not a PCIe relation (PIX, PXB, PHB or NODE)".into()),
        }
    }

    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// What apply does with the ACS redirect controls on the bridges between each planned pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PcieAcs {
    /// Reported only.
    #[default]
    Check,
    /// Cleared on exactly those bridges, again at every boot, restored by rollback.
    Disable,
}

impl PcieAcs {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Disable => "disable",
        }
    }

    /// Parses `check` or `disable`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "check" => Ok(Self::Check),
            "disable" | "disabled" | "off" | "关闭" | "禁用" => Ok(Self::Disable),
            _ => Err("is not a pcie_acs choice (`check` or `disable`)".into()),
        }
    }

    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Parses `pcie_mrrs`: a PCIe Max Read Request Size in bytes.
pub(crate) fn parse_mrrs(n: i64) -> Result<u16, String> {
    u16::try_from(n)
        .ok()
        .filter(|v| [128, 256, 512, 1024, 2048, 4096].contains(v))
        .ok_or_else(|| {
            "is not a PCIe Max Read Request Size (128, 256, 512, 1024, 2048 or 4096 bytes)".into()
        })
}

/// `nccl_min_busbw`: GB/s, a positive number, kept as written to two decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BusBw(u32);

impl BusBw {
    /// Parses a positive number of GB/s (at most 100,000).
    pub fn parse(s: &str) -> Result<Self, String> {
        const WHY: &str = "is not a bus bandwidth in GB/s (a positive number up to 100000)";
        let v: f64 = s.trim().parse().map_err(|_| WHY.to_string())?;
        if !(v.is_finite() && v > 0.0 && v <= 100_000.0) {
            return Err(WHY.into());
        }
        // Hundredths: exact in the normalized plan whatever the float's last bits.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
        let hundredths = (v * 100.0).round() as u32;
        if hundredths == 0 {
            return Err(WHY.into());
        }
        Ok(Self(hundredths))
    }

    /// GB/s.
    pub fn gbs(self) -> f64 {
        f64::from(self.0) / 100.0
    }
}

impl Serialize for BusBw {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.gbs())
    }
}

/// The GPU path and NCCL keys of the `Cluster` sheet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuPath {
    /// Given, or settled: `None` where it is the plan's default (check with GPUs, else no).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_direct: Option<GpuDirect>,
    /// The farthest PCIe relation allowed.
    #[serde(skip_serializing_if = "Distance::is_default")]
    pub gpu_nic_distance: Distance,
    /// ACS redirect controls between each planned pair.
    #[serde(skip_serializing_if = "PcieAcs::is_default")]
    pub pcie_acs: PcieAcs,
    /// The Max Read Request Size every planned port gets at least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcie_mrrs: Option<u16>,
    /// The NCCL version the site's jobs use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<Version>,
    /// Given, or settled: `None` where it is the plan's default (yes with GPUs, else no).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_test: Option<bool>,
    /// The NCCL self-test's pass mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_min_busbw: Option<BusBw>,
}

impl GpuPath {
    /// Drops `gpu_direct` and `nccl_test` where they say what the plan says anyway, so that the
    /// normalized plan (and its identity) is the same written or not.
    pub fn settle(&mut self, has_gpu: bool) {
        let direct = if has_gpu {
            GpuDirect::Check
        } else {
            GpuDirect::No
        };
        if self.gpu_direct == Some(direct) {
            self.gpu_direct = None;
        }
        if self.nccl_test == Some(has_gpu) {
            self.nccl_test = None;
        }
    }

    /// `gpu_direct` in force.
    pub fn gpu_direct(&self, has_gpu: bool) -> GpuDirect {
        self.gpu_direct.unwrap_or(if has_gpu {
            GpuDirect::Check
        } else {
            GpuDirect::No
        })
    }

    /// `nccl_test` in force.
    pub fn nccl_test(&self, has_gpu: bool) -> bool {
        self.nccl_test.unwrap_or(has_gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_spelling_is_the_normalized_plans() {
        fn json<T: Serialize>(v: T) -> String {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        }
        for d in [GpuDirect::Check, GpuDirect::Require, GpuDirect::No] {
            assert_eq!(d.as_str(), json(d));
        }
        for d in [Distance::Pix, Distance::Pxb, Distance::Phb, Distance::Node] {
            assert_eq!(d.as_str(), json(d));
        }
        for a in [PcieAcs::Check, PcieAcs::Disable] {
            assert_eq!(a.as_str(), json(a));
        }
    }

    #[test]
    fn a_gpu_is_an_address_or_an_index() {
        assert_eq!(
            Gpu::parse("18:00.0").map(|g| g.to_string()).as_deref(),
            Ok("0000:18:00.0")
        );
        assert_eq!(Gpu::parse(" 7 "), Ok(Gpu::Index(7)));
        assert!(Gpu::parse("32").unwrap_err().contains("0 to 31"));
        assert!(Gpu::parse("GPU0").unwrap_err().contains("neither"));
        assert_eq!(
            Gpus::parse("0, 1").map(|g| g.0),
            Ok(vec![Gpu::Index(0), Gpu::Index(1)])
        );
        assert!(Gpus::parse("0,0").unwrap_err().contains("twice"));
        assert!(Gpus::parse("0,x").unwrap_err().contains("\"x\""));
        assert_eq!(
            serde_json::to_string(&Gpus::parse("0000:18:00.0,3").unwrap()).unwrap(),
            r#"["0000:18:00.0",3]"#
        );
    }

    #[test]
    fn the_keys_parse_and_their_defaults_are_settled() {
        assert_eq!(Distance::parse("pxb"), Ok(Distance::Pxb));
        assert!(Distance::parse("SYS").unwrap_err().contains("NUMA"));
        assert!(Distance::Pix < Distance::Node);
        assert_eq!(parse_mrrs(4096), Ok(4096));
        assert!(parse_mrrs(1000).is_err());
        assert_eq!(BusBw::parse("180.5").map(BusBw::gbs), Ok(180.5));
        assert!(BusBw::parse("0").is_err() && BusBw::parse("-1").is_err());
        assert_eq!(GpuDirect::parse("关闭"), Ok(GpuDirect::No));
        let mut p = GpuPath {
            gpu_direct: Some(GpuDirect::Check),
            gpu_nic_distance: Distance::Pxb,
            pcie_acs: PcieAcs::Check,
            pcie_mrrs: None,
            nccl_version: None,
            nccl_test: Some(true),
            nccl_min_busbw: None,
        };
        p.settle(true);
        assert_eq!((p.gpu_direct, p.nccl_test), (None, None));
        assert_eq!(serde_json::to_string(&p).unwrap(), "{}");
        assert_eq!(p.gpu_direct(false), GpuDirect::No);
        p.nccl_test = Some(true);
        p.settle(false);
        assert_eq!(
            p.nccl_test,
            Some(true),
            "yes without a GPU is said, so it is kept"
        );
    }
}
