//! The `Servers` and `NICs` sheets: rows become hosts and ports, each value checked, with the
//! rules that need only one row or one host (unique names, address with prefix, gateway in
//! subnet, a NIC's host exists). Rules across the cluster are in `cross`.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::IpAddr;

use ipnet::IpNet;
use rayon::prelude::*;

use crate::plan::diagnostic::{Diagnostic, Report, quoted};
use crate::plan::input::raw::{Row, Table};
use crate::plan::location::Location;
use crate::plan::model::{
    Gpus, HostName, IbDev, IfName, Label, MacAddr, Mtu, PciAddr, parse_prefix,
};
use crate::plan::validate::cells::RowReader;

/// A `Servers` row as far as it parsed.
#[derive(Debug)]
pub(crate) struct ServerRow {
    /// The host name as written, folded: NIC rows find their host by it even when the name
    /// itself is invalid (reported once, on the server row).
    pub(crate) key: Option<String>,
    pub(crate) hostname: Option<HostName>,
    pub(crate) mgmt_ip: Option<IpAddr>,
    pub(crate) bmc_ip: Option<IpAddr>,
    pub(crate) group: Option<Label>,
    pub(crate) hostname_at: Location,
    pub(crate) mgmt_ip_at: Option<Location>,
    pub(crate) bmc_ip_at: Option<Location>,
}

/// A `NICs` row as far as it parsed; `host` indexes the server rows.
#[derive(Debug)]
pub(crate) struct NicRow {
    pub(crate) host: Option<usize>,
    /// The host name as written when no server row has it (reported once per name, for all
    /// the rows that use it).
    pub(crate) unknown_host: Option<String>,
    pub(crate) ib_dev: Option<IbDev>,
    pub(crate) netdev: Option<IfName>,
    pub(crate) ip: Option<IpNet>,
    pub(crate) gateway: Option<IpAddr>,
    pub(crate) mtu: Mtu,
    pub(crate) rail: Option<u32>,
    pub(crate) pci: Option<PciAddr>,
    pub(crate) mac: Option<MacAddr>,
    pub(crate) switch: Option<Label>,
    pub(crate) switch_port: Option<Label>,
    /// The GPUs the port serves (format v1.3), and where they are written.
    pub(crate) gpu: Option<Gpus>,
    pub(crate) gpu_at: Option<Location>,
    pub(crate) ib_dev_at: Location,
    pub(crate) ip_at: Location,
    pub(crate) mtu_at: Option<Location>,
}

/// The `Servers` rows, and the host a duplicate row was probably meant to be.
#[derive(Debug)]
pub(crate) struct Servers {
    pub(crate) rows: Vec<ServerRow>,
    /// When one row repeats a host name and the NIC rows name one host that no row has, that
    /// host (folded): the duplicate's error says so, and its NIC rows are not reported again as
    /// naming a host that is not in the sheet.
    pub(crate) meant: Option<String>,
}

/// Reads `Servers`, reporting bad values and duplicate host names. `nics` is looked at only when
/// a name is used twice, for the host that row was meant to be.
pub(crate) fn read_servers(table: &Table, nics: Option<&Table>, report: &mut Report) -> Servers {
    let mut seen: HashMap<String, Location> = HashMap::new();
    let mut rows = Vec::new();
    let mut row_reports = Vec::with_capacity(table.rows.len());
    // (row, name, where it was first)
    let mut twice: Vec<(usize, String, Location)> = Vec::new();
    for (i, row) in table.rows.iter().enumerate() {
        let mut row_report = Report::default();
        let mut r = RowReader::new(row, &mut row_report);
        let key = r.text("hostname").map(|t| t.to_lowercase());
        let hostname = r.required("hostname", HostName::parse);
        let hostname_at = r
            .location("hostname")
            .unwrap_or_else(|| table.location.clone());
        let server = ServerRow {
            mgmt_ip: r.required("mgmt_ip", parse_addr),
            bmc_ip: r.optional("bmc_ip", parse_addr),
            group: r.optional("group", Label::parse),
            mgmt_ip_at: r.location("mgmt_ip"),
            bmc_ip_at: r.location("bmc_ip"),
            key,
            hostname,
            hostname_at,
        };
        if let Some(name) = &server.hostname {
            if let Some(first) = seen.get(&name.folded()) {
                twice.push((i, name.as_str().to_string(), first.clone()));
            } else {
                seen.insert(name.folded(), server.hostname_at.clone());
            }
        }
        row_reports.push(row_report);
        rows.push(server);
    }
    let meant = match (&twice[..], nics) {
        ([_], Some(nics)) => sole_unknown_host(&rows, nics),
        _ => None,
    };
    let mut twice = twice.into_iter().peekable();
    for (i, row_report) in row_reports.into_iter().enumerate() {
        report.extend(row_report);
        if let Some((_, name, first)) = twice.next_if(|(at, _, _)| *at == i) {
            let mut message = format!(
                "hostname {} is used twice (first at {first})",
                quoted(&name)
            );
            if let Some((written, at)) = &meant {
                message.push_str(&format!(
                    "; no row has {}, and {}: is this row meant to be {}?",
                    quoted(written),
                    named_by(at),
                    quoted(written)
                ));
            }
            report.push(Diagnostic::error(rows[i].hostname_at.clone(), message));
        }
    }
    Servers {
        rows,
        meant: meant.map(|(written, _)| written.to_lowercase()),
    }
}

/// The one host name the NIC rows use that no server row has (as first written, and the cells
/// that name it), if there is exactly one.
fn sole_unknown_host(servers: &[ServerRow], nics: &Table) -> Option<(String, Vec<Location>)> {
    let known: std::collections::HashSet<&str> =
        servers.iter().filter_map(|s| s.key.as_deref()).collect();
    let mut found: Option<(String, String, Vec<Location>)> = None;
    let mut scratch = Report::default();
    for row in nics.rows.iter().filter(|r| r.owner.is_none()) {
        let Some(cell) = row.cells.get("hostname") else {
            continue;
        };
        let Some(name) = crate::plan::validate::cells::text_of(cell, "hostname", &mut scratch)
        else {
            continue;
        };
        let key = name.to_lowercase();
        if known.contains(key.as_str()) || HostName::parse(&name).is_err() {
            continue;
        }
        match &mut found {
            Some((k, _, at)) if *k == key => at.push(cell.location.clone()),
            // A second unknown name: which one the row was meant to be is a guess.
            Some(_) => return None,
            None => found = Some((key, name, vec![cell.location.clone()])),
        }
    }
    found.map(|(_, name, at)| (name, at))
}

/// `8 NIC rows name it (NICs!A6, NICs!A7, NICs!A8 and 5 more)`, or `NICs!A6 names it`.
fn named_by(at: &[impl std::fmt::Display]) -> String {
    const SHOWN: usize = 3;
    match at {
        [one] => format!("{one} names it"),
        _ => {
            let shown: Vec<String> = at.iter().take(SHOWN).map(ToString::to_string).collect();
            let more = match at.len().saturating_sub(SHOWN) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!("{} NIC rows name it ({}{more})", at.len(), shown.join(", "))
        }
    }
}

/// Reads `NICs`, linking each row to its server and reporting per-row and per-host problems.
pub(crate) fn read_nics(
    table: &Table,
    servers: Option<&Servers>,
    default_mtu: Mtu,
    report: &mut Report,
) -> Vec<NicRow> {
    let meant = servers.and_then(|s| s.meant.as_deref());
    let servers = servers.map(|s| s.rows.as_slice());
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for (i, s) in servers.unwrap_or_default().iter().enumerate() {
        if let Some(key) = &s.key {
            by_key.entry(key).or_insert(i);
        }
    }
    // Each row is read on its own, on every core (80,000 rows for 10,000 hosts); what depends on
    // the rows before it (a device named twice on one host) follows in row order, so the report
    // reads as from one pass.
    let read: Vec<(NicRow, Report)> = table
        .rows
        .par_iter()
        .map(|row| {
            let mut row_report = Report::default();
            let nic = read_nic(row, table, &by_key, servers, default_mtu, &mut row_report);
            (nic, row_report)
        })
        .collect();
    // A device named twice on one host: (host, name) → where it was first named. The keys and
    // locations borrow the rows (80,000 of them), and the rare diagnostics wait for the pass that
    // moves the rows out.
    let mut devs: HashMap<(usize, &str), &Location> = HashMap::with_capacity(read.len());
    let mut netdevs: HashMap<(usize, &str), &Location> = HashMap::with_capacity(read.len());
    let mut twice: Vec<(usize, Diagnostic)> = Vec::new();
    // A host name no server row has: (folded, as written, first row, the cells naming it).
    let mut unknown: Vec<(String, &str, usize, Vec<&Location>)> = Vec::new();
    for (i, ((nic, _), row)) in read.iter().zip(&table.rows).enumerate() {
        if let (Some(name), Some(cell)) = (&nic.unknown_host, row.cells.get("hostname")) {
            let key = name.to_lowercase();
            if meant != Some(key.as_str()) {
                match unknown.iter_mut().find(|(k, ..)| *k == key) {
                    Some((.., at)) => at.push(&cell.location),
                    None => unknown.push((key, name, i, vec![&cell.location])),
                }
            }
        }
        let Some(h) = nic.host else { continue };
        let host_name = servers
            .and_then(|s| s[h].hostname.as_ref())
            .map(HostName::as_str)
            .unwrap_or_default();
        if let Some(dev) = &nic.ib_dev {
            let at = &nic.ib_dev_at;
            if let Some(d) = unique_per_host(&mut devs, (h, dev.as_str()), at, "ib_dev", host_name)
            {
                twice.push((i, d));
            }
        }
        if let Some(dev) = &nic.netdev {
            let at = row
                .cells
                .get("netdev")
                .map_or(&nic.ib_dev_at, |c| &c.location);
            if let Some(d) =
                unique_per_host(&mut netdevs, (h, dev.as_str()), at, "netdev", host_name)
            {
                twice.push((i, d));
            }
        }
    }
    // The name's problem comes first in its row, as the row's own problems did.
    let mut unknown = unknown
        .into_iter()
        .map(|(_, name, first, at)| {
            let mut message = format!("hostname {} is not in the Servers sheet", quoted(name));
            if at.len() > 1 {
                message.push_str(&format!("; {}", named_by(&at)));
            }
            (first, Diagnostic::error(at[0].clone(), message))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    let mut twice = twice.into_iter().peekable();
    let mut rows = Vec::with_capacity(read.len());
    for (i, (nic, row_report)) in read.into_iter().enumerate() {
        if let Some((_, d)) = unknown.next_if(|(at, _)| *at == i) {
            report.push(d);
        }
        report.extend(row_report);
        while let Some((_, d)) = twice.next_if(|(at, _)| *at == i) {
            report.push(d);
        }
        rows.push(nic);
    }
    rows
}

/// One NIC row, with what it alone says about itself.
fn read_nic(
    row: &Row,
    table: &Table,
    by_key: &HashMap<&str, usize>,
    servers: Option<&[ServerRow]>,
    default_mtu: Mtu,
    report: &mut Report,
) -> NicRow {
    let mut r = RowReader::new(row, report);
    let (host, unknown_host) = match row.owner {
        Some(owner) => (Some(owner), None),
        None => match link_host(&mut r, by_key) {
            Link::Found(i) => (Some(i), None),
            Link::Unknown(name) if servers.is_some() => (None, Some(name)),
            Link::Unknown(_) | Link::None => (None, None),
        },
    };
    let ib_dev = r.required("ib_dev", IbDev::parse);
    let netdev = r.required("netdev", IfName::parse);
    let ip = read_ip(&mut r);
    let gateway = r.optional("gateway", parse_addr);
    if let (Some(gw), Some(ip)) = (gateway, ip) {
        check_gateway(&mut r, gw, ip);
    }
    let mtu_override = r.optional_int("mtu", Mtu::new);
    if let (Some(m), Some(loc)) = (mtu_override, r.location("mtu"))
        && m.get() < crate::plan::validate::cluster::MIN_ROCE_MTU
    {
        r.push(Diagnostic::warning(
            loc,
            crate::plan::validate::cluster::mtu_warning(m.get()),
        ));
    }
    let rail = r.optional_int("rail", |n| {
        u32::try_from(n).map_err(|_| "is not a rail number (0 or more)".to_string())
    });
    let pci = r.optional("pci", PciAddr::parse);
    if let (Some(dev), Some(pci), Some(loc)) = (&ib_dev, &pci, r.location("pci"))
        && is_lag_device(dev.as_str())
        && !pci.as_str().ends_with(".0")
    {
        r.push(Diagnostic::error(
            loc,
            format!(
                "{} is a RoCE LAG device, which mlx5 registers on the card's first port: give PF0's PCI address (function 0) or leave pci empty, not {}",
                dev.as_str(),
                pci.as_str()
            ),
        ));
    }
    NicRow {
        host,
        unknown_host,
        rail,
        pci,
        mac: r.optional("mac", MacAddr::parse),
        switch: r.optional("switch", Label::parse),
        switch_port: r.optional("switch_port", Label::parse),
        gpu: r.optional("gpu", Gpus::parse),
        gpu_at: r.location("gpu"),
        ib_dev_at: r
            .location("ib_dev")
            .unwrap_or_else(|| table.location.clone()),
        ip_at: r.location("ip").unwrap_or_else(|| table.location.clone()),
        mtu_at: r.location("mtu").filter(|_| mtu_override.is_some()),
        mtu: mtu_override.unwrap_or(default_mtu),
        ib_dev,
        netdev,
        ip,
        gateway,
    }
}

/// A RoCE LAG device's name as mlx5_ib registers it: `mlx5_bond_<N>`.
fn is_lag_device(dev: &str) -> bool {
    dev.strip_prefix("mlx5_bond_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What a NIC row's host name links to.
enum Link {
    /// The server row.
    Found(usize),
    /// A valid host name no server row has (reported by the caller, once per name).
    Unknown(String),
    /// Nothing: the name is missing or invalid, and reported.
    None,
}

/// The server row a NIC row names. A missing or invalid name is reported here.
fn link_host(r: &mut RowReader<'_>, by_key: &HashMap<&str, usize>) -> Link {
    let Some(name) = r.text("hostname") else {
        r.missing("hostname");
        return Link::None;
    };
    if let Some(&i) = by_key.get(name.to_lowercase().as_str()) {
        return Link::Found(i);
    }
    match HostName::parse(&name) {
        Err(why) => {
            r.error_at("hostname", format!("hostname {} {why}", quoted(&name)));
            Link::None
        }
        Ok(_) => Link::Unknown(name),
    }
}

fn unique_per_host<'a>(
    seen: &mut HashMap<(usize, &'a str), &'a Location>,
    key: (usize, &'a str),
    at: &'a Location,
    column: &str,
    host: &str,
) -> Option<Diagnostic> {
    match seen.entry(key) {
        Entry::Occupied(first) => Some(Diagnostic::error(
            at.clone(),
            format!(
                "{column} {} is used twice on host {} (first at {})",
                quoted(key.1),
                quoted(host),
                first.get()
            ),
        )),
        Entry::Vacant(slot) => {
            slot.insert(at);
            None
        }
    }
}

fn parse_addr(s: &str) -> Result<IpAddr, String> {
    no_leading_zeros(s)?;
    s.parse().map_err(|_| "is not an IP address".to_string())
}

/// An IPv4 address whose part has a leading zero (`010.100.0.011`) is ambiguous: `inet_aton`,
/// ping and many scripts read `010` as octal (8), others as decimal (10). It is refused rather
/// than guessed.
fn no_leading_zeros(s: &str) -> Result<(), String> {
    let addr = s.split('/').next().unwrap_or(s);
    if addr.contains(':') {
        return Ok(());
    }
    let odd: Vec<&str> = addr
        .split('.')
        .filter(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    if odd.is_empty() {
        return Ok(());
    }
    let plain: Vec<String> = addr
        .split('.')
        .map(|p| p.trim_start_matches('0'))
        .map(|p| {
            if p.is_empty() {
                "0".to_string()
            } else {
                p.to_string()
            }
        })
        .collect();
    let suffix = s.get(addr.len()..).unwrap_or_default();
    Err(format!(
        "has a part with a leading zero ({}): some tools read it as octal, others as decimal; \
         write {}{suffix} if decimal is meant",
        odd.join(", "),
        plain.join(".")
    ))
}

/// The port address: `a.b.c.d/len` in `ip`, or a bare address with `prefix` (length or netmask).
fn read_ip(r: &mut RowReader<'_>) -> Option<IpNet> {
    let prefix_text = r.text("prefix");
    let net = r.required("ip", |s| {
        no_leading_zeros(s)?;
        if s.contains('/') {
            s.parse::<IpNet>()
                .map(Some)
                .map_err(|_| "is not an address with a prefix length".to_string())
        } else {
            s.parse::<IpAddr>()
                .map(|_| None)
                .map_err(|_| "is not an address with a prefix length".to_string())
        }
    })?;
    let ip_text = r.text("ip").unwrap_or_default();
    let net = match (net, prefix_text) {
        (Some(net), None) => net,
        (Some(net), Some(p)) => {
            match parse_prefix(&p, net.addr().is_ipv4()) {
                Ok(len) if len == net.prefix_len() => {}
                Ok(_) => r.error_at(
                    "prefix",
                    format!(
                        "prefix {} disagrees with the prefix length of ip {}",
                        quoted(&p),
                        quoted(&ip_text)
                    ),
                ),
                Err(why) => r.error_at("prefix", format!("prefix {} {why}", quoted(&p))),
            }
            net
        }
        (None, Some(p)) => {
            let addr: IpAddr = ip_text.parse().ok()?;
            match parse_prefix(&p, addr.is_ipv4()) {
                // parse_prefix keeps the length within the family's range, so this is Ok.
                Ok(len) => IpNet::new(addr, len).ok()?,
                Err(why) => {
                    r.error_at("prefix", format!("prefix {} {why}", quoted(&p)));
                    return None;
                }
            }
        }
        (None, None) => {
            r.error_at(
                "ip",
                format!("ip {} has no prefix length (write it as {ip_text}/24, or fill the prefix column)", quoted(&ip_text)),
            );
            return None;
        }
    };
    if let IpNet::V4(v4) = net
        && v4.prefix_len() < 31
        && (v4.addr() == v4.network() || v4.addr() == v4.broadcast())
    {
        let which = if v4.addr() == v4.network() {
            "network"
        } else {
            "broadcast"
        };
        r.error_at(
            "ip",
            format!(
                "ip {} is the {which} address of its subnet",
                quoted(&ip_text)
            ),
        );
        return None;
    }
    Some(net)
}

fn check_gateway(r: &mut RowReader<'_>, gw: IpAddr, ip: IpNet) {
    if gw == ip.addr() {
        r.error_at("gateway", format!("gateway {gw} is the port's own address"));
    } else if !ip.contains(&gw) {
        r.error_at(
            "gateway",
            format!("gateway {gw} is outside the port's subnet {}", ip.trunc()),
        );
    }
}
