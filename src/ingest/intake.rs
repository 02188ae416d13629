//! From the files found to each host's candidate results: every file is classified (result, not
//! a result, unreadable) as it arrives, copies are dropped, and per host and per plan identity
//! only the newest result of each phase (and dry run) is kept; every result passed over becomes
//! a `superseded` note with the reason. Pure.
//!
//! Files arrive in no fixed order (see `collect`), and the intake does not depend on it: of
//! identical files the one with the smallest path is the original, the others its copies; of two
//! results of one run kind the newer wins, by content, and notes name only the final winner.
//! What is kept per file found is its path and the sha256 of its bytes; per host and run kind
//! one result, whose size `result::parse` bounds.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::ingest::collect::Found;
use crate::ingest::report::{FileNote, PlanView};
use crate::ingest::result::{self, Parsed, Phase, ResultFile, capped};

/// A result and where it was found.
pub struct Item {
    /// The path, and inside an archive `archive.tar.gz:member`.
    pub path: String,
    /// The result (boxed: a map node holds room for eleven entries, and a host has one or two).
    pub result: Box<ResultFile>,
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

/// The sha256 of a file's bytes: identical copies (the same run collected twice) count once.
type Sha = [u8; 32];

/// A file found, once read.
enum Classified {
    Problem(FileNote),
    Skipped(FileNote),
    Result {
        path: String,
        sha: Sha,
        result: Box<ResultFile>,
    },
}

fn classify(found: Found) -> Classified {
    let note = |path: String, reason: &str| FileNote {
        path,
        reason: capped(reason),
    };
    match found {
        Found::Unreadable { origin, reason } => Classified::Problem(note(origin, &reason)),
        Found::Ignored { origin, reason } => Classified::Skipped(note(origin, &reason)),
        Found::File { origin, bytes } => match result::parse(&bytes) {
            Parsed::Corrupt(reason) => Classified::Problem(note(origin, &reason)),
            Parsed::NotAResult(what) => {
                Classified::Skipped(note(origin, &format!("not a result ({what})")))
            }
            Parsed::Result(result) => Classified::Result {
                path: origin,
                sha: Sha256::digest(&bytes).into(),
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

/// The intake while files arrive: [`Taking::add`] from any thread, then [`Taking::finish`].
pub struct Taking<'p> {
    plan: Option<&'p PlanView>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    problems: Vec<FileNote>,
    skipped: Vec<FileNote>,
    /// Every path each content was found at.
    paths: BTreeMap<Sha, Vec<String>>,
    by_host: BTreeMap<String, Pools>,
    results: usize,
}

/// A host's kept results, by plan identity and run kind.
#[derive(Default)]
struct Pools {
    current: BTreeMap<RunKey, Kept>,
    stale: BTreeMap<RunKey, Kept>,
}

/// The newest result of a run kind so far, and the contents it won over.
struct Kept {
    sha: Sha,
    result: Box<ResultFile>,
    older: Vec<Sha>,
}

impl Kept {
    /// Newest first is the largest key: finish time, start time, then the content, a fixed
    /// order whatever the files arrive in (a path is not one: a copy found later can have a
    /// smaller one).
    fn age_key(&self) -> (jiff::Timestamp, Option<jiff::Timestamp>, &Sha) {
        (self.result.finished_at, self.result.started_at, &self.sha)
    }
}

impl<'p> Taking<'p> {
    /// With a plan, results are sorted into those made from it and stale.
    pub fn new(plan: Option<&'p PlanView>) -> Self {
        Taking {
            plan,
            state: Mutex::default(),
        }
    }

    /// Reads one file found and folds it in; its bytes are dropped on return. Parsing and
    /// hashing, the work, are done before the lock is taken.
    pub fn add(&self, found: Found) {
        let classified = classify(found);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match classified {
            Classified::Problem(note) => state.problems.push(note),
            Classified::Skipped(note) => state.skipped.push(note),
            Classified::Result { path, sha, result } => {
                state.results += 1;
                if let Some(paths) = state.paths.get_mut(&sha) {
                    paths.push(path);
                    return;
                }
                state.paths.insert(sha, vec![path]);
                let current = self.plan.is_none_or(|p| p.made_from(&result.plan_sha256));
                let host = state.by_host.entry(result.host.clone()).or_default();
                let pool = if current {
                    &mut host.current
                } else {
                    &mut host.stale
                };
                keep_newest(
                    pool,
                    Kept {
                        sha,
                        result,
                        older: Vec::new(),
                    },
                );
            }
        }
    }

    /// Names every file now that all are in: the originals and their copies, the kept results
    /// and those they superseded.
    pub fn finish(self) -> Intake {
        let State {
            problems,
            skipped,
            mut paths,
            by_host,
            results,
        } = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut superseded = Vec::new();
        for found_at in paths.values_mut() {
            found_at.sort_unstable();
            let (original, copies) = found_at.split_at(1);
            for copy in copies {
                superseded.push(FileNote {
                    path: copy.clone(),
                    reason: format!("a copy of {}", original[0]),
                });
            }
        }
        let path_of = |sha: &Sha| paths.get(sha).map(|p| p[0].clone()).unwrap_or_default();
        let items = |pool: BTreeMap<RunKey, Kept>, superseded: &mut Vec<FileNote>| {
            pool.into_iter()
                .map(|(key, kept)| {
                    let path = path_of(&kept.sha);
                    for older in &kept.older {
                        superseded.push(FileNote {
                            path: path_of(older),
                            reason: format!(
                                "older {} result of {} than {path}",
                                run_kind_name(key),
                                kept.result.host
                            ),
                        });
                    }
                    let item = Item {
                        path,
                        result: kept.result,
                    };
                    (key, item)
                })
                .collect()
        };
        let by_host = by_host
            .into_iter()
            .map(|(host, pools)| {
                let current = items(pools.current, &mut superseded);
                let stale = items(pools.stale, &mut superseded);
                (host, HostResults { current, stale })
            })
            .collect();
        let mut intake = Intake {
            problems,
            skipped,
            superseded,
            by_host,
            results,
        };
        intake.problems.sort();
        intake.skipped.sort();
        intake.superseded.sort();
        intake
    }
}

/// Keeps the newer of `kept` and the result of its kind already kept; the other is superseded.
fn keep_newest(pool: &mut BTreeMap<RunKey, Kept>, kept: Kept) {
    let key = (kept.result.phase, kept.result.dry_run);
    let Some(old) = pool.remove(&key) else {
        pool.insert(key, kept);
        return;
    };
    let (mut new, old) = if kept.age_key() > old.age_key() {
        (kept, old)
    } else {
        (old, kept)
    };
    new.older.push(old.sha);
    new.older.extend(old.older);
    pool.insert(key, new);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(host: &str, finished: &str, status: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": "roce-gen/result/v1", "host": host, "phase": "apply", "status": status,
            "started_at": "2026-11-30T08:00:00Z", "finished_at": finished, "checks": [],
        }))
        .unwrap()
    }

    /// Every note and every kept result's path, in a fixed order.
    fn summary(intake: &Intake) -> Vec<String> {
        let mut lines: Vec<String> = intake
            .superseded
            .iter()
            .map(|n| format!("superseded {}: {}", n.path, n.reason))
            .collect();
        for (host, results) in &intake.by_host {
            for (key, item) in &results.current {
                lines.push(format!(
                    "kept {host} {}: {}",
                    run_kind_name(*key),
                    item.path
                ));
            }
        }
        lines.push(format!("{} results", intake.results));
        lines
    }

    #[test]
    fn the_intake_does_not_depend_on_the_order_files_arrive_in() {
        let new = result("a", "2026-11-30T09:00:00Z", "pass");
        let old = result("a", "2026-11-30T08:00:00Z", "fail");
        // Two other results finished at the same second: the content decides, not the path.
        let tie_1 = result("b", "2026-11-30T08:00:00Z", "pass");
        let tie_2 = result("b", "2026-11-30T08:00:00Z", "warn");
        let files = [
            ("z/a.json", &new),
            ("m/a.json", &new),
            ("y/old.json", &old),
            ("b/old.json", &old),
            ("q/b1.json", &tie_1),
            ("c/b2.json", &tie_2),
        ];
        let take = |order: &[usize]| {
            let taking = Taking::new(None);
            for &i in order {
                let (path, bytes) = files[i];
                taking.add(Found::File {
                    origin: path.into(),
                    bytes: bytes.clone(),
                });
            }
            summary(&taking.finish())
        };
        let first = take(&[0, 1, 2, 3, 4, 5]);
        for order in [[5, 4, 3, 2, 1, 0], [2, 0, 5, 3, 1, 4], [3, 1, 4, 0, 5, 2]] {
            assert_eq!(take(&order), first, "order {order:?}");
        }
        assert!(first.contains(&"superseded z/a.json: a copy of m/a.json".to_string()));
        assert!(first.contains(&"superseded y/old.json: a copy of b/old.json".to_string()));
        assert!(
            first.contains(&"superseded b/old.json: older apply result of a than m/a.json".into()),
            "{first:#?}"
        );
        assert!(first.contains(&"kept a apply: m/a.json".to_string()));
        assert!(first.contains(&"6 results".to_string()));
        assert_eq!(first.iter().filter(|l| l.starts_with("kept b")).count(), 1);
    }
}
