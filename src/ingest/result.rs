//! One result file of the host bundles (schema `roce-gen/result/v1` of `bundle.md`): its typed
//! form, and the parser that tells a result from a file that is something else (skipped) or a
//! result that cannot be read (a problem). Pure.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The schema this reader understands.
pub const RESULT_SCHEMA: &str = "roce-gen/result/v1";

/// Other versions of the result schema are results this roce-gen cannot read, not strays.
const RESULT_SCHEMA_FAMILY: &str = "roce-gen/result/";

/// A result is a few kilobytes; anything far larger is not one, and is not read into memory.
pub const MAX_RESULT_BYTES: u64 = 16 << 20;

/// The script that wrote a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `precheck.sh`: read-only checks.
    Precheck,
    /// `apply.sh`: the configuration was applied (or, with `dry_run`, only shown).
    Apply,
    /// `rollback.sh`: the saved state was restored.
    Rollback,
}

impl Phase {
    /// The name the result file uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Precheck => "precheck",
            Phase::Apply => "apply",
            Phase::Rollback => "rollback",
        }
    }
}

/// The status of a run or of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// As planned.
    Pass,
    /// Differs, but not a failure (a precheck's setting that apply will change).
    Warn,
    /// Failed.
    Fail,
    /// Not checked, with the reason in the message (depends on a failed check).
    Skip,
    /// Apply changed the value and it now reads back as planned.
    Changed,
}

impl Status {
    /// The name the result file uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Changed => "changed",
        }
    }
}

/// The check counts a result states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Counts {
    /// Checks that passed.
    #[serde(default)]
    pub pass: u64,
    /// Checks that warned.
    #[serde(default)]
    pub warn: u64,
    /// Checks that failed.
    #[serde(default)]
    pub fail: u64,
    /// Checks skipped.
    #[serde(default)]
    pub skip: u64,
    /// Settings apply changed.
    #[serde(default)]
    pub changed: u64,
}

/// One check of a result.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Check {
    /// The stable check id (`ib_dev`, `mtu`, …).
    pub id: String,
    /// The planned `ib_dev` the check is about; `None` for host-wide checks.
    #[serde(default, deserialize_with = "non_empty")]
    pub nic: Option<String>,
    /// The outcome.
    pub status: Status,
    /// `error`, `warning` or `info`, as the script rated the check.
    #[serde(default)]
    pub severity: String,
    /// What the plan wants.
    #[serde(default)]
    pub expected: String,
    /// What the host has (after apply: what it reads back).
    #[serde(default)]
    pub actual: String,
    /// The script's sentence about it.
    #[serde(default)]
    pub message: String,
}

impl Check {
    /// `id:nic`, or `id` for a host-wide check: how EasyRoCE-style output names an item.
    pub fn item(&self) -> String {
        match &self.nic {
            Some(nic) => format!("{}:{nic}", self.id),
            None => self.id.clone(),
        }
    }
}

/// The facts a result records about its host; only string values are kept, the rest of an
/// unexpected `facts` object is ignored (facts inform the report, they never fail a host).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// `uname -r`.
    pub kernel: Option<String>,
    /// `ofed_info -s`; empty on a host with the inbox driver.
    pub ofed: Option<String>,
    /// Per planned `ib_dev`: `fw_ver`, `netdev`, and whatever else a newer script records.
    pub nics: BTreeMap<String, BTreeMap<String, String>>,
    /// Per planned `ib_dev`, what the script recorded for monitoring (transceiver, link, PCIe,
    /// counters, LLDP neighbour); empty for results of bundles that record none.
    pub health: BTreeMap<String, NicHealth>,
}

/// One NIC's monitoring facts. Read leniently: a value of the wrong type is treated as absent,
/// so an odd result loses a number, never the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NicHealth {
    /// The netdev the facts are about.
    pub netdev: String,
    /// The module `ethtool -m` describes, when the NIC gives access to one.
    pub transceiver: Option<Transceiver>,
    /// Why there is no transceiver data (`ethtool -m IF: … Operation not supported`).
    pub transceiver_note: Option<String>,
    /// Link speed in Mb/s (sysfs).
    pub speed_mbps: Option<f64>,
    /// Lanes of the link (`ethtool IF`).
    pub width: Option<f64>,
    /// The fastest link mode the port supports, in Mb/s.
    pub max_speed_mbps: Option<f64>,
    /// PCIe link: current and maximum speed (as sysfs words them, `32.0 GT/s PCIe`) and width.
    pub pcie_speed: Option<String>,
    /// …
    pub pcie_width: Option<f64>,
    /// …
    pub pcie_max_speed: Option<String>,
    /// …
    pub pcie_max_width: Option<f64>,
    /// RoCE health and pause counters at the time of the run, by name.
    pub counters: BTreeMap<String, f64>,
    /// The LLDP neighbour the host saw on the port, when it could ask lldpd or lldpad.
    pub neighbor: Option<Neighbor>,
}

/// A transceiver module.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transceiver {
    /// `Vendor name`.
    pub vendor: String,
    /// `Vendor PN`.
    pub part_number: String,
    /// Module temperature, °C.
    pub temperature_c: Option<f64>,
    /// Transmit power per lane, dBm; `None` for a dark lane (`-inf`).
    pub tx_power_dbm: Vec<Option<f64>>,
    /// Receive power per lane, dBm.
    pub rx_power_dbm: Vec<Option<f64>>,
}

/// The switch port LLDP shows at the other end of the cable.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Neighbor {
    /// `lldpd` or `lldpad`.
    pub source: String,
    /// The switch's system name.
    pub switch: String,
    /// Its port id.
    pub port: String,
    /// Its port description.
    pub port_descr: String,
}

/// The PCIe speed in GT/s from sysfs wording (`16.0 GT/s PCIe`, `8 GT/s`).
pub fn pcie_gts(speed: &str) -> Option<f64> {
    speed
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

impl NicHealth {
    /// The health facts of one NIC's facts object, or `None` when it records none.
    fn from_value(facts: &serde_json::Map<String, Value>) -> Option<Self> {
        const KEYS: [&str; 5] = ["transceiver", "link", "pcie", "counters", "neighbor"];
        if !KEYS.iter().any(|k| facts.contains_key(*k)) {
            return None;
        }
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let num = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|n| n.is_finite());
        let lanes = |v: Option<&Value>| -> Vec<Option<f64>> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().map(|x| num(Some(x))).collect())
                .unwrap_or_default()
        };
        let transceiver = facts
            .get("transceiver")
            .and_then(Value::as_object)
            .map(|t| Transceiver {
                vendor: text(t.get("vendor")).unwrap_or_default(),
                part_number: text(t.get("part_number")).unwrap_or_default(),
                temperature_c: num(t.get("temperature_c")),
                tx_power_dbm: lanes(t.get("tx_power_dbm")),
                rx_power_dbm: lanes(t.get("rx_power_dbm")),
            });
        let link = facts.get("link");
        let pcie = facts.get("pcie");
        let counters = facts
            .get("counters")
            .and_then(Value::as_object)
            .map(|c| {
                c.iter()
                    .filter_map(|(k, v)| Some((k.clone(), num(Some(v))?)))
                    .collect()
            })
            .unwrap_or_default();
        let neighbor = facts
            .get("neighbor")
            .and_then(Value::as_object)
            .map(|n| Neighbor {
                source: text(n.get("source")).unwrap_or_default(),
                switch: text(n.get("switch")).unwrap_or_default(),
                port: text(n.get("port")).unwrap_or_default(),
                port_descr: text(n.get("port_descr")).unwrap_or_default(),
            });
        Some(NicHealth {
            netdev: text(facts.get("netdev")).unwrap_or_default(),
            transceiver,
            transceiver_note: text(facts.get("transceiver_note")),
            speed_mbps: num(link.and_then(|l| l.get("speed_mbps"))),
            width: num(link.and_then(|l| l.get("width"))),
            max_speed_mbps: num(link.and_then(|l| l.get("max_speed_mbps"))),
            pcie_speed: text(pcie.and_then(|p| p.get("speed"))).filter(|s| !s.is_empty()),
            pcie_width: num(pcie.and_then(|p| p.get("width"))),
            pcie_max_speed: text(pcie.and_then(|p| p.get("max_speed"))).filter(|s| !s.is_empty()),
            pcie_max_width: num(pcie.and_then(|p| p.get("max_width"))),
            counters,
            neighbor,
        })
    }
}

impl Facts {
    fn from_value(value: &Value) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let nics = value
            .get("nics")
            .and_then(Value::as_object)
            .map(|nics| {
                nics.iter()
                    .filter_map(|(dev, facts)| {
                        let facts = facts.as_object()?;
                        let strings = facts
                            .iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                            .collect();
                        Some((dev.clone(), strings))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let health = value
            .get("nics")
            .and_then(Value::as_object)
            .map(|nics| {
                nics.iter()
                    .filter_map(|(dev, facts)| {
                        Some((dev.clone(), NicHealth::from_value(facts.as_object()?)?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Facts {
            kernel: text(value.get("kernel")),
            ofed: text(value.get("ofed")),
            nics,
            health,
        }
    }
}

/// A result file, read and checked.
#[derive(Debug, Clone)]
pub struct ResultFile {
    /// The roce-gen version that generated the bundle.
    pub tool_version: String,
    /// The plan's cluster name.
    pub cluster: String,
    /// The host the bundle is for.
    pub host: String,
    /// What `hostname` said on the machine that ran it.
    pub observed_hostname: String,
    /// The script that wrote it.
    pub phase: Phase,
    /// `apply.sh --dry-run`: nothing was changed.
    pub dry_run: bool,
    /// A firmware (NV) value waits for the next boot to take effect (absent in older results).
    pub reboot_required: bool,
    /// sha256 of the plan file the bundle was generated from.
    pub plan_sha256: String,
    /// sha256 of the bundle's `SHA256SUMS`.
    pub bundle_sha256: String,
    /// When the run started, if the file says so readably.
    pub started_at: Option<Timestamp>,
    /// When the run finished: what "newest" means.
    pub finished_at: Timestamp,
    /// The run's status.
    pub status: Status,
    /// The counts the file states.
    pub counts: Counts,
    /// Every check, in the script's order.
    pub checks: Vec<Check>,
    /// Kernel, OFED and per-NIC facts.
    pub facts: Facts,
}

/// The wire form; checked and converted into [`ResultFile`].
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    tool_version: String,
    #[serde(default)]
    cluster: String,
    host: String,
    #[serde(default)]
    observed_hostname: String,
    phase: Phase,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    reboot_required: bool,
    #[serde(default)]
    plan_sha256: String,
    #[serde(default)]
    bundle_sha256: String,
    #[serde(default)]
    started_at: Option<String>,
    finished_at: String,
    status: Status,
    #[serde(default)]
    counts: Counts,
    checks: Vec<Check>,
    #[serde(default)]
    facts: Value,
}

/// What a file turned out to be.
#[derive(Debug)]
pub enum Parsed {
    /// A result.
    Result(Box<ResultFile>),
    /// JSON that is not a result (a manifest, a plan, notes): skipped, with the reason.
    NotAResult(String),
    /// Meant to be a result, or not JSON at all, and unreadable: a problem, with the reason.
    Corrupt(String),
}

/// Parses one file's bytes.
pub fn parse(bytes: &[u8]) -> Parsed {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Parsed::Corrupt(format!("not valid JSON: {e}")),
    };
    match value.get("schema").map(|s| (s, s.as_str())) {
        Some((_, Some(RESULT_SCHEMA))) => {}
        Some((_, Some(s))) if s.starts_with(RESULT_SCHEMA_FAMILY) => {
            return Parsed::Corrupt(format!(
                "result schema {s:?} is not supported (this roce-gen reads {RESULT_SCHEMA})"
            ));
        }
        Some((_, Some(s))) => return Parsed::NotAResult(format!("schema {s:?}")),
        Some((s, None)) => return Parsed::NotAResult(format!("schema {s} is not a string")),
        None if value.is_object() => return Parsed::NotAResult("no schema".into()),
        None => return Parsed::NotAResult("not a JSON object".into()),
    }
    let wire: Wire = match serde_json::from_value(value) {
        Ok(w) => w,
        Err(e) => return Parsed::Corrupt(format!("not a valid {RESULT_SCHEMA} result: {e}")),
    };
    if wire.host.trim().is_empty() {
        return Parsed::Corrupt("not a valid result: host is empty".into());
    }
    let Ok(finished_at) = wire.finished_at.parse::<Timestamp>() else {
        return Parsed::Corrupt(format!(
            "not a valid result: finished_at {:?} is not an RFC 3339 time",
            wire.finished_at
        ));
    };
    Parsed::Result(Box::new(ResultFile {
        tool_version: wire.tool_version,
        cluster: wire.cluster,
        host: wire.host,
        observed_hostname: wire.observed_hostname,
        phase: wire.phase,
        dry_run: wire.dry_run,
        reboot_required: wire.reboot_required,
        plan_sha256: wire.plan_sha256,
        bundle_sha256: wire.bundle_sha256,
        started_at: wire.started_at.and_then(|s| s.parse().ok()),
        finished_at,
        status: wire.status,
        counts: wire.counts,
        checks: wire.checks,
        facts: Facts::from_value(&wire.facts),
    }))
}

/// An empty `nic` means a host-wide check, like an absent one.
fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let nic = Option::<String>::deserialize(d)?;
    Ok(nic.filter(|n| !n.is_empty()))
}
