//! From the files found to each host's candidate results: every file is classified (result, not
//! a result, unreadable) as it arrives, copies are dropped, and per host and per plan identity
//! only the newest result of each phase (and dry run) is kept; every result passed over becomes
//! a `superseded` note with the reason. Pure.
//!
//! Files arrive in no fixed order (see `collect`), and the intake does not depend on it: of
//! identical files the original is one that no symbolic link led to, with the smallest path,
//! the others its copies (a link is never the original of the file it points to); of two
//! results of one run kind the newer wins, by content, and notes name only the final winner.
//! What is kept per file found is its path and what tells its content apart ([`Content`]); per
//! host and run kind one result, whose size `result::parse` bounds.
//!
//! What it takes in of a plan is a [`PlanView`]; each file it does not use becomes a
//! [`FileNote`], which the report lists as it is.
//!
//! Results are not authenticated: anyone who can write where they are collected can add one.
//! So a result cannot lie quietly: one whose file name names another host or run than its
//! content ([`misnamed`]), or one that finished after ingest's clock ([`from_the_future`], which
//! would win over every later run), is a problem, used for no host.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use anyhow::{Result, bail};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ingest::collect::{self, Found};
use crate::ingest::result::{
    self, Check, CheckData, LIMIT_CHECK, Parsed, Phase, ResultFile, Status, capped,
};

/// What `ingest` needs of a plan.
#[derive(Debug, Clone)]
pub(crate) struct PlanView {
    /// The plan file as named on the command line.
    pub file: String,
    /// sha256 of the normalized plan: what results of its bundles carry as `plan_sha256`.
    pub sha256: String,
    /// sha256 of the file's bytes: what bundles made before the plan's identity was its
    /// normalized form carry; such results are this plan's too.
    pub file_sha256: String,
    /// The cluster name.
    pub cluster: String,
    /// The hosts, in plan order.
    pub hosts: Vec<PlannedHost>,
}

/// A host of the plan.
#[derive(Debug, Clone)]
pub(crate) struct PlannedHost {
    pub name: String,
    /// Its management address.
    pub mgmt_ip: String,
    /// Its planned ports, for the fabric matrix.
    pub ports: Vec<PlannedPort>,
}

/// A planned port as the fabric matrix names it.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlannedPort {
    pub ib_dev: String,
    /// The rail of the fabric test's ring (its number, else the subnet).
    pub rail: String,
    /// `leaf-1 Eth1/2` from the plan's switch and switch port, when it has them.
    pub switch: Option<String>,
}

impl PlanView {
    /// Whether a result's `plan_sha256` names this plan, in either identity.
    pub(crate) fn made_from(&self, plan_sha256: &str) -> bool {
        plan_sha256 == self.sha256 || plan_sha256 == self.file_sha256
    }
}

/// A file and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct FileNote {
    /// The path, and inside an archive `archive.tar.gz:member`.
    pub path: String,
    /// Why it is listed.
    pub reason: String,
    /// A result superseded by a newer one of its host and run kind: the newer one's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl FileNote {
    /// A note with no result superseding it.
    pub(crate) fn new(path: String, reason: String) -> Self {
        FileNote {
            path,
            reason,
            superseded_by: None,
        }
    }

    /// Superseded by a result whose file has another name (not the same file collected from
    /// elsewhere): worth saying, since any file can claim to be any host's result.
    pub(crate) fn superseded_by_another_name(&self) -> Option<&str> {
        self.superseded_by
            .as_deref()
            .filter(|by| file_name(by) != file_name(&self.path))
    }
}

/// The name of a file found, without its folders or archive.
fn file_name(origin: &str) -> &str {
    origin.rsplit(['/', ':']).next().unwrap_or(origin)
}

/// What the results read may take in memory, estimated, before ingest keeps only the checks
/// that did not pass (and counts the others): a few thousand hosts of a few hundred checks each
/// fit below it, and memory does not grow past it with the number of passing checks.
pub(crate) const LEAN_AT: usize = 512 << 20;

/// What the results read may take in memory, estimated, without their passing checks: past it
/// ingest stops (exit 2) rather than take the machine's memory.
pub(crate) const REFUSE_AT: usize = 1 << 30;

/// What each result read takes in memory beyond [`ResultFile::size`], to the end of the report:
/// its path, its content's entry, its run in the report. Measured (`benches/README.md`), so that
/// many tiny results are not taken for little.
pub(crate) const PER_RESULT: usize = 1_024;

/// What each host takes beyond its results: its entries here and its part of the report, as
/// JSON (the dearest format) writes it. Measured with [`PER_RESULT`].
pub(crate) const PER_HOST: usize = 9_216;

/// How long after ingest's clock a result may have finished and still be believed: the clocks
/// of the hosts and of the machine running ingest differ a little.
pub(crate) const CLOCK_SKEW: jiff::SignedDuration = jiff::SignedDuration::from_mins(5);

/// The budgets a [`Taking`] keeps to; [`Budgets::DEFAULT`] but in tests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budgets {
    /// See [`LEAN_AT`].
    pub lean_at: usize,
    /// See [`REFUSE_AT`].
    pub refuse_at: usize,
}

impl Budgets {
    /// [`LEAN_AT`] and [`REFUSE_AT`].
    pub(crate) const DEFAULT: Budgets = Budgets {
        lean_at: LEAN_AT,
        refuse_at: REFUSE_AT,
    };
}

/// A result and where it was found.
pub(crate) struct Item {
    /// The path, and inside an archive `archive.tar.gz:member`.
    pub path: String,
    /// The result (boxed: a map node holds room for eleven entries, and a host has one or two).
    pub result: Box<ResultFile>,
}

/// Which run of a host a result is: its script, and whether it was a dry run.
pub(crate) type RunKey = (Phase, bool);

/// One host's newest results, per run kind: those made from the plan (or any, without a plan)
/// and those made from another plan.
#[derive(Default)]
pub(crate) struct HostResults {
    /// From the plan given (every result, without a plan).
    pub current: BTreeMap<RunKey, Item>,
    /// From another plan.
    pub stale: BTreeMap<RunKey, Item>,
}

/// What the files found amount to.
#[derive(Default)]
pub(crate) struct Intake {
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

/// What tells a result's content from any other's: the sha256 of its bytes, or a number of its
/// own while no other result read could be a copy of it or tie with it. Hashing every file took
/// a tenth of ingest, and only results of one [`TieKey`] are ever compared by content: a copy
/// reads the same, and `keep_newest` looks at the content only when the times are equal. A
/// result gets its sha256 once a second one of its key is read (see [`State::content_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Content {
    Sha(Sha),
    Lone(usize),
}

/// Results that can be copies of one another or tie: the same host, plan identity (current or
/// stale), run kind, finish time and start time.
type TieKey = (
    String,
    bool,
    RunKey,
    jiff::Timestamp,
    Option<jiff::Timestamp>,
);

/// A result without its sha256 yet ([`Content::Lone`]), and where its bytes can be read again.
struct Unhashed {
    id: usize,
    again: PathBuf,
    len: usize,
}

/// A file found, once read.
enum Classified {
    Problem(FileNote),
    Skipped(FileNote),
    Result {
        path: String,
        /// Reached through a symbolic link.
        linked: bool,
        /// Kept until the result is folded in: its sha256 may be wanted then.
        bytes: Vec<u8>,
        /// Where the bytes can be read again; `None` (in an archive) is hashed at once.
        again: Option<PathBuf>,
        sha: Option<Sha>,
        result: Box<ResultFile>,
    },
}

/// What a result takes in memory, estimated, with and without its passed checks; the first
/// result of a host adds [`PER_HOST`]. [`LEAN_AT`] and [`REFUSE_AT`] are held to their sums.
pub(crate) fn estimate(result: &ResultFile) -> (usize, usize) {
    (
        result.size().saturating_add(PER_RESULT),
        result.size_without_passes().saturating_add(PER_RESULT),
    )
}

/// Why a result's file name and content disagree, when they do. The bundles name a result
/// `<host>.<phase>.json` (`<host>.<phase>.dry-run.json` for a dry run, and with `roce-gen.` in
/// front where a host falls back to its temporary folder); a name of another form (`--out`, a
/// name of the user's) claims nothing.
pub(crate) fn misnamed(origin: &str, result: &ResultFile) -> Option<String> {
    let name = file_name(origin);
    let stem = name
        .strip_suffix(".json")
        .or_else(|| name.strip_suffix(".JSON"))?;
    let (stem, dry_run) = match stem.strip_suffix(".dry-run") {
        Some(stem) => (stem, true),
        None => (stem, false),
    };
    let (host, phase) = stem.rsplit_once('.')?;
    let phase = [
        Phase::Precheck,
        Phase::Apply,
        Phase::Rollback,
        Phase::Fabric,
    ]
    .into_iter()
    .find(|p| p.as_str() == phase)?;
    let same_host = host == result.host || host.strip_prefix("roce-gen.") == Some(&result.host);
    if same_host && (phase, dry_run) == (result.phase, result.dry_run) {
        return None;
    }
    let named = run_kind_name((phase, dry_run));
    let held = run_kind_name((result.phase, result.dry_run));
    let dry = if result.dry_run { ".dry-run" } else { "" };
    let expected = format!("{}.{}{dry}.json", result.host, result.phase.as_str());
    Some(format!(
        "its name says {host}'s {named} result, but it holds {}'s {held} result: used for \
         neither host (results are not authenticated, so a renamed or misplaced file could stand \
         in for another host's run); if it is genuine, name it {expected}",
        result.host
    ))
}

/// Why a result cannot have happened yet, when it cannot: it finished (or started) more than
/// [`CLOCK_SKEW`] after ingest's clock `now`. Kept, it would win over every later run of its
/// host.
pub(crate) fn from_the_future(result: &ResultFile, now: jiff::Timestamp) -> Option<String> {
    let latest = now.checked_add(CLOCK_SKEW).unwrap_or(jiff::Timestamp::MAX);
    let (field, at) = if result.finished_at > latest {
        ("finished", result.finished_at)
    } else {
        ("started", result.started_at.filter(|&at| at > latest)?)
    };
    Some(format!(
        "{}'s {} result {field} at {at}, more than {} minutes after ingest's clock: not used, \
         as it would win over every later run (fix the host's clock and run it again)",
        result.host,
        run_kind_name((result.phase, result.dry_run)),
        CLOCK_SKEW.as_mins()
    ))
}

fn classify(found: Found, now: jiff::Timestamp) -> Classified {
    let note = |path: String, reason: &str| FileNote::new(path, capped(reason));
    match found {
        Found::Unreadable { origin, reason } => Classified::Problem(note(origin, &reason)),
        Found::Ignored { origin, reason } => Classified::Skipped(note(origin, &reason)),
        Found::File {
            origin,
            bytes,
            again,
            linked,
        } => match result::parse(&bytes) {
            Parsed::Corrupt(reason) => Classified::Problem(note(origin, &reason)),
            Parsed::NotAResult(what) => {
                Classified::Skipped(note(origin, &format!("not a result ({what})")))
            }
            Parsed::Result(result) => {
                if let Some(why) =
                    misnamed(&origin, &result).or_else(|| from_the_future(&result, now))
                {
                    return Classified::Problem(note(origin, &why));
                }
                Classified::Result {
                    path: origin,
                    linked,
                    sha: again.is_none().then(|| digest(&bytes)),
                    bytes,
                    again,
                    result,
                }
            }
        },
    }
}

/// The display name of a run kind.
pub(crate) fn run_kind_name((phase, dry_run): RunKey) -> String {
    if dry_run {
        format!("{} (dry run)", phase.as_str())
    } else {
        phase.as_str().to_string()
    }
}

/// The intake while files arrive: [`Taking::add`] from any thread, then [`Taking::finish`].
pub(crate) struct Taking<'p> {
    plan: Option<&'p PlanView>,
    /// Ingest's clock: a result that finished after it (see [`from_the_future`]) is a problem.
    now: jiff::Timestamp,
    budgets: Budgets,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    problems: Vec<FileNote>,
    skipped: Vec<FileNote>,
    /// Every path each content was found at, each with whether a symbolic link led to it.
    paths: BTreeMap<Content, Vec<(bool, String)>>,
    /// Per key, the results read that have no sha256 yet: emptied once a second one comes, and
    /// every later one is hashed as it comes.
    ties: HashMap<TieKey, Vec<Unhashed>>,
    /// The next [`Content::Lone`].
    lone: usize,
    by_host: BTreeMap<String, Pools>,
    results: usize,
    /// What every result read takes in memory, estimated, and without its passed checks: sums
    /// over all of them, kept or not, so that what they decide does not depend on the order
    /// files arrive in.
    size: usize,
    size_without_passes: usize,
    /// Past [`Budgets::lean_at`]: only the checks that did not pass are kept.
    lean: bool,
    /// Past [`Budgets::refuse_at`]: the file that crossed it, and the error.
    refused: Option<String>,
}

/// A host's kept results, by plan identity and run kind.
#[derive(Default)]
struct Pools {
    current: BTreeMap<RunKey, Kept>,
    stale: BTreeMap<RunKey, Kept>,
}

/// The newest result of a run kind so far, and the contents it won over.
struct Kept {
    content: Content,
    result: Box<ResultFile>,
    older: Vec<Content>,
}

impl Kept {
    /// Newest first is the largest key: finish time, start time, then the content, a fixed
    /// order whatever the files arrive in (a path is not one: a copy found later can have a
    /// smaller one).
    fn age_key(&self) -> (jiff::Timestamp, Option<jiff::Timestamp>, &Content) {
        (
            self.result.finished_at,
            self.result.started_at,
            &self.content,
        )
    }
}

impl<'p> Taking<'p> {
    /// With a plan, results are sorted into those made from it and stale; `now` is ingest's
    /// clock.
    pub(crate) fn new(plan: Option<&'p PlanView>, now: jiff::Timestamp) -> Self {
        Self::with_budgets(plan, now, Budgets::DEFAULT)
    }

    /// With other budgets than [`Budgets::DEFAULT`] (tests).
    pub(crate) fn with_budgets(
        plan: Option<&'p PlanView>,
        now: jiff::Timestamp,
        budgets: Budgets,
    ) -> Self {
        Taking {
            plan,
            now,
            budgets,
            state: Mutex::default(),
        }
    }

    /// Reads one file found and folds it in; its bytes are dropped on return. Parsing, the
    /// work, is done before the lock is taken; so is hashing a result from an archive.
    pub(crate) fn add(&self, found: Found) {
        if lock(&self.state).refused.is_some() {
            return;
        }
        let mut classified = classify(found, self.now);
        let (mut size, mut size_without_passes) = match &classified {
            Classified::Result { result, .. } => estimate(result),
            _ => (0, 0),
        };
        let mut state = lock(&self.state);
        let state = &mut *state;
        if let Classified::Result { result, .. } = &classified
            && !state.by_host.contains_key(&result.host)
        {
            size = size.saturating_add(PER_HOST);
            size_without_passes = size_without_passes.saturating_add(PER_HOST);
        }
        state.size = state.size.saturating_add(size);
        state.size_without_passes = state
            .size_without_passes
            .saturating_add(size_without_passes);
        if state.size_without_passes > self.budgets.refuse_at {
            if let Classified::Result { path, .. } = &classified {
                state.refused.get_or_insert_with(|| {
                    format!(
                        "{path}: the results read take more than ingest's limit of {} MiB in \
                         memory, even without their passing checks; ingest fewer at a time",
                        self.budgets.refuse_at >> 20
                    )
                });
            }
            return;
        }
        if state.size > self.budgets.lean_at && !state.lean {
            state.lean = true;
            for pools in state.by_host.values_mut() {
                for kept in pools.current.values_mut().chain(pools.stale.values_mut()) {
                    kept.result.drop_passes();
                }
            }
        }
        if let (true, Classified::Result { result, .. }) = (state.lean, &mut classified) {
            result.drop_passes();
        }
        match classified {
            Classified::Problem(note) => state.problems.push(note),
            Classified::Skipped(note) => state.skipped.push(note),
            Classified::Result {
                path,
                linked,
                bytes,
                again,
                sha,
                result,
            } => {
                state.results += 1;
                let current = self.plan.is_none_or(|p| p.made_from(&result.plan_sha256));
                let content = state.content_of(&result, current, sha, &bytes, again);
                if let Some(paths) = state.paths.get_mut(&content) {
                    paths.push((linked, path));
                    return;
                }
                state.paths.insert(content, vec![(linked, path)]);
                let host = state.by_host.entry(result.host.clone()).or_default();
                let pool = if current {
                    &mut host.current
                } else {
                    &mut host.stale
                };
                keep_newest(
                    pool,
                    Kept {
                        content,
                        result,
                        older: Vec::new(),
                    },
                );
            }
        }
    }

    /// Names every file now that all are in: the originals and their copies, the kept results
    /// and those they superseded. `Err` when the results were refused (see [`REFUSE_AT`]).
    pub(crate) fn finish(self) -> Result<Intake> {
        let State {
            problems,
            skipped,
            mut paths,
            mut by_host,
            results,
            lean,
            refused,
            ..
        } = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(refused) = refused {
            bail!(refused);
        }
        if lean {
            // Every kept result says so, as one that was cut does: the report groups them.
            let note = lean_note(self.budgets.lean_at);
            for pools in by_host.values_mut() {
                for kept in pools.current.values_mut().chain(pools.stale.values_mut()) {
                    kept.result.checks.push(note.clone());
                }
            }
        }
        let mut superseded = Vec::new();
        for found_at in paths.values_mut() {
            // The file itself before any link to it, then the smallest path.
            found_at.sort_unstable();
            let (original, copies) = found_at.split_at(1);
            for (_, copy) in copies {
                superseded.push(FileNote::new(
                    copy.clone(),
                    format!("a copy of {}", original[0].1),
                ));
            }
        }
        let path_of = |c: &Content| paths.get(c).map(|p| p[0].1.clone()).unwrap_or_default();
        let items = |pool: BTreeMap<RunKey, Kept>, superseded: &mut Vec<FileNote>| {
            pool.into_iter()
                .map(|(key, kept)| {
                    let path = path_of(&kept.content);
                    for older in &kept.older {
                        superseded.push(FileNote {
                            path: path_of(older),
                            reason: format!(
                                "older {} result of {} than {path}",
                                run_kind_name(key),
                                kept.result.host
                            ),
                            superseded_by: Some(path.clone()),
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
        Ok(intake)
    }
}

impl State {
    /// What tells this result's content apart: a number of its own while it is the only
    /// result of its [`TieKey`] that can be read again, its sha256 otherwise. The second result
    /// of a key has every earlier one of the key hashed, from its file read again (under the
    /// intake's lock: rare, it takes copies or two runs finished in the same second).
    fn content_of(
        &mut self,
        result: &ResultFile,
        current: bool,
        sha: Option<Sha>,
        bytes: &[u8],
        again: Option<PathBuf>,
    ) -> Content {
        let key: TieKey = (
            result.host.clone(),
            current,
            (result.phase, result.dry_run),
            result.finished_at,
            result.started_at,
        );
        if let Some(unhashed) = self.ties.get_mut(&key) {
            for u in std::mem::take(unhashed) {
                self.hash_again(&key, &u);
            }
            return Content::Sha(sha.unwrap_or_else(|| digest(bytes)));
        }
        let (content, unhashed) = match (sha, again) {
            (Some(sha), _) => (Content::Sha(sha), Vec::new()),
            (None, Some(again)) => {
                let id = self.lone;
                self.lone += 1;
                let len = bytes.len();
                (Content::Lone(id), vec![Unhashed { id, again, len }])
            }
            (None, None) => (Content::Sha(digest(bytes)), Vec::new()),
        };
        self.ties.insert(key, unhashed);
        content
    }

    /// Gives a result read before its sha256, wherever its number stood. A file that cannot
    /// be read again, or was rewritten since (its size changed), keeps its number: a content
    /// of its own.
    fn hash_again(&mut self, (host, current, run, ..): &TieKey, u: &Unhashed) {
        let bytes = match collect::read_again(&u.again) {
            Ok(bytes) if bytes.len() == u.len => bytes,
            _ => return,
        };
        let (old, new) = (Content::Lone(u.id), Content::Sha(digest(&bytes)));
        if self.paths.contains_key(&new) {
            // Rewritten into a copy of another since it was read: it stays what it was read as.
            return;
        }
        if let Some(paths) = self.paths.remove(&old) {
            self.paths.insert(new, paths);
        }
        let Some(pools) = self.by_host.get_mut(host) else {
            return;
        };
        let pool = if *current {
            &mut pools.current
        } else {
            &mut pools.stale
        };
        if let Some(kept) = pool.get_mut(run) {
            for content in std::iter::once(&mut kept.content).chain(&mut kept.older) {
                if *content == old {
                    *content = new;
                }
            }
        }
    }
}

fn digest(bytes: &[u8]) -> Sha {
    Sha256::digest(bytes).into()
}

/// The warning every result gets past the retention budget.
fn lean_note(lean_at: usize) -> Check {
    Check::new(CheckData {
        id: LIMIT_CHECK.into(),
        nic: None,
        kind: None,
        status: Status::Warn,
        severity: "warning".into(),
        expected: "results that fit in memory with their passing checks".into(),
        actual: format!(
            "the results read take more than {} MiB in memory",
            lean_at >> 20
        )
        .into(),
        message: "the results read are too many to keep every check: checks that passed are \
                  counted, not listed, and settings are not compared across hosts"
            .into(),
    })
}

/// A lock that a panicked holder does not make unusable (nothing it guards is left half made).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps the newer of `kept` and the result of its kind already kept; the other is superseded.
fn keep_newest(pool: &mut BTreeMap<RunKey, Kept>, kept: Kept) {
    let key = (kept.result.phase, kept.result.dry_run);
    let Some(old) = pool.remove(&key) else {
        pool.insert(key, kept);
        return;
    };
    let (mut new, mut old) = if kept.age_key() > old.age_key() {
        (kept, old)
    } else {
        (old, kept)
    };
    // The shorter list goes into the longer one: moving the long one each time a newer result
    // arrives made a host's ingest quadratic in its results (100,000 took 9-19 s). The order
    // does not matter: the superseded notes are sorted.
    let mut older = std::mem::take(&mut old.older);
    let mut mine = std::mem::take(&mut new.older);
    if older.len() < mine.len() {
        std::mem::swap(&mut older, &mut mine);
    }
    older.append(&mut mine);
    older.push(old.content);
    new.older = older;
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

    /// The tests' ingest clock: after every result they make.
    fn clock() -> jiff::Timestamp {
        "2026-12-01T00:00:00Z".parse().unwrap()
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

    /// The summary of an intake fed `files` in `order`; `again` gives a file's path to read it
    /// again by (a file found on disk) or `None` (hashed at once).
    fn take_in(
        files: &[(&str, &Vec<u8>)],
        order: &[usize],
        again: &dyn Fn(&str) -> Option<PathBuf>,
    ) -> Vec<String> {
        let taking = Taking::new(None, clock());
        for &i in order {
            let (path, bytes) = files[i];
            taking.add(Found::File {
                origin: path.into(),
                bytes: bytes.clone(),
                again: again(path),
                linked: false,
            });
        }
        summary(&taking.finish().unwrap())
    }

    /// A newer and an older apply result of `a`, and two results of `b` that finished at the
    /// same second (the content decides between them, not the path).
    fn newer_older_and_tied() -> [Vec<u8>; 4] {
        [
            result("a", "2026-11-30T09:00:00Z", "pass"),
            result("a", "2026-11-30T08:00:00Z", "fail"),
            result("b", "2026-11-30T08:00:00Z", "pass"),
            result("b", "2026-11-30T08:00:00Z", "warn"),
        ]
    }

    /// A result of `host` with a passed and a failed check.
    fn with_checks(host: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": "roce-gen/result/v1", "host": host, "phase": "apply", "status": "fail",
            "finished_at": "2026-11-30T08:00:00Z",
            "checks": [{"id": "mtu", "nic": "mlx5_0", "status": "pass", "actual": "4200"},
                       {"id": "pfc", "nic": "mlx5_0", "status": "fail", "actual": "none"}],
        }))
        .unwrap()
    }

    fn take(budgets: Budgets, files: &[(&str, Vec<u8>)]) -> Result<Intake> {
        let taking = Taking::with_budgets(None, clock(), budgets);
        for (path, bytes) in files {
            taking.add(Found::File {
                origin: (*path).into(),
                bytes: bytes.clone(),
                again: None,
                linked: false,
            });
        }
        taking.finish()
    }

    /// Results of one host arriving newest last, newest first or mixed: the newest is kept and
    /// every other one is listed as superseded by it, whichever list took in which.
    #[test]
    fn every_older_result_of_a_host_is_superseded_whatever_the_order() {
        let results: Vec<Vec<u8>> = (0..6)
            .map(|i| result("a", &format!("2026-11-30T0{i}:00:00Z"), "pass"))
            .collect();
        let files: Vec<(String, &Vec<u8>)> = results
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("r{i}.json"), r))
            .collect();
        let files: Vec<(&str, &Vec<u8>)> = files.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        let want: Vec<String> = (0..5)
            .map(|i| format!("superseded r{i}.json: older apply result of a than r5.json"))
            .chain(["kept a apply: r5.json".to_string(), "6 results".to_string()])
            .collect();
        for order in [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 5, 1, 4, 3]] {
            assert_eq!(take_in(&files, &order, &|_| None), want, "{order:?}");
        }
    }

    #[test]
    fn past_the_retention_budget_passed_checks_are_counted_whatever_the_order() {
        let files = [("a.json", with_checks("a")), ("b.json", with_checks("b"))];
        // Each result is the first of its host.
        let one = match result::parse(&files[0].1) {
            Parsed::Result(r) => estimate(&r).0 + PER_HOST,
            other => panic!("{other:?}"),
        };
        // Room for one result with its passed checks, not for two.
        let budgets = Budgets {
            lean_at: one + one / 2,
            refuse_at: usize::MAX,
        };
        let ids = |intake: &Intake| -> Vec<String> {
            intake
                .by_host
                .values()
                .flat_map(|h| h.current.values())
                .map(|i| {
                    let ids: Vec<&str> = i.result.checks.iter().map(|c| c.id.as_str()).collect();
                    format!("{} {} +{}", i.path, ids.join(","), i.result.passes_not_kept)
                })
                .collect()
        };
        let forward = take(budgets, &files).unwrap();
        let reversed = take(budgets, &[files[1].clone(), files[0].clone()]).unwrap();
        assert_eq!(
            ids(&forward),
            ["a.json pfc,ingest_limit +1", "b.json pfc,ingest_limit +1"]
        );
        assert_eq!(ids(&reversed), ids(&forward));
        // Below the budget, every check is kept and there is no note.
        let roomy = take(Budgets::DEFAULT, &files).unwrap();
        assert_eq!(ids(&roomy), ["a.json mtu,pfc +0", "b.json mtu,pfc +0"]);
    }

    /// A result of `host` as small as a bundle writes one: a precheck of one passed check
    /// (716 bytes, as `benches/README.md` measures them).
    fn tiny(host: &str, finished: &str) -> Vec<u8> {
        serde_json::to_vec_pretty(&serde_json::json!({
            "schema": "roce-gen/result/v1", "tool_version": "0.1.0", "cluster": "lab",
            "host": host, "phase": "precheck", "plan_sha256": "0".repeat(64),
            "bundle_sha256": "1".repeat(64), "status": "pass",
            "started_at": "2026-11-30T08:00:00Z", "finished_at": finished,
            "observed_hostname": host,
            "checks": [{"id": "hostname", "status": "pass", "severity": "error",
                "expected": host, "actual": host, "message": format!("host name is {host}")}],
            "facts": {"kernel": "6.8.0-45-generic", "ofed": "MLNX_OFED_LINUX-24.10-1.1.4.0"},
        }))
        .unwrap()
    }

    #[test]
    fn the_estimate_covers_what_tiny_results_were_measured_to_take() {
        // Measured with a release build (benches/README.md): a tiny result of a host of its own
        // takes 11,100 bytes to the end of the JSON report (6,243 of the text one), one more of
        // a host it supersedes or is superseded by 807.
        let Parsed::Result(r) = result::parse(&tiny("node-0000001", "2026-11-30T08:00:00Z")) else {
            panic!("not a result");
        };
        let (size, without_passes) = estimate(&r);
        // Counted without its passed check, as the limit counts it.
        assert!(
            without_passes + PER_HOST >= 11_100,
            "{without_passes} + {PER_HOST}"
        );
        assert!(size >= 807, "{size}");
        // Even without their passed checks, 400,000 of them, each of its own host, are past
        // the limit: refused rather than taking 2.5 GB.
        assert!(400_000 * (without_passes + PER_HOST) > REFUSE_AT);
    }

    #[test]
    fn the_limit_counts_a_cost_per_result_and_per_host() {
        let files: Vec<(String, Vec<u8>)> = (0..3)
            .map(|i| {
                (
                    format!("node-{i}.precheck.json"),
                    tiny(&format!("node-{i}"), "2026-11-30T08:00:00Z"),
                )
            })
            .collect();
        let Parsed::Result(r) = result::parse(&files[0].1) else {
            panic!("not a result");
        };
        let (_, one) = estimate(&r);
        // Room for three results of one host, not for three hosts: the bytes the results
        // read hold (about 700 each) are far below either.
        let budgets = Budgets {
            lean_at: usize::MAX,
            refuse_at: 3 * one + PER_HOST,
        };
        let files: Vec<(&str, Vec<u8>)> =
            files.iter().map(|(p, b)| (p.as_str(), b.clone())).collect();
        let why = take(budgets, &files).err().unwrap().to_string();
        assert!(why.starts_with("node-"), "{why}");
        let one_host: Vec<(&str, Vec<u8>)> = ["08:00:00", "08:00:01", "08:00:02"]
            .iter()
            .map(|t| ("r.json", tiny("node-0", &format!("2026-11-30T{t}Z"))))
            .collect();
        let intake = take(budgets, &one_host).unwrap();
        assert_eq!(intake.results, 3);
        assert_eq!(intake.superseded.len(), 2);
    }

    #[test]
    fn past_the_memory_limit_ingest_stops_naming_the_limit_and_the_file() {
        let files = [("a.json", with_checks("a")), ("b.json", with_checks("b"))];
        let budgets = Budgets {
            lean_at: 0,
            refuse_at: 1 << 10,
        };
        let why = take(budgets, &files).err().unwrap().to_string();
        assert!(why.starts_with("a.json: "), "{why}");
        assert!(why.contains("ingest's limit of 0 MiB"), "{why}");
    }

    #[test]
    fn results_read_again_to_be_hashed_are_told_apart_as_results_hashed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let [new, old, tie_1, tie_2] = newer_older_and_tied();
        let files = [
            ("z/a.json", &new),
            ("m/a.json", &new),
            ("y/old.json", &old),
            ("q/b1.json", &tie_1),
            ("c/b2.json", &tie_2),
            ("r/b2.json", &tie_2),
            ("s/lone.json", &tie_1),
        ];
        for (path, bytes) in &files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let hashed_at_once = take_in(&files, &[0, 1, 2, 3, 4, 5, 6], &|_| None);
        for order in [
            [0, 1, 2, 3, 4, 5, 6],
            [6, 5, 4, 3, 2, 1, 0],
            [3, 2, 6, 0, 5, 1, 4],
        ] {
            let read_again = |path: &str| Some(dir.path().join(path));
            assert_eq!(
                take_in(&files, &order, &read_again),
                hashed_at_once,
                "order {order:?}"
            );
        }
        assert!(hashed_at_once.contains(&"superseded z/a.json: a copy of m/a.json".to_string()));
        assert!(
            hashed_at_once.contains(&"superseded s/lone.json: a copy of q/b1.json".to_string())
        );
        assert!(hashed_at_once.contains(&"superseded r/b2.json: a copy of c/b2.json".to_string()));

        // A file rewritten after it was read (another size) keeps a content of its own: what
        // was read of it is not taken for a copy.
        let taking = Taking::new(None, clock());
        let lone = dir.path().join("s/lone.json");
        taking.add(Found::File {
            origin: "s/lone.json".into(),
            bytes: tie_1.clone(),
            again: Some(lone.clone()),
            linked: false,
        });
        std::fs::write(&lone, b"{}").unwrap();
        taking.add(Found::File {
            origin: "q/b1.json".into(),
            bytes: tie_1.clone(),
            again: None,
            linked: false,
        });
        let lines = summary(&taking.finish().unwrap());
        assert!(!lines.iter().any(|l| l.contains("a copy of")), "{lines:#?}");
        assert!(lines.contains(&"2 results".to_string()), "{lines:#?}");
    }

    #[test]
    fn the_intake_does_not_depend_on_the_order_files_arrive_in() {
        let [new, old, tie_1, tie_2] = newer_older_and_tied();
        let files = [
            ("z/a.json", &new),
            ("m/a.json", &new),
            ("y/old.json", &old),
            ("b/old.json", &old),
            ("q/b1.json", &tie_1),
            ("c/b2.json", &tie_2),
        ];
        let first = take_in(&files, &[0, 1, 2, 3, 4, 5], &|_| None);
        for order in [[5, 4, 3, 2, 1, 0], [2, 0, 5, 3, 1, 4], [3, 1, 4, 0, 5, 2]] {
            assert_eq!(take_in(&files, &order, &|_| None), first, "order {order:?}");
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
