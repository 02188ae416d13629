//! The output folder under faults: `generate` replacing an earlier output is killed (SIGKILL)
//! at many instants, and after each the folder verifies and is exactly the old or the new
//! output, with the files that are not roce-gen's kept; SIGINT, SIGTERM and SIGHUP remove the
//! staging folder; the next run sweeps what a killed one left; symbolic links as the output.
//! The same on a file system that cannot exchange two folders (a FUSE passthrough, like vfat
//! and NFS), where the swap is two renames.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Book, C, prerequisite, python_has, roce_gen, tmp};

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// What a killed or interrupted run may have left beside the output.
fn debris(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".roce-gen-"))
        .collect()
}

/// Files a user keeps in the output folder: collected results and a note.
const FOREIGN: [(&str, &str); 2] = [
    ("results/h1.apply.json", "{\"collected\": true}\n"),
    ("NOTES.txt", "stick 3 of 4\n"),
];

/// Two plans of `n` hosts that differ in the MTU, generated into `a/` and `b/` as references,
/// and `out/` holding plan A's output and the user's files.
struct Scene {
    dir: tempfile::TempDir,
    old: BTreeMap<String, Vec<u8>>,
    new: BTreeMap<String, Vec<u8>>,
}

impl Scene {
    fn new(base: &Path, n: usize) -> Self {
        let dir = tempfile::tempdir_in(base).unwrap();
        let mut book = Book::hosts(n);
        book.write(dir.path(), "a.xlsx");
        book.key("mtu", C::N(9000.0));
        book.write(dir.path(), "b.xlsx");
        for (plan, out) in [("a.xlsx", "a"), ("b.xlsx", "b"), ("a.xlsx", "out")] {
            let run = roce_gen(dir.path(), &["generate", plan, "-o", out]);
            assert_eq!(run.code, 0, "{}", run.transcript());
        }
        for (name, text) in FOREIGN {
            let path = dir.path().join("out").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Scene {
            old: files(&dir.path().join("a")),
            new: files(&dir.path().join("b")),
            dir,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `generate b.xlsx -o out`, started.
    fn spawn(&self) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_roce-gen"))
            .args(["generate", "b.xlsx", "-o", "out"])
            .current_dir(self.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// The output folder is exactly A's or B's output plus the user's files, and verifies.
    /// Returns which.
    fn check(&self, when: &str) -> &'static str {
        let out = self.path().join("out");
        let waiting = self.path().join(".roce-gen-previous-out");
        if !out.exists() && waiting.exists() {
            // Killed between the two renames of a swap without exchange: the old output waits
            // beside, and the next run puts it back before anything else.
            let run = roce_gen(self.path(), &["generate", "a.xlsx", "-o", "out"]);
            assert_eq!(run.code, 0, "{when}: {}", run.transcript());
            return "old, put back by the next run";
        }
        let mut found = files(&out);
        for (name, text) in FOREIGN {
            assert_eq!(
                found.remove(name).as_deref(),
                Some(text.as_bytes()),
                "{when}: the user's {name} is gone or changed"
            );
        }
        let which = if found == self.old {
            "old"
        } else if found == self.new {
            "new"
        } else {
            let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
            panic!(
                "{when}: the output is neither the old nor the new one: {} files, {} of them as in the new output",
                found.len(),
                names(&found)
                    .iter()
                    .filter(|n| self.new.get(*n) == found.get(*n))
                    .count()
            );
        };
        let verify = roce_gen(self.path(), &["verify", "out"]);
        assert_eq!(verify.code, 0, "{when}: {}", verify.transcript());
        which
    }
}

/// Kills `generate` at `points` instants spread from a fifth of a run's duration to a little
/// past its end (measured on the run before, so a busy machine shifts them along), checking the
/// output after each; then lets a run finish and checks that nothing is left beside it.
fn kill_at_many_instants(scene: &Scene, points: u32) {
    let mut child = scene.spawn();
    assert!(child.wait().unwrap().success());
    assert_eq!(scene.check("after a full run"), "new");
    let back = || {
        let started = Instant::now();
        let run = roce_gen(scene.path(), &["generate", "a.xlsx", "-o", "out"]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        started.elapsed()
    };
    let mut full = back();
    let mut seen = BTreeMap::new();
    for i in 0..points {
        let at = full.mul_f64(0.2 + f64::from(i) / f64::from(points - 1));
        let mut child = scene.spawn();
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let which = scene.check(&format!("killed after {at:?}"));
        *seen.entry(which).or_insert(0) += 1;
        if which == "new" {
            full = back();
        }
    }
    eprintln!("kills: {seen:?} (a run takes about {full:?})");
    assert!(seen.contains_key("old"), "no kill landed before the swap");
    let run = roce_gen(scene.path(), &["generate", "b.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(scene.check("after the last run"), "new");
    assert_eq!(debris(scene.path()), Vec::<String>::new());
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_kill_at_any_instant_leaves_the_old_or_the_new_output() {
    let base = tmp();
    let scene = Scene::new(base.path(), 40);
    kill_at_many_instants(&scene, 10);
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn each_signal_removes_the_staging_folder() {
    let base = tmp();
    let scene = Scene::new(base.path(), 60);
    for (signal, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        // The signal is sent as soon as the staging folder appears; on a busy machine the run
        // may still finish first (exit 0) or be in its swap (then the handler waits for it and
        // the output is the new one). Either way the folder is old or new and nothing is left;
        // a few tries make sure the handler itself was exercised.
        let mut caught = 0;
        for attempt in 0..5 {
            let mut child = scene.spawn();
            let deadline = Instant::now() + Duration::from_secs(300);
            while debris(scene.path()).is_empty() {
                assert!(Instant::now() < deadline, "no staging folder appeared");
                std::thread::sleep(Duration::from_millis(2));
            }
            let status = Command::new("kill")
                .args(["-s", signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            let exit = child.wait().unwrap();
            assert!(
                exit.code() == Some(code) || exit.success(),
                "SIG{signal}: {exit:?}"
            );
            let when = format!("after SIG{signal}, try {attempt}");
            assert_eq!(debris(scene.path()), Vec::<String>::new(), "{when}");
            if scene.check(&when) == "new" {
                let back = roce_gen(scene.path(), &["generate", "a.xlsx", "-o", "out"]);
                assert_eq!(back.code, 0, "{}", back.transcript());
            }
            if exit.code() == Some(code) {
                caught += 1;
                break;
            }
        }
        assert_eq!(caught, 1, "SIG{signal} never reached a run in progress");
    }
}

#[test]
fn the_next_run_sweeps_what_a_killed_run_left_and_puts_a_waiting_output_back() {
    let base = tmp();
    let scene = Scene::new(base.path(), 3);
    let p = scene.path();
    // A staging folder of a killed run, for this output and for another one.
    for name in [".roce-gen-staging-out-x1Yz", ".roce-gen-staging-other-AbC"] {
        std::fs::create_dir_all(p.join(name).join("sub")).unwrap();
        std::fs::write(p.join(name).join("sub/h1.tar.gz"), b"partial").unwrap();
    }
    // A run killed between the two renames of a swap without exchange: the output waits
    // under its temporary name and the folder itself is gone.
    std::fs::rename(p.join("out"), p.join(".roce-gen-previous-out")).unwrap();
    let run = roce_gen(p, &["generate", "b.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(debris(p), Vec::<String>::new());
    // The waiting output came back first, so the user's files in it survived the new run.
    assert_eq!(scene.check("after the sweep"), "new");
}

#[test]
fn a_symbolic_link_as_the_output_is_followed_and_a_dangling_one_refused() {
    let base = tmp();
    let scene = Scene::new(base.path(), 3);
    let p = scene.path();
    std::os::unix::fs::symlink("out", p.join("link")).unwrap();
    let run = roce_gen(p, &["generate", "b.xlsx", "-o", "link"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        std::fs::symlink_metadata(p.join("link"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert_eq!(scene.check("through the link"), "new");

    std::os::unix::fs::symlink("nowhere", p.join("dangling")).unwrap();
    let run = roce_gen(p, &["generate", "b.xlsx", "-o", "dangling"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("dangling: is a symbolic link to nowhere, which does not exist"),
        "{}",
        run.stderr
    );
    assert_eq!(debris(p), Vec::<String>::new());
    assert!(!p.join("nowhere").exists());
}

/// A FUSE passthrough mounted over `dir/sys` (the simulated hosts' driverfs, which passes
/// every path it does not model straight through): Linux answers RENAME_EXCHANGE on it with
/// EINVAL, as on vfat and NFS. Unmounted on drop.
struct Passthrough {
    mount: PathBuf,
    daemon: std::process::Child,
}

impl Passthrough {
    fn new(dir: &Path) -> Option<Self> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/host/driverfs/driverfs.py");
        prerequisite(
            Path::new("/dev/fuse").exists() && python_has("fusepy"),
            "FUSE or python3-fusepy is missing",
            "the swap without exchange",
        )?;
        let mount = dir.join("sys");
        std::fs::create_dir_all(&mount).unwrap();
        let daemon = Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(dir)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        let needle = format!(" {} fuse.driverfs ", mount.display());
        while !std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&needle)
        {
            assert!(Instant::now() < deadline, "the passthrough did not mount");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Passthrough { mount, daemon })
    }
}

impl Drop for Passthrough {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-s", "TERM", &self.daemon.id().to_string()])
            .status();
        let _ = self.daemon.wait();
        let _ = Command::new("umount")
            .arg(&self.mount)
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_folder_exchange_the_swap_is_two_renames_and_still_old_or_new() {
    let base = tmp();
    let Some(fs) = Passthrough::new(base.path()) else {
        return;
    };
    let scene = Scene::new(&fs.mount, 20);
    kill_at_many_instants(&scene, 8);
    drop(scene);
    drop(fs);
}

/// Everything under `dir`, links and folders too (path → what it is or holds), and the
/// folder's own inode: a swap would give the path another one.
fn listing(dir: &Path) -> (u64, BTreeMap<String, String>) {
    use std::os::unix::fs::MetadataExt;
    let all = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap())
        .map(|e| {
            let what = if e.path_is_symlink() {
                format!("-> {}", std::fs::read_link(e.path()).unwrap().display())
            } else if e.file_type().is_dir() {
                "dir".into()
            } else {
                format!("{:?}", std::fs::read(e.path()).unwrap())
            };
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                what,
            )
        })
        .collect();
    (std::fs::metadata(dir).unwrap().ino(), all)
}

#[test]
fn the_working_folder_or_one_holding_it_is_refused_as_output() {
    let dir = tmp();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    Book::base().write(&work, "plan.xlsx");
    std::fs::write(work.join("NOTES.txt"), "mine\n").unwrap();
    std::os::unix::fs::symlink(".", work.join("here")).unwrap();
    let before = (listing(dir.path()), listing(&work));
    for (from, out, what) in [
        (&work, ".", "is the working folder;"),
        (&work, "./sub/..", "is the working folder;"),
        (&work, "here", "is the working folder;"),
        (&work, &work.display().to_string(), "is the working folder;"),
        (&work, "..", "holds the working folder ("),
        (&work.join("sub"), "..", "holds the working folder ("),
        (&work.join("sub"), "../here", "holds the working folder ("),
    ] {
        let plan = work.join("plan.xlsx").display().to_string();
        let run = roce_gen(from, &["generate", &plan, "-o", out]);
        assert_eq!(run.code, 2, "-o {out}: {}", run.transcript());
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.starts_with(&format!("error: -o {out}: {what}")),
            "-o {out}: {}",
            run.stderr
        );
        assert!(
            run.stderr.ends_with(
                "generate replaces its output folder as a whole, which would leave this shell \
                 in a removed folder; nothing was written: write to a subfolder instead, such \
                 as -o dist\n"
            ),
            "{}",
            run.stderr
        );
        assert_eq!((listing(dir.path()), listing(&work)), before, "-o {out}");
    }
    // A folder below the working folder is fine.
    let run = roce_gen(&work, &["generate", "plan.xlsx", "-o", "sub/dist"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(work.join("sub/dist/index.json").is_file());
}
