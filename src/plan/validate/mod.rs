//! Turns a [`RawPlan`] into a [`Plan`], applying every rule of the plan format
//! (`docs/plan-format.md`) and collecting every problem with its location. Pure: no I/O, no clock,
//! no environment.

mod cells;
mod cluster;
mod cross;
mod hosts;

use crate::plan::diagnostic::Report;
use crate::plan::input::RawPlan;
use crate::plan::model::{Host, Nic, PLAN_SCHEMA, Plan};
use hosts::{NicRow, ServerRow};

/// The plan with its warnings and notes, or every problem when there is an error.
pub fn validate(raw: RawPlan) -> Result<(Plan, Report), Report> {
    let mut report = raw.report;
    let cluster = cluster::read_cluster(raw.cluster.as_ref(), &mut report);
    let servers = raw
        .servers
        .as_ref()
        .map(|t| hosts::read_servers(t, raw.nics.as_ref(), &mut report));
    let default_mtu = cluster::default_mtu(cluster.as_ref());
    let nics = raw
        .nics
        .as_ref()
        .map(|t| hosts::read_nics(t, servers.as_ref(), default_mtu, &mut report))
        .unwrap_or_default();
    let servers = servers.map(|s| s.rows);
    if let (Some(servers), Some(table)) = (&servers, &raw.servers)
        && servers.is_empty()
    {
        // An empty plan would write an empty output folder over a full one.
        report.push(crate::plan::diagnostic::Diagnostic::error(
            table.location.clone(),
            "no hosts: a plan needs at least one host",
        ));
    }
    if let Some(servers) = &servers {
        if raw.nics.is_some() {
            cross::hosts_have_nics(servers, &nics, &mut report);
        }
        cross::addresses_unique(servers, &nics, &mut report);
        cross::nic_counts(servers, &nics, &mut report);
        cross::rails_consistent(servers, &nics, &mut report);
        cross::device_prefixes(servers, &nics, &mut report);
        cross::gpus_per_host(servers, &nics, &mut report);
    }
    let has_gpu = nics.iter().any(|n| n.gpu.is_some());
    if let (Some(c), Some(table)) = (&cluster, &raw.cluster) {
        cross::gpu_keys_without_gpu(c, has_gpu, table, &mut report);
    }
    if report.has_errors() {
        return Err(report);
    }
    // The sheets' cells are freed before the plan is assembled, so that both are never held.
    drop((raw.cluster, raw.servers, raw.nics));
    // Without errors every required value is present, so each `?` below finds a value; should
    // one not, the report says so rather than building a partial plan.
    match assemble(cluster, servers.unwrap_or_default(), nics, has_gpu) {
        Some(plan) => Ok((plan, report)),
        None => {
            report.push(crate::plan::diagnostic::Diagnostic::error(
                crate::plan::location::Location::File,
                "the plan is incomplete (this is a bug in roce-gen: no rule said why)",
            ));
            Err(report)
        }
    }
}

fn assemble(
    cluster: Option<crate::plan::model::Cluster>,
    servers: Vec<ServerRow>,
    nics: Vec<NicRow>,
    has_gpu: bool,
) -> Option<Plan> {
    let mut hosts: Vec<Host> = servers
        .into_iter()
        .map(|s| {
            Some(Host {
                hostname: s.hostname?,
                mgmt_ip: s.mgmt_ip?,
                bmc_ip: s.bmc_ip,
                group: s.group,
                nics: Vec::new(),
            })
        })
        .collect::<Option<_>>()?;
    for n in nics {
        hosts.get_mut(n.host?)?.nics.push(Nic {
            ib_dev: n.ib_dev?,
            netdev: n.netdev?,
            ip: n.ip?,
            gateway: n.gateway,
            mtu: n.mtu,
            rail: n.rail,
            pci: n.pci,
            mac: n.mac,
            switch: n.switch,
            switch_port: n.switch_port,
            gpu: n.gpu,
        });
    }
    let mut cluster = cluster?;
    cluster.gpu_path.settle(has_gpu);
    Some(Plan {
        schema: PLAN_SCHEMA,
        cluster,
        hosts,
    })
}
