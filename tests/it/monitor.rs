//! Facts for monitoring on simulated hosts: the transceiver (`ethtool -m` stand-in in the CMIS
//! and SFF-8636 layouts), link and PCIe, the RoCE counters and the LLDP neighbour (lldpd's
//! `lldpcli`, lldpad's `lldptool`) in the result's `facts`, and the `optics`, `pcie`,
//! `link_speed` and `cabling` checks they drive; then those results through `ingest --format
//! prometheus`. Each scenario runs under every bash of `fakehost::bashes`.

use serde_json::Value;

use crate::common::{roce_gen, tmp};
use crate::fakehost::{FakeHost, ScriptRun, for_each_bash};

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

/// Runs a bundle script like [`FakeHost::run`], but with `tools` absent from this machine's own
/// folders as well: the scripts add /usr/sbin and /sbin to PATH, so an lldpcli installed on the
/// test machine would otherwise answer for a host that has none. Inside the run's private mount
/// namespace each folder holding one is covered by an overlay whose whiteouts remove them (a file
/// merely made unexecutable would still be found by `command -v`).
pub(crate) fn run_without(h: &FakeHost, script: &str, tools: &[&str]) -> ScriptRun {
    let scratch = h.root.parent().unwrap();
    let out_file = scratch.join(format!("{script}.without.json"));
    let _ = std::fs::remove_file(&out_file);
    let layers = scratch.join("without");
    std::fs::create_dir_all(&layers).unwrap();
    let hide = format!(
        r#"layers=$1; shift
fail() {{ echo "cannot hide $*: needs the isolated run (root, overlayfs)" >&2; exit 97; }}
mounted=0 n=0
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  if [ ! -d "$d" ] || [ -L "$d" ]; then continue; fi
  gone=''
  for t in {tools}; do if [ -e "$d/$t" ] || [ -L "$d/$t" ]; then gone="$gone $t"; fi; done
  if [ -z "$gone" ]; then continue; fi
  if [ "$mounted" = 0 ]; then mount -t tmpfs tmpfs "$layers" || fail "$d/$gone"; mounted=1; fi
  n=$((n + 1))
  mkdir "$layers/up$n" "$layers/work$n" || fail "$d/$gone"
  for t in $gone; do mknod "$layers/up$n/$t" c 0 0 || fail "$d/$t"; done
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$layers/up$n,workdir=$layers/work$n" "$d" || fail "$d/$gone"
done
exec "$@""#,
        tools = tools.join(" ")
    );
    let script_path = h.bundle.join(script).display().to_string();
    let out_path = out_file.display().to_string();
    let layers = layers.display().to_string();
    let (code, stdout, stderr) = h.run_cmd(&[
        "bash",
        "-c",
        &hide,
        "without",
        &layers,
        &h.bash,
        &script_path,
        "--out",
        &out_path,
    ]);
    assert_ne!(code, 97, "{stderr}");
    let text = std::fs::read_to_string(&out_file).unwrap_or_default();
    let result = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("{script}: result is not JSON ({e}):\n{text}\n{stdout}\n{stderr}")
    });
    ScriptRun {
        code,
        stdout,
        stderr,
        result,
    }
}

/// `ethtool -m` text made from a capture of tests/host/fixtures/ethtool-m/: fields' values
/// replaced (label and column kept, as ethtool prints them), lines dropped.
struct Module(Vec<String>);

impl Module {
    fn from_fixture(name: &str) -> Self {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/host/fixtures/ethtool-m")
            .join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Module(text.lines().map(str::to_string).collect())
    }

    fn label(line: &str) -> &str {
        line.split_once(" : ").map_or("", |(l, _)| l.trim())
    }

    /// Sets the value of the field `label`, which must be there.
    fn set(mut self, label: &str, value: &str) -> Self {
        let line = self
            .0
            .iter_mut()
            .find(|l| Self::label(l) == label)
            .unwrap_or_else(|| panic!("no field {label:?} in the module dump"));
        let (head, _) = line.split_once(" : ").unwrap();
        *line = format!("{head} : {value}");
        self
    }

    /// Replaces the line of the field `label`, which must be there, with `fields`.
    fn replace(mut self, label: &str, fields: &[(&str, &str)]) -> Self {
        let at = self
            .0
            .iter()
            .position(|l| Self::label(l) == label)
            .unwrap_or_else(|| panic!("no field {label:?} in the module dump"));
        self.0.splice(
            at..=at,
            fields.iter().map(|(l, v)| format!("\t{l:<41} : {v}")),
        );
        self
    }

    /// Drops every line after the field `label`, which must be there.
    fn end_after(mut self, label: &str) -> Self {
        let at = self
            .0
            .iter()
            .position(|l| Self::label(l) == label)
            .unwrap_or_else(|| panic!("no field {label:?} in the module dump"));
        self.0.truncate(at + 1);
        self
    }

    fn write(&self, h: &FakeHost, ifc: &str) {
        let mut text = self.0.join("\n");
        text.push('\n');
        std::fs::write(h.fake(&format!(".fake/net/{ifc}/module.txt")), text).unwrap();
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
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_healthy_host_records_optics_link_pcie_counters_and_its_neighbours() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
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
        ] {
            assert!(counters[name].is_u64(), "{bash}: {name} in {counters}");
        }
        assert_eq!(counters["np_cnp_sent"], 1200);
        // Before apply PFC is off: mlx5 lists no priority's PFC counters (en_stats.c), so the
        // facts have none, not a 0.
        assert!(
            counters.get("tx_prio3_pause").is_none(),
            "{bash}: {counters}"
        );
        assert_eq!(
            nic["neighbor"],
            serde_json::json!({"source": "lldpd", "switch": "leaf-1.dc1.example", "port": "Ethernet1/1", "port_descr": ""})
        );
        for id in ["optics", "pcie", "link_speed"] {
            pre.expect(&[id], "mlx5_0", "pass", bash);
            pre.expect(&[id], "mlx5_1", "pass", bash);
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
        // With the plan's PFC on priority 3 the driver lists its pause counters.
        let post = h.run("precheck.sh", &[]);
        assert_eq!(
            post.result["facts"]["nics"]["mlx5_1"]["counters"]["tx_prio3_pause"], 20,
            "{bash}"
        );
        // rollback has no checks of its own but still records the facts.
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stderr);
        assert_eq!(
            back.result["facts"]["nics"]["mlx5_1"]["link"]["speed_mbps"],
            400000
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_miscabled_port_is_a_warning_naming_both_ends() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
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
        let h = FakeHost::inbox().bash(bash).build();
        std::os::unix::fs::symlink("stub", h.fake("bin/lldptool")).unwrap();
        std::fs::write(h.fake(".fake/systemd/active/lldpad.service"), "").unwrap();
        write_neighbours(
            &h,
            &[(
                "ens1f0np0",
                "switch=leaf-2\nport=Ethernet14\nport_type=local\ndescr=Eth1/14\n",
            )],
        );
        let pre = run_without(&h, "precheck.sh", &["lldpcli"]);
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
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_an_lldp_source_cabling_is_skipped_never_guessed() {
    for_each_bash(|bash| {
        // No lldpcli or lldptool at all.
        let h = FakeHost::ofed().bash(bash).build();
        let pre = run_without(&h, "precheck.sh", &["lldpcli", "lldptool"]);
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

        // lldpcli installed but lldpd not running: lldpcli's own complaint (its log line starts
        // with the time) is the reason given.
        std::os::unix::fs::symlink("stub", h.fake("bin/lldpcli")).unwrap();
        h.take_commands();
        let pre = run_without(&h, "precheck.sh", &["lldptool"]);
        let msg = pre.message("cabling", "mlx5_0");
        let stamp = msg
            .strip_prefix("skipped: no LLDP source on this host (lldpcli: ")
            .and_then(|m| m.strip_suffix(
                " [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory); cannot compare with leaf-1 Eth1/1",
            ))
            .unwrap_or_else(|| panic!("{bash}: {msg}"));
        assert!(
            stamp.len() == 19
                && stamp.char_indices().all(|(i, c)| match i {
                    4 | 7 => c == '-',
                    10 => c == 'T',
                    13 | 16 => c == ':',
                    _ => c.is_ascii_digit(),
                }),
            "{bash}: not a time stamp: {stamp:?}"
        );
        assert!(
            h.take_commands()
                .contains(&"lldpcli -f keyvalue -- show neighbors ports ens1f0np0".to_string()),
            "{bash}: the host's lldpcli was asked"
        );

        // lldpd running but nothing heard on the port.
        std::fs::write(h.fake(".fake/systemd/active/lldpd.service"), "").unwrap();
        let pre = run_without(&h, "precheck.sh", &["lldptool"]);
        assert_eq!(
            pre.message("cabling", "mlx5_0"),
            "skipped: lldpd has heard no LLDP neighbour on ens1f0np0; cannot compare with leaf-1 Eth1/1"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_nic_without_module_access_has_no_transceiver_and_a_reason() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        std::fs::remove_file(h.fake(".fake/net/ens2f0np0/module.txt")).unwrap();
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

        // A passive copper cable: a module without diagnostics (SFF-8636 layout, a 200G DAC).
        // ethtool (qsfp.c) prints attenuations instead of a wavelength, and in sff8636_show_dom
        // the zero temperature and voltage it reads, then stops: a zero temperature means no
        // monitors, so no lane lines, flags or thresholds follow.
        Module::from_fixture("sff8636-100g.txt")
            .set("Connector", "0x23 (No separable connector)")
            .set(
                "Transceiver type",
                "50GBASE-CR, 100GBASE-CR2, or 200GBASE-CR4",
            )
            .set("Length (OM3 50um)", "0m")
            .set("Length (Copper or Active cable)", "1m")
            .set("Transmitter technology", "0xa0 (Copper cable unequalized)")
            .replace(
                "Laser wavelength",
                &[
                    ("Attenuation at 2.5GHz", "2db"),
                    ("Attenuation at 5.0GHz", "3db"),
                    ("Attenuation at 7.0GHz", "4db"),
                    ("Attenuation at 12.9GHz", "6db"),
                ],
            )
            .replace("Laser wavelength tolerance", &[])
            .set("Vendor PN", "MCP1650-V001E30")
            .set("Vendor SN", "MT2150VS01234")
            .set("Module temperature", "0.00 degrees C / 32.00 degrees F")
            .set("Module voltage", "0.0000 V")
            .end_after("Module voltage")
            .write(&h, "ens2f0np0");
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("optics", "mlx5_1"), "pass", "{bash}");
        assert_eq!(
            pre.message("optics", "mlx5_1"),
            "ens2f0np0 module Mellanox MCP1650-V001E30 reports no diagnostics (passive copper?)"
        );
        let t = &pre.result["facts"]["nics"]["mlx5_1"]["transceiver"];
        assert_eq!(t["temperature_c"], Value::Null);
        assert_eq!(t["rx_power_dbm"], serde_json::json!([]));
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn out_of_range_optics_and_downgraded_links_are_warnings_with_the_numbers() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // A hot SFF-8636 module with a weak and a dark RX lane, no thresholds of its own: without
        // page 03h ethtool says no alarm flags and prints neither flags nor thresholds.
        Module::from_fixture("sff8636-100g.txt")
            .set("Module temperature", "78.25 degrees C / 172.85 degrees F")
            .set("Alarm/warning flags implemented", "No")
            .set(
                "Transmit avg optical power (Channel 1)",
                "0.7943 mW / -1.00 dBm",
            )
            .set(
                "Transmit avg optical power (Channel 2)",
                "0.7762 mW / -1.10 dBm",
            )
            .set(
                "Transmit avg optical power (Channel 3)",
                "0.8128 mW / -0.90 dBm",
            )
            .set(
                "Transmit avg optical power (Channel 4)",
                "0.7586 mW / -1.20 dBm",
            )
            .set(
                "Rcvr signal avg optical power(Channel 1)",
                "0.6310 mW / -2.00 dBm",
            )
            .set(
                "Rcvr signal avg optical power(Channel 2)",
                "0.0562 mW / -12.50 dBm",
            )
            .set(
                "Rcvr signal avg optical power(Channel 3)",
                "0.0000 mW / -inf dBm",
            )
            .set(
                "Rcvr signal avg optical power(Channel 4)",
                "0.7079 mW / -1.50 dBm",
            )
            .end_after("Rcvr signal avg optical power(Channel 4)")
            .write(&h, "ens1f0np0");
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
        pre.expect(&["optics", "pcie", "link_speed"], "mlx5_0", "warn", bash);
        pre.expect(&["optics", "pcie", "link_speed"], "mlx5_1", "pass", bash);
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

        // The module's own thresholds win: the same power is fine for a module that allows it
        // (warning thresholds 80 C, TX -8..4 dBm, RX -14..4 dBm).
        Module::from_fixture("cmis-400g-4lane.txt")
            .set("Module temperature", "78.25 degrees C / 172.85 degrees F")
            .set(
                "Transmit avg optical power (Channel 1)",
                "0.7943 mW / -1.00 dBm",
            )
            .set(
                "Rcvr signal avg optical power (Channel 1)",
                "0.0562 mW / -12.50 dBm",
            )
            .set(
                "Module temperature high alarm threshold",
                "85.00 degrees C / 185.00 degrees F",
            )
            .set(
                "Module temperature high warning threshold",
                "80.00 degrees C / 176.00 degrees F",
            )
            .set(
                "Laser output power low warning threshold",
                "0.1585 mW / -8.00 dBm",
            )
            .set(
                "Laser output power high warning threshold",
                "2.5119 mW / 4.00 dBm",
            )
            .set(
                "Laser rx power low alarm threshold",
                "0.0251 mW / -16.00 dBm",
            )
            .set(
                "Laser rx power low warning threshold",
                "0.0398 mW / -14.00 dBm",
            )
            .set(
                "Laser rx power high warning threshold",
                "2.5119 mW / 4.00 dBm",
            )
            .write(&h, "ens1f0np0");
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.status("optics", "mlx5_0"),
            "pass",
            "{bash}: {}",
            pre.message("optics", "mlx5_0")
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn simulated_host_facts_become_prometheus_gauges() {
    use openmetrics_parser::PrometheusValue;
    let h = FakeHost::ofed().build();
    with_lldpd(&h, &[("ens1f0np0", "switch=leaf-1\nport=Eth1/7\n")]);
    std::fs::remove_file(h.fake(".fake/net/ens2f0np0/module.txt")).unwrap();
    let pre = h.run("precheck.sh", &[]);
    let dir = tmp();
    std::fs::write(
        dir.path().join("node-a.precheck.json"),
        serde_json::to_vec(&pre.result).unwrap(),
    )
    .unwrap();
    // A precheck of a host not configured yet: pending, so the verdict is 1; the facts are
    // exported all the same.
    let run = roce_gen(dir.path(), &["ingest", ".", "--format", "prometheus"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("roce_gen_host_state{cluster=\"lab\",host=\"node-a\",state=\"pending\"} 1")
    );
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
        value("roce_gen_nic_link_speed_bytes_per_second", &nic0),
        Some(50e9),
        "400000 Mb/s"
    );
    assert_eq!(value("roce_gen_nic_link_width", &nic0), Some(4.0));
    assert_eq!(
        value("roce_gen_nic_pcie_speed_transfers_per_second", &nic0),
        Some(32e9)
    );
    assert_eq!(value("roce_gen_nic_pcie_width", &nic0), Some(16.0));
    // The RoCE v2 GID of the planned address, as the gid check found it.
    assert_eq!(value("roce_gen_nic_gid_index", &nic0), Some(3.0));
    assert_eq!(
        value("roce_gen_nic_events", &with(&[("counter", "np_cnp_sent")])),
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
    // 3 = warn: the miscabled port; the NIC without module access skipped `optics`, which
    // the count has and no series of its own.
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
    assert_eq!(value("roce_gen_check_status", &nic1), None);
    assert!(
        value(
            "roce_gen_host_checks",
            &[("cluster", "lab"), ("host", "node-a"), ("status", "skip")]
        )
        .is_some_and(|n| n >= 1.0)
    );
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
    assert_eq!(crate::ingest::promtool_findings(&run.stdout), "");
}
