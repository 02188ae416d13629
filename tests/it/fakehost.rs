//! The simulated host the bundle scripts run on (`tests/host/fakehost.sh`: a fake sysfs/configfs
//! tree on driverfs and stand-ins for the vendor tools that print the real tools' formats and keep
//! state, run in private mount/UTS/net namespaces), and the bashes they run under.
//!
//! ```ignore
//! for_each_bash(|bash| {
//!     let h = FakeHost::ofed().plan_host("node-b").without("mlx5_1").bash(bash).build();
//!     let pre = h.run("precheck.sh", &[]);
//! });
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::tmp;

/// node-a of golden/lab-2node: mlx5_0/ens1f0np0 (PCI and MAC planned) and mlx5_1/ens2f0np0.
const NODE_A: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0a:00:00",
    "mlx5_1:ens2f0np0:0000:3c:00.0:b8:3f:d2:0a:01:00",
];
/// node-a on the simulated 8-GPU server (tests/host/fixtures/pci/hgx-8gpu.json): its two NICs at
/// the server's first two NIC functions, each below the PCIe switch of GPU 0 and GPU 1.
const GPU_NODE_A: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:19:00.0:b8:3f:d2:0a:00:00",
    "mlx5_1:ens2f0np0:0000:29:00.0:b8:3f:d2:0a:01:00",
];
/// node-b on another simulated 8-GPU server, for a cluster of two.
const GPU_NODE_B: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:19:00.0:b8:3f:d2:0b:00:00",
    "mlx5_1:ens2f0np0:0000:29:00.0:b8:3f:d2:0b:01:00",
];
/// node-b of golden/lab-2node, for runs that need two real hosts of the plan.
const NODE_B: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0b:00:00",
    "mlx5_1:ens2f0np0:0000:3c:00.0:b8:3f:d2:0b:01:00",
];

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bash binaries every scenario runs under: this machine's, and bullseye's 5.1 when built.
pub(crate) fn bashes() -> Vec<String> {
    let mut list = vec!["bash".to_string()];
    if let Some(b) = bullseye_bash() {
        list.push(b);
    }
    list
}

/// Runs `scenario` under every bash of [`bashes`]; a failure names the bash it failed under.
pub(crate) fn for_each_bash(mut scenario: impl FnMut(&str)) {
    for bash in bashes() {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenario(&bash)));
        if let Err(panic) = run {
            eprintln!("the scenario failed under {bash}");
            std::panic::resume_unwind(panic);
        }
    }
}

pub(crate) fn bullseye_root() -> PathBuf {
    std::env::var_os("ROCE_GEN_BULLSEYE").map_or_else(
        || PathBuf::from("/var/cache/roce-gen/bullseye"),
        PathBuf::from,
    )
}

/// Boots the real systemd of the bullseye root (PID 1 of a container under systemd-nspawn, 600 s
/// at most: a hang guard) inside `fakehost.sh run`, so that the container sees the simulated
/// host's sysfs through driverfs, with the kernel's write semantics: the fake root at `/fake`, each
/// `(from, to)` of `binds` bound there, and `systemd.wants=` each of `wants`. A unit of the test
/// ends the boot (`systemctl poweroff`) once it has written what the test reads. Asserts that the
/// root has systemd and that systemd-nspawn is installed.
pub(crate) fn boot_real_systemd(
    h: &FakeHost,
    binds: &[(&Path, &str)],
    wants: &[&str],
) -> std::process::Output {
    let rootfs = bullseye_root();
    assert!(
        rootfs.join("lib/systemd/systemd").is_file(),
        "no bullseye root with systemd: run `bash .ci/run`"
    );
    let nspawn = Command::new("sh")
        .args(["-c", "command -v systemd-nspawn"])
        .output()
        .unwrap();
    assert!(
        nspawn.status.success(),
        "systemd-nspawn is not installed: run `bash .ci/run`"
    );
    let bind = |from: &Path, to: &str| format!("--bind={}:{to}", from.display());
    Command::new("bash")
        .arg(repo().join("tests/host/fakehost.sh"))
        .arg("run")
        .arg(&h.root)
        .args(["--", "timeout", "600", "systemd-nspawn"])
        .args([
            "-q",
            "--register=no",
            "--keep-unit",
            "--volatile=overlay",
            "--private-network",
            "--hostname=node-a",
        ])
        .arg(format!("--directory={}", rootfs.display()))
        .arg(bind(&h.root, "/fake"))
        .args(binds.iter().map(|(from, to)| bind(from, to)))
        .args(["--boot", "--"])
        .args(wants.iter().map(|u| format!("systemd.wants={u}")))
        .output()
        .unwrap()
}

pub(crate) fn bullseye_bash() -> Option<String> {
    let bash = bullseye_root().join("bin/bash");
    bash.is_file().then(|| bash.display().to_string())
}

/// The console the scripts print to in tests, whatever the machine's: a UTF-8 locale and no
/// serial terminal, so the summaries keep their symbols (a plain console gets ASCII).
pub(crate) trait Utf8Console {
    fn utf8_console(&mut self) -> &mut Self;
}

impl Utf8Console for Command {
    fn utf8_console(&mut self) -> &mut Self {
        self.env("LANG", "C.UTF-8")
            .env_remove("LC_ALL")
            .env_remove("LC_CTYPE")
            .env_remove("TERM")
    }
}

/// A simulated host with its bundle unpacked beside it: `FakeHost::ofed()` or
/// `FakeHost::inbox()`, then the [`Builder`]'s choices.
pub(crate) struct FakeHost {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) bundle: PathBuf,
    pub(crate) bash: String,
}

/// What one script run did.
#[derive(Debug)]
pub(crate) struct ScriptRun {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) result: Value,
}

impl ScriptRun {
    /// The status of check `id` (of `nic`, or host-wide when `nic` is empty).
    pub(crate) fn status(&self, id: &str, nic: &str) -> String {
        let checks = self.result["checks"]
            .as_array()
            .unwrap_or_else(|| panic!("no checks: {self:#?}"));
        let found: Vec<&Value> = checks
            .iter()
            .filter(|c| c["id"] == id && c["nic"].as_str().unwrap_or("") == nic)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "check {id} {nic}: {found:?}\n{}",
            self.stdout
        );
        found[0]["status"].as_str().unwrap().to_string()
    }

    pub(crate) fn message(&self, id: &str, nic: &str) -> String {
        let checks = self.result["checks"].as_array().unwrap();
        let c = checks
            .iter()
            .find(|c| c["id"] == id && c["nic"].as_str().unwrap_or("") == nic)
            .unwrap();
        c["message"].as_str().unwrap().to_string()
    }

    /// Asserts that each of `ids` of `nic` has `status`, naming the check and its message if not.
    pub(crate) fn expect(&self, ids: &[&str], nic: &str, status: &str, ctx: &str) {
        for id in ids {
            assert_eq!(
                self.status(id, nic),
                status,
                "{ctx}: {id} {nic}: {}",
                self.message(id, nic)
            );
        }
    }

    pub(crate) fn count(&self, status: &str) -> u64 {
        self.result["counts"][status].as_u64().unwrap()
    }

    /// Every check's status, as `id:nic=status` lines, for whole-result assertions.
    pub(crate) fn statuses(&self) -> Vec<String> {
        self.result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}:{}={}",
                    c["id"].as_str().unwrap(),
                    c["nic"].as_str().unwrap_or(""),
                    c["status"].as_str().unwrap()
                )
            })
            .collect()
    }
}

impl FakeHost {
    /// A host with the OFED stack (mlnx_qos, cma_roce_mode, the `ecn/` tree), to be built.
    pub(crate) fn ofed<'a>() -> Builder<'a> {
        Builder::new("ofed")
    }

    /// A host of `kind` (`ofed` or `inbox`), for scenarios run on both.
    pub(crate) fn of<'a>(kind: &str) -> Builder<'a> {
        match kind {
            "ofed" => Builder::new("ofed"),
            "inbox" => Builder::new("inbox"),
            other => panic!("no host kind {other}"),
        }
    }

    /// A host with the inbox driver (dcb, configfs), to be built. Its plan has no minimum OFED
    /// version.
    pub(crate) fn inbox<'a>() -> Builder<'a> {
        Builder::new("inbox")
    }

    fn create(b: Builder<'_>) -> Self {
        let Builder {
            kind,
            plan_host,
            host,
            missing,
            bash,
            edits,
            plan_name,
            create_args,
            setup,
            gpu,
        } = b;
        let host = host.unwrap_or_else(|| plan_host.to_string());
        // The bundle's name: the plan's name for the host.
        let bundle_name = plan_name.clone().unwrap_or_else(|| plan_host.to_string());
        let dir = tmp();
        let root = dir.path().join("root");
        let mut cmd = fakehost_sh("create", &root);
        cmd.args(["--kind", kind, "--host", &host]);
        let (nics, last_octet) = match (plan_host, gpu.is_some()) {
            ("node-b", true) => (GPU_NODE_B, 11),
            ("node-b", false) => (NODE_B, 11),
            (_, true) => (GPU_NODE_A, 10),
            _ => (NODE_A, 10),
        };
        for nic in nics {
            cmd.args(["--nic", nic]);
        }
        for m in &missing {
            cmd.args(["--missing", m]);
        }
        cmd.args(&create_args);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "fakehost create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(opts) = &gpu {
            gpu_server(&root, opts);
        }
        // RDMA-CM as an older stack leaves it (RoCE v1, ToS 0), so that apply has it to change;
        // driverfs keeps the kernel's values here while no configfs folder exists.
        for dev in ["mlx5_0", "mlx5_1"] {
            let cma = root.join(".fake/cma").join(dev).join("1");
            if root.join("sys/class/infiniband").join(dev).is_dir() {
                std::fs::create_dir_all(&cma).unwrap();
                std::fs::write(cma.join("mode"), "IB/RoCE v1\n").unwrap();
            }
        }
        let bundles = dir.path().join("bundles");
        std::fs::create_dir(&bundles).unwrap();
        for (ifc, rail) in [("ens1f0np0", 0), ("ens2f0np0", 1)] {
            let addr = format!("10.10.{rail}.{last_octet}/24");
            if root.join("sys/class/net").join(ifc).is_dir() {
                // As configured on the host: the kernel adds the address's GIDs.
                add_addresses(&root, ifc, &[&addr]);
            }
        }
        // What happened to the host after it was set up (a netdev renamed, an altname added).
        for step in &setup {
            let out = fakehost_sh(&step[0], &root)
                .args(&step[1..])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "fakehost {step:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut plan_doc: Value = serde_json::from_str(
            &std::fs::read_to_string(repo().join("golden/lab-2node/plan.json")).unwrap(),
        )
        .unwrap();
        if kind == "inbox" {
            plan_doc["cluster"]
                .as_object_mut()
                .unwrap()
                .remove("min_ofed_version");
        }
        if let Some(name) = &plan_name {
            let planned = plan_doc["hosts"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|h| h["hostname"] == plan_host)
                .unwrap();
            planned["hostname"] = Value::String(name.clone());
        }
        if gpu.is_some() {
            // On both hosts each port serves the GPU below its own switch (PIX); NCCL 2.23.4
            // takes nvidia_peermem's path.
            for host in 0..2 {
                let nics = &mut plan_doc["hosts"][host]["nics"];
                nics[0]["pci"] = Value::String("0000:19:00.0".into());
                nics[0]["gpu"] = Value::String("0".into());
                nics[1]["gpu"] = Value::String("1".into());
            }
            plan_doc["cluster"]["nccl_version"] = Value::String("2.23.4".into());
        }
        for edit in edits {
            edit(&mut plan_doc);
        }
        let plan = dir.path().join("plan.json");
        std::fs::write(&plan, serde_json::to_string_pretty(&plan_doc).unwrap()).unwrap();
        let generated = crate::common::roce_gen(
            &bundles,
            &["generate", &plan.display().to_string(), "-o", "dist"],
        );
        assert_eq!(generated.code, 0, "{}", generated.transcript());
        let untar = Command::new("tar")
            .args(["-xzf", &format!("dist/{bundle_name}.tar.gz")])
            .current_dir(&bundles)
            .status()
            .unwrap();
        assert!(untar.success());
        FakeHost {
            root,
            bundle: bundles.join(&bundle_name),
            bash,
            _dir: dir,
        }
    }

    /// A folder for `roce-gen ingest results --plan plan.json`: each run's result as
    /// `results/NAME` (pretty JSON, as a fixture keeps it) and this host's plan as `plan.json`.
    pub(crate) fn results_folder(&self, runs: &[(&str, &ScriptRun)]) -> tempfile::TempDir {
        let dir = tmp();
        std::fs::create_dir(dir.path().join("results")).unwrap();
        for (name, run) in runs {
            let text = serde_json::to_string_pretty(&run.result).unwrap() + "\n";
            std::fs::write(dir.path().join("results").join(name), text).unwrap();
        }
        std::fs::copy(self.plan(), dir.path().join("plan.json")).unwrap();
        dir
    }

    /// Runs a bundle script on the host; the result JSON is read from where the script says.
    pub(crate) fn run(&self, script: &str, args: &[&str]) -> ScriptRun {
        self.run_env(script, args, &[])
    }

    pub(crate) fn run_env(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> ScriptRun {
        let out_file = self
            .root
            .parent()
            .unwrap()
            .join(format!("{script}.{}.json", std::process::id()));
        let _ = std::fs::remove_file(&out_file);
        let out = fakehost_sh("run", &self.root)
            .arg("--")
            .arg(&self.bash)
            .arg(self.bundle.join(script))
            .args(args)
            .arg("--out")
            .arg(&out_file)
            .utf8_console()
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let text = std::fs::read_to_string(&out_file).unwrap_or_default();
        let result = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "{script}: result is not JSON ({e}):\n{text}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let _ = std::fs::remove_file(&out_file);
        ScriptRun {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
            result,
        }
    }

    /// `path=value` of every file of the fake sysfs and tool state.
    pub(crate) fn snapshot(&self) -> String {
        self.snapshot_of(&[])
    }

    /// `path=value` of every file under `dirs` of the host's root (by default `sys` and `.fake`).
    pub(crate) fn snapshot_of(&self, dirs: &[&str]) -> String {
        let out = fakehost_sh("snapshot", &self.root)
            .args(dirs)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// The commands the stand-ins received, as `tool arg arg…` lines; the log is then emptied.
    pub(crate) fn take_commands(&self) -> Vec<String> {
        let log = self.root.join("stub.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines()
            .map(|l| {
                let v: Value =
                    serde_json::from_str(l).unwrap_or_else(|e| panic!("stub log line {l:?}: {e}"));
                let argv: Vec<&str> = v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap())
                    .collect();
                format!("{} {}", v["tool"].as_str().unwrap(), argv.join(" "))
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    /// Configures `ifc`'s addresses as a host would (`fakehost.sh addr`: the kernel's GIDs
    /// follow); none removes them.
    pub(crate) fn addr(&self, ifc: &str, cidrs: &[&str]) {
        add_addresses(&self.root, ifc, cidrs);
    }

    /// A `fakehost.sh` step that acts on the whole host (`reload --how modprobe`, `reboot`): the
    /// unit systemd runs in it runs under this host's bash. Exit code, stdout, stderr.
    pub(crate) fn host_step(&self, verb: &str, args: &[&str]) -> (i32, String, String) {
        let out = fakehost_sh(verb, &self.root)
            .args(args)
            .env("FAKEHOST_BASH", &self.bash)
            .utf8_console()
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// What systemd did with the units since the last call (`var/log/fakehost/systemd.log` of
    /// the stand-ins: jobs queued, merged, run), one line each; the log is then emptied.
    pub(crate) fn take_unit_log(&self) -> Vec<String> {
        let log = self.root.join("var/log/fakehost/systemd.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines().map(str::to_string).collect()
    }

    pub(crate) fn fake(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The host's ARP sysctls as an operator of a multi-rail host sets them (`conf/all`
    /// arp_ignore 1, arp_announce 2), for tests about something else: the simulated host starts
    /// at the kernel's defaults, which every host with several RoCE ports warns about.
    pub(crate) fn arp_hygienic(&self) {
        for (key, value) in [("arp_ignore", "1\n"), ("arp_announce", "2\n")] {
            std::fs::write(
                self.fake(&format!("proc/sys/net/ipv4/conf/all/{key}")),
                value,
            )
            .unwrap();
        }
    }

    /// The whole output folder the bundle came from (as on a USB stick).
    pub(crate) fn dist(&self) -> PathBuf {
        self.bundle.parent().unwrap().join("dist")
    }

    /// The output folder generated again, the same bundles, signed with a new site key made
    /// beside it (`generate --sign`): the public key's path.
    pub(crate) fn sign_dist(&self) -> PathBuf {
        let dir = self.bundle.parent().unwrap();
        let (key, public) = crate::common::site_key(dir, "site");
        let signed = crate::common::roce_gen(
            dir,
            &[
                "-q",
                "generate",
                &self.plan().display().to_string(),
                "-o",
                "dist",
                "--sign",
                &key.display().to_string(),
            ],
        );
        assert_eq!(signed.code, 0, "{}", signed.transcript());
        public
    }

    /// The plan (its JSON form) the bundles were generated from, for `roce-gen ingest --plan`.
    pub(crate) fn plan(&self) -> PathBuf {
        self._dir.path().join("plan.json")
    }

    /// The same host gets the bundle of an edited plan (a later plan of its cluster): the plan is
    /// rewritten, generated again and unpacked over the old bundle, as a site copies a new one.
    pub(crate) fn replan(&self, edit: impl FnOnce(&mut Value)) {
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(self.plan()).unwrap()).unwrap();
        edit(&mut doc);
        std::fs::write(self.plan(), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let bundles = self.bundle.parent().unwrap();
        std::fs::remove_dir_all(&self.bundle).unwrap();
        std::fs::remove_dir_all(self.dist()).unwrap();
        let generated = crate::common::roce_gen(
            bundles,
            &["generate", &self.plan().display().to_string(), "-o", "dist"],
        );
        assert_eq!(generated.code, 0, "{}", generated.transcript());
        let name = self.bundle.file_name().unwrap().to_string_lossy();
        let untar = Command::new("tar")
            .args(["-xzf", &format!("dist/{name}.tar.gz")])
            .current_dir(bundles)
            .status()
            .unwrap();
        assert!(untar.success());
    }

    /// Runs any command on the host (isolated like the scripts) with these environment
    /// variables: exit code, and stdout and stderr as the bytes printed.
    pub(crate) fn run_raw(&self, cmd: &[&str], env: &[(&str, &str)]) -> (i32, Vec<u8>, Vec<u8>) {
        let out = fakehost_sh("run", &self.root)
            .arg("--")
            .args(cmd)
            .utf8_console()
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), out.stdout, out.stderr)
    }

    /// Runs any command on the host (isolated like the scripts): exit code, stdout, stderr.
    /// A command that sets the host up stands for an earlier time: the links it toggled (a PFC
    /// change) are back before it returns (see [`FakeHost::settle_links`]).
    pub(crate) fn run_cmd(&self, cmd: &[&str]) -> (i32, String, String) {
        let out = fakehost_sh("run", &self.root)
            .arg("--")
            .args(cmd)
            .utf8_console()
            .output()
            .unwrap();
        self.settle_links();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// Waits until no link is down after a toggle any more: driverfs keeps one down for
    /// `.fake/net/IF/flap_seconds` (default 1) after `.fake/dcb/IF/flaps` was written; one that
    /// never comes back (`never`) is not waited for.
    pub(crate) fn settle_links(&self) {
        let Ok(dirs) = std::fs::read_dir(self.root.join(".fake/dcb")) else {
            return;
        };
        for dir in dirs.flatten() {
            let Ok(toggled) =
                std::fs::metadata(dir.path().join("flaps")).and_then(|m| m.modified())
            else {
                continue;
            };
            let seconds = std::fs::read_to_string(
                self.root
                    .join(".fake/net")
                    .join(dir.file_name())
                    .join("flap_seconds"),
            )
            .unwrap_or_else(|_| "1".to_string());
            let Ok(seconds) = seconds.trim().parse::<f64>() else {
                continue;
            };
            let back = toggled + std::time::Duration::from_secs_f64(seconds.max(0.0));
            if let Ok(left) = back.duration_since(std::time::SystemTime::now()) {
                std::thread::sleep(left + std::time::Duration::from_millis(50));
            }
        }
    }
}

/// State lines that record that something happened rather than a setting: the reload counters
/// of systemd and udev and the links' flap counts, the traces a change leaves that a rollback
/// cannot take back.
pub(crate) fn is_trace(line: &str) -> bool {
    line.starts_with(".fake/systemd/daemon-reload=")
        || line.starts_with(".fake/udev/reload=")
        || line.contains("/flaps=")
}

/// Commands that change a host, as opposed to the reads every run makes.
pub(crate) fn changes(commands: &[String]) -> Vec<String> {
    commands
        .iter()
        .filter(|c| {
            let read_only = c.starts_with("hostname")
                || c.starts_with("ofed_info")
                || c.starts_with("ibdev2netdev")
                || (c.starts_with("mlnx_qos") && c.split(' ').count() == 3)
                || c.starts_with("ethtool -i")
                || c.starts_with("ethtool -a")
                || c.starts_with("ethtool -m")
                || c.starts_with("ethtool -S")
                || (c.starts_with("ethtool") && c.split(' ').count() == 2)
                || c.starts_with("lldpcli -f keyvalue -- show neighbors")
                || c.starts_with("lldptool -t -n")
                || c.starts_with("ip -o addr")
                || c.starts_with("ip -o link show")
                || c.starts_with("ip route get")
                || *c == "rdma system show"
                || c.starts_with("firewall-cmd --state")
                || c.starts_with("firewall-cmd --get-")
                || (c.starts_with("firewall-cmd --zone=") && c.ends_with(" --list-all"))
                || c.starts_with("dcb -N app show")
                || c.starts_with("dcb pfc show")
                || c.starts_with("dcb dcbx show")
                || *c == "dcb app help"
                || *c == "dcb dcbx help"
                || c.starts_with("systemctl is-enabled")
                || c.starts_with("systemctl -q is-active")
                || c.starts_with("nmcli -t ")
                || c.starts_with("nmcli -g ")
                || ((c.starts_with("mlxconfig") || c.starts_with("mstconfig")) && c.contains(" q"))
                || ((c.starts_with("cma_roce_mode") || c.starts_with("cma_roce_tos"))
                    && c.split(' ').count() == 5);
            !read_only
        })
        .cloned()
        .collect()
}

/// A change to the plan's JSON form before the bundles are generated.
type PlanEdit<'a> = Box<dyn FnOnce(&mut Value) + 'a>;

/// `fakehost.sh VERB ROOT`, to be given the rest of its arguments.
fn fakehost_sh(verb: &str, root: &Path) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("tests/host/fakehost.sh"))
        .arg(verb)
        .arg(root);
    cmd
}

/// The simulated 8-GPU server's PCI tree over a created host (its NICs moved into it), the IOMMU
/// in identity mode unless OPTIONS say otherwise, and the GPU driver's modules as their sysfs
/// shows them loaded (open-gpu-kernel-modules: `version` of each module).
fn gpu_server(root: &Path, options: &[String]) {
    let out = fakehost_sh("pcitree", root)
        .arg(repo().join("tests/host/fixtures/pci/hgx-8gpu.json"))
        .args(["--iommu-type", "identity"])
        .args(options)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fakehost pcitree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for module in ["nvidia", "nvidia_peermem"] {
        let dir = root.join("sys/module").join(module);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("version"), "550.54.15\n").unwrap();
    }
}

fn add_addresses(root: &Path, ifc: &str, cidrs: &[&str]) {
    let out = fakehost_sh("addr", root)
        .arg(ifc)
        .args(cidrs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fakehost addr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How a [`FakeHost`] is made: which of the plan's hosts it is, what it lacks, which bash runs
/// its scripts, and edits to the plan its bundle is generated from.
#[must_use]
pub(crate) struct Builder<'a> {
    kind: &'static str,
    plan_host: &'static str,
    host: Option<String>,
    missing: Vec<String>,
    bash: String,
    edits: Vec<PlanEdit<'a>>,
    plan_name: Option<String>,
    create_args: Vec<String>,
    setup: Vec<Vec<String>>,
    gpu: Option<Vec<String>>,
}

impl<'a> Builder<'a> {
    fn new(kind: &'static str) -> Self {
        Builder {
            kind,
            plan_host: "node-a",
            host: None,
            missing: Vec::new(),
            bash: "bash".into(),
            edits: Vec::new(),
            plan_name: None,
            create_args: Vec::new(),
            setup: Vec::new(),
            gpu: None,
        }
    }

    /// node-a on the simulated 8-GPU server: its NICs below the switches of GPU 0 and GPU 1
    /// (`fakehost.sh pcitree` with OPTIONS, e.g. `--acs on`), the plan pairing them (its `gpu`
    /// column, `nccl_version` 2.23.4), the GPU driver's and nvidia_peermem's modules loaded.
    pub(crate) fn gpu_server(mut self, options: &[&str]) -> Self {
        self.gpu = Some(options.iter().map(|a| (*a).to_string()).collect());
        self
    }

    /// The name the plan gives the host (its bundle's name), when not its plan host's: e.g. an
    /// FQDN, while the machine calls itself by the short name.
    pub(crate) fn plan_name(mut self, name: &str) -> Self {
        self.plan_name = Some(name.to_string());
        self
    }

    /// More options of `fakehost.sh create` (`--rootfs tmpfs`, `--mount PATH:TYPE`).
    pub(crate) fn create_args(mut self, args: &[&str]) -> Self {
        self.create_args
            .extend(args.iter().map(|a| (*a).to_string()));
        self
    }

    /// A `fakehost.sh VERB ROOT ARGS…` step once the host is set up (its addresses given), before
    /// the bundle runs: `&["rename", "ens1f0np0", "enp26s0f0np0"]`, `&["altname", IF, NAME]`.
    pub(crate) fn setup(mut self, step: &[&str]) -> Self {
        self.setup
            .push(step.iter().map(|a| (*a).to_string()).collect());
        self
    }

    /// Which host of golden/lab-2node this machine is (`node-a`, the default, or `node-b`): its
    /// NICs, their addresses and the bundle unpacked beside it.
    pub(crate) fn plan_host(mut self, plan_host: &str) -> Self {
        self.plan_host = match plan_host {
            "node-a" => "node-a",
            "node-b" => "node-b",
            other => panic!("golden/lab-2node has no host {other}"),
        };
        self
    }

    /// The host name the machine reports, when it is not its plan host's (a wrong or unset name).
    pub(crate) fn host(mut self, name: &str) -> Self {
        self.host = Some(name.to_string());
        self
    }

    /// A NIC of the plan the machine does not have (its device and netdev are absent).
    pub(crate) fn without(mut self, dev: &str) -> Self {
        self.missing.push(dev.to_string());
        self
    }

    /// The bash that runs the scripts (see [`bashes`]).
    pub(crate) fn bash(mut self, bash: &str) -> Self {
        self.bash = bash.to_string();
        self
    }

    /// Edits the plan (its JSON form) before the bundles are generated.
    pub(crate) fn plan(mut self, edit: impl FnOnce(&mut Value) + 'a) -> Self {
        self.edits.push(Box::new(edit));
        self
    }

    /// Creates the host and generates and unpacks its bundle.
    pub(crate) fn build(self) -> FakeHost {
        FakeHost::create(self)
    }
}

/// Host `host` of `roce-gen ingest results --plan plan.json --format json` run in `dir` (a
/// [`FakeHost::results_folder`]).
pub(crate) fn ingested_host(dir: &Path, host: &str) -> Value {
    let run = crate::common::roce_gen(
        dir,
        &[
            "ingest",
            "results",
            "--plan",
            "plan.json",
            "--format",
            "json",
        ],
    );
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("ingest: {e}: {}", run.transcript()));
    doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["host"] == host)
        .unwrap_or_else(|| panic!("no host {host} in {doc:#}"))
        .clone()
}

/// The ids of a result's checks whose status is `warn`, in the result's order.
pub(crate) fn warned_ids(result: &Value) -> Vec<&str> {
    result["checks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|c| c["status"] == "warn")
        .map(|c| c["id"].as_str().unwrap_or_default())
        .collect()
}
