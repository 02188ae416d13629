//! The plan format v1.2 keys of the phases after apply: the fabric test (`fabric_*`), live
//! health (`health*`, `drift_interval`) and the ARP sysctls of multi-port hosts. Each is left
//! out of the normalized plan at its default, so that a plan without them keeps its identity.

use std::ops::RangeInclusive;

use serde::Serialize;

/// `n` as a `T` when it lies in `range`, else `why`.
fn within<T: TryFrom<i64> + PartialOrd>(
    n: i64,
    range: RangeInclusive<T>,
    why: &str,
) -> Result<T, String> {
    T::try_from(n)
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| why.to_string())
}

/// The fabric test's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fabric {
    /// Seconds of each traffic step, 2–300.
    #[serde(
        rename = "fabric_seconds",
        skip_serializing_if = "Fabric::default_seconds"
    )]
    pub seconds: u16,
    /// A link passes at this share of its link speed, 1–100.
    #[serde(
        rename = "fabric_min_pct",
        skip_serializing_if = "Fabric::default_min_pct"
    )]
    pub min_pct: u8,
    /// Whether the two-senders step runs (ECN/CNP and PFC under congestion).
    #[serde(rename = "fabric_incast", skip_serializing_if = "super::is_true")]
    pub incast: bool,
}

impl Default for Fabric {
    fn default() -> Self {
        Self {
            seconds: Self::SECONDS,
            min_pct: Self::MIN_PCT,
            incast: true,
        }
    }
}

impl Fabric {
    const SECONDS: u16 = 10;
    const MIN_PCT: u8 = 90;

    fn default_seconds(v: &u16) -> bool {
        *v == Self::SECONDS
    }

    fn default_min_pct(v: &u8) -> bool {
        *v == Self::MIN_PCT
    }

    /// Parses `fabric_seconds`.
    pub fn parse_seconds(n: i64) -> Result<u16, String> {
        within(
            n,
            2..=300,
            "is not a fabric step duration in seconds (2 to 300)",
        )
    }

    /// Parses `fabric_min_pct`.
    pub fn parse_min_pct(n: i64) -> Result<u8, String> {
        within(
            n,
            1..=100,
            "is not a share of the link speed in percent (1 to 100)",
        )
    }
}

/// Live health: the timer, its intervals and node_exporter's textfile folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Whether apply installs the health timer.
    #[serde(rename = "health", skip_serializing_if = "super::is_true")]
    pub enabled: bool,
    /// Seconds between health runs, 5–3600.
    #[serde(
        rename = "health_interval",
        skip_serializing_if = "Health::default_interval"
    )]
    pub interval: u32,
    /// Seconds between drift checks, at least `interval`.
    #[serde(skip_serializing_if = "Health::default_drift")]
    pub drift_interval: u32,
    /// Where the health run writes its `.prom` file.
    #[serde(skip_serializing_if = "TextfileDir::is_default")]
    pub health_textfile_dir: TextfileDir,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            enabled: true,
            interval: Self::INTERVAL,
            drift_interval: Self::DRIFT,
            health_textfile_dir: TextfileDir::default(),
        }
    }
}

impl Health {
    const INTERVAL: u32 = 30;
    const DRIFT: u32 = 300;

    fn default_interval(v: &u32) -> bool {
        *v == Self::INTERVAL
    }

    fn default_drift(v: &u32) -> bool {
        *v == Self::DRIFT
    }

    /// Parses `health_interval`.
    pub fn parse_interval(n: i64) -> Result<u32, String> {
        within(
            n,
            5..=3600,
            "is not a health interval in seconds (5 to 3600)",
        )
    }

    /// Parses `drift_interval` (its floor, `health_interval`, is a rule across the keys).
    pub fn parse_drift(n: i64) -> Result<u32, String> {
        within(
            n,
            5..=u32::MAX,
            "is not a drift interval in seconds (5 or more)",
        )
    }
}

/// node_exporter's textfile folder: an absolute path of plain characters, because it reaches
/// a script, a unit's `ReadWritePaths=` and node_exporter's command line unquoted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct TextfileDir(String);

impl Default for TextfileDir {
    fn default() -> Self {
        Self(Self::DEFAULT.into())
    }
}

impl TextfileDir {
    const DEFAULT: &'static str = "/var/lib/node_exporter/textfile_collector";

    fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }

    /// The path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses an absolute path of letters, digits and `._+-` between slashes, without `.` or
    /// `..` parts, at most 200 bytes; a trailing slash is dropped.
    pub fn parse(s: &str) -> Result<Self, String> {
        let path = s.strip_suffix('/').filter(|p| !p.is_empty()).unwrap_or(s);
        let plain = |c: char| c.is_ascii_alphanumeric() || "._+-".contains(c);
        let ok = path.len() <= 200
            && path.len() > 1
            && path.starts_with('/')
            && path[1..].split('/').all(|part| {
                !part.is_empty() && part != "." && part != ".." && part.chars().all(plain)
            });
        if ok {
            Ok(Self(path.to_string()))
        } else {
            Err(
                "is not an absolute folder path of letters, digits and `._+-` (no spaces, no `..`)"
                    .into(),
            )
        }
    }
}

/// What apply does with `arp_ignore`, `arp_announce` and `rp_filter` of the planned netdevs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArpSysctls {
    /// Precheck warns where they allow ARP flux or reverse-path drops on a multi-port host.
    #[default]
    Check,
    /// Apply sets them (1, 2, 2), persisted, restored by rollback.
    Set,
    /// Neither.
    Leave,
}

impl ArpSysctls {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Set => "set",
            Self::Leave => "leave",
        }
    }

    /// Parses `check`, `set` or `leave`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "check" => Ok(Self::Check),
            "set" => Ok(Self::Set),
            "leave" => Ok(Self::Leave),
            _ => Err("is not an arp_sysctls choice (`check`, `set` or `leave`)".into()),
        }
    }

    /// Whether this is the default.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textfile_dirs_are_plain_absolute_paths() {
        for ok in [
            "/var/lib/node_exporter/textfile_collector",
            "/srv/prom/",
            "/a",
        ] {
            assert!(TextfileDir::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            TextfileDir::parse("/srv/prom/").unwrap().as_str(),
            "/srv/prom"
        );
        for bad in [
            "",
            "/",
            "relative/dir",
            "/a b",
            "/a/../etc",
            "/a/./b",
            "/a//b",
            "/a$(x)",
            "/a\nb",
            "/ä",
        ] {
            assert!(TextfileDir::parse(bad).is_err(), "{bad:?}");
        }
        assert!(TextfileDir::parse(&format!("/{}", "a".repeat(200))).is_err());
    }

    #[test]
    fn ranges_hold_at_their_edges() {
        assert!(Fabric::parse_seconds(1).is_err());
        assert_eq!(Fabric::parse_seconds(2), Ok(2));
        assert_eq!(Fabric::parse_seconds(300), Ok(300));
        assert!(Fabric::parse_seconds(301).is_err());
        assert!(Fabric::parse_min_pct(0).is_err());
        assert_eq!(Fabric::parse_min_pct(100), Ok(100));
        assert!(Fabric::parse_min_pct(101).is_err());
        assert!(Health::parse_interval(4).is_err());
        assert_eq!(Health::parse_interval(3600), Ok(3600));
        assert!(Health::parse_interval(3601).is_err());
        assert!(Health::parse_drift(-1).is_err());
        assert_eq!(ArpSysctls::parse("SET"), Ok(ArpSysctls::Set));
        assert!(ArpSysctls::parse("on").is_err());
    }
}
