//! The fabric test's pairs: on each rail (the `rail` column, else the port's subnet) the planned
//! ports, in plan order, form a ring; each port sends to the next one and serves the previous
//! one. With `fabric_incast`, a second step groups a rail's ports in threes: the first of a group
//! receives from the other two at once (a rail's one or two ports left over join its last group
//! as senders). Every flow has its own TCP port at its receiver, since a perftest server takes one
//! client: `BASE + 8 × the receiver's port index + slot` (slot 0 the ring, 1 to 7 the incast
//! senders). Pure: computed once per run from the whole plan, so that `--hosts` changes nothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::plan::model::{Host, Nic, Plan};

/// perftest's default TCP port (`DEF_PORT`, perftest_parameters.h); each flow takes one above it.
pub(crate) const BASE_TCP_PORT: u32 = 18515;
/// TCP ports per receiving port: the ring flow and up to seven incast senders.
const SLOTS: u32 = 8;

/// One end of a flow, as the other end and the report see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct End {
    pub host: String,
    pub ib_dev: String,
    pub netdev: String,
    /// The planned address, without its prefix length.
    pub ip: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_port: Option<String>,
}

/// A flow seen from one end: the other end and the TCP port the receiver serves it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Flow {
    pub peer: End,
    pub tcp_port: u32,
}

/// A port's part in the incast step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(crate) enum Incast {
    /// It receives from these senders at once.
    Receiver { from: Vec<Flow> },
    /// It sends to this receiver, beside the group's other senders.
    Sender { to: Flow },
}

/// One planned port's pairs (in `host.json` and, as arrays, in `plan.sh`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct PortPairs {
    pub ib_dev: String,
    /// The rail: its number, else the subnet.
    pub rail: String,
    /// The next port of the ring: this port sends to it. `None` on a rail with one port.
    pub to: Option<Flow>,
    /// The previous port of the ring: this port serves it.
    pub from: Option<Flow>,
    /// Its part in the incast step; `None` without `fabric_incast` or on a rail of fewer than 3.
    pub incast: Option<Incast>,
}

/// One rail in `index.json`: its ports in ring order and the incast groups (indexes into
/// `ports`, the receiver first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Rail {
    pub rail: String,
    pub ports: Vec<End>,
    #[serde(default)]
    pub incast: Vec<Vec<usize>>,
}

/// Every rail's ring and each host's ports' pairs.
#[derive(Debug, Default)]
pub(crate) struct Pairs {
    pub rails: Vec<Rail>,
    by_host: HashMap<String, Vec<PortPairs>>,
}

impl Pairs {
    /// The pairs of `host`'s planned ports, in plan order.
    pub(crate) fn of(&self, host: &Host) -> &[PortPairs] {
        self.by_host
            .get(host.hostname.as_str())
            .map_or(&[], Vec::as_slice)
    }
}

/// A port's rail: the `rail` column, else its subnet.
pub(crate) fn rail_of(nic: &Nic) -> String {
    nic.rail
        .map_or_else(|| nic.ip.trunc().to_string(), |r| r.to_string())
}

fn end(host: &Host, nic: &Nic) -> End {
    End {
        host: host.hostname.to_string(),
        ib_dev: nic.ib_dev.to_string(),
        netdev: nic.netdev.to_string(),
        ip: nic.ip.addr().to_string(),
        switch: nic.switch.as_ref().map(ToString::to_string),
        switch_port: nic.switch_port.as_ref().map(ToString::to_string),
    }
}

/// The incast groups of a ring of `n` ports: indexes, the receiver first.
fn incast_groups(n: usize) -> Vec<Vec<usize>> {
    if n < 3 {
        return Vec::new();
    }
    let mut groups: Vec<Vec<usize>> = (0..n / 3)
        .map(|g| vec![3 * g, 3 * g + 1, 3 * g + 2])
        .collect();
    if let Some(last) = groups.last_mut() {
        last.extend(3 * (n / 3)..n);
    }
    groups
}

/// The pairs of every planned port of `plan`.
pub(crate) fn pairs(plan: &Plan) -> Pairs {
    // (rail, its ports as (host, nic index)) in order of first appearance.
    let mut order: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (h, host) in plan.hosts.iter().enumerate() {
        for (i, nic) in host.nics.iter().enumerate() {
            let rail = rail_of(nic);
            let k = *at.entry(rail.clone()).or_insert_with(|| {
                order.push((rail, Vec::new()));
                order.len() - 1
            });
            order[k].1.push((h, i));
        }
    }
    let end_at = |(h, i): (usize, usize)| end(&plan.hosts[h], &plan.hosts[h].nics[i]);
    // A plan has far fewer than 2^32 / 8 ports on a host.
    let tcp = |(_, i): (usize, usize), slot: u32| {
        BASE_TCP_PORT + SLOTS * u32::try_from(i).unwrap_or(u32::MAX / SLOTS - 1) + slot
    };
    let mut ports: HashMap<(usize, usize), PortPairs> = HashMap::new();
    let mut rails = Vec::new();
    for (rail, members) in order {
        let n = members.len();
        let groups = if plan.cluster.fabric.incast {
            incast_groups(n)
        } else {
            Vec::new()
        };
        for (k, &m) in members.iter().enumerate() {
            let (next, prev) = (members[(k + 1) % n], members[(k + n - 1) % n]);
            let ring = n > 1;
            ports.insert(
                m,
                PortPairs {
                    ib_dev: plan.hosts[m.0].nics[m.1].ib_dev.to_string(),
                    rail: rail.clone(),
                    to: ring.then(|| Flow {
                        peer: end_at(next),
                        tcp_port: tcp(next, 0),
                    }),
                    from: ring.then(|| Flow {
                        peer: end_at(prev),
                        tcp_port: tcp(m, 0),
                    }),
                    incast: None,
                },
            );
        }
        for g in &groups {
            let receiver = members[g[0]];
            // Slots 1 to 7: a group has two senders, four at most.
            let senders: Vec<(u32, (usize, usize))> = g[1..]
                .iter()
                .zip(1..SLOTS)
                .map(|(&k, slot)| (slot, members[k]))
                .collect();
            for &(slot, s) in &senders {
                if let Some(p) = ports.get_mut(&s) {
                    p.incast = Some(Incast::Sender {
                        to: Flow {
                            peer: end_at(receiver),
                            tcp_port: tcp(receiver, slot),
                        },
                    });
                }
            }
            if let Some(p) = ports.get_mut(&receiver) {
                p.incast = Some(Incast::Receiver {
                    from: senders
                        .iter()
                        .map(|&(slot, s)| Flow {
                            peer: end_at(s),
                            tcp_port: tcp(receiver, slot),
                        })
                        .collect(),
                });
            }
        }
        rails.push(Rail {
            rail,
            ports: members.iter().map(|&m| end_at(m)).collect(),
            incast: groups,
        });
    }
    let mut by_host: HashMap<String, Vec<PortPairs>> = HashMap::new();
    for (h, host) in plan.hosts.iter().enumerate() {
        let list = (0..host.nics.len())
            .filter_map(|i| ports.remove(&(h, i)))
            .collect();
        by_host.insert(host.hostname.to_string(), list);
    }
    Pairs { rails, by_host }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(hosts: usize, rails: &[Option<u32>], incast: bool) -> Plan {
        let mut json = serde_json::json!({
            "schema": "roce-gen/plan/v1",
            "cluster": { "cluster_name": "lab", "fabric_incast": if incast { "yes" } else { "no" } },
            "hosts": []
        });
        for h in 0..hosts {
            let nics: Vec<_> = rails
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let mut n = serde_json::json!({
                        "ib_dev": format!("mlx5_{i}"), "netdev": format!("eth{i}"),
                        "ip": format!("10.0.{i}.{}/24", h + 10),
                        "switch": format!("leaf-{i}"), "switch_port": format!("Eth1/{}", h + 1)
                    });
                    if let Some(r) = r {
                        n["rail"] = (*r).into();
                    }
                    n
                })
                .collect();
            json["hosts"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({ "hostname": format!("h{h}"), "mgmt_ip": format!("192.168.0.{}", h + 1), "nics": nics }));
        }
        let bytes = serde_json::to_vec(&json).unwrap();
        let raw =
            crate::plan::input::read_plan_bytes("t.json", crate::plan::input::Format::Json, &bytes)
                .expect("plan json")
                .raw;
        crate::plan::validate::validate(raw)
            .map(|(plan, _)| plan)
            .map_err(|r| format!("{r:?}"))
            .expect("valid plan")
    }

    #[test]
    fn ring_per_rail_in_plan_order() {
        let p = plan(3, &[Some(0), Some(1)], false);
        let pairs = pairs(&p);
        assert_eq!(pairs.rails.len(), 2);
        assert_eq!(pairs.rails[0].rail, "0");
        let h0 = pairs.of(&p.hosts[0]);
        let to = h0[0].to.as_ref().unwrap();
        assert_eq!(
            (to.peer.host.as_str(), to.peer.ip.as_str()),
            ("h1", "10.0.0.11")
        );
        // h1's port 0 serves h0 on its own port 0's TCP port; h0 connects to that one.
        assert_eq!(to.tcp_port, BASE_TCP_PORT);
        let from = h0[0].from.as_ref().unwrap();
        assert_eq!(from.peer.host, "h2");
        let to1 = h0[1].to.as_ref().unwrap();
        assert_eq!(
            (to1.peer.ib_dev.as_str(), to1.tcp_port),
            ("mlx5_1", BASE_TCP_PORT + 8)
        );
        assert_eq!(to1.peer.switch_port.as_deref(), Some("Eth1/2"));
        // The last host sends to the first.
        let h2 = pairs.of(&p.hosts[2]);
        assert_eq!(h2[0].to.as_ref().unwrap().peer.host, "h0");
        assert!(h0[0].incast.is_none());
        assert!(pairs.rails[0].incast.is_empty());
    }

    #[test]
    fn subnet_is_the_rail_without_a_rail_column() {
        let p = plan(2, &[None], true);
        let pairs = pairs(&p);
        assert_eq!(pairs.rails[0].rail, "10.0.0.0/24");
        let h0 = pairs.of(&p.hosts[0]);
        // Two ports: each sends to and serves the other; no incast on two.
        assert_eq!(h0[0].to.as_ref().unwrap().peer.host, "h1");
        assert_eq!(h0[0].from.as_ref().unwrap().peer.host, "h1");
        assert!(h0[0].incast.is_none());
    }

    #[test]
    fn a_rail_on_one_host_has_no_pair() {
        let p = plan(1, &[Some(4)], true);
        let pairs = pairs(&p);
        let h0 = pairs.of(&p.hosts[0]);
        assert!(h0[0].to.is_none() && h0[0].from.is_none() && h0[0].incast.is_none());
    }

    #[test]
    fn incast_groups_of_three_the_rest_join_the_last() {
        assert_eq!(incast_groups(2), Vec::<Vec<usize>>::new());
        assert_eq!(incast_groups(3), vec![vec![0, 1, 2]]);
        assert_eq!(incast_groups(5), vec![vec![0, 1, 2, 3, 4]]);
        assert_eq!(incast_groups(7), vec![vec![0, 1, 2], vec![3, 4, 5, 6]]);
        let p = plan(4, &[Some(0)], true);
        let pairs = pairs(&p);
        match &pairs.of(&p.hosts[0])[0].incast {
            Some(Incast::Receiver { from }) => {
                let who: Vec<_> = from
                    .iter()
                    .map(|f| (f.peer.host.as_str(), f.tcp_port))
                    .collect();
                assert_eq!(
                    who,
                    [
                        ("h1", BASE_TCP_PORT + 1),
                        ("h2", BASE_TCP_PORT + 2),
                        ("h3", BASE_TCP_PORT + 3)
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
        match &pairs.of(&p.hosts[3])[0].incast {
            Some(Incast::Sender { to }) => assert_eq!(
                (to.peer.host.as_str(), to.tcp_port),
                ("h0", BASE_TCP_PORT + 3)
            ),
            other => panic!("{other:?}"),
        }
    }
}
