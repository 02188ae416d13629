//! `roce-gen dashboard`: the Grafana dashboard JSON loaded and checked for its panels, variables
//! and data source uid; and `--push` against a tiny HTTP server this test runs on 127.0.0.1,
//! which records every request (request line, headers, body) and answers as Grafana does: the
//! folder lookup, the folder creation, the dashboard save, and a refused key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::common::{Run, roce_gen, tmp};

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
    ] {
        assert!(titles.contains(&want), "no panel {want:?} in {titles:?}");
    }
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

    // No URL or key: exit 2 before any request.
    config(dir.path(), "", "", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with("error: --push needs Grafana's URL and API key (config.ini has none)"),
        "{}",
        run.stderr
    );
    config(dir.path(), "ftp://grafana", "k", "");
    let run = push(dir.path());
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: Grafana URL \"ftp://grafana\" is not an http:// or https:// URL\n"
    );
}
