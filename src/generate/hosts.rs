//! Which bundles the output folder holds after a run: the hosts `--hosts` selects (with a "did
//! you mean" for a typo), and the bundles of an earlier output kept beside them (hosts left out
//! by `--hosts`, and hosts the plan no longer has unless `--prune`).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};

use super::Options;
use super::dist::{self, INDEX, Index, IndexHost};
use crate::plan::diagnostic::Severity;
use crate::plan::model::{Host, Plan};

/// A line for the user: a warning or a note, or (`None`) plain information.
pub(crate) type Said = (Option<Severity>, String);

/// The hosts `--hosts` names, in plan order; an unknown name is an error.
pub(crate) fn select<'p>(hosts: &'p [Host], names: Option<&[String]>) -> Result<Vec<&'p Host>> {
    let Some(names) = names else {
        return Ok(hosts.iter().collect());
    };
    let wanted: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    let unknown: Vec<&String> = wanted
        .iter()
        .filter(|w| !hosts.iter().any(|h| h.hostname.folded() == **w))
        .collect();
    if !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|n| match did_you_mean(n, hosts) {
                Some(near) => format!("{n:?} (did you mean {near}?)"),
                None => format!("{n:?}"),
            })
            .collect();
        bail!("--hosts: no host {} in the plan", list.join(", "));
    }
    Ok(hosts
        .iter()
        .filter(|h| wanted.contains(&h.hostname.folded()))
        .collect())
}

/// The plan's host name nearest to `name`, when it is near enough to be a typo.
fn did_you_mean<'p>(name: &str, hosts: &'p [Host]) -> Option<&'p str> {
    // One edit from 4 characters, two from 8: `gpu-0005` finds `gpu-005`; in short names one
    // character is the whole difference (`h9` is not a typo of `h1`).
    let most = match name.chars().count() {
        0..4 => return None,
        4..8 => 1,
        _ => 2,
    };
    hosts
        .iter()
        .map(|h| {
            let distance = strsim::damerau_levenshtein(name, &h.hostname.folded());
            (distance, h.hostname.as_str())
        })
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, host)| host)
}

/// The folder's previous output, as its index and checksums describe it.
#[derive(Debug, Default)]
pub(crate) struct Previous {
    /// Its index entries whose tarball is still in the folder.
    entries: Vec<IndexHost>,
    /// The plan its index names.
    plan_sha256: String,
    /// Every file it wrote: what its `SHA256SUMS` lists, its bundles, and the files outside it.
    pub(crate) owned: BTreeSet<String>,
}

impl Previous {
    pub(crate) fn read(dir: &Path) -> Self {
        // run-here.sh, its signature and README.txt are not in SHA256SUMS (they vouch for it or
        // tell of it), and a signature from an earlier run must not outlive it.
        let mut owned = BTreeSet::from([
            INDEX.to_string(),
            dist::SUMS.to_string(),
            dist::RUN_HERE.to_string(),
            dist::README.to_string(),
            crate::signature::SIGNATURE.to_string(),
        ]);
        if let Ok(sums) = std::fs::read_to_string(dir.join(dist::SUMS)) {
            owned.extend(
                sums.lines()
                    .filter_map(|l| l.split_once("  "))
                    .map(|(_, name)| name.to_string()),
            );
        }
        let index = std::fs::read(dir.join(INDEX))
            .ok()
            .and_then(|b| serde_json::from_slice::<Index>(&b).ok());
        let Some(index) = index else {
            return Previous {
                owned,
                ..Previous::default()
            };
        };
        owned.extend(index.hosts.iter().map(|h| h.bundle.clone()));
        // Only plain tarball names in the folder itself, and only those still there.
        let entries = index
            .hosts
            .into_iter()
            .filter(|h| {
                h.bundle.ends_with(".tar.gz")
                    && !h.bundle.contains('/')
                    && !h.bundle.starts_with('.')
                    && dir.join(&h.bundle).is_file()
            })
            .collect();
        Previous {
            entries,
            plan_sha256: index.plan_sha256,
            owned,
        }
    }
}

/// The new index's entries, and what to tell the user about the bundles kept or removed.
pub(crate) struct Merged {
    pub(crate) entries: Vec<IndexHost>,
    pub(crate) said: Vec<Said>,
    /// Hosts whose bundle `--prune` removed.
    pub(crate) removed: Vec<String>,
}

/// The bundles just built, in plan order, with those of the previous output kept: hosts of the
/// plan that `--hosts` left out, and hosts the plan no longer has unless `--prune`. A kept
/// bundle made from another plan says so in its entry.
pub(crate) fn merge(
    plan: &Plan,
    built: Vec<IndexHost>,
    previous: &Previous,
    plan_sha256: &str,
    opts: &Options<'_>,
) -> Merged {
    let in_plan = |host: &str| {
        plan.hosts
            .iter()
            .any(|h| h.hostname.folded() == host.to_ascii_lowercase())
    };
    let mut by_host: std::collections::BTreeMap<String, IndexHost> = previous
        .entries
        .iter()
        .map(|e| {
            (
                e.host.to_ascii_lowercase(),
                clone_entry(e, &previous.plan_sha256, plan_sha256),
            )
        })
        .collect();
    let mut said = Vec::new();
    let mut removed = Vec::new();
    let gone: Vec<String> = by_host
        .values()
        .filter(|e| !in_plan(&e.host))
        .map(|e| e.host.clone())
        .collect();
    if !gone.is_empty() {
        if opts.prune {
            for host in &gone {
                by_host.remove(&host.to_ascii_lowercase());
            }
            removed.clone_from(&gone);
            said.push((
                None,
                format!(
                    "removed the bundles of {} the plan no longer has: {}",
                    plural(gone.len(), "host", "hosts"),
                    gone.join(", ")
                ),
            ));
        } else {
            said.push((
                Some(Severity::Warning),
                format!(
                    "kept the bundles of {} the plan no longer has: {} (--prune removes them)",
                    plural(gone.len(), "host", "hosts"),
                    gone.join(", ")
                ),
            ));
        }
    }
    for e in built {
        by_host.insert(e.host.to_ascii_lowercase(), e);
    }
    // Plan order first, then the hosts outside the plan by name.
    let mut entries = Vec::with_capacity(by_host.len());
    for h in &plan.hosts {
        if let Some(e) = by_host.remove(&h.hostname.folded()) {
            entries.push(e);
        }
    }
    entries.extend(by_host.into_values());
    let older = entries.iter().filter(|e| e.plan_sha256.is_some()).count();
    if older > 0 && opts.hosts.is_some() {
        said.push((
            Some(Severity::Note),
            format!(
                "{} in the folder {} made from an earlier plan; their results will show as stale \
             against this one (generate without --hosts to refresh them)",
                plural(older, "bundle", "bundles"),
                if older == 1 { "is" } else { "are" }
            ),
        ));
    }
    Merged {
        entries,
        said,
        removed,
    }
}

/// A previous entry, marked with its plan when that is not the new index's.
fn clone_entry(e: &IndexHost, index_plan: &str, plan_sha256: &str) -> IndexHost {
    let made_from = e.plan_sha256.as_deref().unwrap_or(index_plan);
    IndexHost {
        plan_sha256: (made_from != plan_sha256).then(|| made_from.to_string()),
        ..e.clone()
    }
}

/// `1 host`, `3 hosts`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
