//! The consistency section: facts that should be the same on every host of a cluster (firmware
//! per NIC model, OFED, kernel, driver, and the RoCE settings the hosts report), grouped by
//! value, most hosts first, so the outliers stand out ("PFC on here, off there"). Pure.
//!
//! Values come from each host's latest result: `facts` for firmware, OFED and kernel, and per
//! NIC the DCBX owner, the GID index and the NV values; the `actual` of the setting and DCQCN
//! checks for the rest (what a precheck found, or what apply read back).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::ingest::result::{NicFacts, Phase, ResultFile, Status, Text};

/// The per-NIC settings compared, by check id, in report order.
pub(crate) const SETTINGS: [&str; 13] = [
    "driver",
    "mtu",
    "trust",
    "pfc",
    "dscp2prio",
    "pause",
    "roce_mode",
    "roce_tos",
    "traffic_class",
    "ecn_np",
    "ecn_rp",
    "cnp_dscp",
    "cnp_priority",
];

/// The DCQCN parameters compared, by check id (`dcqcn_NAME`, the names of
/// [`crate::plan::model::DCQCN_PARAMS`]): the values their checks read, as for the settings above.
pub(crate) const DCQCN: [&str; 17] = [
    "dcqcn_clamp_tgt_rate",
    "dcqcn_clamp_tgt_rate_after_time_inc",
    "dcqcn_dce_tcp_g",
    "dcqcn_dce_tcp_rtt",
    "dcqcn_initial_alpha_value",
    "dcqcn_rate_reduce_monitor_period",
    "dcqcn_rate_to_set_on_first_cnp",
    "dcqcn_rpg_ai_rate",
    "dcqcn_rpg_byte_reset",
    "dcqcn_rpg_gd",
    "dcqcn_rpg_hai_rate",
    "dcqcn_rpg_max_rate",
    "dcqcn_rpg_min_dec_fac",
    "dcqcn_rpg_min_rate",
    "dcqcn_rpg_threshold",
    "dcqcn_rpg_time_reset",
    "dcqcn_min_time_between_cnps",
];

/// The per-NIC members of `facts.nics` compared: who owns DCBX (`os`, `fw`), the index of the
/// RoCE v2 GID of the planned address (what `NCCL_IB_GID_INDEX` must agree on), and the NV
/// values the firmware runs with now (`fw_NAME_P1`, `_P2` for a card's second port), as
/// `lib-firmware.sh` records them. Named here, not taken from whatever a result holds, so that a
/// result cannot add facts (and Prometheus series) at will.
pub(crate) const NIC_FACTS: [&str; 14] = [
    "dcbx",
    "gid_index",
    "fw_ROCE_CC_PRIO_MASK_P1",
    "fw_ROCE_CC_PRIO_MASK_P2",
    "fw_CNP_DSCP_P1",
    "fw_CNP_DSCP_P2",
    "fw_CNP_802P_PRIO_P1",
    "fw_CNP_802P_PRIO_P2",
    "fw_LLDP_NB_DCBX_P1",
    "fw_LLDP_NB_DCBX_P2",
    "fw_DCBX_WILLING_P1",
    "fw_DCBX_WILLING_P2",
    "fw_LINK_TYPE_P1",
    "fw_LINK_TYPE_P2",
];

/// The GPU path's facts compared (`facts.gpu_path`, plan format 1.3): host-wide the NCCL version
/// the checks judged by, the GPUDirect route (`peermem`, `dmabuf`, `none`) and the GPU driver's
/// version; per port the PCIe relation to its planned GPUs (`PIX`; a port with several GPUs
/// joins them). Hosts built alike should agree on all of them.
pub(crate) const GPU_HOST_FACTS: [&str; 3] = ["nccl_version", "gpudirect", "gpu_driver"];

/// The GPU path's per-port fact.
pub(crate) const GPU_NIC_FACT: &str = "gpu_relation";

/// How many per-NIC facts are compared besides the firmware version: each gives a host at most
/// one outlier.
pub(crate) const PER_NIC: usize = SETTINGS.len() + DCQCN.len() + NIC_FACTS.len() + 1;

/// Facts that name a NIC's model, best first. The PSID (`board_id`) comes first because firmware
/// is only comparable between cards of one PSID (OEM cards of one chip run other builds). Without
/// any, the firmware's major version (which NVIDIA firmware ties to the device family) stands
/// for the model.
const MODEL_FACTS: [&str; 3] = ["model", "board_id", "hca_type"];

/// How an empty value is shown.
const UNSET: &str = "unset";

/// One fact across hosts.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FactGroup {
    /// `firmware`, `ofed`, `kernel`, a setting's check id, `tool_version` or `plan_sha256`.
    pub fact: String,
    /// For firmware: the NIC model (or `28.x`, the firmware family) the group compares.
    pub scope: Option<String>,
    /// `host` for host-wide facts, `nic` for per-NIC ones.
    pub per: &'static str,
    /// What the plan wants, as the prechecks and applies state it (`expected`); absent when
    /// they state none (firmware, OFED, kernel, the NIC facts, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<String>,
    /// The common value (the first of `values`) is the planned one; `true` when the plan
    /// names no value, `false` also when every host agrees on another one.
    pub matches_plan: bool,
    /// Every host has the same value.
    pub agree: bool,
    /// Hosts with a value.
    pub hosts: usize,
    /// The values, most hosts first (on a tie the planned one, then by value); the first is
    /// the common one, the others are the outliers.
    pub values: Vec<FactValue>,
}

impl FactGroup {
    /// Nothing to point out: every host has the same value, and it is the planned one (or the
    /// plan names none). Every format marks only such a group as fine.
    pub(crate) fn ok(&self) -> bool {
        self.agree && self.matches_plan
    }

    /// The planned value where a format must show it beside the values: whenever the group is
    /// not [`ok`](Self::ok), so that a value every host has and the plan does not is never
    /// shown alone.
    pub(crate) fn plan_note(&self) -> Option<&str> {
        self.planned.as_deref().filter(|_| !self.ok())
    }
}

/// One value of a fact and the hosts that have it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FactValue {
    /// The value (`unset` for an empty one).
    pub value: String,
    /// How many hosts have it.
    pub count: usize,
    /// The hosts, by name.
    pub hosts: Vec<String>,
    /// For a per-NIC fact, hosts that have the value on only some of their NICs: those NICs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub nics: BTreeMap<String, Vec<String>>,
}

/// Per fact, by its place in the report (`order`): its name, and scope → value → the hosts
/// that have it, each with the NICs that do. The scope is empty for a fact without one (a model
/// is never empty), so that a lookup needs no allocation.
type Table = Vec<(&'static str, BTreeMap<String, BTreeMap<String, Hosts>>)>;

/// Hosts in the order they were added, with their NICs: hosts come one at a time, and in name
/// order from `report`, so a host's facts extend the last entry; `finish` sorts the rare rest.
type Hosts = Vec<(Text, Vec<Text>)>;

/// The groups for these hosts' latest results. `with_plan_sha` adds the plan the results were
/// made from (useful without `--plan`, where stale results are not otherwise told apart). The
/// tests' shorthand for a [`Tally`] fed all at once.
#[cfg(test)]
pub(crate) fn groups(hosts: &[(String, ResultFile)], with_plan_sha: bool) -> Vec<FactGroup> {
    let mut tally = Tally::new(with_plan_sha);
    for (host, r) in hosts {
        tally.add(host, r);
    }
    tally.finish()
}

/// The facts of the hosts' latest results, taken one result at a time so that the results
/// need not be kept: `report` adds each host's as it builds the host, then drops it.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    table: Table,
    /// Per setting, by its place in the report (as `table`), how often each planned value is
    /// stated (a rollback's `expected` is the value it restores, not the plan's).
    expected: Vec<BTreeMap<String, usize>>,
    with_plan_sha: bool,
}

impl Tally {
    /// An empty tally; `with_plan_sha` adds the plan each result was made from.
    pub(crate) fn new(with_plan_sha: bool) -> Self {
        Tally {
            with_plan_sha,
            ..Tally::default()
        }
    }

    /// Counts one value. Called for every fact of every host: the maps are looked up by
    /// reference and a key is allocated only when it is new.
    fn put(
        &mut self,
        order: usize,
        fact: &'static str,
        scope: &str,
        value: &str,
        host: &Text,
        nic: Option<&Text>,
    ) {
        let value = if value.trim().is_empty() {
            UNSET
        } else {
            value
        };
        if self.table.len() <= order {
            self.table.resize_with(order + 1, || ("", BTreeMap::new()));
        }
        let (name, scopes) = &mut self.table[order];
        *name = fact;
        let values = match scopes.get_mut(scope) {
            Some(values) => values,
            None => scopes.entry(scope.to_string()).or_default(),
        };
        let hosts = match values.get_mut(value) {
            Some(hosts) => hosts,
            None => values.entry(value.to_string()).or_default(),
        };
        let nics = match hosts.last_mut() {
            Some((last, nics)) if last == host => nics,
            _ => {
                hosts.push((host.clone(), Vec::new()));
                match hosts.last_mut() {
                    Some((_, nics)) => nics,
                    None => return,
                }
            }
        };
        if let Some(nic) = nic {
            nics.push(nic.clone());
        }
    }

    /// Adds one host's latest result. The order facts are reported in: firmware, host-wide
    /// software, settings, provenance.
    pub(crate) fn add(&mut self, host: &str, r: &ResultFile) {
        let host = Text::new(host);
        let mut scope = String::new();
        for (dev, facts) in &r.facts.nics {
            if let Some(fw) = facts.get("fw_ver") {
                let dev = Text::new(dev);
                model(facts, fw, &mut scope);
                self.put(0, "firmware", &scope, fw, &host, Some(&dev));
            }
        }
        if let Some(ofed) = &r.facts.ofed {
            let ofed = if ofed.trim().is_empty() {
                "none (inbox driver)"
            } else {
                ofed
            };
            self.put(1, "ofed", "", ofed, &host, None);
        }
        if let Some(kernel) = &r.facts.kernel {
            self.put(2, "kernel", "", kernel, &host, None);
        }
        // Without its passed checks, a result's settings would show only the odd values.
        let checks = if r.passes_not_kept > 0 {
            &[][..]
        } else {
            &r.checks[..]
        };
        for c in checks {
            let (Some((order, id)), Some(nic)) = (compared_check(&c.id), &c.nic) else {
                continue;
            };
            // A skipped check has no value; a failed one still read what the host has.
            if c.status != Status::Skip {
                self.put(3 + order, id, "", &c.actual, &host, Some(nic));
                if r.phase != Phase::Rollback && !c.expected.trim().is_empty() {
                    if self.expected.len() <= 3 + order {
                        self.expected.resize_with(3 + order + 1, BTreeMap::new);
                    }
                    let by_value = &mut self.expected[3 + order];
                    match by_value.get_mut(c.expected.as_str()) {
                        Some(n) => *n += 1,
                        None => {
                            by_value.insert(c.expected.to_string(), 1);
                        }
                    }
                }
            }
        }
        // Facts a NIC's result records rather than a check reads; one it does not record (an
        // older bundle, `firmware_config = off`) is not compared, not `unset`.
        let nic_facts = 3 + SETTINGS.len() + DCQCN.len();
        for (dev, facts) in &r.facts.nics {
            let dev = Text::new(dev);
            // A NIC records a few facts: each is looked up among those compared, rather than
            // each compared one among the NIC's (a NIC's facts go to separate places of the
            // table, so the order they are counted in does not matter).
            for (fact, value) in facts.iter() {
                if let Some(i) = nic_fact_order(fact) {
                    self.put(nic_facts + i, NIC_FACTS[i], "", value, &host, Some(&dev));
                }
            }
        }
        let gpu = nic_facts + NIC_FACTS.len();
        if let Some(g) = &r.facts.gpu_path {
            for (i, value) in [&g.nccl_version, &g.route, &g.driver]
                .into_iter()
                .enumerate()
            {
                self.put(gpu + i, GPU_HOST_FACTS[i], "", value, &host, None);
            }
            let mut relations: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for p in &g.pairs {
                relations.entry(&p.nic).or_default().push(&p.relation);
            }
            for (nic, rel) in relations {
                let (nic, rel) = (Text::new(nic), rel.join(","));
                let order = gpu + GPU_HOST_FACTS.len();
                self.put(order, GPU_NIC_FACT, "", &rel, &host, Some(&nic));
            }
        }
        let provenance = gpu + GPU_HOST_FACTS.len() + 1;
        self.put(provenance, "tool_version", "", &r.tool_version, &host, None);
        if self.with_plan_sha {
            self.put(
                provenance + 1,
                "plan_sha256",
                "",
                &r.plan_sha256,
                &host,
                None,
            );
        }
    }

    /// Adds what `other` counted, of hosts after this tally's (in name order, as `report`
    /// builds them).
    pub(crate) fn merge(&mut self, other: Tally) {
        if self.table.len() < other.table.len() {
            self.table
                .resize_with(other.table.len(), || ("", BTreeMap::new()));
        }
        for ((name, scopes), (fact, theirs)) in self.table.iter_mut().zip(other.table) {
            if !fact.is_empty() {
                *name = fact;
            }
            for (scope, values) in theirs {
                let ours = scopes.entry(scope).or_default();
                for (value, hosts) in values {
                    ours.entry(value).or_default().extend(hosts);
                }
            }
        }
        if self.expected.len() < other.expected.len() {
            self.expected
                .resize_with(other.expected.len(), BTreeMap::new);
        }
        for (ours, by_value) in self.expected.iter_mut().zip(other.expected) {
            for (value, n) in by_value {
                *ours.entry(value).or_default() += n;
            }
        }
    }

    /// The groups, each with its values most common first.
    pub(crate) fn finish(self) -> Vec<FactGroup> {
        let Tally {
            mut table,
            expected,
            ..
        } = self;
        for (_, scopes) in &mut table {
            for hosts in scopes.values_mut().flat_map(BTreeMap::values_mut) {
                by_host(hosts);
            }
        }

        table
            .iter()
            .enumerate()
            .flat_map(|(order, (fact, scopes))| {
                scopes
                    .iter()
                    .map(move |(scope, values)| (order, fact, scope, values))
            })
            .map(|(order, fact, scope, values)| {
                // All NICs of a host that report a fact, to tell "all its NICs" from "some";
                // with one value, every host has it on all of them.
                let mut nics_of: HashMap<&str, usize> = HashMap::new();
                if values.len() > 1 {
                    for (host, nics) in values.values().flatten() {
                        *nics_of.entry(host.as_str()).or_default() += nics.len();
                    }
                }
                let per_nic = values.values().flatten().any(|(_, n)| !n.is_empty());
                let mut values: Vec<FactValue> = values
                    .iter()
                    .map(|(value, hosts)| FactValue {
                        value: value.clone(),
                        count: hosts.len(),
                        hosts: hosts.iter().map(|(h, _)| h.to_string()).collect(),
                        nics: hosts
                            .iter()
                            .filter(|(host, nics)| {
                                nics_of.get(host.as_str()).is_some_and(|n| *n != nics.len())
                            })
                            .map(|(host, nics)| {
                                let mut nics: Vec<String> =
                                    nics.iter().map(Text::to_string).collect();
                                nics.sort();
                                (host.to_string(), nics)
                            })
                            .collect(),
                    })
                    .collect();
                let planned = expected.get(order).and_then(|e| {
                    let most = e.values().max()?;
                    e.iter().find(|(_, n)| *n == most).map(|(v, _)| v.clone())
                });
                let is_planned = |v: &FactValue| planned.as_deref() == Some(v.value.as_str());
                values.sort_by(|a, b| {
                    b.count
                        .cmp(&a.count)
                        .then_with(|| is_planned(b).cmp(&is_planned(a)))
                        .then_with(|| a.value.cmp(&b.value))
                });
                let mut all_hosts: Vec<&str> = values
                    .iter()
                    .flat_map(|v| v.hosts.iter().map(String::as_str))
                    .collect();
                all_hosts.sort_unstable();
                all_hosts.dedup();
                let matches_plan = match (&planned, values.first()) {
                    (Some(planned), Some(common)) => *planned == common.value,
                    _ => true,
                };
                FactGroup {
                    fact: (*fact).to_string(),
                    scope: (!scope.is_empty()).then(|| scope.clone()),
                    per: if per_nic { "nic" } else { "host" },
                    planned,
                    matches_plan,
                    agree: values.len() == 1,
                    hosts: all_hosts.len(),
                    values,
                }
            })
            .collect()
    }
}

/// Sorts hosts by name and merges the entries of a host added more than once, its NICs in the
/// order they came (a no-op for hosts added in name order, each once).
fn by_host(hosts: &mut Hosts) {
    if hosts.windows(2).all(|w| w[0].0 < w[1].0) {
        return;
    }
    hosts.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Hosts = Vec::with_capacity(hosts.len());
    for (host, nics) in hosts.drain(..) {
        match merged.last_mut() {
            Some((last, all)) if *last == host => all.extend(nics),
            _ => merged.push((host, nics)),
        }
    }
    *hosts = merged;
}

/// The place of a setting in [`SETTINGS`]: asked for every check of every host, so a `match`
/// rather than a search of the list.
fn setting_order(id: &str) -> Option<usize> {
    let order = match id {
        "driver" => 0,
        "mtu" => 1,
        "trust" => 2,
        "pfc" => 3,
        "dscp2prio" => 4,
        "pause" => 5,
        "roce_mode" => 6,
        "roce_tos" => 7,
        "traffic_class" => 8,
        "ecn_np" => 9,
        "ecn_rp" => 10,
        "cnp_dscp" => 11,
        "cnp_priority" => 12,
        _ => return None,
    };
    debug_assert_eq!(SETTINGS[order], id);
    Some(order)
}

/// The place in the report and the id of a check whose values are compared: a setting, then a
/// DCQCN parameter.
fn compared_check(id: &str) -> Option<(usize, &'static str)> {
    if let Some(order) = setting_order(id) {
        return Some((order, SETTINGS[order]));
    }
    if !id.starts_with("dcqcn_") {
        return None;
    }
    let i = DCQCN.iter().position(|d| *d == id)?;
    Some((SETTINGS.len() + i, DCQCN[i]))
}

/// The model a NIC's firmware is compared within, into `out` (asked for every NIC: one string
/// for all).
fn model(facts: &NicFacts, fw: &str, out: &mut String) {
    out.clear();
    if let Some(model) = MODEL_FACTS
        .iter()
        .find_map(|k| facts.get(k).filter(|v| !v.trim().is_empty()))
    {
        out.push_str(model);
        return;
    }
    match fw.split_once('.') {
        Some((major, _)) if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) => {
            out.push_str(major);
            out.push_str(".x");
        }
        _ => out.push_str("unknown model"),
    }
}

/// The place of a NIC fact in [`NIC_FACTS`], as [`setting_order`] does for settings.
pub(crate) fn nic_fact_order(key: &str) -> Option<usize> {
    let order = match key {
        "dcbx" => 0,
        "gid_index" => 1,
        "fw_ROCE_CC_PRIO_MASK_P1" => 2,
        "fw_ROCE_CC_PRIO_MASK_P2" => 3,
        "fw_CNP_DSCP_P1" => 4,
        "fw_CNP_DSCP_P2" => 5,
        "fw_CNP_802P_PRIO_P1" => 6,
        "fw_CNP_802P_PRIO_P2" => 7,
        "fw_LLDP_NB_DCBX_P1" => 8,
        "fw_LLDP_NB_DCBX_P2" => 9,
        "fw_DCBX_WILLING_P1" => 10,
        "fw_DCBX_WILLING_P2" => 11,
        "fw_LINK_TYPE_P1" => 12,
        "fw_LINK_TYPE_P2" => 13,
        _ => return None,
    };
    debug_assert_eq!(NIC_FACTS[order], key);
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dcqcn_parameter_of_the_plan_is_compared() {
        let ids: Vec<String> = crate::plan::model::DCQCN_PARAMS
            .iter()
            .map(|p| format!("dcqcn_{}", p.name))
            .collect();
        let mut compared: Vec<&str> = DCQCN.to_vec();
        compared.sort_unstable();
        let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        assert_eq!(compared, ids);
    }

    #[test]
    fn every_setting_has_its_place_and_nothing_else_has_one() {
        for (i, id) in SETTINGS.iter().enumerate() {
            assert_eq!(setting_order(id), Some(i), "{id}");
        }
        for id in ["", "mtu ", "MTU", "fw_ver", "ib_dev"] {
            assert_eq!(setting_order(id), None, "{id}");
        }
        for (i, fact) in NIC_FACTS.iter().enumerate() {
            assert_eq!(nic_fact_order(fact), Some(i), "{fact}");
        }
        for fact in ["", "fw_ver", "netdev", "DCBX", "fw_CNP_DSCP"] {
            assert_eq!(nic_fact_order(fact), None, "{fact}");
        }
    }
}
