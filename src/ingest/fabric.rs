//! The fabric matrix: each host's newest fabric result, port by port
//! ([`HostReport::fabric`]), laid out once as rails × hosts for every format, with the rate
//! against the link speed, the priority proof, loss and congestion per cell, and for each port
//! that failed the link it failed on: both ends with their switch ports from the plan and from
//! LLDP. Pure: made by the verdict from the hosts' reports.

use serde::Serialize;

use crate::ingest::report::{FabricPort, HostReport};
use crate::ingest::result::Status;

/// Rails × hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricMatrix {
    /// The hosts with a fabric result, in the report's (name) order: the matrix's hosts.
    pub hosts: Vec<String>,
    /// One row per rail, in rail order (rail numbers by value).
    pub rails: Vec<FabricRail>,
    /// The links a port failed on, in rail and host order.
    pub links: Vec<FabricLink>,
    /// Counted hosts without a fabric result (the test did not run there, or its result is
    /// missing).
    pub not_run: Vec<String>,
    /// Ports in the matrix, and how many of them passed, warned, failed and were skipped (a rail
    /// with one port has no pair).
    pub ports: usize,
    pub passed: usize,
    pub warned: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// One rail's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricRail {
    /// The plan's rail (its number, else the subnet); without a plan, the device and
    /// `(not planned)`.
    pub rail: String,
    /// Per host of [`FabricMatrix::hosts`], its ports on the rail: usually one, none when the
    /// host has no port there.
    pub cells: Vec<Vec<FabricCell>>,
}

/// One port of one host on a rail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricCell {
    pub host: String,
    /// The RDMA device.
    pub nic: String,
    /// The worst status of its fabric checks.
    pub status: Status,
    /// The measured rate as the result gives it (`388.00 Gb/s`); empty when no traffic ran.
    pub rate: String,
    /// The rate in Gb/s, and the link's negotiated speed, when known.
    pub gbps: Option<f64>,
    pub link_gbps: Option<f64>,
    /// The rate in percent of the link speed, rounded down.
    pub pct: Option<u64>,
    /// Each fabric check's status: the peer reached, the rate, the priority proof, loss,
    /// congestion (the incast step).
    pub peer: Option<Status>,
    pub bw: Option<Status>,
    pub priority: Option<Status>,
    pub loss: Option<Status>,
    pub congestion: Option<Status>,
    /// The host it sends to.
    pub to: Option<String>,
    /// Its switch port from the plan and from LLDP.
    pub plan_switch: Option<String>,
    pub lldp_switch: Option<String>,
    /// Its failed link, an index into [`FabricMatrix::links`].
    pub link: Option<usize>,
}

/// A port that failed and the link it sends on: from it to the next host's port on its rail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricLink {
    pub rail: String,
    /// The port that failed.
    pub from: FabricEnd,
    /// The port it sends to; `None` when the result names no peer.
    pub to: Option<FabricEnd>,
    /// The fabric checks that failed on it (`fabric_bw`, …).
    pub failed: Vec<&'static str>,
    /// Whom it sends to and serves, as the result says (`sends to h1 (10.10.0.11, TCP 18515),
    /// serves h2 (10.10.0.12)`).
    pub peers: String,
    /// The messages of its checks that did not pass.
    pub problems: Vec<String>,
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FabricEnd {
    pub host: String,
    /// Its RDMA device; `None` when the plan does not say (a peer without a plan).
    pub nic: Option<String>,
    /// The switch port the plan cables it to.
    pub plan_switch: Option<String>,
    /// The switch port LLDP saw on it; `None` when not seen or the host sent no result.
    pub lldp_switch: Option<String>,
}

impl FabricEnd {
    /// `h1 mlx5_0`, or `h1` without a device.
    pub(crate) fn name(&self) -> String {
        match &self.nic {
            Some(nic) => format!("{} {nic}", self.host),
            None => self.host.clone(),
        }
    }

    /// `plan leaf-1 Eth1/2, LLDP not seen`.
    pub(crate) fn switch_ports(&self) -> String {
        format!(
            "plan {}, LLDP {}",
            self.plan_switch.as_deref().unwrap_or("not planned"),
            self.lldp_switch.as_deref().unwrap_or("not seen")
        )
    }
}

/// The fabric checks of a port, in the order the formats show them, with what each proves.
pub(crate) const CHECKS: [(&str, &str); 5] = [
    ("fabric_peer", "peer"),
    ("fabric_bw", "rate"),
    ("fabric_priority", "priority"),
    ("fabric_loss", "loss"),
    ("fabric_congestion", "congestion"),
];

impl FabricCell {
    /// Each check of [`CHECKS`] with its status.
    pub(crate) fn statuses(&self) -> [(&'static str, Option<Status>); 5] {
        [
            (CHECKS[0].0, self.peer),
            (CHECKS[1].0, self.bw),
            (CHECKS[2].0, self.priority),
            (CHECKS[3].0, self.loss),
            (CHECKS[4].0, self.congestion),
        ]
    }
}

/// Rails in order: numbers by value (`2` before `10`), then the others by name.
fn rail_order(rail: &str) -> (u8, u64, String) {
    match rail.parse::<u64>() {
        Ok(n) => (0, n, String::new()),
        Err(_) => (1, 0, rail.to_string()),
    }
}

fn cell(h: &HostReport, f: &FabricPort) -> FabricCell {
    // Rounded down: 99.6 % of the link is not 100 %.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let pct = match (f.gbps, f.link_gbps) {
        (Some(rate), Some(link)) if link > 0.0 => Some((rate * 100.0 / link).floor() as u64),
        _ => None,
    };
    FabricCell {
        host: h.host.clone(),
        nic: f.nic.clone(),
        status: f.status,
        rate: f.rate.clone(),
        gbps: f.gbps,
        link_gbps: f.link_gbps,
        pct,
        peer: f.peer,
        bw: f.bw,
        priority: f.priority,
        loss: f.loss,
        congestion: f.congestion,
        to: f.to.clone(),
        plan_switch: f.plan_switch.clone(),
        lldp_switch: f.lldp_switch.clone(),
        link: None,
    }
}

/// The matrix of the hosts' fabric results; `None` when no host has one.
pub(crate) fn matrix(hosts: &[HostReport]) -> Option<FabricMatrix> {
    let tested: Vec<&HostReport> = hosts.iter().filter(|h| h.fabric_run.is_some()).collect();
    if tested.is_empty() {
        return None;
    }
    let mut keys: Vec<String> = tested
        .iter()
        .flat_map(|h| h.fabric.iter().map(FabricPort::rail_key))
        .collect();
    keys.sort_by_key(|k| rail_order(k));
    keys.dedup();
    let port_of = |host: &str, rail: &str| {
        hosts
            .iter()
            .find(|h| h.host == host)?
            .fabric
            .iter()
            .find(|f| f.rail_key() == rail)
    };
    let mut links = Vec::new();
    let mut rails = Vec::new();
    for rail in keys {
        let mut cells = Vec::new();
        for h in &tested {
            let mut here = Vec::new();
            for f in h.fabric.iter().filter(|f| f.rail_key() == rail) {
                let mut c = cell(h, f);
                if f.status == Status::Fail {
                    links.push(link(h, f, &c, &rail, &port_of));
                    c.link = Some(links.len() - 1);
                }
                here.push(c);
            }
            cells.push(here);
        }
        rails.push(FabricRail { rail, cells });
    }
    let all: Vec<&FabricPort> = tested.iter().flat_map(|h| &h.fabric).collect();
    let count = |s: Status| all.iter().filter(|f| f.status == s).count();
    Some(FabricMatrix {
        hosts: tested.iter().map(|h| h.host.clone()).collect(),
        rails,
        links,
        not_run: hosts
            .iter()
            .filter(|h| h.counted() && h.fabric_run.is_none())
            .map(|h| h.host.clone())
            .collect(),
        ports: all.len(),
        passed: count(Status::Pass),
        warned: count(Status::Warn),
        failed: count(Status::Fail),
        skipped: count(Status::Skip),
    })
}

/// A failing port's link: it, and the port it sends to with what the plan and that host's own
/// result say of it.
fn link<'a>(
    h: &HostReport,
    f: &FabricPort,
    c: &FabricCell,
    rail: &str,
    port_of: &dyn Fn(&str, &str) -> Option<&'a FabricPort>,
) -> FabricLink {
    let to = f.to.as_deref().map(|to| {
        let theirs = port_of(to, rail);
        FabricEnd {
            host: to.to_string(),
            nic: theirs.map(|p| p.nic.clone()).or_else(|| f.to_nic.clone()),
            plan_switch: f
                .to_plan_switch
                .clone()
                .or_else(|| theirs.and_then(|p| p.plan_switch.clone())),
            lldp_switch: theirs.and_then(|p| p.lldp_switch.clone()),
        }
    });
    FabricLink {
        rail: rail.to_string(),
        from: FabricEnd {
            host: h.host.clone(),
            nic: Some(f.nic.clone()),
            plan_switch: f.plan_switch.clone(),
            lldp_switch: f.lldp_switch.clone(),
        },
        to,
        failed: c
            .statuses()
            .iter()
            .filter(|(_, s)| *s == Some(Status::Fail))
            .map(|(id, _)| *id)
            .collect(),
        peers: f.peers.clone(),
        problems: f.problems.clone(),
    }
}
