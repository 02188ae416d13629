//! The GPU path per host (plan format 1.3): from its latest result, each planned GPU↔port pair
//! with the checks of its port (`gpu_pair`, `pcie_acs`, `pcie_link`, `pcie_mrrs`) and the host's
//! GPUDirect decision (`gpu_direct`, `iommu`), laid out once for every format; and the totals
//! across hosts. Pure: made by the verdict.

use crate::ingest::report::{GpuHost, GpuPairRow, GpuTotals, HostReport, NcclHca, NcclRun};
use crate::ingest::result::{Check, ResultFile, Status, Text};

/// The GPU path's checks of a port, in the order the formats show them.
pub(crate) const PORT_CHECKS: [&str; 4] = ["gpu_pair", "pcie_acs", "pcie_link", "pcie_mrrs"];

/// The worse of two statuses: fail, warn, then the others (a skip is no better than a pass here:
/// either way nothing needs doing).
pub(crate) fn worse(a: Status, b: Status) -> Status {
    let rank = |s: Status| match s {
        Status::Fail => 2,
        Status::Warn => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The GPU path of a host's latest result, before its checks move into the report; `None` where
/// the result records none (a plan without GPUs, a rollback).
pub(crate) fn host(r: &ResultFile) -> Option<GpuHost> {
    let path = r.facts.gpu_path.as_ref()?;
    let status_of = |id: &str, nic: Option<&str>| {
        r.checks
            .iter()
            .find(|c| c.id.as_str() == id && c.nic.as_ref().map(Text::as_str) == nic)
            .map(|c| c.status)
    };
    let gpu_direct = status_of("gpu_direct", None);
    let iommu = status_of("iommu", None);
    let mut status = [gpu_direct, iommu]
        .into_iter()
        .flatten()
        .fold(Status::Pass, worse);
    let pairs: Vec<GpuPairRow> = path
        .pairs
        .iter()
        .map(|pair| {
            let [relation_check, acs_check, link_check, mrrs_check] =
                PORT_CHECKS.map(|id| status_of(id, Some(&pair.nic)));
            let redirecting: Vec<&str> = pair.redirecting().map(|b| b.pci.as_str()).collect();
            let acs = if !redirecting.is_empty() {
                format!("on at {}", redirecting.join(", "))
            } else if acs_check == Some(Status::Skip) {
                "unknown".to_string()
            } else {
                "off".to_string()
            };
            let pair_status = [relation_check, acs_check, link_check, mrrs_check]
                .into_iter()
                .flatten()
                .fold(Status::Pass, worse);
            status = worse(status, pair_status);
            GpuPairRow {
                pair: pair.clone(),
                acs,
                status: pair_status,
                relation_check,
                acs_check,
                link_check,
                mrrs_check,
            }
        })
        .collect();
    Some(GpuHost {
        nccl_version: path.nccl_version.clone(),
        nccl_version_from: path.nccl_version_from.clone(),
        route: path.route.clone(),
        driver: path.driver.clone(),
        peermem: path.peermem.clone(),
        gpu_direct,
        iommu,
        status,
        pairs,
    })
}

impl GpuHost {
    /// NCCL will use GPUDirect RDMA here: the route is the peer-memory module or DMA-BUF.
    pub(crate) fn uses_gpu_direct(&self) -> bool {
        matches!(self.route.as_str(), "peermem" | "dmabuf")
    }
}

/// The NCCL self-test of a host's fabric result, from its checks; `None` where it has none.
pub(crate) fn nccl(checks: &[Check]) -> Option<NcclRun> {
    let busbw = checks.iter().find(|c| c.id.as_str() == "nccl_busbw");
    let gdr: Vec<&Check> = checks
        .iter()
        .filter(|c| c.id.as_str() == "nccl_gdr")
        .collect();
    if busbw.is_none() && gdr.is_empty() {
        return None;
    }
    let mut problems: Vec<String> = Vec::new();
    for c in gdr.iter().copied().chain(busbw) {
        let m = c.message.as_str();
        if c.status != Status::Pass && !problems.iter().any(|p| p == m) {
            problems.push(m.to_string());
        }
    }
    Some(NcclRun {
        gdr: gdr
            .iter()
            .filter(|c| c.nic.as_ref().is_some_and(|n| !n.as_str().is_empty()))
            .map(|c| NcclHca {
                nic: c.nic.as_ref().map(Text::to_string).unwrap_or_default(),
                gdr: c.actual.as_str().to_string(),
                status: c.status,
            })
            .collect(),
        busbw_check: busbw.map(|c| c.status),
        busbw: busbw
            .map(|c| c.actual.as_str().to_string())
            .unwrap_or_default(),
        mark: busbw
            .map(|c| c.expected.as_str().to_string())
            .unwrap_or_default(),
        problems,
    })
}

/// The totals over the counted hosts that record a GPU path; `None` when none does.
pub(crate) fn totals(hosts: &[HostReport]) -> Option<GpuTotals> {
    let mut t = GpuTotals::default();
    for (h, g) in hosts
        .iter()
        .filter(|h| h.counted())
        .filter_map(|h| Some((h, h.gpu.as_ref()?)))
    {
        t.hosts += 1;
        if g.uses_gpu_direct() {
            t.gpu_direct += 1;
        } else {
            t.without_gpu_direct.push(h.host.clone());
        }
        for p in &g.pairs {
            t.pairs += 1;
            match p.status {
                Status::Fail => t.failed += 1,
                Status::Warn => t.warned += 1,
                Status::Skip => t.skipped += 1,
                Status::Pass | Status::Changed => t.passed += 1,
            }
        }
    }
    (t.hosts > 0).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::result::{Parsed, parse};

    fn result(checks: &str, gpu_path: &str) -> ResultFile {
        let text = format!(
            r#"{{"schema": "roce-gen/result/v1", "host": "h", "phase": "precheck",
            "finished_at": "2026-12-05T08:00:00Z", "status": "warn", "checks": [{checks}],
            "facts": {{"gpu_path": {gpu_path}}}}}"#
        );
        match parse(text.as_bytes()) {
            Parsed::Result(r) => *r,
            _ => panic!("not a result: {text}"),
        }
    }

    const TWO_PAIRS: &str = r#"{"nccl_version": "2.23.4", "route": "peermem",
        "pairs": [
          {"nic": "mlx5_0", "gpu": "0", "relation": "PIX",
           "bridges": [{"pci": "0000:17:00.0", "acs_ctl": 29}, {"pci": "0000:17:01.0", "acs_ctl": 0}]},
          {"nic": "mlx5_1", "gpu": "1", "relation": "PIX",
           "bridges": [{"pci": "0000:28:00.0", "acs_ctl": null}]}]}"#;

    #[test]
    fn each_pair_takes_its_ports_checks_and_names_the_redirecting_bridge() {
        let r = result(
            r#"{"id": "gpu_direct", "status": "pass"},
               {"id": "gpu_pair", "nic": "mlx5_0", "status": "pass"},
               {"id": "pcie_acs", "nic": "mlx5_0", "status": "warn"},
               {"id": "pcie_acs", "nic": "mlx5_1", "status": "skip"},
               {"id": "pcie_mrrs", "nic": "mlx5_1", "status": "fail"}"#,
            TWO_PAIRS,
        );
        let g = host(&r).unwrap();
        assert!(g.uses_gpu_direct());
        assert_eq!(g.status, Status::Fail);
        let [a, b] = &g.pairs[..] else {
            panic!("{g:?}")
        };
        assert_eq!(
            (a.acs.as_str(), a.status, a.acs_check),
            ("on at 0000:17:00.0", Status::Warn, Some(Status::Warn))
        );
        assert_eq!((a.relation_check, a.link_check), (Some(Status::Pass), None));
        assert_eq!(
            (b.acs.as_str(), b.status),
            ("unknown", Status::Fail),
            "the unread bridge is unknown, not off"
        );
    }

    #[test]
    fn a_result_without_a_gpu_path_has_none_and_no_route_is_no_gpu_direct() {
        let plain = result("", "null");
        assert_eq!(host(&plain), None);
        let none = result(
            r#"{"id": "gpu_direct", "status": "warn"}"#,
            r#"{"route": "none", "pairs": []}"#,
        );
        let g = host(&none).unwrap();
        assert!(!g.uses_gpu_direct());
        assert_eq!((g.gpu_direct, g.status), (Some(Status::Warn), Status::Warn));
    }
}
