//! The workbook layout of the plan format (`docs/plan-format.md`) as data: which sheets, columns
//! and keys exist, their English and Chinese aliases, and how a header is folded before it is
//! compared.
//!
//! Both readers (workbook and JSON) and the validator use these tables, so an alias is added in one
//! place.

/// One column of a table sheet.
#[derive(Debug)]
pub struct Column {
    /// The canonical name, as in the plan format and the normalized JSON.
    pub name: &'static str,
    /// Other accepted headers.
    pub aliases: &'static [&'static str],
    /// Whether the sheet is unusable without it.
    pub required: bool,
}

/// One sheet of the workbook.
#[derive(Debug)]
pub struct Sheet {
    /// The canonical name.
    pub name: &'static str,
    /// Other accepted sheet names.
    pub aliases: &'static [&'static str],
    /// Its columns, in the order the sample workbook shows them.
    pub columns: &'static [Column],
}

impl Sheet {
    /// The column whose name or alias matches `header`, if any.
    pub fn column(&self, header: &str) -> Option<&'static Column> {
        let folded = fold(header);
        self.columns
            .iter()
            .find(|c| matches(&folded, c.name, c.aliases))
    }

    /// True when `name` names this sheet.
    pub fn is_named(&self, name: &str) -> bool {
        matches(&fold(name), self.name, self.aliases)
    }
}

const fn col(name: &'static str, aliases: &'static [&'static str], required: bool) -> Column {
    Column {
        name,
        aliases,
        required,
    }
}

/// The global RoCE profile: one key/value pair per row.
pub const CLUSTER: Sheet = Sheet {
    name: "Cluster",
    aliases: &[
        "Global",
        "RoCE",
        "Profile",
        "集群",
        "全局",
        "全局参数",
        "RoCE参数",
    ],
    columns: &[
        col("key", &["parameter", "name", "参数", "参数名"], true),
        col("value", &["值", "参数值"], true),
        // Read and ignored: the sample explains each key there.
        col(
            "comment",
            &["note", "notes", "description", "说明", "备注"],
            false,
        ),
    ],
};

/// One row per host.
pub const SERVERS: Sheet = Sheet {
    name: "Servers",
    aliases: &["Hosts", "Nodes", "服务器", "主机", "服务器规划"],
    columns: &[
        col(
            "hostname",
            &["host", "server", "主机名", "服务器名称"],
            true,
        ),
        col(
            "mgmt_ip",
            &["management_ip", "mgmt", "管理IP", "管理网IP"],
            true,
        ),
        col("bmc_ip", &["ipmi", "bmc", "带外IP"], false),
        col("group", &["role", "rack", "分组", "角色"], false),
    ],
};

/// One row per RoCE port.
pub const NICS: Sheet = Sheet {
    name: "NICs",
    aliases: &[
        "RoCE NICs",
        "Interfaces",
        "Ports",
        "网卡",
        "网卡规划",
        "RoCE网卡",
    ],
    columns: &[
        col("hostname", &["host", "server", "主机名"], true),
        col("ib_dev", &["rdma_dev", "ibdev", "RDMA设备", "IB设备"], true),
        col("netdev", &["interface", "ifname", "网口", "网卡名"], true),
        col(
            "ip",
            &["address", "roce_ip", "IP", "业务IP", "RoCE IP", "IP地址"],
            true,
        ),
        col("prefix", &["prefix_len", "netmask", "掩码"], false),
        col("gateway", &["gw", "网关"], false),
        col("mtu", &["MTU", "MTU值"], false),
        col("rail", &["plane", "轨道", "平面"], false),
        col("pci", &["bdf", "pci_addr", "PCI地址"], false),
        col("mac", &["MAC", "MAC地址"], false),
        col("switch", &["leaf", "交换机"], false),
        col("switch_port", &["leaf_port", "交换机端口"], false),
        col(
            "gpu",
            &["GPU", "gpu_pci", "GPU PCI", "GPU编号", "对应GPU"],
            false,
        ),
    ],
};

/// The three sheets, in the order they are read and reported.
pub const SHEETS: [&Sheet; 3] = [&CLUSTER, &SERVERS, &NICS];

/// One key of the `Cluster` sheet.
#[derive(Debug)]
pub struct Key {
    /// The canonical name.
    pub name: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
}

const fn key(name: &'static str, aliases: &'static [&'static str]) -> Key {
    Key { name, aliases }
}

/// Every key of the `Cluster` sheet, in the order `docs/plan-format.md` lists them.
pub const KEYS: &[Key] = &[
    key("cluster_name", &["集群名称"]),
    key("trust", &["信任模式"]),
    key("roce_dscp", &["RoCE DSCP值"]),
    key("roce_priority", &["RoCE优先级"]),
    key("roce_ecn", &["RoCE ECN值"]),
    key("roce_tos", &["RoCE ToS值"]),
    key("pfc_priorities", &["PFC优先级"]),
    key("ecn_priorities", &["ECN优先级"]),
    key("cnp_dscp", &["CNP DSCP值"]),
    key("cnp_priority", &["CNP优先级"]),
    key("roce_mode", &["RoCE模式"]),
    key("mtu", &["MTU"]),
    key("global_pause", &["全局流控"]),
    key("persistence", &["持久化"]),
    key("dcbx", &["DCBX模式"]),
    key("min_ofed_version", &["最低OFED版本"]),
    key("min_fw_version", &["最低固件版本"]),
    key("cable_length", &["线缆长度"]),
    key("firmware_config", &["固件配置"]),
    key("nccl_env", &["NCCL环境变量"]),
    key("arp_sysctls", &["ARP参数"]),
    key("fabric_seconds", &["打流时长"]),
    key("fabric_min_pct", &["最低带宽比例"]),
    key("fabric_incast", &["多打一测试"]),
    key("health", &["健康监控"]),
    key("health_interval", &["监控间隔"]),
    key("drift_interval", &["漂移检查间隔"]),
    key("health_textfile_dir", &["监控文件目录"]),
    key("gpu_direct", &["GPU直通"]),
    key("gpu_nic_distance", &["GPU网卡距离"]),
    key("pcie_acs", &["ACS"]),
    key("pcie_mrrs", &["MRRS"]),
    key("nccl_version", &["NCCL版本"]),
    key("nccl_test", &["NCCL测试"]),
    key("nccl_min_busbw", &["NCCL最低带宽"]),
    // One key per DCQCN parameter (crate::plan::model::DCQCN_PARAMS), also spelled `dcqcn.<name>`.
    key(
        "dcqcn_clamp_tgt_rate",
        &["dcqcn.clamp_tgt_rate", "拥塞控制.clamp_tgt_rate"],
    ),
    key(
        "dcqcn_clamp_tgt_rate_after_time_inc",
        &[
            "dcqcn.clamp_tgt_rate_after_time_inc",
            "拥塞控制.clamp_tgt_rate_after_time_inc",
        ],
    ),
    key(
        "dcqcn_dce_tcp_g",
        &["dcqcn.dce_tcp_g", "拥塞控制.dce_tcp_g"],
    ),
    key(
        "dcqcn_dce_tcp_rtt",
        &["dcqcn.dce_tcp_rtt", "拥塞控制.dce_tcp_rtt"],
    ),
    key(
        "dcqcn_initial_alpha_value",
        &["dcqcn.initial_alpha_value", "拥塞控制.initial_alpha_value"],
    ),
    key(
        "dcqcn_rate_reduce_monitor_period",
        &[
            "dcqcn.rate_reduce_monitor_period",
            "拥塞控制.rate_reduce_monitor_period",
        ],
    ),
    key(
        "dcqcn_rate_to_set_on_first_cnp",
        &[
            "dcqcn.rate_to_set_on_first_cnp",
            "拥塞控制.rate_to_set_on_first_cnp",
        ],
    ),
    key(
        "dcqcn_rpg_ai_rate",
        &["dcqcn.rpg_ai_rate", "拥塞控制.rpg_ai_rate"],
    ),
    key(
        "dcqcn_rpg_byte_reset",
        &["dcqcn.rpg_byte_reset", "拥塞控制.rpg_byte_reset"],
    ),
    key("dcqcn_rpg_gd", &["dcqcn.rpg_gd", "拥塞控制.rpg_gd"]),
    key(
        "dcqcn_rpg_hai_rate",
        &["dcqcn.rpg_hai_rate", "拥塞控制.rpg_hai_rate"],
    ),
    key(
        "dcqcn_rpg_max_rate",
        &["dcqcn.rpg_max_rate", "拥塞控制.rpg_max_rate"],
    ),
    key(
        "dcqcn_rpg_min_dec_fac",
        &["dcqcn.rpg_min_dec_fac", "拥塞控制.rpg_min_dec_fac"],
    ),
    key(
        "dcqcn_rpg_min_rate",
        &["dcqcn.rpg_min_rate", "拥塞控制.rpg_min_rate"],
    ),
    key(
        "dcqcn_rpg_threshold",
        &["dcqcn.rpg_threshold", "拥塞控制.rpg_threshold"],
    ),
    key(
        "dcqcn_rpg_time_reset",
        &["dcqcn.rpg_time_reset", "拥塞控制.rpg_time_reset"],
    ),
    key(
        "dcqcn_min_time_between_cnps",
        &[
            "dcqcn.min_time_between_cnps",
            "拥塞控制.min_time_between_cnps",
        ],
    ),
];

/// The canonical key that `name` spells, if any.
pub(crate) fn cluster_key(name: &str) -> Option<&'static Key> {
    let folded = fold(name);
    KEYS.iter().find(|k| matches(&folded, k.name, k.aliases))
}

/// `s` with full-width forms (U+FF01–U+FF5E, what an input method types in full-width mode:
/// `２６`, `１７２．１６．１．１１`) and the ideographic space read as their ASCII forms; other text
/// as it is. Borrowed when there is nothing to change.
pub(crate) fn ascii_forms(s: &str) -> std::borrow::Cow<'_, str> {
    let wide = |c: char| ('\u{ff01}'..='\u{ff5e}').contains(&c) || c == '\u{3000}';
    if !s.chars().any(wide) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| match c {
            '\u{3000}' => ' ',
            c if wide(c) => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            c => c,
        })
        .collect::<String>()
        .into()
}

/// The known name a misspelt or shortened `text` most likely meant, among `names` (each with
/// its aliases, in their documented order): the first whose name has `text` as one of its words
/// (`DSCP` → `roce_dscp`, the RoCE traffic's before the CNP's), else the nearest within two edits
/// of a name or an alias (`roce_dcsp` → `roce_dscp`); `None` when nothing is that close.
pub(crate) fn suggest<'a>(
    text: &str,
    names: impl Iterator<Item = (&'a str, &'a [&'a str])> + Clone,
) -> Option<&'a str> {
    let folded = fold(text);
    if folded.is_empty() {
        return None;
    }
    if folded.chars().all(|c| c.is_ascii_alphanumeric())
        && folded.len() >= 2
        && let Some((name, _)) = names
            .clone()
            .find(|(n, _)| n.split('_').any(|w| w == folded))
    {
        return Some(name);
    }
    let limit = if folded.chars().count() <= 3 { 1 } else { 2 };
    let folded = folded.as_str();
    names
        .flat_map(|(name, aliases)| {
            std::iter::once(name)
                .chain(aliases.iter().copied())
                .map(move |spelling| (name, strsim::damerau_levenshtein(folded, &fold(spelling))))
        })
        .filter(|(_, d)| *d <= limit)
        .min_by_key(|(_, d)| *d)
        .map(|(name, _)| name)
}

/// The key of the `Cluster` sheet an unknown `text` most likely meant ([`suggest`]).
pub(crate) fn suggest_key(text: &str) -> Option<&'static str> {
    suggest(text, KEYS.iter().map(|k| (k.name, k.aliases)))
}

/// Folds a header, sheet name or key for comparison: full-width forms as ASCII, trimmed,
/// lowercase, and `_`, `-` and spaces all read as one `_` (`Mgmt IP` = `mgmt-ip` = `mgmt_ip`).
pub(crate) fn fold(name: &str) -> String {
    let name = ascii_forms(name);
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.trim().chars() {
        if c == '_' || c == '-' || c.is_whitespace() {
            gap = true;
            continue;
        }
        if gap && !out.is_empty() {
            out.push('_');
        }
        gap = false;
        out.extend(c.to_lowercase());
    }
    out
}

fn matches(folded: &str, name: &str, aliases: &[&str]) -> bool {
    fold(name) == folded || aliases.iter().any(|a| fold(a) == folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dcqcn_parameter_has_its_key() {
        for p in crate::plan::model::DCQCN_PARAMS {
            let key = cluster_key(&format!("dcqcn.{}", p.name)).expect(p.name);
            assert_eq!(key.name, format!("dcqcn_{}", p.name));
        }
        let keys = KEYS.iter().filter(|k| k.name.starts_with("dcqcn_")).count();
        assert_eq!(keys, crate::plan::model::DCQCN_PARAMS.len());
    }

    #[test]
    fn folding_treats_separators_and_case_alike() {
        assert_eq!(fold("  Mgmt IP "), "mgmt_ip");
        assert_eq!(fold("mgmt-ip"), "mgmt_ip");
        assert_eq!(fold("MGMT__IP"), "mgmt_ip");
        assert_eq!(fold("RoCE IP"), "roce_ip");
        assert_eq!(fold("管理IP"), "管理ip");
    }

    #[test]
    fn aliases_resolve_to_canonical_columns() {
        assert_eq!(NICS.column("RDMA设备").map(|c| c.name), Some("ib_dev"));
        assert_eq!(NICS.column("Roce-IP").map(|c| c.name), Some("ip"));
        assert_eq!(
            SERVERS.column("Management IP").map(|c| c.name),
            Some("mgmt_ip")
        );
        assert!(SERVERS.column("comment").is_none());
        assert!(NICS.is_named("roce nics"));
        assert!(CLUSTER.is_named("RoCE参数"));
        assert_eq!(
            cluster_key("PFC优先级").map(|k| k.name),
            Some("pfc_priorities")
        );
        assert_eq!(
            cluster_key("Cluster Name").map(|k| k.name),
            Some("cluster_name")
        );
    }

    #[test]
    fn no_alias_is_claimed_by_two_columns_or_sheets() {
        let mut owner = std::collections::BTreeMap::new();
        for sheet in SHEETS {
            owner.clear();
            for c in sheet.columns {
                for n in std::iter::once(&c.name).chain(c.aliases) {
                    let first = owner.entry(fold(n)).or_insert(c.name);
                    assert_eq!(*first, c.name, "{}: {n} is claimed twice", sheet.name);
                }
            }
        }
        owner.clear();
        for s in SHEETS {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                let first = owner.entry(fold(n)).or_insert(s.name);
                assert_eq!(*first, s.name, "sheet alias {n} is ambiguous");
            }
        }
    }
}

#[cfg(test)]
mod suggest_tests {
    use super::*;

    #[test]
    fn an_unknown_key_names_the_key_it_likely_meant() {
        assert_eq!(suggest_key("DSCP"), Some("roce_dscp"));
        assert_eq!(suggest_key("priority"), Some("roce_priority"));
        assert_eq!(suggest_key("PFC"), Some("pfc_priorities"));
        assert_eq!(suggest_key("roce_dcsp"), Some("roce_dscp"));
        assert_eq!(suggest_key("cabel_length"), Some("cable_length"));
        assert_eq!(suggest_key("线缆长"), Some("cable_length"));
        assert_eq!(suggest_key("vlan"), None);
        assert_eq!(suggest_key("机柜编号"), None);
    }
}
