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
        Facts {
            kernel: text(value.get("kernel")),
            ofed: text(value.get("ofed")),
            nics,
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
