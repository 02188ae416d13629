//! The bundle scripts on simulated hosts (`tests/host/fakehost.sh`: a fake sysfs/configfs tree
//! and stand-ins for the vendor tools that print the real tools' formats and keep state, run in
//! private mount/UTS/net namespaces). Each scenario runs under this machine's bash and under
//! bash 5.1 from the Debian bullseye root that `.ci/run` builds, and asserts on the result JSON,
//! on the host's state and on the exact commands run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::tmp;

/// node-a of golden/lab-2node: mlx5_0/ens1f0np0 (PCI and MAC planned) and mlx5_1/ens2f0np0.
const NODE_A: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0a:00:00",
    "mlx5_1:ens2f0np0:0000:3c:00.0:b8:3f:d2:0a:01:00",
];
/// node-b of golden/lab-2node, for runs that need two real hosts of the plan.
const NODE_B: [&str; 2] = [
    "mlx5_0:ens1f0np0:0000:1a:00.0:b8:3f:d2:0b:00:00",
    "mlx5_1:ens2f0np0:0000:3c:00.0:b8:3f:d2:0b:01:00",
];

fn repo() -> PathBuf {
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

fn bullseye_root() -> PathBuf {
    std::env::var_os("ROCE_GEN_BULLSEYE").map_or_else(
        || PathBuf::from("/var/cache/roce-gen/bullseye"),
        PathBuf::from,
    )
}

fn bullseye_bash() -> Option<String> {
    let bash = bullseye_root().join("bin/bash");
    bash.is_file().then(|| bash.display().to_string())
}

#[test]
fn bash_51_from_the_bullseye_root_is_available() {
    let bash = bullseye_bash().unwrap_or_else(|| {
        panic!(
            "no bullseye root at {}: run `bash .ci/run`, which builds it",
            bullseye_root().display()
        )
    });
    let out = Command::new(&bash)
        .args(["-c", "echo $BASH_VERSION"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("5.1."),
        "{out:?}"
    );
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

/// A simulated host with node-a's bundle unpacked beside it.
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
    /// A fake host of `kind` named `host` with node-a's NICs (less `missing`) and their planned
    /// addresses, and its bundle (generated from golden/lab-2node, for an inbox host without
    /// the plan's minimum OFED version).
    pub(crate) fn new(kind: &str, host: &str, missing: &[&str], bash: &str) -> Self {
        Self::with_plan(kind, host, missing, bash, |_| {})
    }

    /// Like [`FakeHost::new`], with the plan (JSON) edited by `edit` before generating.
    pub(crate) fn with_plan(
        kind: &str,
        host: &str,
        missing: &[&str],
        bash: &str,
        edit: impl FnOnce(&mut Value),
    ) -> Self {
        let dir = tmp();
        let root = dir.path().join("root");
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("tests/host/fakehost.sh"))
            .arg("create")
            .arg(&root)
            .args(["--kind", kind, "--host", host]);
        let (nics, last_octet) = if host == "node-b" {
            (NODE_B, 11)
        } else {
            (NODE_A, 10)
        };
        for nic in nics {
            cmd.args(["--nic", nic]);
        }
        for m in missing {
            cmd.args(["--missing", m]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "fakehost create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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
                let out = Command::new("bash")
                    .arg(repo().join("tests/host/fakehost.sh"))
                    .arg("addr")
                    .arg(&root)
                    .args([ifc, &addr])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "fakehost addr: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
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
        edit(&mut plan_doc);
        let plan = dir.path().join("plan.json");
        std::fs::write(&plan, serde_json::to_string_pretty(&plan_doc).unwrap()).unwrap();
        let generated = crate::common::roce_gen(
            &bundles,
            &["generate", &plan.display().to_string(), "-o", "dist"],
        );
        assert_eq!(generated.code, 0, "{}", generated.transcript());
        let untar = Command::new("tar")
            .args(["-xzf", "dist/node-a.tar.gz"])
            .current_dir(&bundles)
            .status()
            .unwrap();
        assert!(untar.success());
        FakeHost {
            root,
            bundle: bundles.join("node-a"),
            bash: bash.to_string(),
            _dir: dir,
        }
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
        let out = Command::new("bash")
            .arg(repo().join("tests/host/fakehost.sh"))
            .arg("run")
            .arg(&self.root)
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
        let out = Command::new("bash")
            .arg(repo().join("tests/host/fakehost.sh"))
            .arg("snapshot")
            .arg(&self.root)
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

    pub(crate) fn fake(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The whole output folder the bundle came from (as on a USB stick).
    pub(crate) fn dist(&self) -> PathBuf {
        self.bundle.parent().unwrap().join("dist")
    }

    /// Runs any command on the host (isolated like the scripts): exit code, stdout, stderr.
    pub(crate) fn run_cmd(&self, cmd: &[&str]) -> (i32, String, String) {
        let out = Command::new("bash")
            .arg(repo().join("tests/host/fakehost.sh"))
            .arg("run")
            .arg(&self.root)
            .arg("--")
            .args(cmd)
            .utf8_console()
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }
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
                || c.starts_with("lldpcli -f keyvalue show neighbors")
                || c.starts_with("lldptool -t -n")
                || c.starts_with("ip -o addr")
                || c.starts_with("dcb -N app show")
                || c.starts_with("dcb pfc show")
                || c.starts_with("dcb dcbx show")
                || c.starts_with("systemctl is-enabled")
                || ((c.starts_with("mlxconfig") || c.starts_with("mstconfig")) && c.contains(" q"))
                || ((c.starts_with("cma_roce_mode") || c.starts_with("cma_roce_tos"))
                    && c.split(' ').count() == 5);
            !read_only
        })
        .cloned()
        .collect()
}

fn ofed_lifecycle(bash: &str) {
    let h = FakeHost::new("ofed", "node-a", &[], bash);
    // Firmware defaults already match the ECN and CNP plan; make this host differ in them too.
    std::fs::write(
        h.fake("sys/class/net/ens1f0np0/ecn/roce_np/enable/3"),
        "0\n",
    )
    .unwrap();
    std::fs::write(
        h.fake("sys/class/net/ens2f0np0/ecn/roce_rp/enable/3"),
        "0\n",
    )
    .unwrap();
    std::fs::write(
        h.fake("sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp"),
        "46\n",
    )
    .unwrap();
    let pristine = h.snapshot();

    let pre = h.run("precheck.sh", &[]);
    assert_eq!(pre.code, 0, "{bash}: {}\n{}", pre.stdout, pre.stderr);
    assert_eq!(pre.result["status"], "warn");
    for nic in ["mlx5_0", "mlx5_1"] {
        let identity = [
            "ib_dev",
            "netdev",
            "netdev_map",
            "link_layer",
            "driver",
            "fw_ver",
            "link_state",
        ];
        pre.expect(&identity, nic, "pass", bash);
        pre.expect(&["trust", "pfc", "mtu"], nic, "warn", bash);
    }
    assert_eq!(pre.status("pci", "mlx5_0"), "pass");
    assert_eq!(pre.status("mac", "mlx5_0"), "pass");
    assert_eq!(h.snapshot(), pristine, "{bash}: precheck changed the host");
    assert!(
        changes(&h.take_commands()).is_empty(),
        "{bash}: precheck ran a changing command"
    );

    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{bash}: {}\n{}", apply.stdout, apply.stderr);
    let commands = changes(&h.take_commands());
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false, snapshot_suffix => "" }, {
        insta::assert_snapshot!("ofed_apply_commands", commands.join("\n"));
    });
    for nic in ["mlx5_0", "mlx5_1"] {
        let set = [
            "trust",
            "pfc",
            "pause",
            "roce_mode",
            "roce_tos",
            "traffic_class",
            "mtu",
        ];
        apply.expect(&set, nic, "changed", bash);
        // Trust dscp programs the default DSCP map (prio = dscp >> 3), which sends 26 to 3 and
        // 48 to 6: the map changed without a command of its own.
        apply.expect(&["dscp2prio"], nic, "changed", bash);
        apply.expect(&["cnp_priority"], nic, "pass", bash);
    }
    assert_eq!(apply.status("ecn_np", "mlx5_0"), "changed");
    assert_eq!(apply.status("ecn_rp", "mlx5_0"), "pass");
    assert_eq!(apply.status("ecn_rp", "mlx5_1"), "changed");
    assert_eq!(apply.status("cnp_dscp", "mlx5_0"), "changed");
    assert_eq!(apply.status("cnp_dscp", "mlx5_1"), "pass");
    assert_eq!(
        apply.message("cnp_dscp", "mlx5_0"),
        "cnp_dscp changed from 46 to 48"
    );
    assert_eq!(apply.status("persistence", ""), "changed");
    assert!(h.fake("etc/systemd/system/roce-gen.service").is_file());
    assert!(h.fake("opt/roce-gen/lab/apply.sh").is_file());
    assert_eq!(
        std::fs::read_to_string(h.fake("sys/class/net/ens1f0np0/mtu"))
            .unwrap()
            .trim(),
        "4200"
    );
    // Trust follows the DSCP APP table: the 64 default entries `--trust dscp` programs.
    assert_eq!(
        std::fs::read_to_string(h.fake(".fake/dcb/ens1f0np0/app"))
            .unwrap()
            .lines()
            .count(),
        64
    );
    assert_eq!(
        std::fs::read_to_string(h.fake("sys/class/net/ens1f0np0/ecn/roce_np/enable/3"))
            .unwrap()
            .trim(),
        "1"
    );
    assert_eq!(
        std::fs::read_to_string(h.fake("sys/class/infiniband/mlx5_1/tc/1/traffic_class"))
            .unwrap()
            .trim(),
        "106"
    );
    assert!(
        apply
            .stdout
            .starts_with("✅ node-a: apply: all checks passed"),
        "{}",
        apply.stdout
    );

    let again = h.run("apply.sh", &[]);
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert_eq!(
        again.count("changed"),
        0,
        "{bash}: second apply changed something: {:?}",
        again.statuses()
    );
    assert!(
        changes(&h.take_commands()).is_empty(),
        "{bash}: second apply ran a changing command"
    );

    let post = h.run("precheck.sh", &[]);
    assert_eq!(
        post.result["status"],
        "pass",
        "{bash}: {:?}",
        post.statuses()
    );

    let back = h.run("rollback.sh", &[]);
    assert_eq!(back.code, 0, "{bash}: {}\n{}", back.stdout, back.stderr);
    assert_eq!(
        back.count("changed"),
        apply.count("changed"),
        "{bash}: {:?}",
        back.statuses()
    );
    // systemctl's daemon-reload counter and the driver's log of link flaps are the traces
    // apply and rollback leave.
    let without_reloads = |s: String| {
        s.lines()
            .filter(|l| !l.starts_with(".fake/systemd/daemon-reload="))
            .filter(|l| !l.contains("/flaps="))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_reloads(h.snapshot()),
        without_reloads(pristine),
        "{bash}: rollback did not restore every value"
    );
    assert_eq!(back.status("persistence", ""), "changed");
    assert!(!h.fake("etc/systemd/system/roce-gen.service").exists());
    assert!(!h.fake("opt/roce-gen/lab").exists());
}

#[test]
fn healthy_ofed_host_precheck_apply_again_rollback() {
    for bash in bashes() {
        ofed_lifecycle(&bash);
    }
}

#[test]
fn inbox_host_uses_dcb_and_configfs_and_skips_what_inbox_cannot_set() {
    for bash in bashes() {
        let h = FakeHost::new("inbox", "node-a", &[], &bash);
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}\n{}", apply.stdout, apply.stderr);
        for id in ["trust", "pfc", "pause", "roce_mode", "roce_tos", "mtu"] {
            assert_eq!(
                apply.status(id, "mlx5_0"),
                "changed",
                "{bash}: {id}: {}",
                apply.message(id, "mlx5_0")
            );
        }
        // Inbox DSCP trust is made of the APP entries themselves, so setting it mapped them.
        assert_eq!(
            apply.status("dscp2prio", "mlx5_0"),
            "changed",
            "{}",
            apply.message("dscp2prio", "mlx5_0")
        );
        for id in [
            "ecn_np",
            "ecn_rp",
            "cnp_dscp",
            "cnp_priority",
            "traffic_class",
        ] {
            assert_eq!(apply.status(id, "mlx5_0"), "skip", "{bash}: {id}");
            assert!(
                apply.message(id, "mlx5_0").starts_with("skipped: "),
                "{}",
                apply.message(id, "mlx5_0")
            );
        }
        let commands = changes(&h.take_commands());
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with("dcb app add dev ens1f0np0 dscp-prio")),
            "{commands:#?}"
        );
        assert!(commands.iter().any(|c| c == "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"), "{commands:#?}");
        assert!(
            !commands.iter().any(|c| c.starts_with("mlnx_qos")),
            "{commands:#?}"
        );
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{bash}: {:?}", again.statuses());
    }
}

#[test]
fn a_missing_nic_fails_its_identity_and_skips_what_depends_on_it() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &["mlx5_1"], &bash);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 1, "{bash}");
        assert_eq!(pre.status("ib_dev", "mlx5_1"), "fail");
        assert_eq!(
            pre.message("ib_dev", "mlx5_1"),
            "mlx5_1 is not in /sys/class/infiniband/ (present: mlx5_0)"
        );
        assert_eq!(pre.status("netdev_map", "mlx5_1"), "skip");
        assert_eq!(pre.status("trust", "mlx5_1"), "skip");
        assert_eq!(
            pre.count("fail"),
            2,
            "only ib_dev and netdev fail: {:?}",
            pre.statuses()
        );
        assert!(
            pre.stdout
                .starts_with("❌ node-a: precheck failed items:\nib_dev:mlx5_1, netdev:mlx5_1\n"),
            "{}",
            pre.stdout
        );

        let refused = h.run("apply.sh", &[]);
        assert_eq!(refused.code, 1);
        assert!(
            refused
                .stderr
                .contains("refusing to apply: the precheck failed"),
            "{}",
            refused.stderr
        );
        assert!(changes(&h.take_commands()).is_empty());

        let forced = h.run("apply.sh", &["--force"]);
        assert_eq!(forced.code, 1, "still a failed run");
        assert_eq!(forced.status("trust", "mlx5_0"), "changed");
        assert_eq!(forced.status("trust", "mlx5_1"), "skip");
        assert_eq!(forced.status("persistence", ""), "skip");
    }
}

#[test]
fn a_wrong_host_name_or_a_tampered_bundle_is_refused() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-b", &[], &bash);
        let run = h.run("apply.sh", &[]);
        assert_eq!(run.code, 1);
        assert_eq!(run.status("hostname", ""), "fail");
        assert_eq!(
            run.message("hostname", ""),
            "this bundle is for node-a, but this host is node-b"
        );
        assert!(changes(&h.take_commands()).is_empty(), "{bash}");

        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        let script = h.bundle.join("rollback.sh");
        let mut text = std::fs::read_to_string(&script).unwrap();
        text.push_str("\n# tampered\n");
        std::fs::write(&script, text).unwrap();
        let run = h.run("apply.sh", &[]);
        assert_eq!(run.code, 1);
        assert_eq!(run.status("bundle_integrity", ""), "fail");
        assert!(
            run.message("bundle_integrity", "")
                .contains("rollback.sh: FAILED"),
            "{}",
            run.message("bundle_integrity", "")
        );
        assert!(changes(&h.take_commands()).is_empty(), "{bash}");
    }
}

#[test]
fn dry_run_prints_every_command_and_changes_nothing() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        let before = h.snapshot();
        let run = h.run("apply.sh", &["--dry-run"]);
        assert_eq!(run.code, 0, "{bash}: {}", run.stderr);
        assert_eq!(run.result["dry_run"], true);
        assert_eq!(h.snapshot(), before, "{bash}: dry run changed the host");
        assert!(changes(&h.take_commands()).is_empty(), "{bash}");
        for line in [
            "would run: mlnx_qos -i ens1f0np0 --trust dscp",
            "would run: ip link set dev ens2f0np0 mtu 4200",
            "would run: systemctl enable roce-gen.service",
        ] {
            assert!(
                run.stdout.contains(line),
                "{bash}: missing {line:?} in\n{}",
                run.stdout
            );
        }
        assert!(
            run.stdout
                .contains("would write 106 to /sys/class/infiniband/mlx5_0/tc/1/traffic_class"),
            "{}",
            run.stdout
        );
        assert_eq!(run.status("trust", "mlx5_0"), "warn");
    }
}

#[test]
fn hostile_tool_output_still_gives_valid_json() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &[], &bash);
        // ofed_info and the firmware file feed strings into the result verbatim.
        std::fs::create_dir_all(h.fake(".fake/output")).unwrap();
        std::fs::write(
            h.fake(".fake/output/ofed_info"),
            b"MLNX_OFED \"q\" \\ back\x01\x1b[31m \xff\xfe bad utf8 \xe4\xb8\xad:\n",
        )
        .unwrap();
        std::fs::write(
            h.fake("sys/class/infiniband/mlx5_0/fw_ver"),
            b"28.39.1002\t\"x\"\\\x7f\xc3\x28\n",
        )
        .unwrap();
        let run = h.run("precheck.sh", &[]);
        // run() already parsed the JSON; check the odd strings survived as text.
        let ofed = run.result["facts"]["ofed"].as_str().unwrap();
        assert!(
            ofed.contains("\"q\" \\ back\u{1}\u{1b}[31m"),
            "{bash}: {ofed:?}"
        );
        assert!(ofed.contains('中'), "{ofed:?}");
        assert!(
            run.result["facts"]["nics"]["mlx5_0"]["fw_ver"]
                .as_str()
                .unwrap()
                .starts_with("28.39.1002\t\"x\"\\\u{7f}")
        );
    }
}

#[test]
fn boot_waits_for_missing_devices_then_configures_what_is_there() {
    for bash in bashes() {
        let h = FakeHost::new("ofed", "node-a", &["mlx5_1"], &bash);
        let started = std::time::Instant::now();
        let run = h.run_env("apply.sh", &["--boot"], &[("ROCE_GEN_BOOT_WAIT", "2")]);
        let waited = started.elapsed().as_secs_f64();
        assert_eq!(run.code, 1, "{bash}: {}", run.stderr);
        assert_eq!(run.status("boot_wait", ""), "fail");
        assert_eq!(
            run.message("boot_wait", ""),
            "gave up after 2s waiting for: mlx5_1, ens2f0np0"
        );
        assert!(waited >= 2.0, "{bash}: gave up after {waited}s");
        assert_eq!(run.status("trust", "mlx5_0"), "changed");
        assert_eq!(run.status("trust", "mlx5_1"), "skip");
        assert_eq!(
            std::fs::read_to_string(h.fake("sys/class/net/ens1f0np0/mtu"))
                .unwrap()
                .trim(),
            "4200"
        );
        let commands = changes(&h.take_commands());
        assert!(
            commands.contains(&"mlnx_qos -i ens1f0np0 --trust dscp".to_string()),
            "{commands:#?}"
        );
        assert!(
            !commands
                .iter()
                .any(|c| c.contains("ens2f0np0") || c.contains("mlx5_1")),
            "{commands:#?}"
        );
    }
}

#[test]
fn a_wrong_command_line_is_exit_2_with_usage() {
    let h = FakeHost::new("ofed", "node-a", &[], "bash");
    for bash in bashes() {
        let out = Command::new(&bash)
            .arg(h.bundle.join("apply.sh"))
            .arg("--frobnicate")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bash}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("error: unknown option --frobnicate") && err.contains("usage: apply.sh"),
            "{err}"
        );
        let out = Command::new(&bash)
            .arg(h.bundle.join("precheck.sh"))
            .arg("--dry-run")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "precheck takes no --dry-run");
    }
}

/// The harness's own self-tests under every bash: the stand-ins against the fixtures and the
/// driver's side effects (`selftest.sh`), and driverfs's kernel write semantics.
#[test]
fn the_simulated_host_harness_passes_its_own_selftests() {
    for script in ["tests/host/selftest.sh", "tests/host/driverfs/selftest.sh"] {
        for bash in bashes() {
            let out = Command::new(&bash)
                .arg(repo().join(script))
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{script} under {bash}: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                !stdout.contains("SKIP"),
                "{script}: nothing may be skipped here: {stdout}"
            );
            let last = stdout.lines().last().unwrap_or_default();
            assert!(last.ends_with(" passed, 0 failed"), "{script}: {last}");
        }
    }
}

/// The generated unit, booted by a real systemd (PID 1 of a bullseye container under
/// systemd-nspawn): it runs the installed `apply.sh --boot` against the simulated host and ends
/// with `Result=success`. A test drop-in only points the unit at the fake host.
#[test]
fn the_unit_boots_under_real_systemd_and_configures_the_host() {
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

    let h = FakeHost::new("ofed", "node-a", &[], "bash");
    let dir = tmp();
    let units = dir.path().join("units");
    let dropin = dir.path().join("dropin");
    let out = dir.path().join("out");
    for d in [&units, &dropin, &out] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        dropin.join("fake-host.conf"),
        "[Service]\nEnvironment=ROCE_GEN_ROOT=/fake STUB_LOG=/fake/stub.log PATH=/fake/bin:/usr/bin:/bin\n",
    )
    .unwrap();
    std::fs::write(
        units.join("harness-report.service"),
        "[Unit]\nAfter=roce-gen.service\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'systemctl show -p ActiveState,Result,ExecMainStatus roce-gen.service > /out/state; journalctl -u roce-gen.service -o cat > /out/journal; cp -r /var/lib/roce-gen /out/lib; systemctl poweroff'\n",
    )
    .unwrap();
    let bind = |from: &std::path::Path, to: &str| format!("--bind={}:{to}", from.display());
    // Inside `fakehost.sh run`, so that the container sees the fake sysfs through driverfs, with
    // the kernel's write semantics.
    let run = Command::new("bash")
        .arg(repo().join("tests/host/fakehost.sh"))
        .arg("run")
        .arg(&h.root)
        .args(["--", "timeout", "120", "systemd-nspawn"])
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
        .arg(bind(&h.bundle, "/opt/roce-gen/lab"))
        .arg(bind(
            &h.bundle.join("roce-gen.service"),
            "/etc/systemd/system/roce-gen.service",
        ))
        .arg(bind(&dropin, "/etc/systemd/system/roce-gen.service.d"))
        .arg(bind(
            &units.join("harness-report.service"),
            "/etc/systemd/system/harness-report.service",
        ))
        .arg(bind(&out, "/out"))
        .args([
            "--boot",
            "--",
            "systemd.wants=roce-gen.service",
            "systemd.wants=harness-report.service",
        ])
        .output()
        .unwrap();
    let state = std::fs::read_to_string(out.join("state")).unwrap_or_default();
    let journal = std::fs::read_to_string(out.join("journal")).unwrap_or_default();
    assert!(
        state.contains("Result=success")
            && state.contains("ActiveState=active")
            && state.contains("ExecMainStatus=0"),
        "unit state:\n{state}\njournal:\n{journal}\nnspawn: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("lib/lab/results/node-a.apply.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["status"], "pass", "{result:#}");
    assert_eq!(
        result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "changed")
            .count(),
        // Per NIC: trust, the DSCP map it programs, PFC, the pause PFC clears, RoCE mode and
        // ToS, traffic class and MTU (ECN and CNP are at the firmware defaults, as planned);
        // and nccl.env, which the boot run writes beside the installed bundle.
        17
    );
    assert_eq!(
        std::fs::read_to_string(h.fake("sys/class/net/ens2f0np0/mtu"))
            .unwrap()
            .trim(),
        "4200"
    );
    assert!(
        journal.contains("✅ node-a: apply: all checks passed"),
        "{journal}"
    );
}

#[test]
fn hostile_plan_text_stays_text_on_the_host() {
    // Free-text cells (group, switch, switch port) may hold anything printable; they reach the
    // scripts (the cabling check), the inventory and the reports only as quoted data.
    let marker = std::env::temp_dir().join(format!("roce-gen-pwned-{}", std::process::id()));
    let m = marker.display().to_string();
    let switch = format!("$(touch {m}.1)`touch {m}.2`");
    let port = format!("'; touch {m}.3; echo '\\\"%s$HOME");
    for bash in bashes() {
        let h = FakeHost::with_plan("ofed", "node-a", &[], &bash, |plan| {
            let nic = &mut plan["hosts"][0]["nics"][0];
            nic["switch"] = Value::from(switch.clone());
            nic["switch_port"] = Value::from(port.clone());
            plan["hosts"][0]["group"] = Value::from(format!("rack $(touch {m}.4)"));
        });
        let run = h.run("precheck.sh", &[]);
        assert!(run.code == 0 || run.code == 1, "{bash}: {}", run.stderr);
        for n in 1..=4 {
            assert!(
                !std::path::Path::new(&format!("{m}.{n}")).exists(),
                "{bash}: a plan value ran as a command ({m}.{n})"
            );
        }
        let apply = h.run("apply.sh", &["--no-persist"]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let data = std::fs::read_to_string(h.bundle.join("plan.sh")).unwrap();
        assert!(
            data.contains(&format!("'$(touch {m}.1)`touch {m}.2`'")),
            "the value is single-quoted in the plan data"
        );
        let inventory = std::fs::read_to_string(h.dist().join("ansible/inventory.yml")).unwrap();
        assert!(
            !inventory.contains("$(touch"),
            "group names are sanitised for Ansible:\n{inventory}"
        );
    }
}
