//! The embedded sample plan: a small but realistic cluster (4 hosts × 8 rails, the NVIDIA lossless
//! profile), written as an `.xlsx` in the layout of `docs/plan-format.md`. `roce-gen sample` writes
//! it for users to fill in, and `--sample` reads it back through the normal reader, so the sample
//! is always a valid plan of the current format.

use anyhow::{Context, Result};
use rust_xlsxwriter::{DocProperties, ExcelDateTime, Format, Workbook, Worksheet};

/// A cell of the sample: numbers are stored as numbers, as a planner's workbook would.
enum Cell {
    Text(String),
    Number(f64),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

impl From<u32> for Cell {
    fn from(n: u32) -> Self {
        Cell::Number(f64::from(n))
    }
}

/// The hosts of the sample.
const HOSTS: u32 = 4;
/// The rails (one NIC per rail per host).
const RAILS: u32 = 8;
/// PCI slots of the 8 ConnectX ports, as on a typical 8-GPU server.
const PCI: [&str; 8] = [
    "0000:1a:00.0",
    "0000:3c:00.0",
    "0000:4d:00.0",
    "0000:5e:00.0",
    "0000:9c:00.0",
    "0000:bc:00.0",
    "0000:cc:00.0",
    "0000:dc:00.0",
];

fn cluster_rows() -> Vec<Vec<Cell>> {
    // Key, value, and what it means. An empty value leaves the key at its default (or, for
    // the optional v1.1 keys, the host's own value): those rows document the keys without
    // changing the plan.
    let rows: [(&str, Cell, &str); 39] = [
        (
            "cluster_name",
            "demo".into(),
            "names the install folder /opt/roce-gen/<name> and the unit",
        ),
        (
            "trust",
            "dscp".into(),
            "dscp: how the NIC classifies received traffic (pcp is refused since format 1.2)",
        ),
        ("roce_dscp", 26.into(), "DSCP of RoCE data (0-63)"),
        ("roce_priority", 3.into(), "priority of RoCE data (0-7)"),
        ("roce_ecn", 2.into(), "ECN bits of the RoCE ToS (0-3)"),
        (
            "roce_tos",
            106.into(),
            "roce_dscp << 2 | roce_ecn; derived when empty",
        ),
        (
            "pfc_priorities",
            3.into(),
            "lossless priorities, comma-separated; none turns PFC off",
        ),
        (
            "ecn_priorities",
            3.into(),
            "priorities with ECN (DCQCN); should include roce_priority",
        ),
        (
            "cnp_dscp",
            48.into(),
            "DSCP of congestion notification packets",
        ),
        (
            "cnp_priority",
            6.into(),
            "priority of CNPs; not roce_priority",
        ),
        (
            "roce_mode",
            "v2".into(),
            "RDMA-CM default: v2 (routable) or v1",
        ),
        (
            "mtu",
            4200.into(),
            "every RoCE port's MTU unless its NICs row says otherwise; at least 4200",
        ),
        (
            "global_pause",
            "off".into(),
            "802.3x pause; must be off with PFC",
        ),
        (
            "persistence",
            "yes".into(),
            "yes: apply installs the boot unit and the driver-reload hook",
        ),
        (
            "dcbx",
            "check".into(),
            "check: warn when firmware DCBX can override the host; os: take it; leave",
        ),
        (
            "min_ofed_version",
            "24.10".into(),
            "oldest MLNX_OFED/DOCA accepted (ofed_info -s forms too)",
        ),
        (
            "min_fw_version",
            "28.39.1002".into(),
            "oldest NIC firmware accepted, within one major",
        ),
        (
            "cable_length",
            "".into(),
            "metres (1-1000) the lossless buffer is sized for; empty: the host's",
        ),
        (
            "firmware_config",
            "report".into(),
            "report: record NV values; apply: set them (reboot); off",
        ),
        (
            "nccl_env",
            "yes".into(),
            "yes: apply writes nccl.env (NCCL_IB_HCA, NCCL_IB_TC, NCCL_IB_GID_INDEX)",
        ),
        (
            "arp_sysctls",
            "check".into(),
            "check: warn on ARP flux between RoCE ports; set: apply fixes it; leave",
        ),
        (
            "fabric_seconds",
            10.into(),
            "fabric test: seconds of each traffic step (2-300)",
        ),
        (
            "fabric_min_pct",
            90.into(),
            "fabric test: a link passes at this % of its speed (1-100)",
        ),
        (
            "fabric_incast",
            "yes".into(),
            "fabric test: a second step of two senders into one receiver (PFC, ECN at work)",
        ),
        (
            "health",
            "yes".into(),
            "yes: apply installs the health timer (node_exporter textfile)",
        ),
        (
            "health_interval",
            30.into(),
            "seconds between health runs (5-3600)",
        ),
        (
            "drift_interval",
            "".into(),
            "seconds between drift checks; empty: 300, or health_interval when longer",
        ),
        (
            "health_textfile_dir",
            "".into(),
            "node_exporter's textfile folder; empty: /var/lib/node_exporter/textfile_collector",
        ),
        (
            "gpu_direct",
            "".into(),
            "GPU path: check, require or no; empty: check where a NICs row names a gpu",
        ),
        (
            "gpu_nic_distance",
            "PXB".into(),
            "GPU path: the farthest PCIe relation of a GPU and its port: PIX, PXB, PHB, NODE",
        ),
        (
            "pcie_acs",
            "check".into(),
            "GPU path: check the ACS redirect bits between each pair; disable: apply clears them",
        ),
        (
            "pcie_mrrs",
            "".into(),
            "GPU path: the ports' least Max Read Request Size (128-4096); empty: the host's",
        ),
        (
            "nccl_version",
            "".into(),
            "the NCCL version the jobs use (2.23.4); empty: the host's library",
        ),
        (
            "nccl_test",
            "".into(),
            "fabric phase: run the NCCL self-test; empty: yes where a NICs row names a gpu",
        ),
        (
            "nccl_min_busbw",
            "".into(),
            "NCCL self-test pass mark, GB/s; empty: fabric_min_pct of a port's line rate",
        ),
        (
            "dcqcn_rpg_ai_rate",
            "".into(),
            "DCQCN reaction point, Mb/s added per step; empty: the host's",
        ),
        (
            "dcqcn_rpg_hai_rate",
            "".into(),
            "DCQCN hyper-additive increase, Mb/s; empty: the host's",
        ),
        (
            "dcqcn_rpg_time_reset",
            "".into(),
            "DCQCN rate-increase timer, microseconds; empty: the host's",
        ),
        (
            "dcqcn_min_time_between_cnps",
            "".into(),
            "DCQCN notification point: microseconds between CNPs; empty: the host's",
        ),
    ];
    let mut out = vec![vec!["key".into(), "value".into(), "comment".into()]];
    out.extend(
        rows.into_iter()
            .map(|(k, v, comment)| vec![k.into(), v, comment.into()]),
    );
    out
}

fn server_rows() -> Vec<Vec<Cell>> {
    let mut out = vec![
        ["hostname", "mgmt_ip", "bmc_ip", "group"]
            .map(Cell::from)
            .into(),
    ];
    for h in 1..=HOSTS {
        out.push(vec![
            format!("gpu-{h:03}").into(),
            format!("192.168.10.{}", 10 + h).into(),
            format!("192.168.20.{}", 10 + h).into(),
            format!("rack-{}", if h <= HOSTS / 2 { "a" } else { "b" }).into(),
        ]);
    }
    out
}

fn nic_rows() -> Vec<Vec<Cell>> {
    let header = [
        "hostname",
        "ib_dev",
        "netdev",
        "ip",
        "gateway",
        "mtu",
        "rail",
        "pci",
        "mac",
        "switch",
        "switch_port",
    ];
    let mut out = vec![header.map(Cell::from).into()];
    for h in 1..=HOSTS {
        for (r, pci) in (0..RAILS).zip(PCI) {
            out.push(vec![
                format!("gpu-{h:03}").into(),
                format!("mlx5_{r}").into(),
                format!("ens{}f0np0", r + 1).into(),
                format!("10.100.{r}.{}/24", 10 + h).into(),
                format!("10.100.{r}.1").into(),
                "".into(),
                r.into(),
                pci.into(),
                format!("b8:3f:d2:{h:02x}:{r:02x}:00").into(),
                format!("leaf-{}", r + 1).into(),
                format!("Eth1/{h}").into(),
            ]);
        }
    }
    out
}

const README: &[&str] = &[
    "roce-gen sample plan (AID workbook format v1.3).",
    "",
    "Cluster: one key/value pair per row: the RoCE profile every NIC gets; the comment column",
    "explains each key. Empty values keep the default; the dcqcn_<name> keys (any file of the",
    "OFED ecn/roce_rp/ tree, and min_time_between_cnps) set DCQCN parameters.",
    "Servers: one row per host (hostname, mgmt_ip required; bmc_ip, group optional).",
    "NICs: one row per RoCE port (hostname, ib_dev, netdev, ip with /prefix required).",
    "",
    "Headers may also be written in Chinese or with other aliases; column order is free.",
    "Check your plan with: roce-gen validate plan.xlsx",
    "Generate bundles with: roce-gen generate plan.xlsx -o dist/",
];

/// The sample workbook as `.xlsx` bytes. The same bytes every time: the creation date is fixed.
pub(crate) fn workbook() -> Result<Vec<u8>> {
    let mut book = Workbook::new();
    let created = ExcelDateTime::from_ymd(2026, 1, 1).context("sample creation date")?;
    book.set_properties(
        &DocProperties::new()
            .set_author("roce-gen")
            .set_creation_datetime(&created),
    );
    let bold = Format::new().set_bold();
    for (name, rows) in [
        ("Cluster", cluster_rows()),
        ("Servers", server_rows()),
        ("NICs", nic_rows()),
    ] {
        let sheet = book.add_worksheet();
        sheet.set_name(name)?;
        write_rows(sheet, &rows, &bold)?;
    }
    let sheet = book.add_worksheet();
    sheet.set_name("Read me")?;
    for (row, line) in (0u32..).zip(README) {
        sheet.write_string(row, 0, *line)?;
    }
    book.save_to_buffer()
        .context("could not build the sample workbook")
}

fn write_rows(sheet: &mut Worksheet, rows: &[Vec<Cell>], bold: &Format) -> Result<()> {
    for (r, row) in (0u32..).zip(rows) {
        for (c, cell) in (0u16..).zip(row) {
            match cell {
                Cell::Text(t) if t.is_empty() => {}
                Cell::Text(t) if r == 0 => drop(sheet.write_string_with_format(r, c, t, bold)?),
                Cell::Text(t) => drop(sheet.write_string(r, c, t)?),
                Cell::Number(n) => drop(sheet.write_number(r, c, *n)?),
            }
        }
    }
    let widths = rows.iter().flat_map(|row| row.iter().enumerate()).fold(
        Vec::<usize>::new(),
        |mut w, (c, cell)| {
            let len = match cell {
                Cell::Text(t) => t.chars().count(),
                Cell::Number(n) => n.to_string().len(),
            };
            if w.len() <= c {
                w.resize(c + 1, 0);
            }
            w[c] = w[c].max(len);
            w
        },
    );
    for (c, width) in (0u16..).zip(widths) {
        #[allow(clippy::cast_precision_loss)] // column widths are small
        sheet.set_column_width(c, (width + 2) as f64)?;
    }
    sheet.set_freeze_panes(1, 0)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sample_is_the_same_bytes_every_time() {
        assert_eq!(super::workbook().unwrap(), super::workbook().unwrap());
    }
}
