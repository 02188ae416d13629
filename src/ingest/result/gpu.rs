//! `facts.gpu_path` of a result (plan format 1.3): NCCL's version and GPUDirect route, and per
//! planned GPU↔port pair its PCIe relation, the bridges between them with their ACS control, both
//! ends' links and the port's Max Read Request Size. Read leniently from a bounded JSON value: a
//! member of the wrong type is absent, never an error (facts inform the report, they never fail a
//! host); the lists are capped so that an odd result cannot make the report large.

use serde::Serialize;
use serde_json::Value;

/// Pairs kept of one result: eight GPUs, each with a few ports, fit many times over.
const MAX_PAIRS: usize = 64;

/// Bridges kept of one pair: a path through two levels of PCIe switches has four.
const MAX_BRIDGES: usize = 16;

/// The longest short value kept (an address, a version, a relation); longer ones are cut.
const MAX_SHORT: usize = 128;

/// The ACS control bits that send peer-to-peer traffic up to the root complex: request redirect,
/// completion redirect and egress control (`pci_regs.h` `PCI_ACS_RR`, `PCI_ACS_CR`, `PCI_ACS_EC`,
/// what Linux's `pci_disable_acs_redir` clears).
pub(crate) const ACS_REDIRECT: u64 = 0x04 | 0x08 | 0x20;

/// The GPU path a result records.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuPath {
    /// The NCCL version the checks judged by; empty when neither the plan nor the host names one.
    pub nccl_version: String,
    /// Where it came from: the plan's `nccl_version`, or the host's library.
    pub nccl_version_from: String,
    /// How NCCL reaches GPU memory: `peermem`, `dmabuf` or `none`.
    pub route: String,
    /// The GPU driver's version (`/sys/module/nvidia/version`); empty when not loaded.
    pub driver: String,
    /// `nvidia_peermem`'s version; empty when not loaded.
    pub peermem: String,
    /// The planned pairs, in plan order.
    pub pairs: Vec<GpuPair>,
}

/// One planned GPU↔port pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuPair {
    /// The port's RDMA device.
    pub nic: String,
    /// Its PCI address.
    pub nic_pci: String,
    /// The GPU as the plan names it (an index or an address).
    pub gpu: String,
    /// The GPU's PCI address.
    pub gpu_pci: String,
    /// `PIX`, `PXB`, `PHB`, `NODE` or `SYS`, as `nvidia-smi topo -m` names it.
    pub relation: String,
    /// The NUMA node of the GPU and of the port (`-1`: none).
    pub numa: [Option<i64>; 2],
    /// The bridges between them.
    pub bridges: Vec<GpuBridge>,
    /// The GPU's PCIe link.
    pub gpu_link: Option<PcieLink>,
    /// The port's PCIe link.
    pub nic_link: Option<PcieLink>,
    /// The port's Max Read Request Size in bytes.
    pub mrrs: Option<u64>,
}

impl GpuPair {
    /// The bridges whose ACS control redirects peer-to-peer traffic.
    pub(crate) fn redirecting(&self) -> impl Iterator<Item = &GpuBridge> {
        self.bridges
            .iter()
            .filter(|b| b.acs_ctl.is_some_and(|c| c & ACS_REDIRECT != 0))
    }
}

/// A bridge on a pair's path.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuBridge {
    /// Its PCI address.
    pub pci: String,
    /// Its ACS control register; `None` without an ACS capability, or unreadable.
    pub acs_ctl: Option<u64>,
}

/// One end's PCIe link, in sysfs's words.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PcieLink {
    /// `32.0 GT/s PCIe`.
    pub speed: String,
    pub width: Option<u64>,
    pub max_speed: String,
    pub max_width: Option<u64>,
}

impl PcieLink {
    /// `x16 32.0 GT/s`, and the maximum where the link runs below it: `x8 (of x16) 32.0 GT/s`.
    pub(crate) fn text(&self) -> String {
        let width = match (self.width, self.max_width) {
            (Some(w), Some(m)) if w < m => format!("x{w} (of x{m})"),
            (Some(w), _) => format!("x{w}"),
            (None, _) => "x?".to_string(),
        };
        let speed = |s: &str| s.trim_end_matches(" PCIe").trim().to_string();
        let (now, max) = (speed(&self.speed), speed(&self.max_speed));
        match (now.is_empty(), max.is_empty() || max == now) {
            (true, _) => width,
            (false, true) => format!("{width} {now}"),
            (false, false) => format!("{width} {now} (of {max})"),
        }
    }
}

impl GpuPath {
    /// The GPU path of a `facts.gpu_path` value; `None` when it is not an object.
    pub(crate) fn read(v: &Value) -> Option<GpuPath> {
        let o = v.as_object()?;
        Some(GpuPath {
            nccl_version: short(o.get("nccl_version")),
            nccl_version_from: short(o.get("nccl_version_from")),
            route: short(o.get("route")),
            driver: short(o.get("driver")),
            peermem: short(o.get("peermem")),
            pairs: list(o.get("pairs"), MAX_PAIRS, pair),
        })
    }

    /// What it takes in memory, roughly, for the retention budget.
    pub(crate) fn size(&self) -> usize {
        let pairs: usize = self
            .pairs
            .iter()
            .map(|p| {
                std::mem::size_of::<GpuPair>()
                    + p.nic.len()
                    + p.nic_pci.len()
                    + p.gpu.len()
                    + p.gpu_pci.len()
                    + p.relation.len()
                    + p.bridges.len() * (std::mem::size_of::<GpuBridge>() + MAX_SHORT)
                    + 2 * (std::mem::size_of::<PcieLink>() + 2 * MAX_SHORT)
            })
            .sum();
        std::mem::size_of::<GpuPath>() + 5 * MAX_SHORT + pairs
    }
}

fn pair(v: &Value) -> Option<GpuPair> {
    let o = v.as_object()?;
    let numa = |i: usize| {
        o.get("numa")
            .and_then(Value::as_array)
            .and_then(|a| a.get(i))
            .and_then(Value::as_i64)
    };
    Some(GpuPair {
        nic: short(o.get("nic")),
        nic_pci: short(o.get("nic_pci")),
        gpu: short(o.get("gpu")),
        gpu_pci: short(o.get("gpu_pci")),
        relation: short(o.get("relation")),
        numa: [numa(0), numa(1)],
        bridges: list(o.get("bridges"), MAX_BRIDGES, |b| {
            let b = b.as_object()?;
            Some(GpuBridge {
                pci: short(b.get("pci")),
                acs_ctl: b.get("acs_ctl").and_then(Value::as_u64),
            })
        }),
        gpu_link: o.get("gpu_link").and_then(link),
        nic_link: o.get("nic_link").and_then(link),
        mrrs: o.get("mrrs").and_then(Value::as_u64),
    })
}

fn link(v: &Value) -> Option<PcieLink> {
    let o = v.as_object()?;
    Some(PcieLink {
        speed: short(o.get("speed")),
        width: o.get("width").and_then(Value::as_u64),
        max_speed: short(o.get("max_speed")),
        max_width: o.get("max_width").and_then(Value::as_u64),
    })
}

/// The items of an array that read as `T`, at most `max`; nothing when it is not an array.
fn list<T>(v: Option<&Value>, max: usize, item: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(item).take(max).collect())
        .unwrap_or_default()
}

/// A string value cut to [`MAX_SHORT`] bytes (on a character boundary, ending in `…`); empty when
/// absent or not a string.
fn short(v: Option<&Value>) -> String {
    let s = v.and_then(Value::as_str).unwrap_or_default();
    if s.len() <= MAX_SHORT {
        return s.to_string();
    }
    let mut end = MAX_SHORT - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recorded_path_reads_with_its_pairs_bridges_and_links() {
        let v = json!({"nccl_version": "2.23.4", "nccl_version_from": "the plan's nccl_version",
            "route": "peermem", "driver": "550.54.15", "peermem": "550.54.15",
            "pairs": [{"nic": "mlx5_0", "nic_pci": "0000:19:00.0", "gpu": "0",
                "gpu_pci": "0000:18:00.0", "relation": "PIX", "numa": [0, 0],
                "bridges": [{"pci": "0000:17:00.0", "acs_ctl": 29},
                            {"pci": "0000:17:01.0", "acs_ctl": null}],
                "gpu_link": {"speed": "32.0 GT/s PCIe", "width": 16,
                             "max_speed": "32.0 GT/s PCIe", "max_width": 16},
                "nic_link": {"speed": "32.0 GT/s PCIe", "width": 8,
                             "max_speed": "32.0 GT/s PCIe", "max_width": 16},
                "mrrs": 512}]});
        let p = GpuPath::read(&v).unwrap();
        assert_eq!(
            (p.route.as_str(), p.driver.as_str()),
            ("peermem", "550.54.15")
        );
        let pair = &p.pairs[0];
        assert_eq!(pair.numa, [Some(0), Some(0)]);
        assert_eq!(pair.mrrs, Some(512));
        // 0x1d: source validation, request and completion redirect, upstream forwarding.
        let redirecting: Vec<&str> = pair.redirecting().map(|b| b.pci.as_str()).collect();
        assert_eq!(redirecting, ["0000:17:00.0"]);
        assert_eq!(pair.gpu_link.as_ref().unwrap().text(), "x16 32.0 GT/s");
        assert_eq!(
            pair.nic_link.as_ref().unwrap().text(),
            "x8 (of x16) 32.0 GT/s"
        );
    }

    #[test]
    fn members_of_the_wrong_type_are_absent_and_lists_are_capped() {
        assert_eq!(GpuPath::read(&json!("peermem")), None);
        let many: Vec<Value> = (0..200)
            .map(|i| {
                json!({"nic": format!("mlx5_{i}"), "numa": "x", "mrrs": "big",
                "bridges": [{"pci": 1, "acs_ctl": "on"}], "gpu_link": 3})
            })
            .collect();
        let p =
            GpuPath::read(&json!({"route": 7, "pairs": many, "driver": "9".repeat(500)})).unwrap();
        assert_eq!(p.route, "");
        assert_eq!(p.pairs.len(), MAX_PAIRS);
        assert!(p.driver.len() <= MAX_SHORT && p.driver.ends_with('…'));
        let first = &p.pairs[0];
        assert_eq!((first.numa, first.mrrs), ([None, None], None));
        assert_eq!(first.bridges[0], GpuBridge::default());
        assert_eq!(first.gpu_link, None);
        // ACS 0x11 (source validation, upstream forwarding) redirects nothing.
        let quiet = GpuPair {
            bridges: vec![GpuBridge {
                pci: "b".into(),
                acs_ctl: Some(0x11),
            }],
            ..GpuPair::default()
        };
        assert_eq!(quiet.redirecting().count(), 0);
    }
}
