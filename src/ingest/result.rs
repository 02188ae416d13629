//! One result file of the host bundles (schema `roce-gen/result/v1` of `docs/bundle.md`): its typed
//! form, and the parser that tells a result from a file that is something else (skipped) or a
//! result that cannot be read (a problem). Pure.

mod gpu;
mod text;
mod wire;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

pub(crate) use gpu::{GpuPair, GpuPath};
use text::Seeded;
pub(crate) use text::Text;
pub(crate) use wire::capped;
use wire::{ReadFacts, Sniffed};

/// The schema this reader understands.
pub(crate) const RESULT_SCHEMA: &str = "roce-gen/result/v1";

/// Other versions of the result schema are results this roce-gen cannot read, not strays.
const RESULT_SCHEMA_FAMILY: &str = "roce-gen/result/";

/// A result is a few kilobytes; anything far larger is not one, and is not read into memory.
pub(crate) const MAX_RESULT_BYTES: u64 = 16 << 20;

/// The script that wrote a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `precheck.sh`: read-only checks.
    Precheck,
    /// `apply.sh`: the configuration was applied (or, with `dry_run`, only shown).
    Apply,
    /// `rollback.sh`: the saved state was restored.
    Rollback,
    /// `fabric.sh`: the fabric test (traffic between the hosts); it changes no setting.
    Fabric,
}

impl Phase {
    /// The name the result file uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Precheck => "precheck",
            Phase::Apply => "apply",
            Phase::Rollback => "rollback",
            Phase::Fabric => "fabric",
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

/// One check of a result, shared: a fleet's results hold the same checks host after host (see
/// [`next_check`]), and a list of handles takes a thirteenth of the memory of a list of checks.
/// Reads, compares, prints and serializes as its [`CheckData`].
#[derive(Clone, PartialEq, Eq)]
pub struct Check(Arc<CheckData>);

impl Check {
    /// A check of these fields.
    pub fn new(data: CheckData) -> Check {
        Check(Arc::new(data))
    }
}

impl std::ops::Deref for Check {
    type Target = CheckData;
    fn deref(&self) -> &CheckData {
        &self.0
    }
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        CheckData::deserialize(d).map(Check::new)
    }
}

/// The fields of a [`Check`]. Its strings are capped at [`wire::MAX_TEXT`], and shared (see
/// [`Text`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
// The name messages about a check that cannot be read give it.
#[serde(rename = "Check")]
pub struct CheckData {
    /// The stable check id (`ib_dev`, `mtu`, …).
    #[serde(deserialize_with = "wire::shared_text")]
    pub id: Text,
    /// The planned `ib_dev` the check is about; `None` for host-wide checks.
    #[serde(default, deserialize_with = "non_empty")]
    pub nic: Option<Text>,
    /// What the check is about (bundles since results carry it): `setting` (apply changes it,
    /// or would), `action` (a host-wide change), `check` (a reading); `None` from an older
    /// bundle, whose changes are told by id.
    #[serde(
        default,
        deserialize_with = "wire::opt_shared_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<Text>,
    /// The outcome.
    pub status: Status,
    /// `error`, `warning` or `info`, as the script rated the check.
    #[serde(default, deserialize_with = "wire::shared_text")]
    pub severity: Text,
    /// What the plan wants.
    #[serde(default, deserialize_with = "wire::shared_text")]
    pub expected: Text,
    /// What the host has (after apply: what it reads back).
    #[serde(default, deserialize_with = "wire::shared_text")]
    pub actual: Text,
    /// The script's sentence about it.
    #[serde(default, deserialize_with = "wire::shared_text")]
    pub message: Text,
}

impl Check {
    /// `id:nic`, or `id` for a host-wide check: how EasyRoCE-style output names an item.
    pub fn item(&self) -> String {
        match &self.nic {
            Some(nic) => format!("{}:{nic}", self.id),
            None => self.id.to_string(),
        }
    }
}

/// The facts a result records about its host; only string and integer values (as text) are
/// kept, the rest of an unexpected `facts` object is ignored (facts inform the report, they never fail a host).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    /// `uname -r`.
    pub kernel: Option<String>,
    /// `ofed_info -s`; empty on a host with the inbox driver.
    pub ofed: Option<String>,
    /// Per planned `ib_dev`: `fw_ver`, `netdev`, `dcbx`, `gid_index`, the NV values (`fw_NAME`),
    /// and whatever else a newer script records.
    pub nics: BTreeMap<String, NicFacts>,
    /// Per planned `ib_dev`, what the script recorded for monitoring (transceiver, link, PCIe,
    /// counters, LLDP neighbour); empty for results of bundles that record none.
    pub health: BTreeMap<String, NicHealth>,
    /// The GPU path (`facts.gpu_path`, plan format 1.3); `None` where the plan names no GPU.
    pub gpu_path: Option<GpuPath>,
}

/// One NIC's string facts, by name: a list in name order, not a map, because a NIC records a
/// few and a map's node has room for eleven (most of what a host's result kept). Names and
/// values are shared text: a fleet's NICs record the same few (firmware versions, netdev
/// names, NV values).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NicFacts(Vec<(Text, Text)>);

impl NicFacts {
    /// The value of fact `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// Whether the NIC records fact `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Every fact, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl From<BTreeMap<Text, Text>> for NicFacts {
    fn from(map: BTreeMap<Text, Text>) -> Self {
        NicFacts(map.into_iter().collect())
    }
}

impl From<BTreeMap<String, String>> for NicFacts {
    fn from(map: BTreeMap<String, String>) -> Self {
        NicFacts(
            map.into_iter()
                .map(|(k, v)| (Text::from(k), Text::from(v)))
                .collect(),
        )
    }
}

impl FromIterator<(String, String)> for NicFacts {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        // The last value of a key counts, as in a map.
        BTreeMap::from_iter(iter).into()
    }
}

impl Serialize for NicFacts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
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
pub(crate) fn pcie_gts(speed: &str) -> Option<f64> {
    speed
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// A result file, read and checked.
#[derive(Debug, Clone, PartialEq)]
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
    /// Every check, in the script's order (past ingest's retention budget, only those that did
    /// not pass: see [`ResultFile::drop_passes`]).
    pub checks: Vec<Check>,
    /// Checks that passed and are counted, not kept.
    pub passes_not_kept: u64,
    /// Kernel, OFED and per-NIC facts.
    pub facts: Facts,
}

impl ResultFile {
    /// What it takes in memory, estimated (shared text counted as if it were not): the
    /// retention budget of `intake` adds these up.
    pub fn size(&self) -> usize {
        self.size_without_passes()
            + self
                .checks
                .iter()
                .filter(|c| c.status == Status::Pass)
                .map(Check::size)
                .sum::<usize>()
    }

    /// The same, once its passed checks are dropped.
    pub fn size_without_passes(&self) -> usize {
        let text = self.tool_version.len()
            + self.cluster.len()
            + self.host.len()
            + self.observed_hostname.len()
            + self.plan_sha256.len()
            + self.bundle_sha256.len();
        let checks: usize = self
            .checks
            .iter()
            .filter(|c| c.status != Status::Pass)
            .map(Check::size)
            .sum();
        let nics: usize = self
            .facts
            .nics
            .iter()
            .map(|(dev, f)| {
                dev.len()
                    + wire::ENTRY_COST
                    + f.iter()
                        .map(|(k, v)| k.len() + v.len() + wire::ENTRY_COST)
                        .sum::<usize>()
            })
            .sum();
        let health: usize = self
            .facts
            .health
            .values()
            .map(|h| std::mem::size_of::<NicHealth>() + h.counters.len() * wire::ENTRY_COST)
            .sum();
        let gpu = self.facts.gpu_path.as_ref().map_or(0, GpuPath::size);
        std::mem::size_of::<ResultFile>()
            + 8 * wire::ENTRY_COST
            + text
            + checks
            + nics
            + health
            + gpu
    }

    /// Keeps only the checks that did not pass, and counts the others: what ingest does past
    /// its retention budget, where a cluster's passing checks would not fit in memory.
    pub fn drop_passes(&mut self) {
        let before = self.checks.len();
        self.checks.retain(|c| c.status != Status::Pass);
        self.checks.shrink_to_fit();
        self.passes_not_kept += (before - self.checks.len()) as u64;
    }
}

/// The wire form; checked and converted into [`ResultFile`]. Strings are capped at
/// [`wire::MAX_TEXT`], checks and NIC facts at their budgets.
#[derive(Deserialize)]
struct Wire {
    #[serde(default, deserialize_with = "wire::loose_text")]
    schema: Option<String>,
    #[serde(default, deserialize_with = "wire::text")]
    tool_version: String,
    #[serde(default, deserialize_with = "wire::text")]
    cluster: String,
    #[serde(deserialize_with = "wire::text")]
    host: String,
    #[serde(default, deserialize_with = "wire::text")]
    observed_hostname: String,
    phase: Phase,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    reboot_required: bool,
    #[serde(default, deserialize_with = "wire::text")]
    plan_sha256: String,
    #[serde(default, deserialize_with = "wire::text")]
    bundle_sha256: String,
    #[serde(default, deserialize_with = "wire::opt_text")]
    started_at: Option<String>,
    #[serde(deserialize_with = "wire::text")]
    finished_at: String,
    status: Status,
    #[serde(default)]
    counts: Counts,
    checks: ReadChecks,
    #[serde(default)]
    facts: ReadFacts,
}

/// What one result's checks may take in memory, estimated (about 1,500 checks of a bundle; a
/// host of 8 NICs writes 300); checks past it are counted, not kept.
const CHECKS_BUDGET: usize = 512 << 10;

thread_local! {
    /// The list a thread reads a result's checks into.
    static SCRATCH: std::cell::Cell<Vec<Check>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The checks of a result, kept while they fit in [`CHECKS_BUDGET`], and how many did not.
struct ReadChecks {
    kept: Vec<Check>,
    not_kept: usize,
}

impl Check {
    /// What it takes in memory at most, roughly: the struct, its text and an allocation per
    /// string (a check or text shared with other checks takes less).
    pub fn size(&self) -> usize {
        std::mem::size_of::<CheckData>()
            + 6 * 16
            + self.id.len()
            + self.nic.as_ref().map_or(0, |n| n.len())
            + self.kind.as_ref().map_or(0, |k| k.len())
            + self.severity.len()
            + self.expected.len()
            + self.actual.len()
            + self.message.len()
    }
}

impl<'de> Deserialize<'de> for ReadChecks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ReadChecks;
            // serde's words for a `Vec`, so messages do not change with the reader.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ReadChecks, A::Error> {
                // Read into the thread's reused list, then copied once into one of the exact
                // size: growing a list per result, and trimming it, cost a tenth of ingest.
                let mut read = SCRATCH.with(std::cell::Cell::take);
                read.clear();
                let mut used = 0;
                let mut not_kept = 0;
                while let Some(check) = next_check(&mut seq, read.len() + not_kept)? {
                    let size = check.size();
                    if not_kept == 0 && used + size <= CHECKS_BUDGET {
                        used += size;
                        read.push(check);
                    } else {
                        not_kept += 1;
                    }
                }
                let mut kept = Vec::with_capacity(read.len());
                kept.append(&mut read);
                SCRATCH.with(|s| s.set(read));
                Ok(ReadChecks { kept, not_kept })
            }
        }
        d.deserialize_seq(V)
    }
}

/// A check's text longer than this is not remembered (a message naming a value of its own).
const SEEN_MAX_LEN: usize = 512;

/// Distinct checks a thread remembers, at most: past that, new ones are read as they come.
const SEEN_MAX_ENTRIES: usize = 4096;

/// Places of a result's checks whose last text a thread remembers (see [`Seen::last`]).
const LAST_MAX: usize = 1024;

/// The checks a thread has read, by their exact text. A fleet's results repeat the same checks
/// (same id, NIC, values and message) host after host: one read before is shared instead of
/// read field by field again.
struct Seen {
    by_text: HashMap<Arc<str>, Check, Seeded>,
    /// Per place in a result's `checks`, the check last read there: the next result most often
    /// has the same one at the same place, found with one comparison instead of a hash.
    last: Vec<(Arc<str>, Check)>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen {
        by_text: HashMap::with_hasher(Seeded::default()),
        last: Vec::new(),
    });
}

/// The next check of a result's `checks`, the one at place `at`; the same text gives the same
/// check as reading it would, and a check that cannot be read fails with the same words.
fn next_check<'de, A: SeqAccess<'de>>(seq: &mut A, at: usize) -> Result<Option<Check>, A::Error> {
    let Some(raw) = seq.next_element::<&'de RawValue>()? else {
        return Ok(None);
    };
    let text = raw.get();
    if text.len() > SEEN_MAX_LEN {
        return read_check(text).map(Some);
    }
    SEEN.with(|seen| {
        let seen = &mut *seen.borrow_mut();
        if let Some((last, check)) = seen.last.get(at)
            && **last == *text
        {
            return Ok(Some(check.clone()));
        }
        let known = match seen.by_text.get_key_value(text) {
            Some((text, check)) => (Arc::clone(text), check.clone()),
            None => {
                let check = read_check(text)?;
                let text: Arc<str> = Arc::from(text);
                if seen.by_text.len() < SEEN_MAX_ENTRIES {
                    seen.by_text.insert(Arc::clone(&text), check.clone());
                }
                (text, check)
            }
        };
        let check = known.1.clone();
        if at < seen.last.len() {
            seen.last[at] = known;
        } else if at == seen.last.len() && at < LAST_MAX {
            seen.last.push(known);
        }
        Ok(Some(check))
    })
}

/// One check from its text. The reader of the whole file adds where the check is.
fn read_check<E: serde::de::Error>(text: &str) -> Result<Check, E> {
    serde_json::from_str(text).map_err(|e| E::custom(without_position(&e)))
}

/// What a file turned out to be.
#[derive(Debug)]
pub enum Parsed {
    Result(Box<ResultFile>),
    /// JSON that is not a result (a manifest, a plan, notes): skipped, with the reason.
    NotAResult(String),
    /// Meant to be a result, or not JSON at all, and unreadable: a problem, with the reason.
    Corrupt(String),
}

/// Parses one file's bytes. A result is read in one pass straight into its typed form; only a
/// file that is not plainly a result is looked at again, to say what it is in the same words
/// whichever way it fails.
pub fn parse(bytes: &[u8]) -> Parsed {
    match typed(bytes) {
        Some(wire) => checked(wire),
        None => sniff(bytes),
    }
}

/// The typed pass: `Some` for a `roce-gen/result/v1` object that reads as one. Invalid UTF-8 is
/// left to [`sniff`] (serde_json checks it only in the strings it reads, not in those it skips).
fn typed(bytes: &[u8]) -> Option<Wire> {
    let text = std::str::from_utf8(bytes).ok()?;
    // A struct also reads from an array (by position); a result is an object.
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    let wire: Wire = serde_json::from_str(text).ok()?;
    (wire.schema.as_deref() == Some(RESULT_SCHEMA)).then_some(wire)
}

/// What a file the typed pass did not take is, with the reason.
fn sniff(bytes: &[u8]) -> Parsed {
    let schema = match serde_json::from_slice(bytes) {
        Ok(Sniffed::Object { schema }) => schema,
        Ok(Sniffed::NotAnObject) => return Parsed::NotAResult("not a JSON object".into()),
        Err(e) => return Parsed::Corrupt(capped(&format!("not valid JSON: {e}"))),
    };
    match schema {
        Some(Value::String(s)) if s == RESULT_SCHEMA => {
            match serde_json::from_slice::<Wire>(bytes) {
                Ok(wire) => checked(wire),
                Err(e) => Parsed::Corrupt(capped(&format!(
                    "not a valid {RESULT_SCHEMA} result: {}",
                    without_position(&e)
                ))),
            }
        }
        Some(Value::String(s)) if s.starts_with(RESULT_SCHEMA_FAMILY) => Parsed::Corrupt(capped(
            &format!("result schema {s:?} is not supported (this roce-gen reads {RESULT_SCHEMA})"),
        )),
        Some(Value::String(s)) => Parsed::NotAResult(capped(&format!("schema {s:?}"))),
        Some(s) => Parsed::NotAResult(capped(&format!("schema {s} is not a string"))),
        None => Parsed::NotAResult("no schema".into()),
    }
}

/// A serde_json message without its `at line L column C`: what is wrong with a result is said
/// as before the reader was typed, and the same whichever field came first.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&at) {
        Some(t) => t.to_string(),
        None => text,
    }
}

/// The checks on a result's values that serde does not make.
fn checked(wire: Wire) -> Parsed {
    if wire.host.trim().is_empty() {
        return Parsed::Corrupt("not a valid result: host is empty".into());
    }
    let Ok(finished_at) = wire.finished_at.parse::<Timestamp>() else {
        return Parsed::Corrupt(capped(&format!(
            "not a valid result: finished_at {:?} is not an RFC 3339 time",
            wire.finished_at
        )));
    };
    let ReadFacts(facts, nics_not_kept) = wire.facts;
    let mut checks = wire.checks.kept;
    if let Some(note) = limit_note(wire.checks.not_kept, nics_not_kept) {
        checks.push(note);
    }
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
        checks,
        passes_not_kept: 0,
        facts,
    }))
}

/// The id of the warning a result gets when ingest did not keep all of it.
pub(crate) const LIMIT_CHECK: &str = "ingest_limit";

/// A warning among a result's checks when some of its checks or NIC facts were not kept: the
/// report says so rather than look complete.
fn limit_note(checks: usize, nics: usize) -> Option<Check> {
    let mut parts = Vec::new();
    if checks > 0 {
        parts.push(format!(
            "{checks} checks past the first {} KiB",
            CHECKS_BUDGET >> 10
        ));
    }
    if nics > 0 {
        parts.push(format!(
            "the facts of {nics} NICs past the first {} KiB",
            wire::FACTS_BUDGET >> 10
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(Check::new(CheckData {
        id: LIMIT_CHECK.into(),
        nic: None,
        kind: None,
        status: Status::Warn,
        severity: "warning".into(),
        expected: "a result of the size a bundle writes".into(),
        actual: parts.join(", ").into(),
        message: format!(
            "this result is larger than ingest keeps of one: {} are not in the report",
            parts.join(" and ")
        )
        .into(),
    }))
}

/// An empty `nic` means a host-wide check, like an absent one.
fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Text>, D::Error> {
    Ok(wire::opt_shared_text(d)?.filter(|n| !n.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::wire::MAX_TEXT;
    use super::*;
    use serde_json::json;

    /// A valid result with `facts` (and `extra` top-level keys) as given.
    fn result_with(facts: &Value, extra: &[(&str, Value)]) -> Vec<u8> {
        let mut doc = json!({
            "schema": RESULT_SCHEMA,
            "tool_version": "0.1.0",
            "cluster": "c",
            "host": "gpu-001",
            "observed_hostname": "gpu-001",
            "phase": "apply",
            "dry_run": false,
            "plan_sha256": "ab",
            "bundle_sha256": "cd",
            "started_at": "2026-11-30T08:00:00Z",
            "finished_at": "2026-11-30T08:00:05Z",
            "status": "pass",
            "counts": {"pass": 1},
            "checks": [{"id": "mtu", "nic": "mlx5_0", "status": "pass", "severity": "error",
                        "expected": "4200", "actual": "4200", "message": "mtu is 4200"}],
            "facts": facts,
        });
        for (k, v) in extra {
            doc[*k] = v.clone();
        }
        serde_json::to_vec(&doc).unwrap()
    }

    fn result_of(bytes: &[u8]) -> ResultFile {
        match parse(bytes) {
            Parsed::Result(r) => *r,
            other => panic!("not a result: {other:?}"),
        }
    }

    fn skipped(bytes: &[u8]) -> String {
        match parse(bytes) {
            Parsed::NotAResult(why) => why,
            other => panic!("not skipped: {other:?}"),
        }
    }

    fn corrupt(bytes: &[u8]) -> String {
        match parse(bytes) {
            Parsed::Corrupt(why) => why,
            other => panic!("not corrupt: {other:?}"),
        }
    }

    /// How facts were read from a `Value` before the reader was typed: the reference the typed
    /// reader must agree with.
    fn facts_from_value(value: &Value) -> Facts {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let num = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|n| n.is_finite());
        let lanes = |v: Option<&Value>| -> Vec<Option<f64>> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().map(|x| num(Some(x))).collect())
                .unwrap_or_default()
        };
        let health = |facts: &serde_json::Map<String, Value>| -> Option<NicHealth> {
            const KEYS: [&str; 5] = ["transceiver", "link", "pcie", "counters", "neighbor"];
            if !KEYS.iter().any(|k| facts.contains_key(*k)) {
                return None;
            }
            let link = facts.get("link");
            let pcie = facts.get("pcie");
            Some(NicHealth {
                netdev: text(facts.get("netdev")).unwrap_or_default(),
                transceiver: facts
                    .get("transceiver")
                    .and_then(Value::as_object)
                    .map(|t| Transceiver {
                        vendor: text(t.get("vendor")).unwrap_or_default(),
                        part_number: text(t.get("part_number")).unwrap_or_default(),
                        temperature_c: num(t.get("temperature_c")),
                        tx_power_dbm: lanes(t.get("tx_power_dbm")),
                        rx_power_dbm: lanes(t.get("rx_power_dbm")),
                    }),
                transceiver_note: text(facts.get("transceiver_note")),
                speed_mbps: num(link.and_then(|l| l.get("speed_mbps"))),
                width: num(link.and_then(|l| l.get("width"))),
                max_speed_mbps: num(link.and_then(|l| l.get("max_speed_mbps"))),
                pcie_speed: text(pcie.and_then(|p| p.get("speed"))).filter(|s| !s.is_empty()),
                pcie_width: num(pcie.and_then(|p| p.get("width"))),
                pcie_max_speed: text(pcie.and_then(|p| p.get("max_speed")))
                    .filter(|s| !s.is_empty()),
                pcie_max_width: num(pcie.and_then(|p| p.get("max_width"))),
                counters: facts
                    .get("counters")
                    .and_then(Value::as_object)
                    .map(|c| {
                        c.iter()
                            .filter_map(|(k, v)| Some((k.clone(), num(Some(v))?)))
                            .collect()
                    })
                    .unwrap_or_default(),
                neighbor: facts
                    .get("neighbor")
                    .and_then(Value::as_object)
                    .map(|n| Neighbor {
                        source: text(n.get("source")).unwrap_or_default(),
                        switch: text(n.get("switch")).unwrap_or_default(),
                        port: text(n.get("port")).unwrap_or_default(),
                        port_descr: text(n.get("port_descr")).unwrap_or_default(),
                    }),
            })
        };
        let nics = value.get("nics").and_then(Value::as_object);
        Facts {
            kernel: text(value.get("kernel")),
            ofed: text(value.get("ofed")),
            nics: nics
                .map(|nics| {
                    nics.iter()
                        .filter_map(|(dev, f)| {
                            let strings = f
                                .as_object()?
                                .iter()
                                .filter_map(|(k, v)| {
                                    let text = match v {
                                        Value::String(s) => s.clone(),
                                        Value::Number(n) if n.is_i64() || n.is_u64() => {
                                            n.to_string()
                                        }
                                        _ => return None,
                                    };
                                    Some((k.clone(), text))
                                })
                                .collect();
                            Some((dev.clone(), strings))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            health: nics
                .map(|nics| {
                    nics.iter()
                        .filter_map(|(dev, f)| Some((dev.clone(), health(f.as_object()?)?)))
                        .collect()
                })
                .unwrap_or_default(),
            gpu_path: value.get("gpu_path").and_then(GpuPath::read),
        }
    }

    #[test]
    fn facts_of_any_shape_read_as_a_value_reader_reads_them() {
        let cases = [
            json!(null),
            json!("facts"),
            json!([1, 2]),
            json!({}),
            json!({"kernel": 5, "ofed": ["x"], "nics": "none", "gpu_path": "x"}),
            json!({"gpu_path": {"route": "peermem", "pairs": [{"nic": "mlx5_0", "mrrs": 512,
                "bridges": [{"pci": "0000:17:00.0", "acs_ctl": 29}], "numa": [0, "x"]}, 7]}}),
            json!({"kernel": "6.8", "ofed": "", "nics": {"mlx5_0": "x", "mlx5_1": null}}),
            json!({"nics": {"mlx5_0": {"fw_ver": "28.39", "netdev": "ens1", "n": 3, "b": true,
                                       "o": {"a": "b"}, "l": ["x"], "gid_index": 3,
                                       "neg": -1, "f": 2.5, "big": 18446744073709551615_u64}}}),
            json!({"nics": {"mlx5_0": {
                "netdev": "ens1",
                "transceiver": {"vendor": "NVIDIA", "part_number": 7, "temperature_c": "hot",
                                "tx_power_dbm": [1.5, null, "x", -3], "rx_power_dbm": {"a": 1}},
                "transceiver_note": "n",
                "link": {"speed_mbps": 400000, "width": "4", "max_speed_mbps": -1.5, "x": 1},
                "pcie": {"speed": "", "width": 16, "max_speed": "32.0 GT/s PCIe", "max_width": null},
                "counters": {"a": 1, "b": "2", "c": 3.5, "d": null, "e": [1]},
                "neighbor": {"source": "lldpd", "switch": ["x"], "port": "Eth1/1"}
            }}}),
            json!({"nics": {"mlx5_0": {"transceiver": "module", "link": [400000],
                                       "pcie": "x", "counters": 3, "neighbor": null}}}),
            json!({"nics": {"mlx5_0": {"link": null}, "mlx5_1": {"fw_ver": "1"}}}),
            json!({"nics": {"mlx5_0": {"counters": {"big": 18446744073709551615_u64,
                                                     "neg": -9223372036854775808_i64}}}}),
        ];
        for facts in cases {
            let typed = result_of(&result_with(&facts, &[])).facts;
            assert_eq!(typed, facts_from_value(&facts), "facts: {facts}");
        }
    }

    #[test]
    fn a_key_given_twice_in_facts_counts_the_last_time() {
        let text = String::from_utf8(result_with(&json!("FACTS"), &[]))
            .unwrap()
            .replace(
                r#""FACTS""#,
                r#"{"kernel": "a", "kernel": 7, "nics": {
                "mlx5_0": {"netdev": "a", "netdev": true, "link": {"width": 4}, "link": "x"},
                "mlx5_1": {"fw_ver": "1"}, "mlx5_1": 3,
                "mlx5_2": {"counters": {"a": 1, "a": "x", "b": "y", "b": 2}}}}"#,
            );
        let facts = result_of(text.as_bytes()).facts;
        let reference: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(facts, facts_from_value(&reference["facts"]));
        assert_eq!(facts.kernel, None);
        assert!(!facts.nics.contains_key("mlx5_1"));
        assert!(!facts.nics["mlx5_0"].contains_key("netdev"));
        assert_eq!(facts.health["mlx5_0"].width, None);
        let counters = &facts.health["mlx5_2"].counters;
        assert_eq!(counters.keys().collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn what_a_file_is_when_it_is_not_a_result() {
        assert_eq!(skipped(b"[1, 2, 3]"), "not a JSON object");
        assert_eq!(skipped(b" \"x\""), "not a JSON object");
        assert_eq!(skipped(br#"{"a": 1}"#), "no schema");
        assert_eq!(
            skipped(br#"{"schema": "roce-gen/manifest/v1"}"#),
            r#"schema "roce-gen/manifest/v1""#
        );
        assert_eq!(skipped(br#"{"schema": 2}"#), "schema 2 is not a string");
        assert_eq!(
            skipped(br#"{"schema": null}"#),
            "schema null is not a string"
        );
        assert_eq!(
            skipped(br#"{"schema": {"z": [1, "a"], "a": true}}"#),
            r#"schema {"a":true,"z":[1,"a"]} is not a string"#
        );
        // The last `schema` counts, as in any JSON object reader.
        assert_eq!(
            skipped(br#"{"schema": "roce-gen/result/v1", "schema": "other"}"#),
            r#"schema "other""#
        );
        // A result's fields in an array are not a result.
        assert_eq!(skipped(br#"["roce-gen/result/v1"]"#), "not a JSON object");
        assert_eq!(
            corrupt(br#"{"schema": "roce-gen/result/v2", "host": "h"}"#),
            r#"result schema "roce-gen/result/v2" is not supported (this roce-gen reads roce-gen/result/v1)"#
        );
    }

    #[test]
    fn what_is_wrong_with_a_file_is_said_as_a_value_reader_says_it() {
        assert_eq!(
            corrupt(b""),
            "not valid JSON: EOF while parsing a value at line 1 column 0"
        );
        assert_eq!(
            corrupt(br#"{"schema": "roce-gen/result/v1", "host": "h""#),
            "not valid JSON: EOF while parsing an object at line 1 column 44"
        );
        // Invalid UTF-8 in a string no reader looks at is still not JSON.
        let mut bytes = result_with(&json!({}), &[("unknown", json!("AB"))]);
        let at = bytes.windows(2).position(|w| w == b"AB").unwrap();
        bytes[at] = 0xff;
        let why = corrupt(&bytes);
        assert!(
            why.starts_with("not valid JSON: invalid unicode code point"),
            "{why}"
        );
        assert_eq!(
            corrupt(&result_with(&json!({}), &[("host", json!(5))])),
            "not a valid roce-gen/result/v1 result: invalid type: integer `5`, expected a string"
        );
        let mut no_host: Value = serde_json::from_slice(&result_with(&json!({}), &[])).unwrap();
        no_host.as_object_mut().unwrap().remove("host");
        assert_eq!(
            corrupt(&serde_json::to_vec(&no_host).unwrap()),
            "not a valid roce-gen/result/v1 result: missing field `host`"
        );
        assert_eq!(
            corrupt(&result_with(&json!({}), &[("host", json!(" "))])),
            "not a valid result: host is empty"
        );
        assert_eq!(
            corrupt(&result_with(&json!({}), &[("finished_at", json!("soon"))])),
            r#"not a valid result: finished_at "soon" is not an RFC 3339 time"#
        );
    }

    #[test]
    fn long_strings_are_cut_and_marked() {
        let long = "é".repeat(10_000);
        let check = json!({"id": "mtu", "status": "fail", "message": long, "actual": long});
        let bytes = result_with(
            &json!({"kernel": long, "nics": {"mlx5_0": {"fw_ver": long}}}),
            &[("checks", json!([check])), ("cluster", json!(long))],
        );
        let r = result_of(&bytes);
        for s in [
            r.checks[0].message.as_str(),
            r.checks[0].actual.as_str(),
            &r.cluster,
            r.facts.kernel.as_ref().unwrap(),
            r.facts.nics["mlx5_0"].get("fw_ver").unwrap(),
        ] {
            assert!(s.len() <= MAX_TEXT, "{}", s.len());
            assert!(s.ends_with("éé…"), "{}", &s[s.len() - 10..]);
        }
        // A problem's reason quotes the value; it is capped too.
        let why = corrupt(&result_with(&json!({}), &[("phase", json!(long))]));
        assert!(why.len() <= MAX_TEXT && why.ends_with('…'), "{}", why.len());
    }

    #[test]
    fn checks_and_nics_past_what_a_result_keeps_are_counted_in_a_warning() {
        let check = json!({"id": "mtu", "nic": "mlx5_0", "status": "pass",
                           "message": "m".repeat(2000)});
        let nic = json!({"fw_ver": "f".repeat(3000), "netdev": "ens1"});
        let nics: serde_json::Map<String, Value> = (0..200)
            .map(|i| (format!("mlx5_{i}"), nic.clone()))
            .collect();
        let bytes = result_with(
            &json!({"nics": nics}),
            &[("checks", Value::Array(vec![check; 1000]))],
        );
        let r = result_of(&bytes);
        let limit = r.checks.last().unwrap();
        assert_eq!(limit.id, LIMIT_CHECK);
        assert_eq!(limit.status, Status::Warn);
        let kept = r.checks.len() - 1;
        assert!((200..1000).contains(&kept), "{kept} checks kept");
        assert!(
            (40..200).contains(&r.facts.nics.len()),
            "{}",
            r.facts.nics.len()
        );
        assert_eq!(
            limit.actual,
            format!(
                "{} checks past the first 512 KiB, the facts of {} NICs past the first 256 KiB",
                1000 - kept,
                200 - r.facts.nics.len()
            )
        );
        // An ordinary result gets no such warning.
        assert!(
            result_of(&result_with(&json!({}), &[]))
                .checks
                .iter()
                .all(|c| c.id != LIMIT_CHECK)
        );
    }

    #[test]
    fn a_check_read_again_is_the_check_read_the_first_time() {
        let bytes = result_with(&json!({}), &[("checks", json!("CHECKS"))]);
        let with = |checks: &str| {
            String::from_utf8(bytes.clone())
                .unwrap()
                .replace(r#""CHECKS""#, checks)
        };
        let good = with(
            r#"[{"id": "mtu", "nic": "mlx5_0", "status": "fail", "actual": "1500"},
                {"id": "pfc", "nic": "", "status": "warn", "message": "a \"b\" \u00e9"}]"#,
        );
        // The second time, the checks come from what this thread remembers of the first.
        let first = result_of(good.as_bytes()).checks;
        let again = result_of(good.as_bytes()).checks;
        assert_eq!(again, first);
        assert_eq!(first[0].actual, "1500");
        assert_eq!(first[1].nic, None);
        assert_eq!(first[1].message, "a \"b\" é");
        // A check that cannot be read is said in the same words every time.
        let bad = with(r#"[{"id": "mtu", "status": "pass", "id": "pfc"}]"#);
        for _ in 0..2 {
            assert_eq!(
                corrupt(bad.as_bytes()),
                "not a valid roce-gen/result/v1 result: duplicate field `id`"
            );
        }
    }

    #[test]
    fn an_empty_nic_is_a_host_wide_check_and_a_wrong_typed_check_field_fails_the_file() {
        let checks = json!([{"id": "root", "nic": "", "status": "pass"},
                            {"id": "mtu", "nic": null, "status": "pass"}]);
        let r = result_of(&result_with(&json!({}), &[("checks", checks)]));
        assert_eq!(r.checks[0].nic, None);
        assert_eq!(r.checks[1].nic, None);
        let checks = json!([{"id": "mtu", "status": "pass", "message": 5}]);
        assert_eq!(
            corrupt(&result_with(&json!({}), &[("checks", checks)])),
            "not a valid roce-gen/result/v1 result: invalid type: integer `5`, expected a string"
        );
    }
}
