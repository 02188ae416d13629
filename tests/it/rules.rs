//! One failing workbook per rule of the plan format (`docs/plan-format.md`), and per warning, each
//! run through `roce-gen validate`; the exit status and diagnostics are snapshotted. A snapshot
//! shows the file, sheet, cell and value of every problem.

use crate::common::{Book, C, roce_gen, s, tmp};

/// Writes `book`, validates it, and snapshots the transcript under `name`.
fn check(name: &str, book: &Book) {
    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    crate::common::snapshot(name, run.transcript());
}

fn edit(f: impl FnOnce(&mut Book)) -> Book {
    let mut book = Book::base();
    f(&mut book);
    book
}

#[test]
fn valid_base_plan() {
    check("valid", &Book::base());
}

#[test]
fn missing_sheet() {
    check("missing_sheet", &edit(|b| b.drop_sheet("NICs")));
}

#[test]
fn ambiguous_sheets() {
    check(
        "ambiguous_sheets",
        &edit(|b| {
            let mut copy = b.sheet("Servers").clone();
            copy.name = "Hosts".into();
            b.sheets.push(copy);
        }),
    );
}

#[test]
fn missing_required_column() {
    check(
        "missing_column",
        &edit(|b| b.sheet("Servers").drop_column("mgmt_ip")),
    );
}

#[test]
fn duplicate_column() {
    check(
        "duplicate_column",
        &edit(|b| b.sheet("Servers").rename("bmc_ip", "Mgmt IP")),
    );
}

#[test]
fn no_header_row() {
    check(
        "no_header_row",
        &edit(|b| b.sheet("NICs").rename("hostname", "server name")),
    );
}

#[test]
fn required_cell_empty() {
    check(
        "required_cell_empty",
        &edit(|b| {
            b.sheet("Servers").set(2, "mgmt_ip", C::E);
            b.sheet("NICs").set(3, "ib_dev", s("  "));
        }),
    );
}

#[test]
fn cluster_name_missing_or_bad() {
    check(
        "cluster_name_missing",
        &edit(|b| {
            b.sheet("Cluster").rows.remove(1);
        }),
    );
    check(
        "cluster_name_bad",
        &edit(|b| b.key("cluster_name", s("demo cluster/1"))),
    );
}

#[test]
fn cluster_values_out_of_range() {
    check(
        "cluster_values_out_of_range",
        &edit(|b| {
            b.key("trust", s("l2"));
            b.key("roce_dscp", C::N(64.0));
            b.key("roce_priority", s("eight"));
            b.key("roce_ecn", C::N(4.0));
            b.key("pfc_priorities", s("3,9"));
            b.key("cnp_dscp", C::N(-1.0));
            b.key("roce_mode", s("v3"));
            b.key("mtu", C::N(4200.5));
            b.key("global_pause", s("sometimes"));
            b.key("persistence", s("perhaps"));
            b.key("min_ofed_version", s("latest"));
            b.key("min_fw_version", C::N(28.5));
        }),
    );
}

#[test]
fn cluster_key_problems() {
    check(
        "cluster_keys",
        &edit(|b| {
            let rows = &mut b.sheet("Cluster").rows;
            rows.push(vec![s("mtu"), C::N(9000.0)]);
            rows.push(vec![s("roce_dscpp"), C::N(24.0)]);
            rows.push(vec![C::E, s("orphan")]);
        }),
    );
}

#[test]
fn server_values_out_of_charset() {
    check(
        "server_values",
        &edit(|b| {
            let srv = b.sheet("Servers");
            srv.set(1, "hostname", s("h1$(reboot)"));
            srv.set(2, "mgmt_ip", s("10.0.0.300"));
            srv.set(2, "bmc_ip", s("bmc-2"));
            srv.set(1, "group", s("rack\na"));
        }),
    );
}

#[test]
fn nic_values_out_of_charset() {
    check(
        "nic_values",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.set(1, "ib_dev", s("mlx5-0"));
            nics.set(1, "netdev", s("eth0;reboot"));
            nics.set(2, "ip", s("10.0.0.300/24"));
            nics.set(3, "mtu", C::N(9500.0));
            nics.set(3, "rail", C::N(-1.0));
            nics.set(4, "pci", s("3b:00"));
            nics.set(4, "mac", s("b8:ce:f6"));
            nics.set(4, "gateway", s("gw"));
        }),
    );
}

#[test]
fn lag_row_pci_is_pf0_or_empty() {
    // A RoCE LAG row names the bond and the LAG device; mlx5 registers mlx5_bond_N on the card's
    // first PF, so its pci (when given) is function 0. Row 2 (PF0) and row 3 (empty) are fine.
    check(
        "lag_pci",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.set(1, "ib_dev", s("mlx5_bond_0"));
            nics.set(1, "netdev", s("bond0"));
            nics.set(1, "pci", s("0000:1a:00.1"));
            nics.set(2, "ib_dev", s("mlx5_bond_1"));
            nics.set(2, "netdev", s("bond1"));
            nics.set(2, "pci", s("0000:3b:00.0"));
            nics.set(3, "ib_dev", s("mlx5_bond_2"));
            nics.set(3, "netdev", s("bond2"));
        }),
    );
}

#[test]
fn netdev_that_reads_as_an_option() {
    check(
        "netdev_option",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.set(1, "netdev", s("-h"));
            nics.set(2, "netdev", s("--help"));
            // Inside the name a hyphen is fine.
            nics.set(3, "netdev", s("ens1-0"));
        }),
    );
}

#[test]
fn error_cells() {
    check(
        "error_cells",
        &edit(|b| {
            b.sheet("Servers").set(1, "mgmt_ip", C::F("=NA()", "#N/A"));
            b.sheet("NICs").set(1, "mtu", C::F("=1/0", "#DIV/0!"));
        }),
    );
}

#[test]
fn duplicate_host() {
    check(
        "duplicate_host",
        &edit(|b| b.sheet("Servers").rows.push(vec![s("H1"), s("10.0.0.9")])),
    );
}

#[test]
fn a_duplicate_host_that_was_meant_to_be_another_is_one_error() {
    // gpu-003 typed as gpu-002: one error on the row, saying which host it was meant to be,
    // instead of one more for each NIC row of the host the sheet no longer has.
    check(
        "duplicate_host_meant",
        &edit(|b| {
            *b = Book::hosts(4);
            b.sheet("Servers").set(3, "hostname", s("h2"));
        }),
    );
}

#[test]
fn nic_rows_of_a_host_not_in_servers_are_one_error_per_name() {
    // Two unknown names (so no guess which the duplicate row was meant to be), one of them on
    // five rows; in cell order among the other rows' errors.
    check(
        "unknown_hosts_folded",
        &edit(|b| {
            b.sheet("Servers").rows.push(vec![s("H1"), s("10.0.0.9")]);
            let nics = b.sheet("NICs");
            let template = nics.rows[1].clone();
            for (r, host) in ["h9", "h8", "h9", "h9", "H9", "h9"].iter().enumerate() {
                let mut row = template.clone();
                row[0] = s(host);
                row[1] = C::S(format!("mlx5_{}", r + 4));
                row[2] = C::S(format!("ens{}f0np0", r + 4));
                row[3] = C::S(format!("10.1.0.{}/24", r + 20));
                row[4] = C::E;
                nics.rows.push(row);
            }
            nics.set(6, "ip", s("10.1.0.300/24"));
        }),
    );
}

#[test]
fn duplicate_ib_dev_and_netdev_on_a_host() {
    check(
        "duplicate_nic_names",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.set(2, "ib_dev", s("mlx5_0"));
            nics.set(4, "netdev", s("ens1f0np0"));
        }),
    );
}

#[test]
fn address_used_twice() {
    check(
        "duplicate_address",
        &edit(|b| {
            b.sheet("NICs").set(4, "ip", s("10.0.0.1/8"));
            b.sheet("NICs").set(4, "gateway", C::E);
            b.sheet("Servers").set(2, "bmc_ip", s("10.0.1.1"));
        }),
    );
}

#[test]
fn ip_prefix_forms() {
    check(
        "ip_prefix",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.rows[0].push(s("prefix"));
            for (row, prefix) in [(1, C::E), (2, s("25")), (3, s("255.0.255.0")), (4, C::E)] {
                nics.rows[row].push(prefix);
            }
            nics.set(1, "ip", s("10.1.0.1"));
            nics.set(3, "ip", s("10.1.0.2"));
            nics.set(4, "ip", s("10.1.1.0/24"));
        }),
    );
}

#[test]
fn gateway_outside_subnet_or_own_address() {
    check(
        "gateway",
        &edit(|b| {
            b.sheet("NICs").set(1, "gateway", s("10.2.0.1"));
            b.sheet("NICs").set(2, "gateway", s("10.1.1.1"));
        }),
    );
}

#[test]
fn nic_of_unknown_host_and_host_without_nic() {
    check(
        "unknown_host_and_host_without_nic",
        &edit(|b| {
            let nics = b.sheet("NICs");
            nics.set(3, "hostname", s("h3"));
            nics.set(4, "hostname", s("h3"));
        }),
    );
}

#[test]
fn roce_tos_inconsistent() {
    check("roce_tos", &edit(|b| b.key("roce_tos", C::N(104.0))));
}

#[test]
fn cnp_priority_equals_roce_priority() {
    check("cnp_priority", &edit(|b| b.key("cnp_priority", C::N(3.0))));
}

#[test]
fn pfc_with_global_pause() {
    check(
        "pfc_with_global_pause",
        &edit(|b| b.key("global_pause", s("on"))),
    );
}

#[test]
fn warnings_do_not_stop_the_plan() {
    check(
        "warnings",
        &edit(|b| {
            b.key("pfc_priorities", s("4"));
            let nics = b.sheet("NICs");
            // h2 gets a third NIC named so that mlx5_1 is a prefix of it.
            let mut extra = nics.rows[4].clone();
            extra[1] = s("mlx5_10");
            extra[2] = s("ens3f0np0");
            extra[3] = s("10.1.1.3/24");
            nics.rows.push(extra);
            // rail 0: one port in another subnet, one with another MTU.
            nics.set(3, "ip", s("10.9.0.2/24"));
            nics.set(3, "gateway", C::E);
            nics.set(1, "mtu", C::N(9000.0));
        }),
    );
}

#[test]
fn warnings_name_the_odd_one_out_when_there_is_a_majority() {
    check(
        "warnings_majority",
        &edit(|b| {
            b.sheet("Servers").rows.push(vec![s("h3"), s("10.0.0.3")]);
            let nics = b.sheet("NICs");
            for r in 0..2 {
                let mut row = nics.rows[3 + r].clone();
                row[0] = s("h3");
                row[3] = C::S(format!("10.1.{r}.3/24"));
                row[8] = C::S(format!("b8:00:00:00:03:0{r}"));
                nics.rows.push(row);
            }
            nics.rows.remove(4); // h2 loses mlx5_1
            nics.set(1, "ip", s("10.7.0.1/24"));
            nics.set(1, "gateway", C::E);
            nics.set(3, "mtu", C::N(9000.0));
        }),
    );
}

#[test]
fn pfc_off_is_allowed_with_global_pause() {
    let book = edit(|b| {
        b.key("pfc_priorities", s("none"));
        b.key("global_pause", s("on"));
    });
    check("pfc_off_with_pause", &book);
}

#[test]
fn json_diagnostics() {
    let book = edit(|b| {
        b.sheet("NICs").set(2, "ip", s("10.0.0.300/24"));
        b.key("roce_tos", C::N(104.0));
    });
    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "--format", "json", "plan.xlsx"]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!("json_diagnostics", doc);
    });
}

#[test]
fn ipv4_parts_with_a_leading_zero() {
    check(
        "leading_zero_addresses",
        &edit(|b| {
            let servers = b.sheet("Servers");
            servers.set(1, "mgmt_ip", s("010.0.0.1"));
            let nics = b.sheet("NICs");
            nics.set(1, "ip", s("10.1.0.01/24"));
            nics.set(2, "gateway", s("10.1.1.0254"));
        }),
    );
}

#[test]
fn a_host_name_too_long_for_its_files() {
    // 232 characters is the most: `roce-gen.HOST.rollback.json` then fills a file name's 255
    // bytes. 233 is refused at its cell.
    let label = "a".repeat(63);
    let name = |len: usize| {
        let mut n = format!("{label}.{label}.{label}.{label}");
        n.truncate(len);
        n
    };
    let longest = name(232);
    let dir = tmp();
    let mut book = Book::base();
    let rename = |b: &mut Book, to: &str| {
        b.sheet("Servers").set(1, "hostname", s(to));
        let nics = b.sheet("NICs");
        nics.set(1, "hostname", s(to));
        nics.set(2, "hostname", s(to));
    };
    rename(&mut book, &longest);
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["generate", "plan.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        dir.path()
            .join("out")
            .join(format!("{longest}.tar.gz"))
            .is_file()
    );
    // The longest file a script names after the host fits too.
    std::fs::write(
        dir.path().join(format!("roce-gen.{longest}.rollback.json")),
        b"{}",
    )
    .unwrap();

    rename(&mut book, &name(233));
    check("host_name_too_long", &book);
}

#[test]
fn a_plan_without_hosts() {
    let mut book = Book::base();
    book.sheet("Servers").rows.truncate(1);
    book.sheet("NICs").rows.truncate(1);
    check("no_hosts", &book);
    // And generate leaves an existing output alone.
    let dir = tmp();
    Book::base().write(dir.path(), "full.xlsx");
    book.write(dir.path(), "empty.xlsx");
    let run = roce_gen(dir.path(), &["generate", "full.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let run = roce_gen(dir.path(), &["generate", "empty.xlsx", "-o", "out"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(dir.path().join("out/h1.tar.gz").is_file());
}

#[test]
fn source_date_epoch_past_what_tar_holds_is_refused_by_validate_and_generate() {
    let dir = tmp();
    Book::base().write(dir.path(), "plan.xlsx");
    let with_epoch = |epoch: &str, args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_roce-gen"))
            .args(args)
            .current_dir(dir.path())
            .env("SOURCE_DATE_EPOCH", epoch)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &["validate", "plan.xlsx"][..],
        &["generate", "plan.xlsx", "-o", "out"][..],
    ] {
        let (code, stderr) = with_epoch("18446744073709551615", args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "SOURCE_DATE_EPOCH 18446744073709551615 is past 8589934591 (the year 2242)"
            ),
            "{stderr}"
        );
    }
    assert!(!dir.path().join("out").exists());
    // The latest time that fits is written, and GNU tar lists it.
    let (code, stderr) = with_epoch("8589934591", &["generate", "plan.xlsx", "-o", "out"]);
    assert_eq!(code, Some(0), "{stderr}");
    let list = std::process::Command::new("tar")
        .args(["tvzf", "out/h1.tar.gz"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(list.status.success());
    assert!(String::from_utf8_lossy(&list.stdout).contains(" 2242-03-16 "));
}

#[test]
fn v1_1_keys_in_range_and_out() {
    check(
        "v1_1_keys",
        &edit(|b| {
            b.key("cable_length", C::N(30.0));
            b.key("firmware_config", s("apply"));
            b.key("nccl_env", s("no"));
            b.key("dcqcn.rpg_ai_rate", C::N(5.0));
            b.key("dcqcn_min_time_between_cnps", C::N(4.0));
            b.key("dcqcn_clamp_tgt_rate", C::N(1.0));
            b.key("min_ofed_version", s("MLNX_OFED_LINUX-24.10-1.1.4.0"));
        }),
    );
    check(
        "v1_1_keys_bad",
        &edit(|b| {
            b.key("cable_length", C::N(0.0));
            b.key("firmware_config", s("sometimes"));
            b.key("dcqcn_rpg_ai_rte", C::N(5.0));
            b.key("dcqcn_clamp_tgt_rate", C::N(2.0));
            b.key("dcqcn_rpg_gd", C::N(-1.0));
        }),
    );
}

#[test]
fn v1_1_warnings() {
    check(
        "v1_1_warnings",
        &edit(|b| {
            b.key("ecn_priorities", C::N(4.0));
            b.key("roce_mode", s("v1"));
            b.key("mtu", C::N(1500.0));
            b.sheet("NICs").set(2, "mtu", C::N(2000.0));
        }),
    );
}

#[test]
fn the_v1_1_keys_round_trip_through_the_normalized_plan() {
    let mut book = Book::base();
    book.key("cable_length", C::N(30.0));
    book.key("dcqcn.rpg_ai_rate", C::N(5.0));
    book.key("firmware_config", s("off"));
    book.key("nccl_env", s("no"));
    round_trips(
        &book,
        &[
            "\"cable_length\": 30",
            "\"dcqcn_rpg_ai_rate\": 5",
            "\"firmware_config\": \"off\"",
            "\"nccl_env\": false",
        ],
        &["cable_length", "dcqcn", "firmware_config", "nccl_env"],
    );
}

/// The normalized plan of `book` holds each of `needles` and reads back to itself; the base
/// plan, which sets none of these keys, names none of `keys`, so its identity stays.
fn round_trips(book: &Book, needles: &[&str], keys: &[&str]) {
    let json = crate::common::plan_json(book);
    for needle in needles {
        assert!(json.contains(needle), "{needle} in {json}");
    }
    let dir = tmp();
    std::fs::write(dir.path().join("plan.json"), &json).unwrap();
    let again = roce_gen(dir.path(), &["plan", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(again.stdout, json);
    let plain = crate::common::plan_json(&Book::base());
    for key in keys {
        assert!(!plain.contains(key), "{key} in {plain}");
    }
}

#[test]
fn the_ip_column_also_reads_as_ip_address_in_chinese() {
    let mut book = Book::base();
    book.sheet("NICs").rename("ip", "IP地址");
    assert_eq!(
        crate::common::plan_json(&book),
        crate::common::plan_json(&Book::base())
    );
}

#[test]
fn v1_1_choices_and_numbers_that_are_not() {
    check(
        "v1_1_keys_bad_choices",
        &edit(|b| {
            b.key("dcbx", s("firmware"));
            b.key("nccl_env", s("maybe"));
            b.key("线缆长度", C::N(1001.0));
            b.key("固件配置", s("on"));
            b.key("dcqcn.rpg_ai_rate", s("fast"));
            b.key("dcqcn.rpg_fast", C::N(1.0));
            b.key("min_ofed_version", s("MLNX_OFED_LINUX-latest"));
        }),
    );
}

#[test]
fn v1_1_aliases_and_ofed_info_forms_read_as_the_keys() {
    let plan_of = |edit: &dyn Fn(&mut Book)| {
        let mut book = Book::base();
        edit(&mut book);
        crate::common::plan_json(&book)
    };
    let named = plan_of(&|b| {
        b.key("cable_length", C::N(30.0));
        b.key("firmware_config", s("apply"));
        b.key("dcbx", s("os"));
    });
    let aliased = plan_of(&|b| {
        b.key("线缆长度", C::N(30.0));
        b.key("固件配置", s("APPLY"));
        b.key("dcbx", s("OS"));
    });
    assert_eq!(aliased, named);
    assert!(named.contains("\"dcbx\": \"os\""), "{named}");
    for (written, kept) in [
        ("MLNX_OFED_LINUX-24.10-1.1.4.0", "24.10-1.1.4.0"),
        ("OFED-internal-24.10-1.1.4", "24.10-1.1.4"),
        ("DOCA 2.9.0", "2.9.0"),
        ("24.10", "24.10"),
    ] {
        let json = plan_of(&|b| b.key("min_ofed_version", s(written)));
        assert!(
            json.contains(&format!("\"min_ofed_version\": \"{kept}\"")),
            "{written}: {json}"
        );
    }
}

#[test]
fn v1_2_keys_in_range_and_out() {
    check(
        "v1_2_keys_bad",
        &edit(|b| {
            b.key("arp_sysctls", s("always"));
            b.key("fabric_seconds", C::N(1.0));
            b.key("fabric_min_pct", C::N(101.0));
            b.key("fabric_incast", s("sometimes"));
            b.key("health", s("maybe"));
            b.key("health_interval", C::N(4.0));
            b.key("health_textfile_dir", s("/var/lib/../tmp"));
        }),
    );
    check(
        "v1_2_drift_and_trust",
        &edit(|b| {
            b.key("trust", s("pcp"));
            b.key("health_interval", C::N(60.0));
            b.key("drift_interval", C::N(30.0));
        }),
    );
}

#[test]
fn the_v1_2_keys_round_trip_and_stay_out_of_a_plan_without_them() {
    let mut book = Book::base();
    book.key("arp_sysctls", s("set"));
    book.key("fabric_seconds", C::N(20.0));
    book.key("fabric_min_pct", C::N(80.0));
    book.key("fabric_incast", s("no"));
    book.key("health", s("no"));
    book.key("health_interval", C::N(60.0));
    book.key("drift_interval", C::N(600.0));
    book.key("health_textfile_dir", s("/srv/prom/"));
    round_trips(
        &book,
        &[
            "\"arp_sysctls\": \"set\"",
            "\"fabric_seconds\": 20",
            "\"fabric_min_pct\": 80",
            "\"fabric_incast\": false",
            "\"health\": false",
            "\"health_interval\": 60",
            "\"drift_interval\": 600",
            "\"health_textfile_dir\": \"/srv/prom\"",
        ],
        &["arp_sysctls", "fabric", "health", "drift_interval"],
    );
    // Health runs rarer than the drift default: the drift check follows them, no error.
    let mut rare = Book::base();
    rare.key("health_interval", C::N(600.0));
    let json = crate::common::plan_json(&rare);
    assert!(json.contains("\"drift_interval\": 600"), "{json}");
}

/// The NICs sheet with a `gpu` column under `header`, one value per data row.
fn with_gpus(book: &mut Book, header: &str, values: &[C]) {
    let nics = book.sheet("NICs");
    nics.rows[0].push(s(header));
    for (row, v) in nics.rows[1..].iter_mut().zip(values) {
        row.push(v.clone());
    }
}

#[test]
fn v1_3_gpu_values_and_keys_in_range_and_out() {
    check(
        "v1_3_gpu_bad",
        &edit(|b| {
            // h1 names one GPU for both ports; h2 a GPU that is no address or index, and 32.
            with_gpus(
                b,
                "gpu",
                &[s("18:00.0"), s("0000:18:00.0"), s("GPU0"), C::N(32.0)],
            );
            b.key("gpu_direct", s("maybe"));
            b.key("gpu_nic_distance", s("SYS"));
            b.key("pcie_acs", s("on"));
            b.key("pcie_mrrs", C::N(1000.0));
            b.key("nccl_version", s("v2"));
            b.key("nccl_test", s("sometimes"));
            b.key("nccl_min_busbw", s("-5"));
        }),
    );
    check(
        "v1_3_gpu_warnings",
        &edit(|b| {
            // h2 names a GPU for one of its two ports.
            with_gpus(b, "对应GPU", &[C::N(0.0), C::N(1.0), C::N(0.0), C::E]);
        }),
    );
    check(
        "v1_3_gpu_keys_without_gpu",
        &edit(|b| {
            b.key("ACS", s("disable"));
            b.key("GPU直通", s("require"));
        }),
    );
}

#[test]
fn the_v1_3_keys_round_trip_and_stay_out_of_a_plan_without_them() {
    let mut book = Book::base();
    with_gpus(
        &mut book,
        "GPU编号",
        &[C::N(0.0), s("1, 0000:9b:00.0"), s("18:00.0"), C::N(3.0)],
    );
    // At the defaults of a plan with GPUs: left out.
    book.key("gpu_direct", s("check"));
    book.key("nccl_test", s("yes"));
    book.key("gpu_nic_distance", s("phb"));
    book.key("ACS", s("disable"));
    book.key("MRRS", C::N(4096.0));
    book.key("nccl_version", s("2.21.5"));
    book.key("nccl_min_busbw", C::N(180.5));
    round_trips(
        &book,
        &[
            "\"gpu_nic_distance\": \"PHB\"",
            "\"pcie_acs\": \"disable\"",
            "\"pcie_mrrs\": 4096",
            "\"nccl_version\": \"2.21.5\"",
            "\"nccl_min_busbw\": 180.5",
            "\"gpu\": [\n            1,\n            \"0000:9b:00.0\"\n          ]",
            "\"gpu\": [\n            \"0000:18:00.0\"\n          ]",
        ],
        &[
            "gpu",
            "pcie_",
            "nccl_version",
            "nccl_test",
            "nccl_min_busbw",
        ],
    );
    let json = crate::common::plan_json(&book);
    assert!(
        !json.contains("gpu_direct") && !json.contains("nccl_test"),
        "{json}"
    );
    // Said where it is not the default: kept.
    let mut said = Book::base();
    said.key("nccl_test", s("yes"));
    said.key("gpu_direct", s("check"));
    let json = crate::common::plan_json(&said);
    assert!(json.contains("\"nccl_test\": true"), "{json}");
    assert!(json.contains("\"gpu_direct\": \"check\""), "{json}");
}
