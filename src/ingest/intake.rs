//! From the files found to each host's candidate results: every file is read, classified
//! (result, not a result, unreadable), copies are dropped, and per host and per plan identity
//! only the newest result of each phase (and dry run) is kept; every result passed over becomes
//! a `superseded` note with the reason. Pure.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::ingest::collect::Found;
use crate::ingest::report::{FileNote, PlanView};
use crate::ingest::result::{self, Parsed, Phase, ResultFile};

/// A result and where it was found.
pub struct Item {
    /// The path, and inside an archive `archive.tar.gz:member`.
    pub path: String,
    /// The result.
    pub result: ResultFile,
}

impl Item {
    /// Newest first is the largest key: finish time, start time, then the path for a fixed order.
    fn age_key(&self) -> (jiff::Timestamp, Option<jiff::Timestamp>, &str) {
        (
            self.result.finished_at,
            self.result.started_at,
            self.path.as_str(),
        )
    }
}

/// Which run of a host a result is: its script, and whether it was a dry run.
pub type RunKey = (Phase, bool);

/// One host's newest results, per run kind: those made from the plan (or any, without a plan)
/// and those made from another plan.
#[derive(Default)]
pub struct HostResults {
    /// From the plan given (every result, without a plan).
    pub current: BTreeMap<RunKey, Item>,
    /// From another plan.
    pub stale: BTreeMap<RunKey, Item>,
}

/// What the files found amount to.
#[derive(Default)]
pub struct Intake {
    /// Files that could not be read as results.
    pub problems: Vec<FileNote>,
    /// Files that are not results.
    pub skipped: Vec<FileNote>,
    /// Results passed over: older ones and copies.
    pub superseded: Vec<FileNote>,
    /// Per host name, its newest results.
    pub by_host: BTreeMap<String, HostResults>,
    /// Results read (kept, superseded and copies).
    pub results: usize,
}

/// A file found, once read.
enum Classified {
    Problem(FileNote),
    Skipped(FileNote),
    Result {
        path: String,
        /// sha256 of the bytes: identical copies (the same run collected twice) count once.
        digest: String,
        result: Box<ResultFile>,
    },
}

fn classify(found: Found) -> Classified {
    match found {
        Found::Unreadable { origin, reason } => Classified::Problem(FileNote {
            path: origin,
            reason,
        }),
        Found::Ignored { origin, reason } => Classified::Skipped(FileNote {
            path: origin,
            reason,
        }),
        Found::File { origin, bytes } => match result::parse(&bytes) {
            Parsed::Corrupt(reason) => Classified::Problem(FileNote {
                path: origin,
                reason,
            }),
            Parsed::NotAResult(what) => Classified::Skipped(FileNote {
                path: origin,
                reason: format!("not a result ({what})"),
            }),
            Parsed::Result(result) => Classified::Result {
                path: origin,
                digest: crate::digest::sha256_hex(&bytes),
                result,
            },
        },
    }
}

/// The display name of a run kind.
pub fn run_kind_name((phase, dry_run): RunKey) -> String {
    if dry_run {
        format!("{} (dry run)", phase.as_str())
    } else {
        phase.as_str().to_string()
    }
}

/// Reads every file found; with a plan, results are sorted into those made from it and stale.
pub fn take(plan: Option<&PlanView>, found: Vec<Found>) -> Intake {
    let mut intake = Intake::default();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    // Parsing and hashing are the work: done on every core, each file's bytes dropped once it
    // is read; `collect` keeps the order the files were found in, so the report does not depend
    // on the scheduling.
    let classified: Vec<Classified> = found.into_par_iter().map(classify).collect();
    for c in classified {
        match c {
            Classified::Problem(note) => intake.problems.push(note),
            Classified::Skipped(note) => intake.skipped.push(note),
            Classified::Result {
                path,
                digest,
                result,
            } => {
                intake.results += 1;
                if let Some(first) = seen.get(&digest) {
                    intake.superseded.push(FileNote {
                        path,
                        reason: format!("a copy of {first}"),
                    });
                    continue;
                }
                seen.insert(digest, path.clone());
                let current = plan.is_none_or(|p| p.made_from(&result.plan_sha256));
                let host = intake.by_host.entry(result.host.clone()).or_default();
                let pool = if current {
                    &mut host.current
                } else {
                    &mut host.stale
                };
                let item = Item {
                    path,
                    result: *result,
                };
                keep_newest(pool, item, &mut intake.superseded);
            }
        }
    }
    intake
}

/// Keeps the newer of `item` and the result of its kind already kept; the other is superseded.
fn keep_newest(pool: &mut BTreeMap<RunKey, Item>, item: Item, superseded: &mut Vec<FileNote>) {
    let key = (item.result.phase, item.result.dry_run);
    let Some(old) = pool.remove(&key) else {
        pool.insert(key, item);
        return;
    };
    let (new, old) = if item.age_key() > old.age_key() {
        (item, old)
    } else {
        (old, item)
    };
    superseded.push(FileNote {
        path: old.path,
        reason: format!(
            "older {} result of {} than {}",
            run_kind_name(key),
            new.result.host,
            new.path
        ),
    });
    pool.insert(key, new);
}
