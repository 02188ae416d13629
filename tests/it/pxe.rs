//! PXE over HTTP: the output folder on a web server (tests/host/httpd.py, on the loopback of the
//! simulated host's own network namespace), `run-here.sh --from URL` fetching the host's bundle
//! by name or MAC with curl or wget, checking it against the folder's `SHA256SUMS`, refusing a
//! tampered tarball, keeping the result and sending it with `--post`; docs/delivery.md's kickstart
//! snippet staging the bundle for `roce-gen-first-boot.service`, and that first boot applying it.
//! Under every bash.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fakehost::{FakeHost, Utf8Console, changes, for_each_bash};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a run beside the web server printed, and what the server logged.
#[derive(Debug)]
struct Served {
    code: i32,
    stdout: String,
    stderr: String,
    log: String,
}

/// Runs `body` (bash, under the bash `bash` as `$TEST_BASH`) on the simulated host while a web
/// server on its loopback serves `folder` at `$URL` (on `port`, or one the kernel picks when 0).
fn served(h: &FakeHost, folder: &Path, port: u16, body: &str) -> Served {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("httpd.log");
    // The fake host's `ip` is a stand-in: the real one brings up the namespace's loopback.
    let driver = format!(
        r#"set -u
[ ! -x /usr/sbin/ip ] || /usr/sbin/ip link set lo up 2>/dev/null || true
/usr/bin/python3 "$HTTPD" "$FOLDER" "$SCRATCH/port" "$PORT" 2>"$SCRATCH/httpd.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
for _ in $(seq 600); do
  [ ! -s "$SCRATCH/port" ] || break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.05
done
[ -s "$SCRATCH/port" ] || {{ echo "the web server did not start" >&2; exit 97; }}
URL="http://127.0.0.1:$(cat "$SCRATCH/port")/"
{body}"#
    );
    let out = Command::new("bash")
        .arg(repo().join("tests/host/fakehost.sh"))
        .arg("run")
        .arg(&h.root)
        .arg("--")
        .args(["bash", "-c", &driver])
        .utf8_console()
        .env("HTTPD", repo().join("tests/host/httpd.py"))
        .env("FOLDER", folder)
        .env("SCRATCH", scratch.path())
        .env("PORT", port.to_string())
        .env("TEST_BASH", &h.bash)
        .output()
        .unwrap();
    let served = Served {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        log: std::fs::read_to_string(&log).unwrap_or_default(),
    };
    assert_ne!(served.code, 97, "{served:#?}");
    served
}

/// run-here.sh as an installer would get it: downloaded from the folder into the host's /root.
const FETCH_RUN_HERE: &str = r#"mkdir -p "$ROCE_GEN_ROOT/root"
curl -fsS -o "$ROCE_GEN_ROOT/root/run-here.sh" "${URL}run-here.sh" || exit 96
"#;

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn status_of(result: &Value, id: &str) -> String {
    result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id && c.get("nic").is_none())
        .map(|c| c["status"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn from_a_web_server_by_name_and_by_mac_the_result_kept_and_sent() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let dist = h.dist();
        let kept = h.fake("var/lib/roce-gen/lab/results");

        // By host name; the result stays on the host, nothing is written beside the folder.
        let run = served(
            &h,
            &dist,
            0,
            &format!(
                "{FETCH_RUN_HERE}\"$TEST_BASH\" \"$ROCE_GEN_ROOT/root/run-here.sh\" --from \"$URL\" precheck"
            ),
        );
        assert_eq!(run.code, 0, "{bash}: {run:#?}");
        assert!(
            run.stdout.contains("✅ node-a: precheck"),
            "{bash}: {run:#?}"
        );
        assert!(
            run.stdout.contains(&format!(
                "run-here: result kept on this host: {}/node-a.precheck.json",
                kept.display()
            )),
            "{bash}: {}",
            run.stdout
        );
        assert_eq!(json(&kept.join("node-a.precheck.json"))["host"], "node-a");
        assert!(!dist.join("results").exists());
        assert!(!h.fake("root/results").exists());
        assert!(
            run.log.contains("\"GET /SHA256SUMS HTTP/1.1\" 200"),
            "{}",
            run.log
        );
        assert!(
            run.log.contains("\"GET /node-a.tar.gz HTTP/1.1\" 200"),
            "{}",
            run.log
        );
        assert!(!run.log.contains("node-b"), "{}", run.log);

        // Not named yet: by MAC; the result is also sent (PUT) into the folder's results/.
        std::fs::write(h.fake(".fake/hostname"), "localhost\n").unwrap();
        let run = served(
            &h,
            &dist,
            0,
            &format!(
                "{FETCH_RUN_HERE}\"$TEST_BASH\" \"$ROCE_GEN_ROOT/root/run-here.sh\" --from \"$URL\" --post \"${{URL}}results/\" apply --no-persist"
            ),
        );
        assert_eq!(run.code, 0, "{bash}: {run:#?}");
        assert!(
            run.stdout.contains(
                "run-here: host name localhost is not in the plan; identified as node-a by its MAC b8:3f:d2:0a:00:00"
            ),
            "{bash}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains("/results/node-a.apply.json (HTTP PUT)"),
            "{bash}: {run:#?}"
        );
        assert!(
            run.log
                .contains("\"PUT /results/node-a.apply.json HTTP/1.1\" 201"),
            "{}",
            run.log
        );
        let sent = read(&dist.join("results/node-a.apply.json"));
        assert_eq!(sent, read(&kept.join("node-a.apply.json")));
        let sent: Value = serde_json::from_str(&sent).unwrap();
        // Configured; the host name check warns, the host being found by MAC.
        assert_eq!(sent["status"], "warn", "{bash}");
        assert!(sent["counts"]["changed"].as_u64().unwrap() > 0, "{bash}");
        assert_eq!(status_of(&sent, "hostname"), "warn", "{bash}");
        assert_eq!(read(&h.fake("sys/class/net/ens2f0np0/mtu")).trim(), "4200");

        // Without curl, wget does the same.
        {
            std::fs::remove_dir_all(dist.join("results")).unwrap();
            let run = served(
                &h,
                &dist,
                0,
                &format!(
                    "{FETCH_RUN_HERE}cp -as /usr/bin/. \"$SCRATCH/bin\" && rm \"$SCRATCH/bin/curl\" || exit 95
PATH=\"$ROCE_GEN_ROOT/bin:$SCRATCH/bin\"
\"$TEST_BASH\" \"$ROCE_GEN_ROOT/root/run-here.sh\" --from \"$URL\" --post \"${{URL}}results/\" precheck"
                ),
            );
            assert_eq!(run.code, 0, "{bash}: {run:#?}");
            assert_eq!(
                json(&dist.join("results/node-a.precheck.json"))["host"],
                "node-a"
            );
            for request in ["GET /node-a.tar.gz", "PUT /results/node-a.precheck.json"] {
                let line = run
                    .log
                    .lines()
                    .find(|l| l.contains(request))
                    .unwrap_or_default();
                assert!(line.contains("(Wget/"), "{request}: {}", run.log);
            }
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_tampered_tarball_a_stale_run_here_or_a_server_that_is_down_runs_nothing() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let dist = h.dist();
        let run_here = dist.join("run-here.sh").display().to_string();

        // Nothing listens: a clear error, exit 2.
        let (code, _, stderr) =
            h.run_cmd(&[bash, &run_here, "--from", "http://127.0.0.1:9/", "apply"]);
        assert_eq!(code, 2, "{bash}: {stderr}");
        assert!(
            stderr.contains(
                "run-here: cannot fetch http://127.0.0.1:9/SHA256SUMS with curl (curl: (7) "
            ) && stderr.contains("is the server up and the URL the output folder?"),
            "{bash}: {stderr}"
        );
        // A result that cannot be sent is kept (here on the stick) and the phase's status stands.
        let (code, stdout, stderr) = h.run_cmd(&[
            bash,
            &run_here,
            "--post",
            "http://127.0.0.1:9/results/",
            "precheck",
        ]);
        assert_eq!(code, 0, "{bash}: {stderr}");
        assert!(stdout.contains("run-here: result copied to"), "{stdout}");
        assert!(
            stderr.contains("run-here: could not send the result to http://127.0.0.1:9/results/node-a.precheck.json with curl"),
            "{bash}: {stderr}"
        );
        std::fs::remove_dir_all(dist.join("results")).unwrap();
        std::fs::remove_dir_all(h.fake("var/lib/roce-gen/lab")).unwrap();
        h.take_commands();

        // The tarball on the server altered after generate: refused before anything runs.
        let tarball = dist.join("node-a.tar.gz");
        let good = std::fs::read(&tarball).unwrap();
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        std::fs::write(&tarball, &bad).unwrap();
        let body =
            "\"$TEST_BASH\" \"$RUN_HERE\" --from \"$URL\" apply".replace("$RUN_HERE", &run_here);
        let run = served(&h, &dist, 0, &body);
        assert_eq!(run.code, 2, "{bash}: {run:#?}");
        assert!(
            run.stderr
                .contains("/node-a.tar.gz does not match its sha256 in http://127.0.0.1:")
                && run.stderr.contains("refusing to run it"),
            "{bash}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{bash}: {}", run.stdout);
        assert!(!h.fake("var/lib/roce-gen/lab/bundles").exists());
        assert!(!h.fake("var/lib/roce-gen/lab/results").exists());
        assert!(
            !h.fake("var/lib/roce-gen/lab/download/node-a.tar.gz")
                .exists()
        );
        assert_eq!(changes(&h.take_commands()), Vec::<String>::new(), "{bash}");

        // A server that sends more than the tarball's planned size: refused before it fills the
        // disk, and before anything runs.
        let mut longer = good.clone();
        longer.extend(std::iter::repeat_n(0u8, 4096));
        std::fs::write(&tarball, &longer).unwrap();
        let run = served(&h, &dist, 0, &body);
        assert_eq!(run.code, 2, "{bash}: {run:#?}");
        assert!(
            run.stderr.contains("/node-a.tar.gz with curl (")
                && run.stderr.contains("Maximum file size exceeded"),
            "{bash}: {}",
            run.stderr
        );
        assert!(!h.fake("var/lib/roce-gen/lab/bundles").exists());
        assert_eq!(changes(&h.take_commands()), Vec::<String>::new(), "{bash}");

        // A SHA256SUMS from another generate than the run-here.sh: fetch both again.
        std::fs::write(&tarball, &good).unwrap();
        let sums = read(&dist.join("SHA256SUMS"));
        let line = sums
            .lines()
            .find(|l| l.ends_with("  node-a.tar.gz"))
            .unwrap();
        let other = sums.replace(line, &format!("{}  node-a.tar.gz", "0".repeat(64)));
        std::fs::write(dist.join("SHA256SUMS"), other).unwrap();
        let run = served(&h, &dist, 0, &body);
        assert_eq!(run.code, 2, "{bash}: {run:#?}");
        assert!(
            run.stderr.contains(
                "SHA256SUMS is not from the same run of roce-gen generate as this run-here.sh"
            ),
            "{bash}: {}",
            run.stderr
        );
        assert!(!run.log.contains("GET /node-a.tar.gz"), "{}", run.log);
        assert!(!h.fake("var/lib/roce-gen/lab/bundles").exists());
    });
}

/// The `n`th kickstart `%post` of docs/delivery.md (0: with the anchor, 1: with the site's
/// key), with the folder's URL and /root moved into the simulated host.
fn kickstart_post(n: usize) -> String {
    let readme = read(&repo().join("docs/delivery.md"));
    let start = readme
        .match_indices("\n%post ")
        .nth(n)
        .expect("two %post blocks in docs/delivery.md")
        .0
        + 1;
    let end = start + readme[start..].find("\n%end\n").unwrap();
    let block = &readme[start..end];
    assert!(
        block.contains("--first-boot apply") && block.contains("curl -fsS -o /root/run-here.sh"),
        "{block}"
    );
    if n == 0 {
        assert!(
            block.contains("anchor=SHA256_OF_RUN_HERE")
                && block.contains("| sha256sum -c --quiet - &&"),
            "{block}"
        );
    } else {
        assert!(
            block.contains("PUBLIC_KEY_OF_THE_SITE")
                && block.contains("openssl dgst -sha256 -verify /root/roce-gen.pub.pem -signature /root/run-here.sh.sig /root/run-here.sh &&"),
            "{block}"
        );
    }
    // The %post line itself is kickstart's, not the shell's.
    let script = block.split_once('\n').unwrap().1;
    format!(
        "mkdir -p \"$ROCE_GEN_ROOT/root\"\n{}\n",
        script
            .replace("bash /root/", "\"$TEST_BASH\" \"$ROCE_GEN_ROOT\"/root/")
            .replace(" /root/", " \"$ROCE_GEN_ROOT\"/root/")
            .replace(">/root/", ">\"$ROCE_GEN_ROOT\"/root/")
            .replace("http://10.0.0.1/roce/", "${URL}")
    )
}

/// `systemd-analyze verify` on the first-boot unit, in a root with what it names.
fn verify_unit(text: &str) {
    crate::common::require("systemd-analyze");
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for dir in [
        "etc/systemd/system",
        "bin",
        "var/lib/roce-gen/lab",
        "usr/lib/systemd",
    ] {
        std::fs::create_dir_all(r.join(dir)).unwrap();
    }
    std::fs::copy("/bin/bash", r.join("bin/bash")).unwrap();
    std::fs::copy("/bin/rm", r.join("bin/rm")).unwrap();
    std::fs::write(r.join("var/lib/roce-gen/lab/run-here.sh"), "").unwrap();
    let unit = r.join("etc/systemd/system/roce-gen-first-boot.service");
    std::fs::write(&unit, text).unwrap();
    let system_units = ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .find(|p| Path::new(p).is_dir())
        .expect("no system unit folder to verify against");
    let copied = Command::new("cp")
        .args(["-a", system_units])
        .arg(r.join("usr/lib/systemd/"))
        .status()
        .unwrap();
    assert!(copied.success());
    let out = Command::new("systemd-analyze")
        .arg(format!("--root={}", r.display()))
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {stderr}\n{text}"
    );
}

/// The simulated host's sysfs, `path=value` per file.
fn sysfs(h: &FakeHost) -> String {
    let out = Command::new("bash")
        .arg(repo().join("tests/host/fakehost.sh"))
        .arg("snapshot")
        .arg(&h.root)
        .arg("sys")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_kickstart_snippet_stages_the_bundle_and_the_first_boot_applies_it() {
    for_each_bash(|bash| {
        // In the installer the host has no name yet: found by MAC.
        let h = FakeHost::ofed().host("localhost").bash(bash).build();
        let dist = h.dist();
        let before = sysfs(&h);
        h.take_commands();
        let port = 18_000 + u16::from(bash != "bash");
        // The trust anchor generate printed, as the site puts it into the kickstart.
        let anchor =
            roce_gen::testing::sha256_hex(&std::fs::read(dist.join("run-here.sh")).unwrap());
        let index = json(&dist.join("index.json"));
        assert_eq!(index["run_here_sha256"], anchor.as_str(), "{bash}");
        let snippet = kickstart_post(0).replace("SHA256_OF_RUN_HERE", &anchor);
        // The folder signed with the site's key (generated again: the same bundles), and the
        // kickstart that carries the public key instead of the anchor.
        let public = h.sign_dist();
        let signed_snippet =
            kickstart_post(1).replace("PUBLIC_KEY_OF_THE_SITE", read(&public).trim());

        // A run-here.sh altered on the server: the %post fails before it runs anything, with
        // the anchor and with the signature.
        let genuine = std::fs::read(dist.join("run-here.sh")).unwrap();
        let mut altered = genuine.clone();
        altered.extend_from_slice(b"\ntouch \"$ROCE_GEN_ROOT/pwned\"\n");
        std::fs::write(dist.join("run-here.sh"), &altered).unwrap();
        for (snippet, refusal) in [
            (&snippet, "run-here.sh: FAILED"),
            (&signed_snippet, "Verification failure"),
        ] {
            let run = served(&h, &dist, port, snippet);
            assert_ne!(run.code, 0, "{bash}: {run:#?}");
            assert!(run.stdout.contains(refusal), "{bash}: {run:#?}");
            assert!(
                !h.fake("pwned").exists(),
                "{bash}: the altered run-here.sh ran"
            );
            assert!(!h.fake("var/lib/roce-gen/lab").exists(), "{bash}");
            assert_eq!(changes(&h.take_commands()), Vec::<String>::new(), "{bash}");
        }
        std::fs::write(dist.join("run-here.sh"), &genuine).unwrap();

        // The genuine run-here.sh passes the signed kickstart's check (what it then does is
        // the same as below).
        let check = signed_snippet.replace("--first-boot apply", "--help");
        let run = served(&h, &dist, port, &check);
        assert_eq!(run.code, 0, "{bash}: {run:#?}");
        assert!(
            run.stdout.contains("Verified OK\nusage: bash run-here.sh"),
            "{bash}: {run:#?}"
        );

        let run = served(&h, &dist, port, &snippet);
        assert_eq!(run.code, 0, "{bash}: {run:#?}");
        assert!(
            run.stdout.contains(
                "run-here: node-a's bundle is kept in /var/lib/roce-gen/lab; roce-gen-first-boot.service applies it at the next boot"
            ),
            "{bash}: {}",
            run.stdout
        );
        // Nothing configured, only the unit enabled.
        assert_eq!(sysfs(&h), before, "{bash}: the NICs were touched");
        assert_eq!(
            changes(&h.take_commands()),
            vec!["systemctl enable roce-gen-first-boot.service".to_string()],
            "{bash}"
        );
        let unit = read(&h.fake("etc/systemd/system/roce-gen-first-boot.service"));
        let exec = format!(
            "ExecStart=/bin/bash /var/lib/roce-gen/lab/run-here.sh --host node-a --post http://127.0.0.1:{port}/results/ apply\n"
        );
        assert!(unit.contains(&exec), "{unit}");
        assert!(
            unit.contains("ConditionPathExists=/var/lib/roce-gen/lab/first-boot\n"),
            "{unit}"
        );
        assert!(
            unit.contains("ExecStartPost=/bin/rm -f /var/lib/roce-gen/lab/first-boot\n"),
            "{unit}"
        );
        assert!(h.fake("var/lib/roce-gen/lab/first-boot").is_file());
        verify_unit(&unit);
        assert!(
            h.fake(".fake/systemd/enabled/roce-gen-first-boot.service")
                .is_file()
        );
        assert!(!h.fake("var/lib/roce-gen/lab/results").exists());

        // The first boot: the unit's command, on the installed system.
        let staged = h
            .fake("var/lib/roce-gen/lab/run-here.sh")
            .display()
            .to_string();
        let body =
            format!("\"$TEST_BASH\" {staged} --host node-a --post \"${{URL}}results/\" apply");
        let boot = served(&h, &dist, port, &body);
        assert_eq!(boot.code, 0, "{bash}: {boot:#?}");
        assert!(
            boot.stdout.contains("run-here: result kept on this host:"),
            "{}",
            boot.stdout
        );
        assert!(
            boot.stdout.contains(&format!(
                "run-here: result sent to http://127.0.0.1:{port}/results/node-a.apply.json (HTTP PUT)"
            )),
            "{}",
            boot.stdout
        );
        let result = json(&dist.join("results/node-a.apply.json"));
        // Configured; the host name check warns, the name not being the plan's.
        assert_eq!(result["status"], "warn", "{bash}");
        assert_eq!(status_of(&result, "hostname"), "warn", "{bash}");
        assert_eq!(status_of(&result, "persistence"), "changed", "{bash}");
        assert_eq!(read(&h.fake("sys/class/net/ens2f0np0/mtu")).trim(), "4200");
        // apply installed the unit of the boots after.
        assert!(
            h.fake(".fake/systemd/enabled/roce-gen-lab.service")
                .is_file()
        );
    });
}

type Args = &'static [&'static str];
type Env = &'static [(&'static str, &'static str)];

/// run-here.sh on a plain console: `--ascii` or a locale that is not UTF-8 reaches the script.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn run_here_prints_ascii_on_a_plain_console() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let run_here = h.dist().join("run-here.sh").display().to_string();
        let cases: [(Args, Env); 2] = [
            (&["--ascii", "precheck"], &[]),
            (&["precheck"], &[("LANG", "C")]),
        ];
        for (args, env) in cases {
            let out = Command::new("bash")
                .arg(repo().join("tests/host/fakehost.sh"))
                .arg("run")
                .arg(&h.root)
                .arg("--")
                .arg(bash)
                .arg(&run_here)
                .args(args)
                .utf8_console()
                .envs(env.iter().copied())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{bash} {args:?}: {stdout}");
            assert!(out.stdout.is_ascii(), "{bash} {args:?}: {stdout}");
            assert!(
                stdout.starts_with("[OK] node-a: precheck"),
                "{bash} {args:?}: {stdout}"
            );
            assert!(
                stdout.contains("  trust: 2 ports pcp -> dscp\n"),
                "{bash} {args:?}: {stdout}"
            );
        }
    });
}

/// `--post`: a dry run after an apply is sent under a name of its own, so the apply's result on
/// the server stays byte for byte and ingest's verdict on the host with it.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_dry_run_sent_with_post_never_replaces_the_apply_on_the_server() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let dist = h.dist();
        let sent = dist.join("results");
        let run = |extra: &str| {
            served(
                &h,
                &dist,
                0,
                &format!(
                    "{FETCH_RUN_HERE}\"$TEST_BASH\" \"$ROCE_GEN_ROOT/root/run-here.sh\" --from \"$URL\" --post \"${{URL}}results/\" apply --no-persist{extra}"
                ),
            )
        };
        let apply = run("");
        assert_eq!(apply.code, 0, "{bash}: {apply:#?}");
        let before = crate::dryrun::results_in(&sent);
        let verdict_before = crate::dryrun::verdict(&h, &sent, "node-a");
        assert_eq!(verdict_before.2, "configured", "{bash}");
        let dry = run(" --dry-run");
        assert_eq!(dry.code, 0, "{bash}: {dry:#?}");
        assert!(
            dry.log
                .contains("\"PUT /results/node-a.apply.dry-run.json HTTP/1.1\" 201"),
            "{bash}: {}",
            dry.log
        );
        assert!(
            !dry.log.contains("PUT /results/node-a.apply.json"),
            "{bash}: {}",
            dry.log
        );
        crate::dryrun::only_a_dry_run_result_added(
            &before,
            &crate::dryrun::results_in(&sent),
            "node-a.apply.dry-run.json",
            "apply",
            &format!("{bash} --post"),
        );
        assert_eq!(
            crate::dryrun::verdict(&h, &sent, "node-a"),
            verdict_before,
            "{bash}"
        );
    });
}
