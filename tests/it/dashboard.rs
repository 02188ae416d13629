//! `roce-gen dashboard`: the Grafana dashboard JSON loaded and checked for its panels, variables
//! and data source uid; and `--push` against a tiny HTTP server this test runs on 127.0.0.1,
//! which records every request (request line, headers, body) and answers as Grafana does: the
//! folder lookup, the folder creation, the dashboard save, and a refused key. The key kept
//! secret: where it comes from (environment, key file, config) as the server's `Authorization`
//! header shows, the key file's limits, the warning for a file open to other users, plain http
//! only to this machine, a hostile server's text escaped, and a password in the URL blanked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::common::{Run, roce_gen, roce_gen_env, tmp};

/// One request the server received.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// A loopback HTTP/1.1 server answering each request with `answer(request)` (status, JSON
/// body) and closing the connection; it serves at most `limit` requests, then stops.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(limit: usize, answer: impl Fn(&Request) -> (u16, String) + Send + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(limit) {
                let Ok(mut stream) = stream else { break };
                stream
                    .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                    .unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or_default().to_string();
                let path = parts.next().unwrap_or_default().to_string();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let request = Request {
                    method,
                    path,
                    headers,
                    body: String::from_utf8(body).unwrap(),
                };
                let (status, reply) = answer(&request);
                log.lock().unwrap().push(request);
                let reason = if status == 200 { "OK" } else { "Unauthorized" };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
                let _ = stream.flush();
            }
        });
        Server { url, seen }
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

/// Writes `config.ini`, readable by its owner alone, as a file holding a key should be.
fn config(dir: &Path, url: &str, key: &str, folder: &str) {
    write_private(
        &dir.join("config.ini"),
        &format!(
            "[GRAFANA]\nGRAFANA_URL = {url}\nAPI_KEY = {key}\nDIRECTORY_NAME = {folder}\n[COMMANDS]\nAID_path =\nAID_file =\nprometheus_uid = prom-main\n"
        ),
    );
}

/// Writes a file with mode 0600.
fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    chmod(path, 0o600);
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_dashboard_has_its_panels_variables_and_the_configured_datasource() {
    let dir = tmp();
    config(dir.path(), "", "", "");
    let run = roce_gen(dir.path(), &["dashboard", "-o", "board.json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let board: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("board.json")).unwrap())
            .unwrap();
    assert_eq!(board["uid"], "roce-gen-nics");
    assert_eq!(board["schemaVersion"], 39);
    let panels = board["panels"].as_array().unwrap();
    for p in panels {
        assert_eq!(p["datasource"]["type"], "prometheus", "{p}");
        assert_eq!(p["datasource"]["uid"], "prom-main", "{p}");
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "prom-main");
            assert!(t["refId"].is_string());
        }
    }
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    for want in [
        "Module temperature",
        "Module TX power per lane",
        "Module RX power per lane",
        "Link and PCIe speed",
        "RoCE health counters (at each run)",
        "Cabling seen by LLDP",
        "Checks that did not pass (3 warn, 4 fail)",
        "Fabric test per rail and host (ok: 1 passed, 0 failed)",
        "Fabric checks that did not pass (3 warn, 4 fail)",
    ] {
        assert!(titles.contains(&want), "no panel {want:?} in {titles:?}");
    }
    // The fabric table joins a port's pass or fail with its rate, a row per rail and host port.
    let fabric = panels
        .iter()
        .find(|p| p["title"] == "Fabric test per rail and host (ok: 1 passed, 0 failed)")
        .unwrap();
    assert_eq!(fabric["transformations"][0]["id"], "merge");
    assert_eq!(
        fabric["transformations"][1]["options"]["renameByName"],
        serde_json::json!({"Value #A": "ok", "Value #B": "Gb/s", "Value #C": "% of link"})
    );
    assert_eq!(fabric["options"]["sortBy"][0]["displayName"], "rail");
    let exprs: String = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for metric in [
        "roce_gen_nic_module_temperature_celsius{",
        "roce_gen_nic_module_rx_power_dbm{",
        "roce_gen_nic_link_speed_bytes_per_second{",
        "roce_gen_nic_pcie_speed_transfers_per_second{",
        "roce_gen_nic_events{",
        "roce_gen_nic_neighbor_info{",
        "roce_gen_check_status{",
        "roce_gen_host_checks{",
        "roce_gen_fact_outlier{",
        "roce_gen_host_reboot_required{",
        "roce_gen_fabric_port_ok{",
        "roce_gen_fabric_rate_bytes_per_second{",
        "roce_gen_fabric_rate_ratio{",
        "roce_gen_fabric_check_status{",
    ] {
        assert!(exprs.contains(metric), "no query of {metric}");
    }
    let vars: Vec<(&str, &str)> = board["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap(),
                v["definition"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        vars,
        [
            ("cluster", "label_values(roce_gen_host_ok, cluster)"),
            (
                "host",
                r#"label_values(roce_gen_host_ok{cluster=~"$cluster"}, host)"#
            ),
            (
                "nic",
                r#"label_values(roce_gen_nic_link_speed_bytes_per_second{cluster=~"$cluster",host=~"$host"}, nic)"#
            ),
        ]
    );

    // The command line wins over the config; without any uid, a data source variable.
    let run = roce_gen(dir.path(), &["dashboard", "--datasource-uid", "other"]);
    let board: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(board["panels"][0]["datasource"]["uid"], "other");
    let bare = tmp();
    let run = roce_gen(bare.path(), &["dashboard"]);
    let board: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(board["templating"]["list"][0]["type"], "datasource");
    assert_eq!(board["panels"][0]["datasource"]["uid"], "${datasource}");
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn every_panel_query_is_promql_that_promtool_accepts() {
    crate::common::require("promtool");
    let dir = tmp();
    let run = roce_gen(dir.path(), &["dashboard"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let board: Value = serde_json::from_str(&run.stdout).unwrap();
    let exprs: Vec<String> = board["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() > 10, "{exprs:?}");
    // Each query as a recording rule: `promtool check rules` parses every expression. JSON
    // strings are YAML strings.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, expr) in exprs.iter().enumerate() {
        rules.push_str(&format!(
            "      - record: roce_gen:dashboard_query_{i}\n        expr: {}\n",
            serde_json::to_string(expr).unwrap()
        ));
    }
    std::fs::write(dir.path().join("rules.yml"), &rules).unwrap();
    let out = std::process::Command::new("promtool")
        .args(["check", "rules", "rules.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}\n{rules}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // It does reject a query that is not PromQL.
    std::fs::write(
        dir.path().join("bad.yml"),
        "groups:\n  - name: bad\n    rules:\n      - record: bad\n        expr: \"sum(roce_gen_ok{\"\n",
    )
    .unwrap();
    let bad = std::process::Command::new("promtool")
        .args(["check", "rules", "bad.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

fn push(dir: &Path) -> Run {
    roce_gen(dir, &["dashboard", "--push"])
}

#[test]
fn push_finds_or_creates_the_folder_and_saves_the_dashboard_with_the_key() {
    // The folder does not exist yet: looked up, created, then the dashboard saved into it.
    let server = Server::start(3, |r| {
        match (r.method.as_str(), r.path.as_str()) {
        ("GET", p) if p.starts_with("/api/folders") => {
            (200, r#"[{"id":1,"uid":"abc","title":"Other"}]"#.into())
        }
        ("POST", "/api/folders") => (200, r#"{"id":7,"uid":"f-roce","title":"RoCE"}"#.into()),
        ("POST", "/api/dashboards/db") => (
            200,
            r#"{"status":"success","uid":"roce-gen-nics","url":"/d/roce-gen-nics/roce-nics-roce-gen","version":1}"#.into(),
        ),
        _ => (404, r#"{"message":"Not found"}"#.into()),
    }
    });
    let dir = tmp();
    config(
        dir.path(),
        &format!("{}/", server.url),
        "glsa_test_key",
        "RoCE",
    );
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stdout,
        format!(
            "pushed dashboard \"RoCE NICs (roce-gen)\" to {}/d/roce-gen-nics/roce-nics-roce-gen (folder RoCE)\n",
            server.url
        )
    );
    let seen = server.requests();
    let lines: Vec<String> = seen
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        lines,
        [
            "GET /api/folders?limit=1000",
            "POST /api/folders",
            "POST /api/dashboards/db"
        ]
    );
    for r in &seen {
        assert_eq!(r.header("Authorization"), Some("Bearer glsa_test_key"));
    }
    assert_eq!(seen[1].json(), serde_json::json!({"title": "RoCE"}));
    let save = seen[2].json();
    assert_eq!(
        seen[2].header("Content-Type"),
        Some("application/json"),
        "{:?}",
        seen[2].headers
    );
    assert_eq!(save["folderUid"], "f-roce");
    assert_eq!(save["overwrite"], true);
    assert_eq!(save["dashboard"]["uid"], "roce-gen-nics");
    assert_eq!(
        save["dashboard"]["panels"][0]["datasource"]["uid"],
        "prom-main"
    );

    // An existing folder (any case) is reused, not created again.
    let server = Server::start(2, |r| match r.method.as_str() {
        "GET" => (200, r#"[{"id":3,"uid":"f-old","title":"roce"}]"#.into()),
        _ => (200, r#"{"status":"success","url":"/d/x/y"}"#.into()),
    });
    config(dir.path(), &server.url, "k2", "RoCE");
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].json()["folderUid"], "f-old");
}

#[test]
fn a_refused_push_names_the_url_status_and_grafanas_message() {
    let server = Server::start(1, |_| (401, r#"{"message":"Invalid API key"}"#.into()));
    let dir = tmp();
    config(dir.path(), &server.url, "wrong", "");
    let run = push(dir.path());
    assert_eq!(
        run.code,
        1,
        "Grafana answered: the input is wrong: {}",
        run.transcript()
    );
    assert_eq!(
        run.stderr,
        format!(
            "error: Grafana at {}/api/dashboards/db refused POST: 401 Unauthorized: Invalid API key\n",
            server.url
        )
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "no folder: straight to the save");
    assert_eq!(seen[0].header("Authorization"), Some("Bearer wrong"));
    assert!(seen[0].json().get("folderUid").is_none());

    // Nothing listens: exit 2, naming the URL.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    config(dir.path(), &url, "k", "RoCE");
    let run = push(dir.path());
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.starts_with(&format!(
            "error: could not reach Grafana at {url}/api/folders?limit=1000 (GET): "
        )),
        "{}",
        run.stderr
    );

    // No URL or key: exit 2 before any request, saying which part is missing and how to give it.
    config(dir.path(), "", "", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.starts_with(
            "error: --push needs Grafana's URL and an API key (config.ini has none): give \
             --grafana-url URL,"
        ),
        "{}",
        run.stderr
    );
    let run = roce_gen(
        dir.path(),
        &["dashboard", "--push", "--grafana-url", "http://127.0.0.1:9"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: --push needs a Grafana API key (config.ini has none): set \
         ROCE_GEN_GRAFANA_API_KEY, or API_KEY (or API_KEY_FILE) in config.ini's [GRAFANA], or \
         api_key (or api_key_file) in roce-gen.toml's [grafana]\n"
    );
    config(dir.path(), "", "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: --push needs Grafana's URL (config.ini has none): give --grafana-url URL, or \
         set GRAFANA_URL in config.ini's [GRAFANA] or url in roce-gen.toml's [grafana]\n"
    );
    config(dir.path(), "ftp://grafana", "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: Grafana URL \"ftp://grafana\" is not an http:// or https:// URL\n"
    );
}

/// A server that saves every dashboard; `limit` requests.
fn saving(limit: usize) -> Server {
    Server::start(limit, |_| {
        (200, r#"{"status":"success","url":"/d/x/y"}"#.into())
    })
}

/// A URL on which nothing listens.
fn closed_url() -> String {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    url
}

/// Asserts that no secret reached either stream.
fn assert_hidden(run: &Run, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "{secret} printed: {}",
            run.transcript()
        );
    }
}

#[test]
fn the_key_comes_from_the_environment_else_the_key_file_else_the_config() {
    let server = saving(4);
    let dir = tmp();
    // The config in a folder of its own, read from elsewhere: the key file's relative path
    // starts at the config.
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(conf.join("keys")).unwrap();
    let toml = |key_file: bool| {
        write_private(
            &conf.join("roce-gen.toml"),
            &format!(
                "[grafana]\nurl = \"{}\"\napi_key = \"inline_key_0\"\n{}",
                server.url,
                if key_file {
                    "api_key_file = \"keys/grafana\"\n"
                } else {
                    ""
                }
            ),
        );
    };
    toml(true);
    write_private(&conf.join("keys/grafana"), "\n  file_key_1 \n");
    let keys = ["inline_key_0", "file_key_1", "env_key_2"];
    let args = ["--config", "conf/roce-gen.toml", "dashboard", "--push"];

    let run = roce_gen_env(
        dir.path(),
        &args,
        &[("ROCE_GEN_GRAFANA_API_KEY", "env_key_2")],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_hidden(&run, &keys);
    // Empty is unset.
    let run = roce_gen_env(dir.path(), &args, &[("ROCE_GEN_GRAFANA_API_KEY", "")]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "warning: conf/roce-gen.toml: both an API key and an API key file are set; the key file is used\n"
    );
    assert_hidden(&run, &keys);
    let run = roce_gen(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    toml(false);
    let run = roce_gen(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stderr, "");
    assert_hidden(&run, &keys);

    let sent: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("Authorization").map(str::to_string))
        .collect();
    assert_eq!(
        sent,
        [
            Some("Bearer env_key_2".to_string()),
            Some("Bearer file_key_1".to_string()),
            Some("Bearer file_key_1".to_string()),
            Some("Bearer inline_key_0".to_string()),
        ]
    );
}

#[test]
fn a_key_file_must_be_a_small_regular_file_holding_one_key() {
    let dir = tmp();
    let url = closed_url();
    let ini = |key_file: &str| {
        write_private(
            &dir.path().join("config.ini"),
            &format!("[GRAFANA]\nGRAFANA_URL = {url}\nAPI_KEY_FILE = {key_file}\n"),
        );
    };
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    write_private(&dir.path().join("big"), &"k".repeat(4097));
    write_private(&dir.path().join("empty"), " \n\n");
    write_private(&dir.path().join("two"), "first_key\nsecond_key\n");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (file, why) in [
        ("missing", "could not read the Grafana API key file: "),
        (
            "folder",
            "is a folder, not a file: a Grafana API key file must be a regular file\n",
        ),
        (
            "/dev/null",
            "is a device, not a file: a Grafana API key file must be a regular file\n",
        ),
        // Refused, not waited on for a writer.
        (
            "fifo",
            "is a FIFO (named pipe), not a file: a Grafana API key file must be a regular file\n",
        ),
        (
            "big",
            "is larger than 4096 bytes, the most a Grafana API key file may be\n",
        ),
        ("empty", "the Grafana API key file is empty\n"),
        (
            "two",
            "the Grafana API key holds a space, a control character or a non-ASCII character; a key is one word of printable ASCII\n",
        ),
    ] {
        ini(file);
        let run = push(dir.path());
        assert_eq!(run.code, 2, "{file}: {}", run.transcript());
        // The config is in the working folder: the key file is named as it is there.
        assert!(
            run.stderr.starts_with(&format!("error: {file}: {why}")),
            "{file}: {}",
            run.stderr
        );
        assert_hidden(&run, &["first_key", "second_key"]);
    }
    // A file of exactly the cap is read.
    let server = saving(1);
    write_private(&dir.path().join("full"), &"k".repeat(4096));
    write_private(
        &dir.path().join("config.ini"),
        &format!(
            "[GRAFANA]\nGRAFANA_URL = {}\nAPI_KEY_FILE = full\n",
            server.url
        ),
    );
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        server.requests()[0].header("Authorization").map(str::len),
        Some("Bearer ".len() + 4096)
    );
}

#[test]
fn a_file_holding_the_key_open_to_other_users_is_warned_about_once() {
    let server = saving(5);
    let dir = tmp();
    let ini = dir.path().join("config.ini");
    config(dir.path(), &server.url, "glsa_mode_key", "");
    for mode in [0o644, 0o640, 0o604] {
        chmod(&ini, mode);
        let run = push(dir.path());
        assert_eq!(run.code, 0, "{}", run.transcript());
        assert_eq!(
            run.stderr,
            format!(
                "warning: config.ini holds the Grafana API key and other users have access to it (mode {mode:04o}); chmod 600 config.ini\n"
            )
        );
    }
    chmod(&ini, 0o600);
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stderr, "", "0600 is quiet");

    // The key file is looked at too; the config then holds no key, so it is not.
    let key = dir.path().join("grafana key");
    std::fs::write(&key, "glsa_file_key\n").unwrap();
    chmod(&key, 0o644);
    std::fs::write(
        &ini,
        format!(
            "[GRAFANA]\nGRAFANA_URL = {}\nAPI_KEY_FILE = grafana key\n",
            server.url
        ),
    )
    .unwrap();
    chmod(&ini, 0o644);
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "warning: grafana key holds the Grafana API key and other users have access to it (mode 0644); chmod 600 'grafana key'\n"
    );
    assert_eq!(server.requests().len(), 5);

    // A config without a key may be read by anyone.
    let plain = tmp();
    std::fs::write(
        plain.path().join("config.ini"),
        "[GRAFANA]\nGRAFANA_URL = http://g\n",
    )
    .unwrap();
    chmod(&plain.path().join("config.ini"), 0o644);
    let run = roce_gen(plain.path(), &["dashboard", "-o", "board.json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stderr, "wrote board.json\n");
}

#[test]
fn plain_http_to_another_machine_is_refused_unless_insecure_http() {
    let dir = tmp();
    config(dir.path(), "", "glsa_transport_key", "");
    // TEST-NET-1: nothing answers there, so a refusal that came after trying to connect would
    // be a different error (or a hang), not this one.
    let run = roce_gen(
        dir.path(),
        &[
            "dashboard",
            "--push",
            "--grafana-url",
            "http://192.0.2.1:9/",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: refusing to send the Grafana API key over plain http to 192.0.2.1, which is not this machine: use an https:// URL, or --insecure-http on a network you trust\n"
    );
    assert_eq!(run.stdout, "");

    // 0.0.0.0 is not loopback, yet on Linux a connection to it reaches this machine: the
    // refusal without the flag and the push with it, against one server.
    let server = saving(1);
    let port = server.url.rsplit(':').next().unwrap();
    let any = format!("http://0.0.0.0:{port}");
    let run = roce_gen(dir.path(), &["dashboard", "--push", "--grafana-url", &any]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with("error: refusing to send the Grafana API key over plain http to 0.0.0.0,"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty());
    let run = roce_gen(
        dir.path(),
        &[
            "dashboard",
            "--push",
            "--insecure-http",
            "--grafana-url",
            &any,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        server.requests()[0].header("Authorization"),
        Some("Bearer glsa_transport_key")
    );

    // Loopback needs no flag (the other push tests use 127.0.0.1).
    let server = saving(1);
    let run = roce_gen(
        dir.path(),
        &["dashboard", "--push", "--grafana-url", &server.url],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn what_a_hostile_server_says_is_printed_escaped_and_short() {
    let dir = tmp();
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred\nerror: forged line glsa_hostile_key";
    let server = Server::start(1, move |_| {
        (401, serde_json::json!({ "message": hostile }).to_string())
    });
    config(dir.path(), &server.url, "glsa_hostile_key", "");
    let run = push(dir.path());
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        format!(
            "error: Grafana at {}/api/dashboards/db refused POST: 401 Unauthorized: \\u{{1b}}]0;pwned\\u{{7}}\\u{{1b}}[2J\\u{{1b}}[31mred\\u{{a}}error: forged line ***\n",
            server.url
        )
    );

    // A body that is not JSON: quoted in part, escaped too.
    let server = Server::start(1, |_| (500, format!("\u{1b}[5m{}", "A".repeat(100_000))));
    config(dir.path(), &server.url, "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(!run.stderr.contains('\u{1b}'), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(run.stderr.len() < 1000, "{} bytes", run.stderr.len());
    assert!(run.stderr.ends_with("AAA…\n"), "{}", run.stderr);

    // And what it answers to a save, printed on stdout.
    let server = Server::start(1, |_| (200, r#"{"url":"/d/x\u001b[8m\r\nhidden"}"#.into()));
    config(dir.path(), &server.url, "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stdout,
        format!(
            "pushed dashboard \"RoCE NICs (roce-gen)\" to {}/d/x\\u{{1b}}[8m\\u{{d}}\\u{{a}}hidden\n",
            server.url
        )
    );
}

#[test]
fn a_password_in_the_url_is_never_printed() {
    let dir = tmp();
    config(dir.path(), "", "k", "");
    let with_password = |url: &str| url.replacen("http://", "http://user:s3cret@", 1);

    // Nothing listens: ureq's error and ours.
    let url = closed_url();
    let run = roce_gen(
        dir.path(),
        &["dashboard", "--push", "--grafana-url", &with_password(&url)],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.starts_with(&format!(
            "error: could not reach Grafana at {}/api/dashboards/db (POST): ",
            url.replacen("http://", "http://user:***@", 1)
        )),
        "{}",
        run.stderr
    );
    assert_hidden(&run, &["s3cret"]);

    // Grafana refuses, then accepts.
    let server = Server::start(2, |r| {
        if r.header("Authorization") == Some("Bearer k") {
            (401, r#"{"message":"Invalid API key"}"#.into())
        } else {
            (200, r#"{"url":"/d/x/y"}"#.into())
        }
    });
    config(dir.path(), &with_password(&server.url), "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 1, "{}", run.transcript());
    let shown = server.url.replacen("http://", "http://user:***@", 1);
    assert_eq!(
        run.stderr,
        format!(
            "error: Grafana at {shown}/api/dashboards/db refused POST: 401 Unauthorized: Invalid API key\n"
        )
    );
    config(dir.path(), &with_password(&server.url), "k2", "");
    let run = push(dir.path());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stdout,
        format!("pushed dashboard \"RoCE NICs (roce-gen)\" to {shown}/d/x/y\n")
    );

    // A URL that is not http(s).
    config(dir.path(), "ftp://user:s3cret@grafana", "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: Grafana URL \"ftp://user:***@grafana\" is not an http:// or https:// URL\n"
    );
}
