//! The config file: EasyRoCE's `config.ini` and roce-gen's `roce-gen.toml`, found in the working
//! folder or named with `--config`; the plan it names used by `generate`, `validate` and `plan`
//! when none is given; the command line winning over it; unknown keys reported, not fatal; a
//! missing `--config` file and no plan at all being exit 2.

use std::path::Path;

use crate::common::{Book, roce_gen, tmp};

const EASYROCE_INI: &str = "[GRAFANA]\nGRAFANA_URL =\nAPI_KEY =\nDIRECTORY_NAME =\n[COMMANDS]\nAID_path = plans\nAID_file = EasyRoCE-AID-v1.8.xlsm\nprometheus_uid =\n";

/// A folder with the base plan as `plans/EasyRoCE-AID-v1.8.xlsm` and `other.xlsx` (another
/// cluster name, to tell which plan a command read).
fn folder() -> tempfile::TempDir {
    let dir = tmp();
    std::fs::create_dir(dir.path().join("plans")).unwrap();
    Book::base().write(&dir.path().join("plans"), "EasyRoCE-AID-v1.8.xlsm");
    let mut other = Book::base();
    other.key("cluster_name", crate::common::s("other"));
    other.write(dir.path(), "other.xlsx");
    dir
}

fn cluster_of(dir: &Path, args: &[&str]) -> String {
    let run = roce_gen(dir, args);
    assert_eq!(run.code, 0, "{args:?}: {}", run.transcript());
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    plan["cluster"]["cluster_name"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn easyroce_config_ini_names_the_plan_for_generate_validate_and_plan() {
    let dir = folder();
    std::fs::write(dir.path().join("config.ini"), EASYROCE_INI).unwrap();
    let run = roce_gen(dir.path(), &["generate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        !run.stderr.contains("warning"),
        "EasyRoCE's own keys are all known: {}",
        run.stderr
    );
    assert!(dir.path().join("dist/h1.tar.gz").is_file());
    let run = roce_gen(dir.path(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .starts_with("plans/EasyRoCE-AID-v1.8.xlsm: valid plan for cluster t1"),
        "{}",
        run.stdout
    );
    assert_eq!(cluster_of(dir.path(), &["plan"]), "t1");
    // The command line wins: a PLAN, or --sample.
    assert_eq!(cluster_of(dir.path(), &["plan", "other.xlsx"]), "other");
    assert_eq!(cluster_of(dir.path(), &["plan", "--sample"]), "demo");
}

#[test]
fn roce_gen_toml_comes_first_and_paths_are_relative_to_it() {
    let dir = folder();
    std::fs::write(dir.path().join("config.ini"), EASYROCE_INI).unwrap();
    std::fs::write(
        dir.path().join("roce-gen.toml"),
        "[plan]\npath = \"other.xlsx\"\n[output]\ndir = \"bundles\"\n",
    )
    .unwrap();
    assert_eq!(cluster_of(dir.path(), &["plan"]), "other");
    let run = roce_gen(dir.path(), &["generate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(dir.path().join("bundles/h1.tar.gz").is_file());
    // -o wins over [output] dir.
    let run = roce_gen(dir.path(), &["generate", "-o", "mine"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(dir.path().join("mine/h1.tar.gz").is_file());

    // --config from another folder: its relative paths start at the file, not the cwd.
    let elsewhere = tmp();
    let cfg = dir.path().join("roce-gen.toml").display().to_string();
    assert_eq!(
        cluster_of(elsewhere.path(), &["--config", &cfg, "plan"]),
        "other"
    );
    // --config is global: accepted after the subcommand too, and an .ini is read as EasyRoCE's.
    let ini = dir.path().join("config.ini").display().to_string();
    assert_eq!(
        cluster_of(elsewhere.path(), &["plan", "--config", &ini]),
        "t1"
    );
}

#[test]
fn unknown_keys_are_warnings_and_change_nothing() {
    let dir = folder();
    std::fs::write(
        dir.path().join("config.ini"),
        format!("{EASYROCE_INI}CONCURRENCY = 10\n[SSH]\nuser = root\n"),
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "warning: config.ini: [COMMANDS] CONCURRENCY is not a roce-gen setting; ignored\n\
         warning: config.ini: [SSH] user is not a roce-gen setting; ignored\n\
         next: run `roce-gen generate`\n"
    );
    std::fs::remove_file(dir.path().join("config.ini")).unwrap();
    std::fs::write(
        dir.path().join("roce-gen.toml"),
        "[plan]\npath = \"other.xlsx\"\nsheet = \"x\"\n",
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "warning: roce-gen.toml: [plan] sheet is not a roce-gen setting; ignored\n\
         next: run `roce-gen generate`\n"
    );
}

#[test]
fn missing_files_and_no_plan_are_exit_2() {
    let dir = folder();
    // No config and no PLAN: a usage error that says where a plan can come from.
    for cmd in ["generate", "validate", "plan"] {
        let run = roce_gen(dir.path(), &[cmd]);
        assert_eq!(run.code, 2, "{cmd}: {}", run.transcript());
        assert!(
            run.stderr
                .starts_with("error: no plan: name one (PLAN), use --sample")
                && run.stderr.contains("AID_path and AID_file"),
            "{}",
            run.stderr
        );
    }
    // A --config that does not exist.
    let run = roce_gen(
        dir.path(),
        &["--config", "nope.ini", "validate", "other.xlsx"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: nope.ini: no such config file (given with --config)\n"
    );
    // A config whose plan file is missing: the plan's own read error, exit 2.
    std::fs::write(
        dir.path().join("config.ini"),
        "[COMMANDS]\nAID_path = /nonexistent\nAID_file = aid.xlsm\n",
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["generate"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("/nonexistent/aid.xlsm"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("dist").exists());
    // A config naming only the folder names no plan.
    std::fs::write(
        dir.path().join("config.ini"),
        "[COMMANDS]\nAID_path = plans\n",
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["generate"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.starts_with(
            "warning: config.ini: [COMMANDS] AID_path is set but AID_file is not; the config names no plan\nerror: no plan"
        ),
        "{}",
        run.stderr
    );
    // Broken TOML names the file and the place.
    std::fs::remove_file(dir.path().join("config.ini")).unwrap();
    std::fs::write(dir.path().join("roce-gen.toml"), "[plan\npath = 1\n").unwrap();
    let run = roce_gen(dir.path(), &["plan", "other.xlsx"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: roce-gen.toml:1:6: not valid TOML: unclosed table, expected `]`\n"
    );
    // Commands that do not use the config are not stopped by a broken one.
    let run = roce_gen(dir.path(), &["sample", "-o", "s.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}

#[test]
fn a_key_in_a_malformed_config_is_never_printed() {
    const KEY: &str = "glsa_k3yTHATmustNOTshow";
    let toml = [
        format!("[grafana]\nurl = \"https://g\"\napi_key = {KEY}\n"),
        format!("[grafana]\napi_key = \"{KEY}\n"),
        format!("[grafana]\napi_key = \"{KEY}\" # ok\nx = \"y\" \"z\"\n"),
        format!("[grafana]\napi_key = \"{KEY}\" and more\n"),
        format!("[grafana]\napi_key = \"{KEY}\"\napi_key = \"{KEY}\"\n"),
        format!("[grafana]\napi_key = [\"{KEY}\"]\n"),
        format!("[grafana]\napi_key = {{ value = \"{KEY}\" }}\n"),
        format!("[grafana]\napi_key = '''{KEY}\n"),
        format!("[grafana]\napi_key = \"{KEY}\\q\"\n"),
    ];
    let ini = [
        format!("[GRAFANA\nAPI_KEY = {KEY}\n"),
        format!("[GRAFANA]\n= {KEY}\n"),
        format!("[GRAFANA]\nAPI_KEY = {KEY}\n[COMMANDS\n"),
        format!("API_KEY = {KEY}\nAPI_KEY\n"),
    ];
    let cases = toml
        .iter()
        .map(|t| ("roce-gen.toml", t))
        .chain(ini.iter().map(|t| ("config.ini", t)));
    for (file, text) in cases {
        let dir = tmp();
        std::fs::write(dir.path().join(file), text).unwrap();
        for args in [&["dashboard", "--push"][..], &["validate", "--sample"]] {
            let run = roce_gen(dir.path(), args);
            assert_eq!(run.code, 2, "{text:?}: {}", run.transcript());
            // Not the key, nor a part of it.
            assert!(
                !run.stdout.contains("k3y") && !run.stderr.contains("k3y"),
                "{text:?}: the key was printed: {}",
                run.transcript()
            );
            assert!(
                run.stderr.starts_with(&format!("error: {file}:")),
                "{text:?}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn every_command_that_reads_the_config_warns_about_a_shared_key_file_alike() {
    let dir = folder();
    std::fs::write(
        dir.path().join("config.ini"),
        EASYROCE_INI.replace("API_KEY =\n", "API_KEY_FILE = grafana.key\n"),
    )
    .unwrap();
    let key = dir.path().join("grafana.key");
    std::fs::write(&key, "glsa_secret\n").unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let warning = "warning: grafana.key holds the Grafana API key and other users have access to \
                   it (mode 0644); chmod 600 grafana.key\n";
    for args in [
        &["validate"][..],
        &["plan"],
        &["generate", "-q"],
        &["dashboard", "-q", "-o", "d.json"],
    ] {
        let run = roce_gen(dir.path(), args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.transcript());
        assert!(run.stderr.starts_with(warning), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.matches("warning:").count(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("glsa_secret"));
    }
}
