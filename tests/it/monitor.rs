//! Facts for monitoring on simulated hosts: the transceiver (`ethtool -m` stand-in in the CMIS
//! and SFF-8636 layouts), link and PCIe, the RoCE counters and the LLDP neighbour (lldpd's
//! `lldpcli`, lldpad's `lldptool`) in the result's `facts`, and the `optics`, `pcie`,
//! `link_speed` and `cabling` checks they drive; then those results through `ingest --format
//! prometheus`. Each scenario runs under every bash of `hosts::bashes`.

use serde_json::Value;

use crate::common::{roce_gen, tmp};
use crate::hosts::{FakeHost, ScriptRun, bashes};

/// Gives the host lldpd (`lldpcli`, running) and a neighbour per netdev.
fn with_lldpd(h: &FakeHost, neighbours: &[(&str, &str)]) {
    std::os::unix::fs::symlink("stub", h.fake("bin/lldpcli")).unwrap();
    std::fs::write(h.fake(".fake/systemd/active/lldpd.service"), "").unwrap();
    write_neighbours(h, neighbours);
}

fn write_neighbours(h: &FakeHost, neighbours: &[(&str, &str)]) {
    std::fs::create_dir_all(h.fake(".fake/lldp")).unwrap();
    for (ifc, spec) in neighbours {
        std::fs::write(h.fake(&format!(".fake/lldp/{ifc}")), spec).unwrap();
    }
}

fn check<'a>(run: &'a ScriptRun, id: &str, nic: &str) -> &'a Value {
    run.result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id && c["nic"] == nic)
        .unwrap_or_else(|| panic!("no check {id} {nic}: {:?}", run.statuses()))
}

#[test]
fn a_healthy_host_records_optics_link_pcie_counters_and_its_neighbours() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        with_lldpd(
            &h,
            &[
                ("ens1f0np0", "switch=leaf-1.dc1.example\nport=Ethernet1/1\n"),
                ("ens2f0np0", "switch=leaf-2\nport=Eth1/1\n"),
            ],
        );
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}\n{}", pre.stdout, pre.stderr);
        let nic = &pre.result["facts"]["nics"]["mlx5_0"];
        let t = &nic["transceiver"];
        assert_eq!(t["vendor"], "NVIDIA", "{bash}: {nic:#}");
        assert_eq!(t["part_number"], "MMA4Z00-NS400");
        assert_eq!(t["temperature_c"], 40.5);
        assert_eq!(
            t["tx_power_dbm"],
            serde_json::json!([-0.5, -0.62, -0.41, -0.55])
        );
        assert_eq!(
            t["rx_power_dbm"],
            serde_json::json!([-1.1, -1.32, -0.98, -1.21])
        );
        assert_eq!(
            nic["link"],
            serde_json::json!({"speed_mbps": 400000, "width": 4, "max_speed_mbps": 400000})
        );
        assert_eq!(
            nic["pcie"],
            serde_json::json!({"speed": "32.0 GT/s PCIe", "width": 16, "max_speed": "32.0 GT/s PCIe", "max_width": 16})
        );
        let counters = &nic["counters"];
        for name in [
            "out_of_sequence",
            "packet_seq_err",
            "local_ack_timeout_err",
            "np_cnp_sent",
            "rp_cnp_handled",
            "rx_pause_ctrl_phy",
            "tx_prio3_pause",
        ] {
            assert!(counters[name].is_u64(), "{bash}: {name} in {counters}");
        }
        assert_eq!(counters["np_cnp_sent"], 1200);
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_1"]["counters"]["tx_prio3_pause"],
            20
        );
        assert_eq!(
            nic["neighbor"],
            serde_json::json!({"source": "lldpd", "switch": "leaf-1.dc1.example", "port": "Ethernet1/1", "port_descr": ""})
        );
        for id in ["optics", "pcie", "link_speed"] {
            pre.expect(&[id], "mlx5_0", "pass", &bash);
            pre.expect(&[id], "mlx5_1", "pass", &bash);
        }
        // The plan names leaf-1 Eth1/1 for mlx5_0: LLDP's FQDN and long port name match it.
        assert_eq!(pre.status("cabling", "mlx5_0"), "pass", "{bash}");
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "ens1f0np0 is cabled to leaf-1.dc1.example Ethernet1/1, as planned (lldpd)"
        );
        assert_eq!(
            pre.message("cabling", "mlx5_1"),
            "skipped: the plan gives no switch for ens2f0np0"
        );
        // apply probes once more (its own precheck) and records the same facts.
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stderr);
        assert_eq!(apply.result["facts"]["nics"]["mlx5_0"]["transceiver"], *t);
        // rollback has no checks of its own but still records the facts.
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stderr);
        assert_eq!(
            back.result["facts"]["nics"]["mlx5_1"]["link"]["speed_mbps"],
            400000
        );
    }
}

#[test]
fn a_miscabled_port_is_a_warning_naming_both_ends() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        with_lldpd(&h, &[("ens1f0np0", "switch=leaf-1\nport=Eth1/7\n")]);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "a warning does not fail: {}", pre.stdout);
        assert_eq!(pre.status("cabling", "mlx5_0"), "warn", "{bash}");
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "ens1f0np0 is cabled to leaf-1 Eth1/7, plan says leaf-1 Eth1/1"
        );
        let c = check(&pre, "cabling", "mlx5_0");
        assert_eq!(c["expected"], "leaf-1 Eth1/1");
        assert_eq!(c["actual"], "leaf-1 Eth1/7");
        assert!(
            pre.stdout.contains(
                "⚠ cabling:mlx5_0: ens1f0np0 is cabled to leaf-1 Eth1/7, plan says leaf-1 Eth1/1"
            ),
            "{}",
            pre.stdout
        );

        // Another switch altogether, seen through lldpad's lldptool instead.
        let h = FakeHost::new("inbox", "node-a", &[], &bash);
        std::os::unix::fs::symlink("stub", h.fake("bin/lldptool")).unwrap();
        std::fs::write(h.fake(".fake/systemd/active/lldpad.service"), "").unwrap();
        write_neighbours(
            &h,
            &[(
                "ens1f0np0",
                "switch=leaf-2\nport=Ethernet14\nport_type=local\ndescr=Eth1/14\n",
            )],
        );
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "ens1f0np0 is cabled to leaf-2 Ethernet14, plan says leaf-1 Eth1/1",
            "{bash}"
        );
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_0"]["neighbor"]["source"],
            "lldpad"
        );
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_0"]["neighbor"]["port_descr"],
            "Eth1/14"
        );
    }
}

#[test]
fn without_an_lldp_source_cabling_is_skipped_never_guessed() {
    for bash in bashes() {
        // No lldpcli or lldptool at all.
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("cabling", "mlx5_0"), "skip", "{bash}");
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "skipped: no LLDP source on this host (neither lldpcli (lldpd) nor lldptool (lldpad) is installed); cannot compare with leaf-1 Eth1/1"
        );
        let nic = &pre.result["facts"]["nics"]["mlx5_0"];
        assert_eq!(nic["neighbor"], Value::Null);
        assert_eq!(
            nic["neighbor_note"],
            "neither lldpcli (lldpd) nor lldptool (lldpad) is installed"
        );

        // lldpcli installed but lldpd not running.
        std::os::unix::fs::symlink("stub", h.fake("bin/lldpcli")).unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert!(
            pre.message("cabling", "mlx5_0").starts_with(
                "skipped: no LLDP source on this host (lldpcli: [WARN/lldpctl] unable to connect"
            ),
            "{bash}: {}",
            pre.message("cabling", "mlx5_0")
        );

        // lldpd running but nothing heard on the port.
        std::fs::write(h.fake(".fake/systemd/active/lldpd.service"), "").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "skipped: lldpd has heard no LLDP neighbour on ens1f0np0; cannot compare with leaf-1 Eth1/1"
        );
    }
}

#[test]
fn a_nic_without_module_access_has_no_transceiver_and_a_reason() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        std::fs::remove_file(h.fake(".fake/net/ens2f0np0/module")).unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stderr);
        let nic = &pre.result["facts"]["nics"]["mlx5_1"];
        assert_eq!(nic["transceiver"], Value::Null, "{bash}: {nic:#}");
        assert_eq!(
            nic["transceiver_note"],
            "ethtool -m ens2f0np0: Cannot get module EEPROM information: Operation not supported"
        );
        assert_eq!(pre.status("optics", "mlx5_1"), "skip");
        assert_eq!(
            pre.message("optics", "mlx5_1"),
            "skipped: no transceiver data (ethtool -m ens2f0np0: Cannot get module EEPROM information: Operation not supported)"
        );
        // The other NIC is unaffected, and the rest of the NIC's facts are still there.
        assert_eq!(pre.status("optics", "mlx5_0"), "pass");
        assert_eq!(nic["link"]["speed_mbps"], 400000);

        // A passive copper cable: a module without diagnostics (SFF-8636 layout).
        std::fs::write(
            h.fake(".fake/net/ens2f0np0/module"),
            "layout=sff8636\nvendor=Mellanox\npn=MCP1650-V001E30\n",
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("optics", "mlx5_1"), "pass", "{bash}");
        assert_eq!(
            pre.message("optics", "mlx5_1"),
            "ens2f0np0 module Mellanox MCP1650-V001E30 reports no diagnostics (passive copper?)"
        );
        let t = &pre.result["facts"]["nics"]["mlx5_1"]["transceiver"];
        assert_eq!(t["temperature_c"], Value::Null);
        assert_eq!(t["rx_power_dbm"], serde_json::json!([]));
    }
}

#[test]
fn out_of_range_optics_and_downgraded_links_are_warnings_with_the_numbers() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        // A hot SFF-8636 module with a weak and a dark RX lane, no thresholds of its own.
        std::fs::write(
            h.fake(".fake/net/ens1f0np0/module"),
            "layout=sff8636\nvendor=Mellanox\npn=MMA1B00-C100D\ntemp=78.25\ntx=-1.00 -1.10 -0.90 -1.20\nrx=-2.00 -12.50 -inf -1.50\n",
        )
        .unwrap();
        // PCIe trained at half speed and width; the link at 200G on a 400G port.
        let pci = "sys/devices/pci0000:00/0000:1a:00.0";
        std::fs::write(
            h.fake(&format!("{pci}/current_link_speed")),
            "16.0 GT/s PCIe\n",
        )
        .unwrap();
        std::fs::write(h.fake(&format!("{pci}/current_link_width")), "8\n").unwrap();
        std::fs::write(h.fake("sys/class/net/ens1f0np0/speed"), "200000\n").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stderr);
        pre.expect(&["optics", "pcie", "link_speed"], "mlx5_0", "warn", &bash);
        pre.expect(&["optics", "pcie", "link_speed"], "mlx5_1", "pass", &bash);
        assert_eq!(
            pre.message("optics", "mlx5_0"),
            "ens1f0np0 module Mellanox MMA1B00-C100D: module temperature 78.25 C is above 70 C; \
             RX power lane 2 -12.50 dBm is below -10 dBm; RX power lane 3 has no light (-inf dBm)"
        );
        assert_eq!(
            pre.message("pcie", "mlx5_0"),
            "PCIe link of ens1f0np0 runs at 16.0 GT/s x8, the device supports 32.0 GT/s x16 (slot, riser or BIOS setting?)"
        );
        assert_eq!(
            pre.message("link_speed", "mlx5_0"),
            "ens1f0np0 runs at 200000 Mb/s, below its fastest supported mode 400000 Mb/s (cable, module or switch port?)"
        );
        let t = &pre.result["facts"]["nics"]["mlx5_0"]["transceiver"];
        assert_eq!(
            t["rx_power_dbm"],
            serde_json::json!([-2.0, -12.5, null, -1.5]),
            "a dark lane is null"
        );

        // The module's own thresholds win: the same power is fine for a module that allows it.
        std::fs::write(
            h.fake(".fake/net/ens1f0np0/module"),
            "layout=cmis\nvendor=NVIDIA\npn=MMA4Z00-NS400\ntemp=78.25\ntx=-1.00\nrx=-12.50\ntemp_hi=80\ntx_lo=-8\ntx_hi=4\nrx_lo=-14\nrx_hi=4\n",
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.status("optics", "mlx5_0"),
            "pass",
            "{bash}: {}",
            pre.message("optics", "mlx5_0")
        );
    }
}

#[test]
fn simulated_host_facts_become_prometheus_gauges() {
    use openmetrics_parser::PrometheusValue;
    let h = FakeHost::new("ofed", "node-a", &[], "bash");
    with_lldpd(&h, &[("ens1f0np0", "switch=leaf-1\nport=Eth1/7\n")]);
    std::fs::remove_file(h.fake(".fake/net/ens2f0np0/module")).unwrap();
    let pre = h.run("precheck.sh", &[]);
    let dir = tmp();
    std::fs::write(
        dir.path().join("node-a.precheck.json"),
        serde_json::to_vec(&pre.result).unwrap(),
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["ingest", ".", "--format", "prometheus"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let exposition = openmetrics_parser::prometheus::parse_prometheus(&run.stdout)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", run.stdout));
    let value = |family: &str, labels: &[(&str, &str)]| -> Option<f64> {
        let f = exposition.families.get(family)?;
        let names = f.get_label_names();
        let values: Vec<String> = names
            .iter()
            .map(|n| {
                labels
                    .iter()
                    .find(|(k, _)| k == n)
                    .unwrap_or_else(|| panic!("{family}: label {n} not given"))
                    .1
                    .to_string()
            })
            .collect();
        match &f.get_sample_by_label_values(&values)?.value {
            PrometheusValue::Gauge(n) => Some(n.as_f64()),
            other => panic!("{family} is not a gauge: {other:?}"),
        }
    };
    let nic0 = [
        ("cluster", "lab"),
        ("host", "node-a"),
        ("nic", "mlx5_0"),
        ("netdev", "ens1f0np0"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut l = nic0.to_vec();
        l.extend_from_slice(extra);
        l
    };
    assert_eq!(
        value("roce_gen_nic_module_temperature_celsius", &nic0),
        Some(40.5)
    );
    assert_eq!(
        value("roce_gen_nic_module_rx_power_dbm", &with(&[("lane", "2")])),
        Some(-1.32)
    );
    assert_eq!(
        value("roce_gen_nic_module_tx_power_dbm", &with(&[("lane", "4")])),
        Some(-0.55)
    );
    assert_eq!(
        value(
            "roce_gen_nic_module_info",
            &with(&[("vendor", "NVIDIA"), ("part_number", "MMA4Z00-NS400")])
        ),
        Some(1.0)
    );
    assert_eq!(
        value("roce_gen_nic_link_speed_mbps", &nic0),
        Some(400_000.0)
    );
    assert_eq!(value("roce_gen_nic_link_width", &nic0), Some(4.0));
    assert_eq!(value("roce_gen_nic_pcie_speed_gts", &nic0), Some(32.0));
    assert_eq!(value("roce_gen_nic_pcie_width", &nic0), Some(16.0));
    assert_eq!(
        value("roce_gen_nic_counter", &with(&[("counter", "np_cnp_sent")])),
        Some(1200.0)
    );
    assert_eq!(
        value(
            "roce_gen_nic_neighbor_info",
            &with(&[
                ("switch", "leaf-1"),
                ("port", "Eth1/7"),
                ("source", "lldpd")
            ])
        ),
        Some(1.0)
    );
    // 3 = warn: the miscabled port; 2 = skip: the NIC without module access.
    assert_eq!(
        value("roce_gen_check_status", &with(&[("check", "cabling")])),
        Some(3.0)
    );
    let nic1 = [
        ("cluster", "lab"),
        ("host", "node-a"),
        ("nic", "mlx5_1"),
        ("netdev", "ens2f0np0"),
        ("check", "optics"),
    ];
    assert_eq!(value("roce_gen_check_status", &nic1), Some(2.0));
    assert_eq!(
        value("roce_gen_nic_module_temperature_celsius", &nic1[..4]),
        None,
        "no module, no temperature"
    );
    assert_eq!(
        value("roce_gen_nic_pcie_width", &nic1[..4]),
        Some(16.0),
        "the NIC's other facts are there"
    );
}
