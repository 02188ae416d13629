//! Rules across the whole cluster: every host has a NIC, no address is used twice, and the
//! consistency warnings (NIC counts, one subnet and one MTU per rail, NCCL device-name prefixes).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use crate::diagnostic::{Diagnostic, Report, quoted};
use crate::location::Location;
use crate::validate::hosts::{NicRow, ServerRow};

/// Every host has at least one NIC; reported at the host's name.
pub(crate) fn hosts_have_nics(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    for (i, server) in servers.iter().enumerate() {
        if let Some(name) = &server.hostname
            && !nics.iter().any(|n| n.host == Some(i))
        {
            report.push(Diagnostic::error(
                server.hostname_at.clone(),
                format!(
                    "host {} has no NIC in the NICs sheet",
                    quoted(name.as_str())
                ),
            ));
        }
    }
}

/// No address is used twice across management, BMC and RoCE addresses.
pub(crate) fn addresses_unique(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut seen: HashMap<IpAddr, Location> = HashMap::new();
    let mut claim = |addr: IpAddr, column: &str, at: &Location, report: &mut Report| {
        if let Some(first) = seen.get(&addr) {
            report.push(Diagnostic::error(
                at.clone(),
                format!("{column} address {addr} is already used at {first}"),
            ));
        } else {
            seen.insert(addr, at.clone());
        }
    };
    for s in servers {
        if let (Some(addr), Some(at)) = (s.mgmt_ip, &s.mgmt_ip_at) {
            claim(addr, "mgmt_ip", at, report);
        }
        if let (Some(addr), Some(at)) = (s.bmc_ip, &s.bmc_ip_at) {
            claim(addr, "bmc_ip", at, report);
        }
    }
    for n in nics {
        if let Some(net) = n.ip {
            claim(net.addr(), "ip", &n.ip_at, report);
        }
    }
}

/// Hosts whose NIC count differs from the most common count.
pub(crate) fn nic_counts(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut counts = vec![0usize; servers.len()];
    for host in nics.iter().filter_map(|n| n.host) {
        counts[host] += 1;
    }
    let Some(usual) = most_common(counts.iter().copied().filter(|&c| c > 0)) else {
        return;
    };
    for (server, &count) in servers.iter().zip(&counts) {
        if let (Some(name), true) = (&server.hostname, count > 0 && count != usual) {
            report.push(Diagnostic::warning(
                server.hostname_at.clone(),
                format!(
                    "host {} has {count} NICs; most hosts have {usual}",
                    quoted(name.as_str())
                ),
            ));
        }
    }
}

/// Ports of one rail should share one subnet and one MTU; the odd ones out are named.
pub(crate) fn rails_consistent(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut rails: BTreeMap<u32, Vec<&NicRow>> = BTreeMap::new();
    for nic in nics {
        if let Some(rail) = nic.rail {
            rails.entry(rail).or_default().push(nic);
        }
    }
    let port = |n: &NicRow| {
        let host = n
            .host
            .and_then(|h| servers[h].hostname.as_ref())
            .map_or("?", |h| h.as_str());
        format!(
            "{} of {host}",
            n.ib_dev.as_ref().map_or("?", |d| d.as_str())
        )
    };
    for (rail, ports) in rails {
        if let Some(usual) = most_common(ports.iter().filter_map(|n| n.ip.map(|ip| ip.trunc()))) {
            for n in &ports {
                if let Some(net) = n.ip.map(|ip| ip.trunc()).filter(|net| *net != usual) {
                    report.push(Diagnostic::warning(
                        n.ip_at.clone(),
                        format!("rail {rail}: port {} is in {net}; most ports of the rail are in {usual}", port(n)),
                    ));
                }
            }
        }
        if let Some(usual) = most_common(ports.iter().map(|n| n.mtu)) {
            for n in ports.iter().filter(|n| n.mtu != usual) {
                report.push(Diagnostic::warning(
                    n.mtu_at.clone().unwrap_or_else(|| n.ip_at.clone()),
                    format!(
                        "rail {rail}: port {} has MTU {}; most ports of the rail have {usual}",
                        port(n),
                        n.mtu
                    ),
                ));
            }
        }
    }
}

/// `mlx5_1` and `mlx5_10` on one host: `NCCL_IB_HCA=mlx5_1` selects both by prefix.
pub(crate) fn device_prefixes(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut by_host: BTreeMap<usize, Vec<&NicRow>> = BTreeMap::new();
    for nic in nics {
        if let Some(h) = nic.host {
            by_host.entry(h).or_default().push(nic);
        }
    }
    for (h, ports) in by_host {
        let host = servers[h].hostname.as_ref().map_or("?", |n| n.as_str());
        for short in &ports {
            let Some(s) = &short.ib_dev else { continue };
            let longer: Vec<&str> = ports
                .iter()
                .filter_map(|n| n.ib_dev.as_ref())
                .filter(|l| l.as_str() != s.as_str() && l.as_str().starts_with(s.as_str()))
                .map(crate::model::IbDev::as_str)
                .collect();
            if !longer.is_empty() {
                report.push(Diagnostic::warning(
                    short.ib_dev_at.clone(),
                    format!(
                        "ib_dev {} on host {} is a prefix of {}: NCCL_IB_HCA={s} also selects {}; \
                         write NCCL_IB_HCA==... for exact matches",
                        quoted(s.as_str()),
                        quoted(host),
                        longer.join(", "),
                        if longer.len() == 1 { "it" } else { "them" },
                    ),
                ));
            }
        }
    }
}

/// The most frequent value; on a tie, the smallest (so the result does not depend on order).
fn most_common<T: Ord>(values: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts.into_iter().find(|(_, c)| *c == best).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn most_common_breaks_ties_by_value() {
        assert_eq!(super::most_common([8, 7, 7, 8].into_iter()), Some(7));
        assert_eq!(super::most_common([8, 8, 7].into_iter()), Some(8));
        assert_eq!(super::most_common(std::iter::empty::<u8>()), None);
    }
}
