//! Rules across the whole cluster: every host has a NIC, no address is used twice, and the
//! consistency warnings (NIC counts, one subnet and one MTU per rail, NCCL device-name prefixes).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;

use crate::plan::diagnostic::{Diagnostic, Report, quoted};
use crate::plan::location::Location;
use crate::plan::validate::hosts::{NicRow, ServerRow};

/// Every host has at least one NIC; reported at the host's name. A repeated host row (already
/// an error) is not reported again: its NICs are counted for the first row of that name.
pub(crate) fn hosts_have_nics(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let with_nics: std::collections::HashSet<usize> = nics.iter().filter_map(|n| n.host).collect();
    let mut seen = std::collections::HashSet::new();
    for (i, server) in servers.iter().enumerate() {
        let first = server.key.as_ref().is_none_or(|k| seen.insert(k));
        if let Some(name) = &server.hostname
            && first
            && !with_nics.contains(&i)
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

/// Hosts whose NIC count differs from the usual one.
pub(crate) fn nic_counts(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut counts = vec![0usize; servers.len()];
    for host in nics.iter().filter_map(|n| n.host) {
        counts[host] += 1;
    }
    let named: Vec<(&ServerRow, usize)> = servers
        .iter()
        .zip(counts)
        .filter(|(s, c)| s.hostname.is_some() && *c > 0)
        .collect();
    match spread(named.iter().map(|(_, c)| *c)) {
        Spread::Same => {}
        Spread::Majority(usual) => {
            for (server, count) in named.iter().filter(|(_, c)| *c != usual) {
                report.push(Diagnostic::warning(
                    server.hostname_at.clone(),
                    format!(
                        "host {} has {count} NIC{}; most hosts have {usual}",
                        host_name(server),
                        if *count == 1 { "" } else { "s" }
                    ),
                ));
            }
        }
        Spread::Split(groups) => report.push(Diagnostic::warning(
            named[0].0.hostname_at.clone(),
            format!(
                "hosts have different NIC counts: {}",
                describe(&groups, "NICs", "host")
            ),
        )),
    }
}

/// Ports of one rail should share one subnet and one MTU; the odd ones out are named. A rail
/// on one host only is a note: the fabric test pairs hosts within a rail.
pub(crate) fn rails_consistent(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut rails: BTreeMap<u32, Vec<&NicRow>> = BTreeMap::new();
    for nic in nics {
        if let Some(rail) = nic.rail {
            rails.entry(rail).or_default().push(nic);
        }
    }
    let host_of = |n: &NicRow| {
        n.host
            .and_then(|h| servers[h].hostname.as_ref())
            .map_or("?", |h| h.as_str())
    };
    let port = |n: &NicRow| {
        format!(
            "{} of {}",
            n.ib_dev.as_ref().map_or("?", |d| d.as_str()),
            host_of(n)
        )
    };
    for (rail, ports) in rails {
        let hosts: std::collections::BTreeSet<usize> =
            ports.iter().filter_map(|n| n.host).collect();
        if hosts.len() == 1 {
            report.push(Diagnostic::note(
                ports[0].ib_dev_at.clone(),
                format!(
                    "rail {rail} has ports on one host only ({}): the fabric test has no pair for it",
                    host_of(ports[0])
                ),
            ));
        }
        let with_ip: Vec<(&NicRow, IpNet)> = ports
            .iter()
            .filter_map(|n| Some((*n, n.ip?.trunc())))
            .collect();
        match spread(with_ip.iter().map(|(_, net)| *net)) {
            Spread::Same => {}
            Spread::Majority(usual) => {
                for (n, net) in with_ip.iter().filter(|(_, net)| *net != usual) {
                    report.push(Diagnostic::warning(
                        n.ip_at.clone(),
                        format!("rail {rail}: port {} is in {net}; most ports of the rail are in {usual}", port(n)),
                    ));
                }
            }
            Spread::Split(groups) => report.push(Diagnostic::warning(
                with_ip[0].0.ip_at.clone(),
                format!(
                    "rail {rail}: ports are in different subnets: {}",
                    describe(&groups, "", "port")
                ),
            )),
        }
        let mtu_at = |n: &NicRow| n.mtu_at.clone().unwrap_or_else(|| n.ip_at.clone());
        match spread(ports.iter().map(|n| n.mtu)) {
            Spread::Same => {}
            Spread::Majority(usual) => {
                for n in ports.iter().filter(|n| n.mtu != usual) {
                    report.push(Diagnostic::warning(
                        mtu_at(n),
                        format!(
                            "rail {rail}: port {} has MTU {}; most ports of the rail have {usual}",
                            port(n),
                            n.mtu
                        ),
                    ));
                }
            }
            Spread::Split(groups) => report.push(Diagnostic::warning(
                mtu_at(ports[0]),
                format!(
                    "rail {rail}: ports have different MTUs: {}",
                    describe(&groups, "", "port")
                ),
            )),
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
                .map(crate::plan::model::IbDev::as_str)
                .collect();
            if !longer.is_empty() {
                report.push(Diagnostic::warning(
                    short.ib_dev_at.clone(),
                    format!(
                        "ib_dev {} on host {} is a prefix of {}: NCCL_IB_HCA={s} also selects {}; \
                         a leading `=` makes NCCL match exactly (NCCL_IB_HCA=={s},...)",
                        quoted(s.as_str()),
                        quoted(host),
                        longer.join(", "),
                        longer.join(", "),
                    ),
                ));
            }
        }
    }
}

/// How a set of values that should agree is spread.
#[derive(Debug, PartialEq)]
enum Spread<T> {
    /// All equal (or none at all).
    Same,
    /// One value is more common than any other: the odd ones out can be named.
    Majority(T),
    /// Several values tie for the most common: each value with its count.
    Split(Vec<(T, usize)>),
}

fn spread<T: Ord + Clone>(values: impl Iterator<Item = T>) -> Spread<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let best = counts.values().copied().max().unwrap_or(0);
    let top: Vec<&T> = counts
        .iter()
        .filter(|(_, c)| **c == best)
        .map(|(v, _)| v)
        .collect();
    match (counts.len(), top.as_slice()) {
        (0 | 1, _) => Spread::Same,
        (_, [one]) => Spread::Majority((*one).clone()),
        _ => Spread::Split(counts.into_iter().collect()),
    }
}

/// `2 NICs (1 host), 3 NICs (1 host)`.
fn describe<T: std::fmt::Display>(groups: &[(T, usize)], unit: &str, what: &str) -> String {
    let parts: Vec<String> = groups
        .iter()
        .map(|(v, n)| {
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            format!("{v}{unit} ({n} {what}{})", if *n == 1 { "" } else { "s" })
        })
        .collect();
    parts.join(", ")
}

fn host_name(server: &ServerRow) -> String {
    quoted(server.hostname.as_ref().map_or("?", |h| h.as_str()))
}

/// The GPU column across a host (format v1.3): one GPU is served by one port of its host (an
/// error at the second), and a host whose planned ports name a GPU for some and not for others is
/// a warning (NCCL would pair the unnamed ports with GPUs nobody checked).
pub(crate) fn gpus_per_host(servers: &[ServerRow], nics: &[NicRow], report: &mut Report) {
    let mut first: HashMap<(usize, &crate::plan::model::Gpu), &Location> = HashMap::new();
    let mut named: BTreeMap<usize, (usize, usize, Option<&Location>)> = BTreeMap::new();
    for n in nics {
        let Some(h) = n.host else { continue };
        let entry = named.entry(h).or_insert((0, 0, None));
        let (Some(gpus), Some(at)) = (&n.gpu, &n.gpu_at) else {
            entry.1 += 1;
            continue;
        };
        entry.0 += 1;
        entry.2.get_or_insert(at);
        for g in &gpus.0 {
            if let Some(was) = first.get(&(h, g)) {
                report.push(Diagnostic::error(
                    at.clone(),
                    format!(
                        "{g} is already served by another port of {} (at {was}): a GPU is served by one port of its host",
                        servers.get(h).map_or_else(|| "the host".to_string(), host_name)
                    ),
                ));
            } else {
                first.insert((h, g), at);
            }
        }
    }
    for (h, (with, without, at)) in named {
        if let (true, true, Some(at)) = (with > 0, without > 0, at) {
            report.push(Diagnostic::warning(
                at.clone(),
                format!(
                    "{} names a GPU for {with} of its {} planned ports: the GPU path of the others is not checked (give each port its GPU)",
                    servers.get(h).map_or_else(|| "the host".to_string(), host_name),
                    with + without
                ),
            ));
        }
    }
}

/// `pcie_acs = disable` or `gpu_direct = require` in a plan whose NIC rows name no GPU: nothing to
/// act on (a warning at the sheet: the keys' rows are not kept past the profile).
pub(crate) fn gpu_keys_without_gpu(
    c: &crate::plan::model::Cluster,
    has_gpu: bool,
    table: &crate::plan::input::raw::Table,
    report: &mut Report,
) {
    use crate::plan::model::{GpuDirect, PcieAcs};
    if has_gpu {
        return;
    }
    for (on, key) in [
        (
            c.gpu_path.pcie_acs == PcieAcs::Disable,
            "pcie_acs = disable",
        ),
        (
            c.gpu_path.gpu_direct == Some(GpuDirect::Require),
            "gpu_direct = require",
        ),
    ] {
        if on {
            report.push(Diagnostic::warning(
                table.location.clone(),
                format!("{key}, but no NIC row names a GPU (column gpu): nothing to act on"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Spread, spread};

    #[test]
    fn spread_finds_majorities_and_ties() {
        assert_eq!(spread([8, 8, 7].into_iter()), Spread::Majority(8));
        assert_eq!(
            spread([8, 7].into_iter()),
            Spread::Split(vec![(7, 1), (8, 1)])
        );
        assert_eq!(spread([8, 8].into_iter()), Spread::Same);
        assert_eq!(spread(std::iter::empty::<u8>()), Spread::Same);
    }
}
