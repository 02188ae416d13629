//! What people must act on, grouped so that a cluster reads at a glance: the warnings of every
//! counted host's latest result and the settings that drifted after apply, one group per check
//! id with the hosts and ports it touches; and a host's settings to change, one line per
//! setting (`trust: 8 ports pcp → dscp`). Pure; the verdict puts them in the report, for every
//! format.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::ingest::result::{Check, Text};

/// Why a group is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A check of the latest result warned (cabling, optics, PCIe, link speed, firmware, …).
    Warning,
    /// A setting differs again after an apply that passed.
    Drift,
}

/// One check id across the hosts.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Group {
    /// The check id.
    pub id: String,
    /// Warning or drift.
    pub kind: Kind,
    /// How many hosts it touches.
    pub hosts: usize,
    /// How many ports (items with a NIC) it touches.
    pub ports: usize,
    /// Every item, by host and NIC.
    pub items: Vec<Item>,
    /// The items as findings: those whose message is the same but for the port's own names (its
    /// RDMA device and netdev, read as "each port") are one finding with every port it holds,
    /// so that the same advice on 8 ports of 10 hosts is one line, not 80. In the items' order.
    pub findings: Vec<Finding>,
}

/// One message and where it holds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    /// The message: the script's, or with the port's names as "each port" when it holds on
    /// several ports.
    pub message: String,
    /// Where: host and NIC (absent for host-wide checks), in the items' order.
    pub at: Vec<(String, Option<String>)>,
}

/// One host's (and NIC's) instance of a group.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Item {
    pub host: String,
    /// The NIC, absent for host-wide checks.
    pub nic: Option<String>,
    /// The script's message.
    pub message: String,
}

/// What one host brings to the groups: the warnings of its latest result, and the settings that
/// drifted (empty unless it is `drifted`), and its NICs' netdevs (for findings).
pub(crate) struct Row<'a> {
    pub host: &'a str,
    pub warnings: &'a [Check],
    pub drifted: &'a [Check],
    pub netdevs: &'a BTreeMap<String, String>,
}

/// A message with its port's own names (`nic`, its netdev) as a marker: what several ports'
/// messages have in common. Unchanged for a host-wide check.
fn template(message: &str, nic: Option<&str>, netdevs: &BTreeMap<String, String>) -> String {
    let Some(nic) = nic.filter(|n| !n.is_empty()) else {
        return message.to_string();
    };
    let mut t = message.to_string();
    if let Some(netdev) = netdevs.get(nic).filter(|n| !n.is_empty()) {
        t = t.replace(netdev.as_str(), PORT_MARK);
    }
    t.replace(nic, PORT_MARK)
}

/// Where a port's own name stood in a [`template`].
const PORT_MARK: &str = "\u{1}";

/// The findings of a group's items (with their templates), in the items' order.
fn findings(items: &[(Item, String)]) -> Vec<Finding> {
    let mut out: Vec<(String, Finding)> = Vec::new();
    for (item, t) in items {
        let at = (item.host.clone(), item.nic.clone());
        match out.iter_mut().find(|(key, _)| key == t) {
            Some((_, f)) => f.at.push(at),
            None => out.push((
                t.clone(),
                Finding {
                    message: item.message.clone(),
                    at: vec![at],
                },
            )),
        }
    }
    out.into_iter()
        .map(|(t, mut f)| {
            if f.at.len() > 1 && t.contains(PORT_MARK) {
                f.message = t.replace(PORT_MARK, "each port");
            }
            f
        })
        .collect()
}

/// The groups of the rows given (the counted hosts): warnings first, then drift; within each,
/// the groups that touch most hosts first.
pub(crate) fn groups<'a>(rows: impl IntoIterator<Item = Row<'a>>) -> Vec<Group> {
    type Entry<'b> = (&'b str, &'b Check, &'b BTreeMap<String, String>);
    let mut by: BTreeMap<(Kind, &str), Vec<Entry<'a>>> = BTreeMap::new();
    for row in rows {
        for (kind, checks) in [(Kind::Warning, row.warnings), (Kind::Drift, row.drifted)] {
            for c in checks {
                by.entry((kind, &c.id))
                    .or_default()
                    .push((row.host, c, row.netdevs));
            }
        }
    }
    let mut groups: Vec<Group> = by
        .into_iter()
        .map(|((kind, id), entries)| {
            let items: Vec<(Item, String)> = entries
                .iter()
                .map(|(host, c, netdevs)| {
                    let nic = c.nic.as_ref().map(Text::to_string);
                    let t = template(&c.message, nic.as_deref(), netdevs);
                    (
                        Item {
                            host: (*host).to_string(),
                            nic,
                            message: c.message.to_string(),
                        },
                        t,
                    )
                })
                .collect();
            Group {
                id: id.to_string(),
                kind,
                hosts: entries
                    .iter()
                    .map(|(h, ..)| *h)
                    .collect::<BTreeSet<_>>()
                    .len(),
                ports: entries.iter().filter(|(_, c, _)| c.nic.is_some()).count(),
                findings: findings(&items),
                items: items.into_iter().map(|(i, _)| i).collect(),
            }
        })
        .collect();
    groups
        .sort_by(|a, b| (a.kind, Reverse(a.hosts), &a.id).cmp(&(b.kind, Reverse(b.hosts), &b.id)));
    groups
}

/// A host's changes of one setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Change {
    /// The setting (check id).
    pub id: String,
    /// The distinct moves, the most common first.
    pub moves: Vec<Move>,
}

/// Ports that go from one value to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Move {
    /// The value now (`actual`); empty when unset.
    pub from: String,
    /// The planned value (`expected`).
    pub to: String,
    /// The NICs, empty for a host-wide setting.
    pub nics: Vec<String>,
}

/// One line per setting, in the order the result lists the settings.
pub(crate) fn changes(checks: &[Check]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for c in checks {
        let i = match out.iter().position(|g| g.id == c.id) {
            Some(i) => i,
            None => {
                out.push(Change {
                    id: c.id.to_string(),
                    moves: Vec::new(),
                });
                out.len() - 1
            }
        };
        let moves = &mut out[i].moves;
        let nic = c.nic.iter().map(Text::to_string);
        match moves
            .iter_mut()
            .find(|m| m.from == c.actual && m.to == c.expected)
        {
            Some(m) => m.nics.extend(nic),
            None => moves.push(Move {
                from: c.actual.to_string(),
                to: c.expected.to_string(),
                nics: nic.collect(),
            }),
        }
    }
    for g in &mut out {
        g.moves.sort_by_key(|m| Reverse(m.nics.len()));
    }
    out
}

/// `trust: 8 ports pcp → dscp`, `pfc: 6 ports 0,0,0,0,0,0,0,0 → 0,0,0,1,0,0,0,0; 2 ports
/// (mlx5_3, mlx5_7) … → …`, `persistence: unset → installed`. Ports are named when a move
/// covers fewer than all `ports` of the host's changes, and there are few enough to read.
pub(crate) fn change_line(c: &Change, ports: usize) -> String {
    let moves: Vec<String> = c
        .moves
        .iter()
        .map(|m| {
            let from = if m.from.is_empty() { "unset" } else { &m.from };
            match m.nics.len() {
                0 => format!("{from} → {}", m.to),
                1 => format!("{} {from} → {}", m.nics[0], m.to),
                n if n < ports && n <= 8 => {
                    format!("{n} ports ({}) {from} → {}", m.nics.join(", "), m.to)
                }
                n => format!("{n} ports {from} → {}", m.to),
            }
        })
        .collect();
    format!("{}: {}", c.id, moves.join("; "))
}

/// A host's changes as text, one line per setting (what every format shows).
pub(crate) fn change_lines(checks: &[Check]) -> Vec<String> {
    let ports = ports_of(checks);
    changes(checks)
        .iter()
        .map(|c| change_line(c, ports))
        .collect()
}

/// How many ports a host's changes touch.
pub(crate) fn ports_of(checks: &[Check]) -> usize {
    checks
        .iter()
        .filter_map(|c| c.nic.as_ref())
        .collect::<BTreeSet<_>>()
        .len()
}

/// `7 settings to change on 8 ports, 1 host-wide change`: the size of a host's changes, counted
/// as the host scripts' summary counts them (`rg_summary_changes` in `lib.sh`), so that a
/// precheck and ingest say the same of one result: a setting is a check id on a port, the ports
/// are the NICs those touch, and each change without a NIC (persistence, `nccl.env`) is one
/// host-wide change. `what` follows the settings (`to change`, `drifted`).
pub(crate) fn changes_size(checks: &[Check], what: &str) -> String {
    let on_ports: Vec<&Check> = checks.iter().filter(|c| c.nic.is_some()).collect();
    let settings = on_ports
        .iter()
        .map(|c| &c.id)
        .collect::<BTreeSet<_>>()
        .len();
    let host_wide = checks.len() - on_ports.len();
    let mut text = String::new();
    if settings > 0 {
        let ports = ports_of(checks);
        text = format!(
            "{} {what} on {}",
            count(settings, "setting", "settings"),
            count(ports, "port", "ports")
        );
    }
    if host_wide > 0 {
        if !text.is_empty() {
            text.push_str(", ");
        }
        text.push_str(&count(host_wide, "host-wide change", "host-wide changes"));
    }
    text
}

/// `1 port`, `8 ports`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::result::{CheckData, Status};

    fn check(id: &str, nic: Option<&str>, actual: &str, expected: &str) -> Check {
        Check::new(CheckData {
            id: id.into(),
            nic: nic.map(Text::from),
            kind: None,
            status: Status::Warn,
            severity: "error".into(),
            expected: expected.into(),
            actual: actual.into(),
            message: Text::default(),
        })
    }

    #[test]
    fn warnings_come_before_drift_and_the_widest_group_first() {
        let optics = [check("optics", Some("mlx5_0"), "", "")];
        let both = [
            check("cabling", Some("mlx5_0"), "", ""),
            check("cabling", Some("mlx5_1"), "", ""),
            check("pcie", None, "", ""),
        ];
        let trust = [check("trust", Some("mlx5_0"), "pcp", "dscp")];
        let no = BTreeMap::new();
        let rows = [
            Row {
                host: "gpu-001",
                warnings: &both,
                drifted: &trust,
                netdevs: &no,
            },
            Row {
                host: "gpu-002",
                warnings: &optics,
                drifted: &[],
                netdevs: &no,
            },
            Row {
                host: "gpu-003",
                warnings: &optics,
                drifted: &[],
                netdevs: &no,
            },
        ];
        let groups = groups(rows);
        let seen: Vec<(Kind, &str, usize, usize, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                let hosts = g.items.iter().map(|i| i.host.as_str()).collect();
                (g.kind, g.id.as_str(), g.hosts, g.ports, hosts)
            })
            .collect();
        assert_eq!(
            seen,
            [
                (Kind::Warning, "optics", 2, 2, vec!["gpu-002", "gpu-003"]),
                (Kind::Warning, "cabling", 1, 2, vec!["gpu-001", "gpu-001"]),
                (Kind::Warning, "pcie", 1, 0, vec!["gpu-001"]),
                (Kind::Drift, "trust", 1, 1, vec!["gpu-001"]),
            ]
        );
    }

    #[test]
    fn one_line_per_setting_counts_the_ports_and_names_the_odd_ones() {
        let mut checks = Vec::new();
        for n in 0..8 {
            let nic = format!("mlx5_{n}");
            checks.push(check("trust", Some(&nic), "pcp", "dscp"));
            let from = if n == 3 || n == 7 {
                "0,0,0,1,0,0,0,0"
            } else {
                "0,0,0,0,0,0,0,0"
            };
            checks.push(check("pfc", Some(&nic), from, "0,0,0,1,1,0,0,0"));
        }
        checks.push(check("persistence", None, "", "installed"));
        let lines: Vec<String> = changes(&checks)
            .iter()
            .map(|c| change_line(c, ports_of(&checks)))
            .collect();
        assert_eq!(
            lines,
            [
                "trust: 8 ports pcp → dscp",
                "pfc: 6 ports (mlx5_0, mlx5_1, mlx5_2, mlx5_4, mlx5_5, mlx5_6) 0,0,0,0,0,0,0,0 → 0,0,0,1,1,0,0,0; 2 ports (mlx5_3, mlx5_7) 0,0,0,1,0,0,0,0 → 0,0,0,1,1,0,0,0",
                "persistence: unset → installed",
            ]
        );
        assert_eq!(
            changes_size(&checks, "to change"),
            "2 settings to change on 8 ports, 1 host-wide change"
        );
        assert_eq!(
            changes_size(&checks[..1], "drifted"),
            "1 setting drifted on 1 port"
        );
        assert_eq!(
            changes_size(&checks[16..], "to change"),
            "1 host-wide change"
        );
    }

    #[test]
    fn the_same_advice_on_several_ports_is_one_finding() {
        let said = |nic: &str, ifc: &str, value: &str| {
            let mut data = (*check("arp_sysctls", Some(nic), "", "")).clone();
            data.message = Text::from(format!(
                "{ifc} answers ARP for the others ({value}): set arp_ignore=1 on {ifc}"
            ));
            Check::new(data)
        };
        let a = [
            said("mlx5_0", "ens1np0", "0 0 2"),
            said("mlx5_1", "ens2np0", "0 0 2"),
        ];
        let b = [
            said("mlx5_0", "eth0", "0 0 2"),
            said("mlx5_1", "eth1", "1 0 2"),
        ];
        let na = BTreeMap::from([
            ("mlx5_0".to_string(), "ens1np0".to_string()),
            ("mlx5_1".to_string(), "ens2np0".to_string()),
        ]);
        let nb = BTreeMap::from([
            ("mlx5_0".to_string(), "eth0".to_string()),
            ("mlx5_1".to_string(), "eth1".to_string()),
        ]);
        let rows = [
            Row {
                host: "h1",
                warnings: &a,
                drifted: &[],
                netdevs: &na,
            },
            Row {
                host: "h2",
                warnings: &b,
                drifted: &[],
                netdevs: &nb,
            },
        ];
        let g = &groups(rows)[0];
        let seen: Vec<(&str, usize)> = g
            .findings
            .iter()
            .map(|f| (f.message.as_str(), f.at.len()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "each port answers ARP for the others (0 0 2): set arp_ignore=1 on each port",
                    3
                ),
                (
                    "eth1 answers ARP for the others (1 0 2): set arp_ignore=1 on eth1",
                    1
                ),
            ]
        );
        assert_eq!(g.items.len(), 4);
    }
}
