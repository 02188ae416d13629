//! The QoS values of the RoCE profile: each a small type whose constructor enforces the range of
//! the plan format (`docs/plan-format.md`), so a value outside it cannot exist.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

/// Declares a bounded integer newtype with `parse`, `get` and `Display`.
macro_rules! bounded {
    ($(#[$doc:meta])* $name:ident: $int:ty, $min:expr, $max:expr, $what:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name($int);

        impl $name {
            /// The smallest allowed value.
            pub const MIN: $int = $min;
            /// The largest allowed value.
            pub const MAX: $int = $max;

            /// Checks the range.
            pub fn new(value: i64) -> Result<Self, String> {
                <$int>::try_from(value)
                    .ok()
                    .filter(|v| (Self::MIN..=Self::MAX).contains(v))
                    .map(Self)
                    .ok_or_else(|| format!("is not {} ({} to {})", $what, Self::MIN, Self::MAX))
            }

            /// The value.
            pub fn get(self) -> $int {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

bounded!(
    /// A DSCP code point.
    Dscp: u8, 0, 63, "a DSCP value"
);
bounded!(
    /// An 802.1p priority.
    Priority: u8, 0, 7, "a priority"
);
bounded!(
    /// The two ECN bits of the ToS byte (2 = ECT(0)).
    EcnBits: u8, 0, 3, "an ECN value"
);
bounded!(
    /// The IP ToS byte (DSCP << 2 | ECN).
    Tos: u8, 0, 255, "a ToS value"
);
bounded!(
    /// An Ethernet MTU for a RoCE port.
    Mtu: u16, 1280, 9216, "an MTU"
);

impl Tos {
    /// The ToS that carries this DSCP and these ECN bits.
    pub fn from_parts(dscp: Dscp, ecn: EcnBits) -> Self {
        Self((dscp.get() << 2) | ecn.get())
    }
}

/// A set of priorities (PFC or ECN); empty means the feature is off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Priorities(BTreeSet<Priority>);

impl Priorities {
    /// Just one priority.
    pub fn single(p: Priority) -> Self {
        Self(BTreeSet::from([p]))
    }

    /// Parses `3`, `3,4` or `none` (also an empty list).
    pub fn parse(s: &str) -> Result<Self, String> {
        const WHY: &str = "is not a list of priorities 0 to 7 (like `3` or `3,4`, or `none`)";
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(Self::default());
        }
        let mut set = BTreeSet::new();
        for part in s
            .split([',', '，', ';', ' '])
            .filter(|p| !p.trim().is_empty())
        {
            let n: i64 = crate::plan::model::parse_integer(part.trim()).ok_or(WHY)?;
            set.insert(Priority::new(n).map_err(|_| WHY.to_string())?);
        }
        if set.is_empty() {
            return Err(WHY.into());
        }
        Ok(Self(set))
    }

    /// True when the feature is on for `p`.
    pub fn contains(&self, p: Priority) -> bool {
        self.0.contains(&p)
    }

    /// True when the feature is off altogether.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The priorities, in order.
    pub fn iter(&self) -> impl Iterator<Item = Priority> + '_ {
        self.0.iter().copied()
    }
}

/// Which header field the NIC classifies received traffic by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The IP DSCP field (the RoCE v2 default).
    Dscp,
    /// The VLAN PCP bits.
    Pcp,
}

/// The RDMA-CM default RoCE version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RoceMode {
    /// RoCE v1 (Ethernet only).
    V1,
    /// RoCE v2 (UDP/IP, routable).
    V2,
}

/// Who owns DCBX (PFC/ETS negotiation) on the RoCE ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dcbx {
    /// Precheck reports the mode and warns when the firmware (and so the switch) can override
    /// the host's PFC/ETS; nothing is changed.
    Check,
    /// Apply takes host (OS) ownership; rollback gives it back.
    Os,
    /// Neither reported nor changed.
    Leave,
}

impl Dcbx {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Os => "os",
            Self::Leave => "leave",
        }
    }

    /// Parses `check`, `os` or `leave`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "check" => Ok(Self::Check),
            "os" => Ok(Self::Os),
            "leave" => Ok(Self::Leave),
            _ => Err("is not a DCBX choice (`check`, `os` or `leave`)".into()),
        }
    }
}

/// Whether roce-gen reads or writes the NICs' firmware (NV) configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FirmwareConfig {
    /// Precheck records the RoCE-related NV values and warns where one contradicts the plan.
    #[default]
    Report,
    /// Apply also sets those that contradict the plan (effective after a reboot).
    Apply,
    /// No firmware access.
    Off,
}

impl FirmwareConfig {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Report => "report",
            Self::Apply => "apply",
            Self::Off => "off",
        }
    }

    /// Parses `report`, `apply` or `off`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "report" => Ok(Self::Report),
            "apply" => Ok(Self::Apply),
            "off" => Ok(Self::Off),
            _ => Err("is not a firmware_config choice (`report`, `apply` or `off`)".into()),
        }
    }

    /// Whether this is the default (left out of the normalized plan, so that a plan without
    /// the key keeps its identity).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a DCQCN parameter lives in the OFED `ecn/` sysfs tree of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DcqcnPoint {
    /// The reaction point (the sender that slows down): `ecn/roce_rp/`.
    Rp,
    /// The notification point (the receiver that sends CNPs): `ecn/roce_np/`.
    Np,
}

impl DcqcnPoint {
    /// The folder under `ecn/`.
    pub(crate) fn dir(self) -> &'static str {
        match self {
            Self::Rp => "roce_rp",
            Self::Np => "roce_np",
        }
    }
}

/// One DCQCN parameter the plan may set: its file name, where it lives and its largest value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DcqcnParam {
    /// The file name, and the plan key after `dcqcn_`.
    pub name: &'static str,
    /// `roce_rp` or `roce_np`.
    pub point: DcqcnPoint,
    /// The largest value: the driver keeps as many bits as the firmware field has (1 for the
    /// clamp flags) and prints the 32-bit ones as signed, so larger values would not read back.
    pub max: u32,
}

const fn rp(name: &'static str) -> DcqcnParam {
    DcqcnParam {
        name,
        point: DcqcnPoint::Rp,
        max: i32::MAX as u32,
    }
}

const fn flag(name: &'static str) -> DcqcnParam {
    DcqcnParam {
        name,
        point: DcqcnPoint::Rp,
        max: 1,
    }
}

/// Every DCQCN parameter the plan may set: the files of the OFED `ecn/roce_rp/` tree and the
/// notification point's `min_time_between_cnps` (OFED en_ecn.c; the fields of mlx5_ifc.h's
/// `cong_control_r_roce_ecn_rp/np`). CNP DSCP and priority have keys of their own.
pub(crate) const DCQCN_PARAMS: [DcqcnParam; 17] = [
    flag("clamp_tgt_rate"),
    flag("clamp_tgt_rate_after_time_inc"),
    rp("dce_tcp_g"),
    rp("dce_tcp_rtt"),
    rp("initial_alpha_value"),
    rp("rate_reduce_monitor_period"),
    rp("rate_to_set_on_first_cnp"),
    rp("rpg_ai_rate"),
    rp("rpg_byte_reset"),
    rp("rpg_gd"),
    rp("rpg_hai_rate"),
    rp("rpg_max_rate"),
    rp("rpg_min_dec_fac"),
    rp("rpg_min_rate"),
    rp("rpg_threshold"),
    rp("rpg_time_reset"),
    DcqcnParam {
        name: "min_time_between_cnps",
        point: DcqcnPoint::Np,
        max: i32::MAX as u32,
    },
];

/// The DCQCN parameter called `name`, if the plan may set it.
pub(crate) fn dcqcn_param(name: &str) -> Option<&'static DcqcnParam> {
    DCQCN_PARAMS.iter().find(|p| p.name == name)
}

/// An on/off switch that the plan spells as `on`/`off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl Trust {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dscp => "dscp",
            Self::Pcp => "pcp",
        }
    }

    /// Parses `dscp` or `pcp`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "dscp" => Ok(Self::Dscp),
            "pcp" => Ok(Self::Pcp),
            _ => Err("is not a trust mode (`dscp` or `pcp`)".into()),
        }
    }
}

impl OnOff {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

impl RoceMode {
    /// Parses `v2` or `v1` (also `2`, `1`, `RoCE v2`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let folded = s.to_ascii_lowercase().replace([' ', '_', '-'], "");
        match folded.trim_start_matches("roce") {
            "v2" | "2" => Ok(Self::V2),
            "v1" | "1" => Ok(Self::V1),
            _ => Err("is not a RoCE mode (`v2` or `v1`)".into()),
        }
    }
}

/// Parses the boolean spellings of the plan format: `yes/no`, `true/false`, `on/off`, `1/0`,
/// `是/否`, `开启/关闭`, `启用/禁用` (and `y/n`, `开/关`).
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_lowercase().as_str() {
        "yes" | "true" | "on" | "1" | "是" | "y" | "开启" | "启用" | "开" => Ok(true),
        "no" | "false" | "off" | "0" | "否" | "n" | "关闭" | "禁用" | "关" => Ok(false),
        _ => Err(
            "is not yes or no (`yes/no`, `true/false`, `on/off`, `1/0`, `是/否`, `开启/关闭`, `启用/禁用`)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_enforced() {
        assert!(Dscp::new(63).is_ok());
        assert_eq!(Dscp::new(64), Err("is not a DSCP value (0 to 63)".into()));
        assert!(Priority::new(-1).is_err());
        assert!(Mtu::new(1279).is_err());
        assert!(Mtu::new(9216).is_ok());
        assert!(Mtu::new(i64::MAX).is_err());
    }

    #[test]
    fn tos_is_dscp_shifted_plus_ecn() {
        let tos = Tos::from_parts(Dscp::new(26).unwrap(), EcnBits::new(2).unwrap());
        assert_eq!(tos.get(), 106);
    }

    #[test]
    fn priority_lists() {
        let p = Priorities::parse("3, 4").unwrap();
        assert_eq!(p.iter().map(Priority::get).collect::<Vec<_>>(), vec![3, 4]);
        assert!(Priorities::parse("NONE").unwrap().is_empty());
        assert!(Priorities::parse("8").is_err());
        assert!(Priorities::parse("3,x").is_err());
        assert!(Priorities::parse("").is_err());
    }

    #[test]
    fn enums_and_booleans() {
        assert_eq!(RoceMode::parse("RoCE v2"), Ok(RoceMode::V2));
        assert_eq!(Trust::parse("DSCP"), Ok(Trust::Dscp));
        assert!(Trust::parse("l2").is_err());
        assert_eq!(parse_bool("是"), Ok(true));
        assert_eq!(parse_bool("开启"), Ok(true));
        assert_eq!(parse_bool("启用"), Ok(true));
        assert_eq!(parse_bool("关闭"), Ok(false));
        assert_eq!(parse_bool(" 禁用 "), Ok(false));
        assert_eq!(parse_bool("Off"), Ok(false));
        assert!(parse_bool("maybe").is_err());
    }
}
