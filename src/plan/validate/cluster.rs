//! The `Cluster` sheet: key/value rows become the [`Cluster`] profile, defaults filled in, and
//! the profile's own rules checked (ToS, CNP priority, PFC against global pause).

use std::collections::BTreeMap;

use crate::plan::diagnostic::{Diagnostic, Report, quoted};
use crate::plan::input::raw::Table;
use crate::plan::layout::cluster_key;
use crate::plan::location::Location;
use crate::plan::model::{
    ArpSysctls, BusBw, Cluster, ClusterName, DCQCN_PARAMS, Dcbx, Dcqcn, Distance, Dscp, EcnBits,
    Fabric, FirmwareConfig, GpuDirect, GpuPath, Health, Mtu, OnOff, PcieAcs, Priorities, Priority,
    RoceMode, TextfileDir, Tos, Trust, Version, parse_bool, parse_mrrs,
};
use crate::plan::validate::cells::{int_then, text_of};

/// The profile, or `None` when a value is wrong or `cluster_name` is missing (reported). When
/// the sheet itself is missing, `table` is `None` and so is the result.
pub(crate) fn read_cluster(table: Option<&Table>, report: &mut Report) -> Option<Cluster> {
    let table = table?;
    let values = collect_keys(table, report);
    let before = report.count(crate::plan::diagnostic::Severity::Error);
    // Where a key's value is, else the sheet: for rules about a key that may be absent.
    let key_at = |key: &str| {
        values
            .get(key)
            .map_or_else(|| table.location.clone(), |(_, loc)| loc.clone())
    };
    let lookup = |key: &str| {
        values
            .get(key)
            .and_then(|(text, loc)| Some((text.clone()?, loc.clone())))
    };
    // Each value: parsed when given, its default otherwise; a bad value is reported and the
    // default stands in so the remaining rules can still run.
    macro_rules! value {
        ($key:literal, $parse:expr, $default:expr) => {
            match lookup($key) {
                Some((text, loc)) => match $parse(text.as_str()) {
                    Ok(v) => (v, Some(loc)),
                    Err(why) => {
                        report.push(Diagnostic::error(
                            loc,
                            format!("{} {} {why}", $key, quoted(&text)),
                        ));
                        ($default, None)
                    }
                },
                None => ($default, None),
            }
        };
    }

    let name = match lookup("cluster_name") {
        Some((text, loc)) => ClusterName::parse(&text)
            .map_err(|why| {
                report.push(Diagnostic::error(
                    loc,
                    format!("cluster_name {} {why}", quoted(&text)),
                ))
            })
            .ok(),
        None => {
            let (message, loc) = match values.get("cluster_name") {
                Some((_, loc)) => ("cluster_name is empty (required)", loc.clone()),
                None => ("no `cluster_name` key (required)", table.location.clone()),
            };
            report.push(Diagnostic::error(loc, message));
            None
        }
    };
    let (trust, _) = value!("trust", Trust::parse, Trust::Dscp);
    let (roce_dscp, _) = value!("roce_dscp", int(Dscp::new), dscp(26));
    let (roce_priority, roce_prio_at) = value!("roce_priority", int(Priority::new), prio(3));
    let (roce_ecn, _) = value!("roce_ecn", int(EcnBits::new), ecn(2));
    let (roce_tos_given, tos_at) = value!("roce_tos", |s| int_then(s, Tos::new).map(Some), None);
    let (pfc_given, _) = value!("pfc_priorities", |s| Priorities::parse(s).map(Some), None);
    let (ecn_given, _) = value!("ecn_priorities", |s| Priorities::parse(s).map(Some), None);
    let (cnp_dscp, _) = value!("cnp_dscp", int(Dscp::new), dscp(48));
    let (cnp_priority, cnp_prio_at) = value!("cnp_priority", int(Priority::new), prio(6));
    let (roce_mode, _) = value!("roce_mode", RoceMode::parse, RoceMode::V2);
    let (mtu, _) = value!(
        "mtu",
        int(Mtu::new),
        Mtu::new(4200).expect("4200 is in range")
    );
    let (global_pause, pause_at) =
        value!("global_pause", |s| parse_bool(s).map(on_off), OnOff::Off);
    let (persistence, _) = value!("persistence", parse_bool, true);
    let (dcbx, _) = value!("dcbx", Dcbx::parse, Dcbx::Check);
    let (cable_length, _) = value!(
        "cable_length",
        |s| int_then(s, |v| u16::try_from(v)
            .ok()
            .filter(|m| (1..=1000).contains(m))
            .map(Some)
            .ok_or_else(
                || "is not a cable length in metres (1 to 1000)".to_string()
            )),
        None
    );
    let (firmware_config, _) = value!(
        "firmware_config",
        FirmwareConfig::parse,
        FirmwareConfig::Report
    );
    let (nccl_env, _) = value!("nccl_env", parse_bool, true);
    let mut dcqcn = Dcqcn::default();
    for p in &DCQCN_PARAMS {
        let key = format!("dcqcn_{}", p.name);
        let Some((text, loc)) = lookup(&key) else {
            continue;
        };
        match int_then(&text, |v| {
            u32::try_from(v)
                .ok()
                .filter(|v| *v <= p.max)
                .ok_or_else(|| format!("is not a DCQCN value (0 to {})", p.max))
        }) {
            Ok(v) => {
                dcqcn.0.insert(p.name, v);
            }
            Err(why) => report.push(Diagnostic::error(
                loc,
                format!("{key} {} {why}", quoted(&text)),
            )),
        }
    }
    let (min_ofed_version, _) = value!(
        "min_ofed_version",
        |s| Version::parse_ofed(s).map(Some),
        None
    );
    let (min_fw_version, _) = value!("min_fw_version", |s| Version::parse(s).map(Some), None);
    let (arp_sysctls, _) = value!("arp_sysctls", ArpSysctls::parse, ArpSysctls::Check);
    let fabric = Fabric {
        seconds: value!(
            "fabric_seconds",
            int(Fabric::parse_seconds),
            Fabric::default().seconds
        )
        .0,
        min_pct: value!(
            "fabric_min_pct",
            int(Fabric::parse_min_pct),
            Fabric::default().min_pct
        )
        .0,
        incast: value!("fabric_incast", parse_bool, true).0,
    };
    let (health_enabled, _) = value!("health", parse_bool, true);
    let (interval, _) = value!(
        "health_interval",
        int(Health::parse_interval),
        Health::default().interval
    );
    // Unset, the drift check keeps its default unless health runs are rarer still.
    let (drift_interval, drift_at) = value!(
        "drift_interval",
        int(Health::parse_drift),
        Health::default().drift_interval.max(interval)
    );
    if let Some(loc) = drift_at
        && drift_interval < interval
    {
        report.push(Diagnostic::error(
            loc,
            format!(
                "drift_interval {drift_interval} is shorter than health_interval {interval}: \
                 drift is checked within a health run"
            ),
        ));
    }
    let health = Health {
        enabled: health_enabled,
        interval,
        drift_interval,
        health_textfile_dir: value!(
            "health_textfile_dir",
            TextfileDir::parse,
            TextfileDir::default()
        )
        .0,
    };
    let gpu_path = GpuPath {
        gpu_direct: value!("gpu_direct", |s| GpuDirect::parse(s).map(Some), None).0,
        gpu_nic_distance: value!("gpu_nic_distance", Distance::parse, Distance::default()).0,
        pcie_acs: value!("pcie_acs", PcieAcs::parse, PcieAcs::default()).0,
        pcie_mrrs: value!("pcie_mrrs", |s| int_then(s, parse_mrrs).map(Some), None).0,
        nccl_version: value!("nccl_version", |s| Version::parse(s).map(Some), None).0,
        nccl_test: value!("nccl_test", |s| parse_bool(s).map(Some), None).0,
        nccl_min_busbw: value!("nccl_min_busbw", |s| BusBw::parse(s).map(Some), None).0,
    };
    if trust == Trust::Pcp {
        report.push(Diagnostic::error(
            key_at("trust"),
            "trust pcp: untagged RoCE traffic carries no PCP, so no priority would ever be lossless \
             (the plan cannot express VLAN tagging); use trust dscp",
        ));
    }

    let roce_tos = Tos::from_parts(roce_dscp, roce_ecn);
    if let (Some(given), Some(loc)) = (roce_tos_given, tos_at)
        && given != roce_tos
    {
        report.push(Diagnostic::error(
            loc,
            format!(
                "roce_tos {given} does not match roce_dscp {roce_dscp} and roce_ecn {roce_ecn}: \
                 {roce_dscp} << 2 | {roce_ecn} = {roce_tos}"
            ),
        ));
    }
    if cnp_priority == roce_priority {
        let loc = cnp_prio_at
            .or(roce_prio_at)
            .unwrap_or_else(|| table.location.clone());
        report.push(Diagnostic::error(
            loc,
            format!("cnp_priority {cnp_priority} equals roce_priority: CNPs need a priority of their own"),
        ));
    }
    let pfc_priorities = pfc_given.unwrap_or_else(|| Priorities::single(roce_priority));
    let ecn_priorities = ecn_given.unwrap_or_else(|| Priorities::single(roce_priority));
    if !pfc_priorities.is_empty() && global_pause == OnOff::On {
        let loc = pause_at.unwrap_or_else(|| table.location.clone());
        report.push(Diagnostic::error(
            loc,
            "global_pause is on while PFC is on: 802.3x pause must be off with PFC",
        ));
    }
    if !pfc_priorities.is_empty() && !pfc_priorities.contains(roce_priority) {
        let loc = key_at("pfc_priorities");
        report.push(Diagnostic::warning(
            loc,
            format!("pfc_priorities do not include roce_priority {roce_priority}: RoCE traffic will not be lossless"),
        ));
    }
    if !ecn_priorities.is_empty() && !ecn_priorities.contains(roce_priority) {
        let loc = key_at("ecn_priorities");
        report.push(Diagnostic::warning(
            loc,
            format!("ecn_priorities do not include roce_priority {roce_priority}: RoCE traffic gets no congestion control (DCQCN)"),
        ));
    }
    if roce_mode == RoceMode::V1 && trust == Trust::Dscp {
        let loc = key_at("roce_mode");
        report.push(Diagnostic::warning(
            loc,
            "roce_mode v1 with trust dscp: RoCE v1 frames carry no IP header, so no DSCP; the switch will classify them by PCP",
        ));
    }
    if let Some((_, loc)) = values.get("mtu")
        && mtu.get() < MIN_ROCE_MTU
    {
        report.push(Diagnostic::warning(loc.clone(), mtu_warning(mtu.get())));
    }
    if report.count(crate::plan::diagnostic::Severity::Error) > before {
        return None;
    }
    Some(Cluster {
        cluster_name: name?,
        trust,
        roce_dscp,
        roce_priority,
        roce_ecn,
        roce_tos,
        pfc_priorities,
        ecn_priorities,
        cnp_dscp,
        cnp_priority,
        roce_mode,
        mtu,
        global_pause,
        persistence,
        dcbx,
        cable_length,
        dcqcn,
        firmware_config,
        nccl_env,
        min_ofed_version,
        min_fw_version,
        arp_sysctls,
        fabric,
        health,
        gpu_path,
    })
}

/// The smallest MTU that carries RoCE's 4096-byte path MTU with its headers.
pub(crate) const MIN_ROCE_MTU: u16 = 4200;

/// Why an MTU below [`MIN_ROCE_MTU`] is worth a warning.
pub(crate) fn mtu_warning(mtu: u16) -> String {
    format!(
        "mtu {mtu} is below {MIN_ROCE_MTU}: RoCE's 4096-byte MTU does not fit, so RDMA runs at \
         1024 or 2048 bytes"
    )
}

/// The MTU the NIC rows default to, even when the profile as a whole is wrong.
pub(crate) fn default_mtu(cluster: Option<&Cluster>) -> Mtu {
    cluster.map_or_else(|| Mtu::new(4200).expect("4200 is in range"), |c| c.mtu)
}

/// Key → (text, location of the value), reporting unknown, repeated and key-less rows.
fn collect_keys(
    table: &Table,
    report: &mut Report,
) -> BTreeMap<&'static str, (Option<String>, Location)> {
    let mut values: BTreeMap<&'static str, (Option<String>, Location)> = BTreeMap::new();
    for row in &table.rows {
        let (Some(key_cell), Some(value_cell)) = (row.cells.get("key"), row.cells.get("value"))
        else {
            continue;
        };
        let key_text = text_of(key_cell, "key", report);
        let Some(key_text) = key_text else {
            if !value_cell.value.is_blank() {
                report.push(Diagnostic::warning(
                    key_cell.location.clone(),
                    "value without a key is ignored",
                ));
            }
            continue;
        };
        let Some(key) = cluster_key(&key_text) else {
            let folded = crate::plan::layout::fold(&key_text);
            if folded.starts_with("dcqcn_") || folded.starts_with("dcqcn.") {
                // A misspelt DCQCN parameter would silently leave the host's value.
                let known: Vec<&str> = DCQCN_PARAMS.iter().map(|p| p.name).collect();
                report.push(Diagnostic::error(
                    key_cell.location.clone(),
                    format!(
                        "unknown DCQCN parameter {}; known: {}",
                        quoted(&key_text),
                        known.join(", ")
                    ),
                ));
                continue;
            }
            let hint = crate::plan::layout::suggest_key(&key_text)
                .map(|k| format!("; did you mean {k}?"))
                .unwrap_or_default();
            report.push(Diagnostic::warning(
                key_cell.location.clone(),
                format!("unknown key {} is ignored{hint}", quoted(&key_text)),
            ));
            continue;
        };
        let value_text = text_of(value_cell, key.name, report);
        if let Some((_, first)) = values.get(key.name) {
            report.push(Diagnostic::error(
                key_cell.location.clone(),
                format!("key `{}` is given twice (first at {first})", key.name),
            ));
            continue;
        }
        values.insert(key.name, (value_text, value_cell.location.clone()));
    }
    values
}

/// A parser for an integer-valued key.
fn int<T>(make: fn(i64) -> Result<T, String>) -> impl Fn(&str) -> Result<T, String> {
    move |s| int_then(s, make)
}

fn on_off(on: bool) -> OnOff {
    if on { OnOff::On } else { OnOff::Off }
}

fn dscp(v: i64) -> Dscp {
    Dscp::new(v).expect("default DSCP is in range")
}

fn prio(v: i64) -> Priority {
    Priority::new(v).expect("default priority is in range")
}

fn ecn(v: i64) -> EcnBits {
    EcnBits::new(v).expect("default ECN is in range")
}
