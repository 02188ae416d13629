//! Names that end up in file names, unit names and shell commands: each a newtype that can only
//! be built from a value inside a tight character set.

use std::fmt;

use serde::Serialize;

/// Declares a string newtype with `as_str`, `Display` and transparent serialization.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name_type!(
    /// A cluster name: `[A-Za-z0-9][A-Za-z0-9._-]{0,62}`; it names the install folder and unit.
    ClusterName
);
name_type!(
    /// An RFC 1123 host name (labels of letters, digits and inner hyphens), 232 characters at most.
    HostName
);
name_type!(
    /// An RDMA device name such as `mlx5_0`: `[A-Za-z0-9_]{1,31}`.
    IbDev
);
name_type!(
    /// A Linux interface name: `[A-Za-z0-9_.-]{1,15}`, not `.` or `..`, not starting with `-`.
    IfName
);
name_type!(
    /// Free text for reports (group, switch, switch port): printable, 128 characters at most.
    Label
);
name_type!(
    /// A dotted version such as `24.10` or `28.39.1002`.
    Version
);

fn all_chars(s: &str, ok: impl Fn(char) -> bool) -> bool {
    s.chars().all(ok)
}

impl ClusterName {
    /// Checks a cluster name.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut chars = s.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
        let rest_ok = all_chars(chars.as_str(), |c| {
            c.is_ascii_alphanumeric() || "._-".contains(c)
        });
        if first_ok && rest_ok && s.len() <= 63 {
            Ok(Self(s.to_string()))
        } else {
            Err("is not a cluster name (a letter or digit, then up to 62 letters, digits, `.`, `_` or `-`)".into())
        }
    }
}

/// The longest host name whose files fit: the longest file named after a host,
/// `roce-gen.HOST.rollback.json` (23 bytes besides the name), within a file name's 255 bytes.
/// (Linux keeps 64 characters of a host name; the plan may hold the FQDN, whose first label the
/// scripts also compare.)
const MAX_HOST_NAME: usize = 255 - 23;

impl HostName {
    /// Checks an RFC 1123 host name.
    pub fn parse(s: &str) -> Result<Self, String> {
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && all_chars(l, |c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if s.len() > MAX_HOST_NAME {
            Err(format!(
                "is {} characters long: files are named after a host \
                 (roce-gen.HOST.rollback.json) and a file name has at most 255 bytes, so a host \
                 name has at most {MAX_HOST_NAME}",
                s.chars().count()
            ))
        } else if !s.is_empty() && s.split('.').all(label_ok) {
            Ok(Self(s.to_string()))
        } else {
            Err("is not an RFC 1123 host name (letters, digits and inner hyphens, labels separated by dots)".into())
        }
    }

    /// The name folded for uniqueness checks: host names are case-insensitive.
    pub fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

impl IbDev {
    /// Checks an RDMA device name.
    pub fn parse(s: &str) -> Result<Self, String> {
        if (1..=31).contains(&s.len()) && all_chars(s, |c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(Self(s.to_string()))
        } else {
            Err("is not an RDMA device name (1 to 31 letters, digits or `_`, like `mlx5_0`)".into())
        }
    }
}

impl IfName {
    /// Checks a Linux interface name.
    pub fn parse(s: &str) -> Result<Self, String> {
        let chars_ok = all_chars(s, |c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !((1..=15).contains(&s.len()) && chars_ok && s != "." && s != "..") {
            Err("is not a Linux interface name (1 to 15 letters, digits, `_`, `.` or `-`)".into())
        } else if s.starts_with('-') {
            // Linux allows it, but every tool the scripts give it to would take it for an option.
            Err("starts with `-`, which the tools the scripts run (ethtool, ip, mlnx_qos, lldpcli) \
                 would read as an option; rename the interface"
                .into())
        } else {
            Ok(Self(s.to_string()))
        }
    }
}

impl Label {
    /// Checks free text.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.chars().count() <= 128 && !s.chars().any(char::is_control) {
            Ok(Self(s.to_string()))
        } else {
            Err("is not a label (up to 128 characters, no control characters)".into())
        }
    }
}

impl Version {
    /// Checks a version: digits, then groups of letters or digits after `.` or `-`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let starts_with_digit = s.chars().next().is_some_and(|c| c.is_ascii_digit());
        let chars_ok = all_chars(s, |c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        let no_empty_group = s.split(['.', '-']).all(|g| !g.is_empty());
        if starts_with_digit && chars_ok && no_empty_group && s.len() <= 32 {
            Ok(Self(s.to_string()))
        } else {
            Err("is not a version (digits and dots, like `24.10` or `28.39.1002`)".into())
        }
    }

    /// A version as `ofed_info -s` prints it too (`MLNX_OFED_LINUX-24.10-1.1.4.0`,
    /// `OFED-internal-24.10-…`, `DOCA 2.9.0`): the name before the first digit is dropped and
    /// the version kept.
    pub fn parse_ofed(s: &str) -> Result<Self, String> {
        let start = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
        let (name, version) = s.split_at(start);
        if name
            .chars()
            .all(|c| c.is_ascii_alphabetic() || "_- ".contains(c))
        {
            Self::parse(version.trim_end_matches(':'))
        } else {
            Self::parse(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        for ok in ["gpu-001", "GPU-Server01", "a", "node1.dc1.example", "0gpu"] {
            assert!(HostName::parse(ok).is_ok(), "{ok}");
        }
        let long_label = "a".repeat(64);
        for bad in [
            "",
            "-gpu",
            "gpu-",
            "gpu_01",
            "gpu 01",
            "a..b",
            "$(reboot)",
            &long_label,
            "gpu;rm",
        ] {
            assert!(HostName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_and_interface_names() {
        assert!(IbDev::parse("mlx5_10").is_ok());
        assert!(IbDev::parse("mlx5-0").is_err());
        assert!(IbDev::parse(&"m".repeat(32)).is_err());
        assert!(IfName::parse("ens1f0np0").is_ok());
        assert!(IfName::parse("bond0.100").is_ok());
        assert!(IfName::parse("ens1f0np0abcdefg").is_err()); // 16 characters
        assert!(IfName::parse("..").is_err());
        assert!(IfName::parse("eth0'").is_err());
        for option in ["-h", "--help", "-"] {
            let err = IfName::parse(option).unwrap_err();
            assert!(err.starts_with("starts with `-`"), "{option}: {err}");
        }
        assert!(IfName::parse("eth-0").is_ok());
    }

    #[test]
    fn cluster_names_and_versions() {
        assert!(ClusterName::parse("demo.a-1_b").is_ok());
        assert!(ClusterName::parse(".demo").is_err());
        assert!(ClusterName::parse(&"a".repeat(64)).is_err());
        assert!(Version::parse("23.10-1.1.9.0").is_ok());
        assert!(Version::parse("28.39.1002").is_ok());
        assert!(Version::parse("v28").is_err());
        assert!(Version::parse("28..1").is_err());
        assert!(Label::parse("leaf-1 Eth1/7").is_ok());
        assert!(Label::parse("a\nb").is_err());
    }
}
