//! Every alias family and every leniency of the plan format (`docs/plan-format.md`) reads the same
//! plan as the plain spelling: sheet names, headers, keys, header folding, column order, unknown
//! columns, empty rows, numbers as text or floats, CIDR or prefix/netmask columns, title rows,
//! merged cells.

use roce_gen::testing::{CLUSTER, KEYS, NICS, SERVERS, SHEETS};

use crate::common::{Book, C, plan_json, roce_gen, s, tmp};

#[test]
fn every_sheet_alias_reads_the_same_plan() {
    let baseline = plan_json(&Book::base());
    for sheet in SHEETS {
        for alias in sheet.aliases {
            let mut book = Book::base();
            book.sheet(sheet.name).name = (*alias).to_string();
            assert_eq!(plan_json(&book), baseline, "sheet alias {alias}");
        }
    }
}

#[test]
fn every_column_alias_reads_the_same_plan() {
    let baseline = plan_json(&Book::base());
    for (sheet, spec) in [
        ("Servers", &SERVERS),
        ("NICs", &NICS),
        ("Cluster", &CLUSTER),
    ] {
        // `prefix` and `gpu` are not in the base plan; their aliases are covered by the prefix
        // test and the GPU test below.
        for column in spec
            .columns
            .iter()
            .filter(|c| c.name != "prefix" && c.name != "gpu")
        {
            for alias in column.aliases {
                let mut book = Book::base();
                if column.name == "comment" {
                    // A column of notes, under any of its names, changes nothing.
                    for (i, row) in book.sheet(sheet).rows.iter_mut().enumerate() {
                        row.push(if i == 0 { s(alias) } else { s("a note, 3 = 4") });
                    }
                } else {
                    book.sheet(sheet).rename(column.name, alias);
                }
                assert_eq!(plan_json(&book), baseline, "{sheet} column alias {alias}");
            }
        }
    }
}

#[test]
fn every_key_alias_reads_the_same_plan() {
    for key in KEYS.iter().filter(|k| !k.aliases.is_empty()) {
        // The base plan's value, or one every optional key takes.
        let mut canonical = Book::base();
        let given = canonical
            .sheet("Cluster")
            .rows
            .iter()
            .any(|r| r[0] == s(key.name));
        if !given {
            let value = match key.name {
                "roce_dscp" => C::N(24.0),
                "roce_priority" => C::N(4.0),
                "roce_ecn" => C::N(1.0),
                "roce_tos" => C::N(106.0),
                "cnp_dscp" => C::N(46.0),
                "cnp_priority" => C::N(7.0),
                "roce_mode" => s("v1"),
                "global_pause" => s("off"),
                "dcbx" => s("os"),
                "min_ofed_version" => s("24.10"),
                "min_fw_version" => s("28.39.1002"),
                "nccl_env" => s("no"),
                "arp_sysctls" => s("set"),
                "fabric_seconds" => C::N(20.0),
                "fabric_min_pct" => C::N(80.0),
                "fabric_incast" => s("no"),
                "health" => s("no"),
                "health_interval" => C::N(60.0),
                "drift_interval" => C::N(600.0),
                "health_textfile_dir" => s("/var/lib/prometheus/node-exporter"),
                "gpu_nic_distance" => s("PIX"),
                "nccl_version" => s("2.23.4"),
                "nccl_test" => s("yes"),
                "nccl_min_busbw" => C::N(40.0),
                "cable_length" => C::N(30.0),
                "firmware_config" => s("off"),
                "gpu_direct" => s("require"),
                "pcie_acs" => s("disable"),
                "pcie_mrrs" => C::N(4096.0),
                // 1 is in range for every DCQCN parameter, the on/off ones included.
                dcqcn if dcqcn.starts_with("dcqcn_") => C::N(1.0),
                other => panic!("give the aliased key {other} a value here"),
            };
            canonical.key(key.name, value);
        }
        let expected = plan_json(&canonical);
        // Keys whose only value that fits the base plan is their default (the ToS of its DSCP
        // and ECN, no link pause beside PFC): the alias is proven known by the warnings below.
        let at_default = ["roce_tos", "global_pause"].contains(&key.name);
        if !given && !at_default {
            assert_ne!(
                expected,
                plan_json(&Book::base()),
                "{} changes the plan",
                key.name
            );
        }
        for alias in key.aliases {
            let mut book = canonical.clone();
            let rows = &mut book.sheet("Cluster").rows;
            let row = rows
                .iter_mut()
                .find(|r| r[0] == s(key.name))
                .expect("the key was set");
            row[0] = s(alias);
            let dir = tmp();
            book.write(dir.path(), "plan.xlsx");
            let run = roce_gen(dir.path(), &["plan", "plan.xlsx"]);
            assert_eq!(run.code, 0, "{}", run.transcript());
            assert!(
                !run.stderr.contains("unknown key"),
                "key alias {alias}: {}",
                run.stderr
            );
            assert_eq!(run.stdout, expected, "key alias {alias}");
        }
    }
}

#[test]
fn every_gpu_column_alias_reads_the_same_plan() {
    let with = |header: &str| {
        let mut book = Book::base();
        let nics = book.sheet("NICs");
        nics.rows[0].push(s(header));
        for (i, row) in nics.rows[1..].iter_mut().enumerate() {
            row.push(C::N(i as f64));
        }
        plan_json(&book)
    };
    let expected = with("gpu");
    assert_ne!(expected, plan_json(&Book::base()));
    let column = NICS.columns.iter().find(|c| c.name == "gpu").unwrap();
    for alias in column.aliases {
        assert_eq!(with(alias), expected, "NICs column alias {alias}");
    }
}

#[test]
fn headers_fold_case_spaces_dashes_and_underscores() {
    let baseline = plan_json(&Book::base());
    for spelling in [
        "Mgmt IP",
        "MGMT-IP",
        "  mgmt_ip  ",
        "Mgmt  Ip",
        "management ip",
    ] {
        let mut book = Book::base();
        book.sheet("Servers").rename("mgmt_ip", spelling);
        assert_eq!(plan_json(&book), baseline, "{spelling:?}");
    }
    let mut book = Book::base();
    book.sheet("NICs").rename("ib_dev", "IB-Dev");
    book.sheet("NICs").rename("switch_port", "Switch Port");
    book.key("cluster_name", s("t1"));
    book.sheet("Cluster").rows[1][0] = s("Cluster Name");
    book.sheet("NICs").name = "roce nics".into();
    assert_eq!(plan_json(&book), baseline);
}

#[test]
fn column_order_is_free_and_unknown_columns_are_notes() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    for row in &mut book.sheet("NICs").rows {
        row.reverse();
    }
    book.sheet("Servers").rows[0].push(s("comment"));
    book.sheet("Servers").rows[1].push(s("spare"));
    assert_eq!(plan_json(&book), baseline);

    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stderr,
        "note: plan.xlsx: Servers!E1: column \"comment\" is not part of the plan and is ignored\n\
         next: run `roce-gen generate plan.xlsx`\n"
    );
}

#[test]
fn empty_rows_are_skipped_and_title_rows_above_the_header_are_passed_over() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    let nics = book.sheet("NICs");
    nics.rows.insert(2, vec![C::E; 3]);
    nics.rows.insert(4, vec![s(" "), C::E]);
    nics.rows.insert(0, vec![s("RoCE port plan, revision 3")]);
    nics.rows.insert(1, vec![]);
    assert_eq!(plan_json(&book), baseline);
}

#[test]
fn numbers_may_be_text_or_floats() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    book.key("mtu", s("4200"));
    book.key("pfc_priorities", s("3"));
    book.sheet("NICs").set(1, "rail", s("0"));
    book.sheet("NICs").set(2, "rail", C::N(1.0));
    assert_eq!(plan_json(&book), baseline);
    book.key("mtu", s(" 4200.0 "));
    book.key("persistence", C::B(true));
    assert_eq!(plan_json(&book), baseline);
}

#[test]
fn address_and_prefix_may_be_one_cell_or_two_columns() {
    let baseline = plan_json(&Book::base());
    for (prefix, name) in [
        ("24", "prefix"),
        ("255.255.255.0", "netmask"),
        ("24", "掩码"),
    ] {
        let mut book = Book::base();
        let nics = book.sheet("NICs");
        nics.rows[0].push(s(name));
        for row in nics.rows.iter_mut().skip(1) {
            let C::S(cidr) = row[3].clone() else { panic!() };
            row[3] = s(cidr.split('/').next().unwrap());
            row.push(s(prefix));
        }
        assert_eq!(plan_json(&book), baseline, "{name} {prefix}");
    }
}

#[test]
fn a_hostname_merged_over_its_nic_rows_fills_them() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    let nics = book.sheet("NICs");
    nics.rows[2][0] = C::E;
    nics.rows[4][0] = C::E;
    book.merges.push(("NICs".into(), (1, 0, 2, 0)));
    book.merges.push(("NICs".into(), (3, 0, 4, 0)));
    assert_eq!(plan_json(&book), baseline);
}

#[test]
fn chinese_workbook_reads_like_the_english_one() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    book.sheet("Cluster").name = "全局参数".into();
    book.sheet("Servers").name = "服务器规划".into();
    book.sheet("NICs").name = "网卡规划".into();
    let c = book.sheet("全局参数");
    c.rename("key", "参数名");
    c.rename("value", "参数值");
    c.rows[1][0] = s("集群名称");
    let srv = book.sheet("服务器规划");
    for (en, zh) in [
        ("hostname", "服务器名称"),
        ("mgmt_ip", "管理网IP"),
        ("bmc_ip", "带外IP"),
        ("group", "角色"),
    ] {
        srv.rename(en, zh);
    }
    let nics = book.sheet("网卡规划");
    for (en, zh) in [
        ("hostname", "主机名"),
        ("ib_dev", "RDMA设备"),
        ("netdev", "网口"),
        ("ip", "业务IP"),
        ("gateway", "网关"),
    ] {
        nics.rename(en, zh);
    }
    assert_eq!(plan_json(&book), baseline);
}

#[test]
fn a_cluster_sheet_without_headers_reads_columns_a_and_b() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    book.sheet("Cluster").rows.remove(0);
    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["plan", "plan.xlsx"]);
    assert_eq!(run.stdout, baseline);
    assert!(
        run.stderr
            .contains("note: plan.xlsx: Cluster: no `key`/`value` header row"),
        "{}",
        run.stderr
    );
}

/// What an input method types in full-width mode, and the Chinese booleans, read as the plain
/// plan: full-width digits and dots in a NIC's address and a Cluster number, a full-width key
/// name, `开启`/`关闭` for booleans.
#[test]
fn full_width_forms_and_chinese_booleans_read_as_the_plain_plan() {
    let mut plain = Book::base();
    plain.key("persistence", s("no"));
    plain.key("roce_dscp", C::N(24.0));
    let mut wide = Book::base();
    wide.key("persistence", s("关闭"));
    wide.key("ｒｏｃｅ＿ｄｓｃｐ", s("２４"));
    wide.sheet("NICs").set(1, "ip", s("１０．１．０．１／２４"));
    wide.sheet("Servers")
        .set(1, "mgmt_ip", s("１０．０．０．１"));
    assert_eq!(plan_json(&wide), plan_json(&plain));
    let mut on = Book::base();
    on.key("persistence", s("开启"));
    assert_eq!(plan_json(&on), plan_json(&Book::base()));
}

/// An unknown key names the key it most likely meant, on the line printed.
#[test]
fn an_unknown_key_names_the_key_it_likely_meant() {
    let dir = tmp();
    let mut book = Book::base();
    book.key("DSCP", C::N(24.0));
    book.key("cabel_length", C::N(30.0));
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    for line in [
        r#"warning: plan.xlsx: Cluster!A8: unknown key "DSCP" is ignored; did you mean roce_dscp?"#,
        r#"warning: plan.xlsx: Cluster!A9: unknown key "cabel_length" is ignored; did you mean cable_length?"#,
    ] {
        assert!(
            run.stderr
                .lines()
                .chain(run.stdout.lines())
                .any(|l| l == line),
            "no {line:?} in {}",
            run.transcript()
        );
    }
}

/// A header written over two rows, as delivery teams lay out their AID sheets (a group name above
/// some column names, the others in the upper row), reads as one header, with a note; so does a
/// group label row above the whole header.
#[test]
fn a_header_over_two_rows_reads_as_one() {
    let baseline = plan_json(&Book::base());
    let mut book = Book::base();
    let rows = &mut book.sheet("Servers").rows;
    rows[0] = vec![s("主机名"), s("网络地址"), C::E, s("分组")];
    rows.insert(1, vec![C::E, s("管理IP"), s("带外IP"), C::E]);
    assert_eq!(plan_json(&book), baseline);
    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    assert!(
        run.stdout
            .contains("Servers!A1: the header spans rows 1 and 2: read as one")
            || run
                .stderr
                .contains("Servers!A1: the header spans rows 1 and 2: read as one"),
        "{}",
        run.transcript()
    );

    // The same with the cells merged as a spreadsheet lays them out: the host name over both
    // rows, the group name over its two columns.
    let mut merged = book.clone();
    merged.merges.push(("Servers".into(), (0, 0, 1, 0)));
    merged.merges.push(("Servers".into(), (0, 1, 0, 2)));
    assert_eq!(plan_json(&merged), baseline);

    let mut label = Book::base();
    label
        .sheet("NICs")
        .rows
        .insert(0, vec![s("RoCE网卡规划（第一期）")]);
    assert_eq!(plan_json(&label), baseline);
}
