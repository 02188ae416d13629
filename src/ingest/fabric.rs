//! The fabric matrix: each host's newest fabric result, port by port
//! ([`HostReport::fabric`]), laid out once as rails × hosts for every format, with the rate
//! against the link speed, the priority proof, loss and congestion per cell, and for each port
//! that failed the link it failed on: both ends with their switch ports from the plan and from
//! LLDP. Pure: made by the verdict from the hosts' reports.

use crate::ingest::report::{
    FabricCell, FabricEnd, FabricLink, FabricMatrix, FabricPort, FabricRail, HostReport, Status,
};

/// Rails in order, their numbers by value: `2` before `10`, `10.10.2.0/24` before
/// `10.10.10.0/24`, `mlx5_2` before `mlx5_10`.
fn rail_order(rail: &str) -> Vec<(String, u64)> {
    let mut parts: Vec<(String, u64)> = Vec::new();
    let (mut text, mut digits) = (String::new(), String::new());
    for c in rail.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                parts.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    if !digits.is_empty() || !text.is_empty() {
        parts.push((text, digits.parse().unwrap_or(0)));
    }
    parts
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
        memory: f.memory,
        memory_used: f.memory_used.clone(),
        to: f.to.clone(),
        plan_switch: f.plan_switch.clone(),
        lldp_switch: f.lldp_switch.clone(),
        link: None,
        // A failed port's messages go with its link.
        warnings: if f.status == Status::Warn {
            f.problems.clone()
        } else {
            Vec::new()
        },
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::ingest::report::{Counts, Phase, Run, State};

    fn run() -> Run {
        Run {
            phase: Phase::Fabric,
            dry_run: false,
            name: "fabric".into(),
            reboot_required: false,
            status: Status::Pass,
            started_at: None,
            finished_at: "2026-12-02T03:10:23Z".into(),
            finished: "2026-12-02T03:10:23Z".parse().unwrap(),
            path: "res/h.fabric.json".into(),
            plan_sha256: String::new(),
            tool_version: String::new(),
            observed_hostname: String::new(),
            counts: Counts::default(),
        }
    }

    fn host(name: &str, fabric: Vec<FabricPort>, tested: bool) -> HostReport {
        HostReport {
            host: name.into(),
            mgmt_ip: None,
            planned: Some(true),
            state: State::Configured,
            stale: false,
            ok: true,
            latest: None,
            runs: Vec::new(),
            checks: Vec::new(),
            failures: Vec::new(),
            warnings: Vec::new(),
            changes: Vec::new(),
            change_lines: Vec::new(),
            changes_size: String::new(),
            nics: BTreeMap::new(),
            pcie: BTreeMap::new(),
            nic_config: BTreeMap::new(),
            netdevs: BTreeMap::new(),
            fabric,
            fabric_run: tested.then(run),
            fabric_checks: Vec::new(),
            gpu: None,
            nccl: None,
        }
    }

    fn port(nic: &str, rail: &str, to: &str, status: Status, gbps: f64) -> FabricPort {
        FabricPort {
            nic: nic.into(),
            rail: Some(rail.into()),
            status,
            peers: format!("sends to {to} (10.0.0.1, TCP 18515), serves x (10.0.0.2)"),
            to: Some(to.into()),
            rate: format!("{gbps:.2} Gb/s"),
            gbps: Some(gbps),
            link_gbps: Some(400.0),
            to_nic: None,
            to_plan_switch: None,
            peer: Some(Status::Pass),
            bw: Some(status),
            priority: Some(Status::Pass),
            loss: Some(Status::Pass),
            congestion: None,
            memory: None,
            memory_used: None,
            plan_switch: Some(format!("leaf-{rail} Eth1/{nic}")),
            lldp_switch: None,
            problems: Vec::new(),
        }
    }

    #[test]
    fn rails_are_rows_in_number_order_and_each_host_a_column() {
        let hosts = [
            host(
                "a",
                vec![
                    port("0", "10", "b", Status::Pass, 388.0),
                    port("1", "2", "b", Status::Pass, 388.0),
                ],
                true,
            ),
            // b has no port on rail 10.
            host("b", vec![port("0", "2", "a", Status::Pass, 388.0)], true),
            host("c", Vec::new(), false),
        ];
        let m = matrix(&hosts).unwrap();
        assert_eq!(m.hosts, ["a", "b"]);
        let rails: Vec<&str> = m.rails.iter().map(|r| r.rail.as_str()).collect();
        assert_eq!(rails, ["2", "10"]);
        assert_eq!(m.rails[1].cells[0][0].nic, "0");
        assert!(m.rails[1].cells[1].is_empty(), "b has no port on rail 10");
        assert_eq!(m.not_run, ["c"]);
        assert_eq!((m.ports, m.passed, m.failed), (3, 3, 0));
        assert!(m.links.is_empty());
        assert_eq!(m.rails[0].cells[0][0].pct, Some(97));
    }

    #[test]
    fn a_port_that_only_warned_carries_its_warnings_and_no_link() {
        let mut apart = port("mlx5_0", "0", "b", Status::Warn, 388.0);
        apart.congestion = Some(Status::Warn);
        apart.problems = vec!["mlx5_0 in the incast step (receiver): … did not overlap".into()];
        let hosts = [
            host("a", vec![apart], true),
            host(
                "b",
                vec![port("mlx5_0", "0", "a", Status::Pass, 388.0)],
                true,
            ),
        ];
        let m = matrix(&hosts).unwrap();
        let cell = &m.rails[0].cells[0][0];
        assert_eq!(cell.link, None);
        assert_eq!(
            cell.warnings,
            ["mlx5_0 in the incast step (receiver): … did not overlap"]
        );
        assert!(m.rails[0].cells[1][0].warnings.is_empty());
        assert_eq!((m.warned, m.failed), (1, 0));
    }

    #[test]
    fn a_failing_port_names_both_ends_and_their_switch_ports() {
        let mut slow = port("mlx5_0", "0", "b", Status::Fail, 97.0);
        slow.problems = vec!["mlx5_0 to b: 97.00 Gb/s measured".into()];
        slow.lldp_switch = Some("leaf-0 Eth1/9".into());
        slow.to_nic = Some("mlx5_0".into());
        slow.to_plan_switch = Some("leaf-0 Eth1/2".into());
        let mut theirs = port("mlx5_0", "0", "c", Status::Pass, 388.0);
        theirs.lldp_switch = Some("leaf-0 Eth1/2".into());
        // c never sent a result: its end is named from the plan alone.
        let mut lonely = port("mlx5_0", "0", "c", Status::Fail, 0.0);
        lonely.gbps = None;
        lonely.rate = String::new();
        lonely.peer = Some(Status::Fail);
        lonely.bw = None;
        lonely.to = Some("c".into());
        lonely.to_nic = Some("mlx5_3".into());
        lonely.to_plan_switch = Some("leaf-0 Eth1/3".into());
        let hosts = [
            host("a", vec![slow], true),
            host("b", vec![theirs, lonely], true),
            host("c", Vec::new(), false),
        ];
        let m = matrix(&hosts).unwrap();
        assert_eq!(m.links.len(), 2);
        let l = &m.links[0];
        assert_eq!(l.from.name(), "a mlx5_0");
        assert_eq!(
            l.from.switch_ports(),
            "plan leaf-0 Eth1/mlx5_0, LLDP leaf-0 Eth1/9"
        );
        let to = l.to.as_ref().unwrap();
        assert_eq!(to.name(), "b mlx5_0");
        assert_eq!(to.switch_ports(), "plan leaf-0 Eth1/2, LLDP leaf-0 Eth1/2");
        assert_eq!(l.failed, ["fabric_bw"]);
        assert_eq!(l.problems, ["mlx5_0 to b: 97.00 Gb/s measured"]);
        assert_eq!(m.rails[0].cells[0][0].link, Some(0));
        let l = &m.links[1];
        assert_eq!(l.failed, ["fabric_peer"]);
        let to = l.to.as_ref().unwrap();
        assert_eq!(to.name(), "c mlx5_3");
        assert_eq!(to.switch_ports(), "plan leaf-0 Eth1/3, LLDP not seen");
        // The cell without traffic has no rate and no share.
        let cell = &m.rails[0].cells[1][1];
        assert_eq!((cell.rate.as_str(), cell.pct), ("", None));
        assert_eq!((m.ports, m.passed, m.failed), (3, 1, 2));
    }

    #[test]
    fn the_share_of_the_link_rounds_down_and_needs_a_link_speed() {
        let mut p = port("0", "0", "b", Status::Warn, 399.9);
        let h = host("a", vec![p.clone()], true);
        assert_eq!(matrix(&[h]).unwrap().rails[0].cells[0][0].pct, Some(99));
        p.link_gbps = None;
        let h = host("a", vec![p], true);
        let m = matrix(&[h]).unwrap();
        assert_eq!(m.rails[0].cells[0][0].pct, None);
        assert_eq!(m.warned, 1);
    }

    #[test]
    fn rails_sort_by_their_numbers() {
        let mut rails = [
            "10.10.10.0/24",
            "10.10.2.0/24",
            "mlx5_10 (not planned)",
            "mlx5_2 (not planned)",
            "b",
            "a",
        ];
        rails.sort_by_key(|r| rail_order(r));
        assert_eq!(
            rails,
            [
                "10.10.2.0/24",
                "10.10.10.0/24",
                "a",
                "b",
                "mlx5_2 (not planned)",
                "mlx5_10 (not planned)"
            ]
        );
    }

    #[test]
    fn without_a_fabric_result_there_is_no_matrix() {
        assert_eq!(matrix(&[host("a", Vec::new(), false)]), None);
        // A fabric run that failed before any port (no ib_write_bw) still makes its host a
        // column of the matrix, with no ports.
        let m = matrix(&[host("a", Vec::new(), true)]).unwrap();
        assert_eq!((m.hosts.len(), m.ports, m.rails.len()), (1, 0, 0));
    }
}
