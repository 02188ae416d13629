//! Addresses: PCI bus addresses, MAC addresses, and the prefix/netmask forms of the plan.
//! IP addresses and networks themselves are `std::net` and `ipnet` types.

use std::fmt;
use std::net::Ipv4Addr;

use serde::Serialize;

/// A PCI address, normalized to `dddd:bb:dd.f` in lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PciAddr(String);

impl PciAddr {
    /// Parses `dddd:bb:dd.f` or `bb:dd.f` (domain 0000 assumed).
    pub fn parse(s: &str) -> Result<Self, String> {
        const WHY: &str = "is not a PCI address (`dddd:bb:dd.f` or `bb:dd.f`, hex)";
        let hex = |p: &str, len: usize| p.len() == len && p.chars().all(|c| c.is_ascii_hexdigit());
        let parts: Vec<&str> = s.split(':').collect();
        let (domain, bus, devfn) = match parts.as_slice() {
            [d, b, df] => (*d, *b, *df),
            [b, df] => ("0000", *b, *df),
            _ => return Err(WHY.into()),
        };
        let Some((dev, func)) = devfn.split_once('.') else {
            return Err(WHY.into());
        };
        let in_range = u8::from_str_radix(dev, 16).is_ok_and(|d| d <= 0x1f)
            && func.len() == 1
            && func.chars().all(|c| ('0'..='7').contains(&c));
        if hex(domain, 4) && hex(bus, 2) && hex(dev, 2) && in_range {
            Ok(Self(
                format!("{domain}:{bus}:{dev}.{func}").to_ascii_lowercase(),
            ))
        } else {
            Err(WHY.into())
        }
    }

    /// The normalized address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A MAC address, normalized to `aa:bb:cc:dd:ee:ff` in lowercase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct MacAddr(String);

impl MacAddr {
    /// Parses six hex octets separated by `:` (or `-`, as Windows tools print them).
    pub fn parse(s: &str) -> Result<Self, String> {
        let octets: Vec<&str> = s.split([':', '-']).collect();
        let ok = octets.len() == 6
            && octets
                .iter()
                .all(|o| o.len() == 2 && o.chars().all(|c| c.is_ascii_hexdigit()));
        if ok {
            Ok(Self(octets.join(":").to_ascii_lowercase()))
        } else {
            Err("is not a MAC address (`aa:bb:cc:dd:ee:ff`)".into())
        }
    }

    /// The normalized address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses a prefix length (`24`) or, for IPv4, a dotted netmask (`255.255.255.0`).
pub(crate) fn parse_prefix(s: &str, ipv4: bool) -> Result<u8, String> {
    let max = if ipv4 { 32 } else { 128 };
    if let Ok(len) = s.parse::<u8>() {
        return if len <= max {
            Ok(len)
        } else {
            Err(format!("is not a prefix length (0 to {max})"))
        };
    }
    if ipv4 && let Ok(mask) = s.parse::<Ipv4Addr>() {
        return ipnet::ipv4_mask_to_prefix(mask)
            .map_err(|_| "is not a contiguous netmask (like `255.255.255.0`)".to_string());
    }
    Err(format!(
        "is not a prefix length (0 to {max}){}",
        if ipv4 { " or a dotted netmask" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_normalize() {
        assert_eq!(
            PciAddr::parse("0000:3B:00.0").unwrap().as_str(),
            "0000:3b:00.0"
        );
        assert_eq!(PciAddr::parse("3b:00.1").unwrap().as_str(), "0000:3b:00.1");
        for bad in [
            "3b:00",
            "3b:20.0",
            "3b:00.8",
            "0:3b:00.0",
            "zz:00.0",
            "",
            "3b:00.0;id",
        ] {
            assert!(PciAddr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mac_addresses_normalize() {
        assert_eq!(
            MacAddr::parse("B8-CE-F6-00-00-01").unwrap().as_str(),
            "b8:ce:f6:00:00:01"
        );
        assert!(MacAddr::parse("b8:ce:f6:00:00").is_err());
        assert!(MacAddr::parse("b8:ce:f6:00:00:0g").is_err());
    }

    #[test]
    fn prefixes_and_netmasks() {
        assert_eq!(parse_prefix("24", true), Ok(24));
        assert_eq!(parse_prefix("255.255.255.0", true), Ok(24));
        assert_eq!(parse_prefix("255.255.255.254", true), Ok(31));
        assert!(parse_prefix("255.0.255.0", true).is_err());
        assert!(parse_prefix("33", true).is_err());
        assert_eq!(parse_prefix("64", false), Ok(64));
        assert!(parse_prefix("255.255.255.0", false).is_err());
    }
}
