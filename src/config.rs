//! The optional configuration file: roce-gen's own `roce-gen.toml`, or the `config.ini` that
//! EasyRoCE-NC users already keep (`[GRAFANA]` `GRAFANA_URL`, `API_KEY`, `DIRECTORY_NAME`;
//! `[COMMANDS]` `AID_path`, `AID_file`, `prometheus_uid`), read into one [`Config`]. Pure: the
//! caller reads the file (`cmd::Context`) and hands over its name, folder and text.
//!
//! Both formats map onto the same settings, so a user moving from EasyRoCE keeps the file they
//! have. Keys are matched case-insensitively (Python's configparser, which EasyRoCE's file is
//! written for, does the same); an empty value means "not set", as in EasyRoCE's template. A key
//! roce-gen does not know is a warning, never an error: the file may carry settings of other
//! tools. Relative paths are taken from the folder of the config file, so the file means the same
//! wherever roce-gen is started.
//!
//! The file may hold a Grafana API key, so no message quotes the file's text: a syntax error is
//! reported by line, column and kind, never with the offending line (the TOML crate's own message
//! would print it), and a value of the wrong type by its type only.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// The settings a config file gives; every one optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The file the settings come from, as found (for messages).
    pub file: String,
    /// The plan `generate`, `validate` and `plan` use when no PLAN is given.
    pub plan: Option<PathBuf>,
    /// The output folder of `generate` when `-o` is not given.
    pub output_dir: Option<PathBuf>,
    /// Where `dashboard` points its panels and pushes the dashboard.
    pub grafana: Grafana,
    /// Keys that are not settings, and settings that cannot be used: one sentence each,
    /// printed as warnings.
    pub warnings: Vec<String>,
}

/// The Grafana settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Grafana {
    /// Grafana's base URL (`http://grafana:3000`).
    pub url: Option<String>,
    /// A service-account token or API key, sent as `Authorization: Bearer`.
    pub api_key: Option<String>,
    /// A file holding the key (its contents trimmed), which wins over `api_key`; read only when
    /// the key is needed (`cmd::dashboard`).
    pub api_key_file: Option<PathBuf>,
    /// The folder (by title) the dashboard goes into; created when missing.
    pub folder: Option<String>,
    /// The uid of the Prometheus data source the panels query.
    pub datasource_uid: Option<String>,
}

// By hand, so that printing a config for debugging does not print the key.
impl std::fmt::Debug for Grafana {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grafana")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("api_key_file", &self.api_key_file)
            .field("folder", &self.folder)
            .field("datasource_uid", &self.datasource_uid)
            .finish()
    }
}

/// The two formats, told apart by the file name: `.toml` is roce-gen's own, anything else is
/// read as INI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `roce-gen.toml`.
    Toml,
    /// EasyRoCE's `config.ini`.
    Ini,
}

impl Kind {
    /// The format of a file, by its extension.
    pub fn of(path: &Path) -> Kind {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => Kind::Toml,
            _ => Kind::Ini,
        }
    }
}

/// The file names looked for in the working folder, in order, when `--config` is not given.
pub(crate) const DEFAULT_FILES: [&str; 2] = ["roce-gen.toml", "config.ini"];

/// Parses a config file's text. `file` names it in messages; relative paths in it are joined to
/// `dir`, the folder that holds it. `Err` when the text is not the format at all, or a value has
/// the wrong type: the user must fix the file, not have half of it ignored.
pub fn parse(file: &str, dir: &Path, kind: Kind, text: &str) -> Result<Config> {
    // Windows editors (Notepad) start UTF-8 files with a byte order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut config = Config {
        file: file.to_string(),
        ..Config::default()
    };
    match kind {
        Kind::Toml => parse_toml(&mut config, dir, text)?,
        Kind::Ini => parse_ini(&mut config, dir, text)?,
    }
    let grafana = &config.grafana;
    if grafana.api_key.is_some() && grafana.api_key_file.is_some() {
        config.warnings.push(format!(
            "{file}: both an API key and an API key file are set; the key file is used"
        ));
    }
    Ok(config)
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// An empty or blank value is no value.
fn set(value: &str) -> Option<String> {
    let v = value.trim();
    (!v.is_empty()).then(|| v.to_string())
}

fn parse_toml(config: &mut Config, dir: &Path, text: &str) -> Result<()> {
    let file = config.file.clone();
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        // `message()` is the kind alone; the error's `Display` would quote the line, which may
        // be the key's.
        Err(e) => {
            let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
            bail!("{file}:{line}:{column}: not valid TOML: {}", e.message())
        }
    };
    for (section, value) in &table {
        let Some(keys) = value.as_table() else {
            config.warnings.push(format!(
                "{file}: {section} is not a roce-gen setting (settings are in [plan], [output] and [grafana]); ignored"
            ));
            continue;
        };
        for (key, value) in keys {
            let text = || -> Result<Option<String>> {
                match value.as_str() {
                    Some(s) => Ok(set(s)),
                    None => bail!(
                        "{file}: [{section}] {key} must be a string, not {}",
                        value.type_str()
                    ),
                }
            };
            match (
                section.to_ascii_lowercase().as_str(),
                key.to_ascii_lowercase().as_str(),
            ) {
                ("plan", "path") => config.plan = text()?.map(|p| dir.join(p)),
                ("output", "dir") => config.output_dir = text()?.map(|p| dir.join(p)),
                ("grafana", "url") => config.grafana.url = text()?,
                ("grafana", "api_key") => config.grafana.api_key = text()?,
                ("grafana", "api_key_file") => {
                    config.grafana.api_key_file = text()?.map(|p| dir.join(p));
                }
                ("grafana", "folder") => config.grafana.folder = text()?,
                ("grafana", "datasource_uid") => config.grafana.datasource_uid = text()?,
                _ => config.warnings.push(unknown(&file, section, key)),
            }
        }
    }
    Ok(())
}

fn unknown(file: &str, section: &str, key: &str) -> String {
    format!("{file}: [{section}] {key} is not a roce-gen setting; ignored")
}

fn parse_ini(config: &mut Config, dir: &Path, text: &str) -> Result<()> {
    let file = config.file.clone();
    // Values are taken literally: no quote stripping and no backslash escapes, as Python's
    // configparser (which EasyRoCE's file is written for) reads them.
    let options = ini::ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        ..ini::ParseOption::default()
    };
    let ini = match ini::Ini::load_from_str_opt(text, options) {
        Ok(i) => i,
        // The parser's messages name the characters it expected, never the text it read.
        Err(e) => bail!(
            "{file}:{}:{}: not a valid INI file: {}",
            e.line,
            e.col,
            e.msg
        ),
    };
    let (mut aid_path, mut aid_file) = (None, None);
    for (section, props) in &ini {
        for (key, value) in props.iter() {
            let Some(section) = section else {
                config.warnings.push(format!(
                    "{file}: {key} (before any [SECTION]) is not a roce-gen setting; ignored"
                ));
                continue;
            };
            match (
                section.to_ascii_uppercase().as_str(),
                key.to_ascii_lowercase().as_str(),
            ) {
                ("COMMANDS", "aid_path") => aid_path = set(value),
                ("COMMANDS", "aid_file") => aid_file = set(value),
                ("COMMANDS", "prometheus_uid") => config.grafana.datasource_uid = set(value),
                ("GRAFANA", "grafana_url") => config.grafana.url = set(value),
                ("GRAFANA", "api_key") => config.grafana.api_key = set(value),
                ("GRAFANA", "api_key_file") => {
                    config.grafana.api_key_file = set(value).map(|p| dir.join(p));
                }
                ("GRAFANA", "directory_name") => config.grafana.folder = set(value),
                _ => config.warnings.push(unknown(&file, section, key)),
            }
        }
    }
    // EasyRoCE names the plan by its folder and its file name.
    config.plan = match (aid_path, aid_file) {
        (Some(folder), Some(name)) => Some(dir.join(folder).join(name)),
        (None, Some(name)) => Some(dir.join(name)),
        (Some(_), None) => {
            config.warnings.push(format!(
                "{file}: [COMMANDS] AID_path is set but AID_file is not; the config names no plan"
            ));
            None
        }
        (None, None) => None,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EASYROCE: &str = "[GRAFANA]\nGRAFANA_URL = http://grafana.lab:3000\nAPI_KEY = glsa_abc\nDIRECTORY_NAME = RoCE\n[COMMANDS]\nAID_path = /root/EasyRoCE\nAID_file = EasyRoCE-AID-v1.8.xlsm\nprometheus_uid = P1809F7CD0C75ACF3\n";

    fn ini(text: &str) -> Config {
        parse("config.ini", Path::new("/etc/rg"), Kind::Ini, text).unwrap()
    }

    #[test]
    fn easyroce_config_maps_onto_the_settings() {
        let c = ini(EASYROCE);
        assert_eq!(
            c.plan.as_deref(),
            Some(Path::new("/root/EasyRoCE/EasyRoCE-AID-v1.8.xlsm"))
        );
        assert_eq!(c.grafana.url.as_deref(), Some("http://grafana.lab:3000"));
        assert_eq!(c.grafana.api_key.as_deref(), Some("glsa_abc"));
        assert_eq!(c.grafana.folder.as_deref(), Some("RoCE"));
        assert_eq!(
            c.grafana.datasource_uid.as_deref(),
            Some("P1809F7CD0C75ACF3")
        );
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn ini_keys_and_sections_match_in_any_case_and_empty_is_unset() {
        let c = ini("[grafana]\ngrafana_url =\n[Commands]\naid_FILE = plan.xlsx\n");
        assert_eq!(c.grafana.url, None);
        assert_eq!(c.plan.as_deref(), Some(Path::new("/etc/rg/plan.xlsx")));
    }

    #[test]
    fn unknown_keys_are_warnings_with_their_section() {
        let c = ini("top = 1\n[GRAFANA]\nTIMEOUT = 3\n[EXTRA]\nX = y\n");
        assert_eq!(
            c.warnings,
            [
                "config.ini: top (before any [SECTION]) is not a roce-gen setting; ignored",
                "config.ini: [GRAFANA] TIMEOUT is not a roce-gen setting; ignored",
                "config.ini: [EXTRA] X is not a roce-gen setting; ignored",
            ]
        );
    }

    #[test]
    fn aid_path_alone_names_no_plan() {
        let c = ini("[COMMANDS]\nAID_path = /root/EasyRoCE\n");
        assert_eq!(c.plan, None);
        assert_eq!(c.warnings.len(), 1);
    }

    #[test]
    fn values_are_literal() {
        let c = ini("[COMMANDS]\nAID_path = C:\\plans\nAID_file = a b.xlsx\n");
        assert_eq!(
            c.plan.as_deref(),
            Some(Path::new("/etc/rg/C:\\plans/a b.xlsx"))
        );
    }

    #[test]
    fn toml_settings_relative_paths_and_unknown_keys() {
        let text = "\u{feff}[plan]\npath = \"plans/aid.xlsx\"\n[output]\ndir = \"/srv/dist\"\n[grafana]\nurl = \"https://g\"\nfolder = \"RoCE\"\ndatasource_uid = \"prom\"\napi_key = \"\"\ncolour = \"blue\"\n[other]\nx = 1\n";
        let c = parse("roce-gen.toml", Path::new("conf"), Kind::Toml, text).unwrap();
        assert_eq!(c.plan.as_deref(), Some(Path::new("conf/plans/aid.xlsx")));
        assert_eq!(c.output_dir.as_deref(), Some(Path::new("/srv/dist")));
        assert_eq!(c.grafana.api_key, None);
        assert_eq!(c.grafana.datasource_uid.as_deref(), Some("prom"));
        assert_eq!(
            c.warnings,
            [
                "roce-gen.toml: [grafana] colour is not a roce-gen setting; ignored",
                "roce-gen.toml: [other] x is not a roce-gen setting; ignored",
            ]
        );
    }

    #[test]
    fn bad_toml_and_wrong_types_are_errors_naming_the_file() {
        let err = parse("r.toml", Path::new(""), Kind::Toml, "[plan\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.toml:1:6: not valid TOML: unclosed table, expected `]`"
        );
        let err = parse("r.toml", Path::new(""), Kind::Toml, "[plan]\npath = 3\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.toml: [plan] path must be a string, not integer"
        );
    }

    /// Each malformed line holding the key, and where the error is reported.
    const MALFORMED_TOML: [(&str, &str); 12] = [
        ("api_key = glsa_SECRETKEY\n", "2:11"),
        ("api_key = \"glsa_SECRETKEY\n", "2:26"),
        ("api_key = 'glsa_SECRETKEY\n", "2:26"),
        ("api_key = \"\"\"glsa_SECRETKEY\n", "3:1"),
        ("api_key = \"glsa_SECRETKEY\" trailing\n", "2:28"),
        (
            "api_key = \"glsa_SECRETKEY\"\napi_key = \"glsa_SECRETKEY\"\n",
            "3:1",
        ),
        ("api_key = \"glsa_\\qSECRETKEY\"\n", "2:18"),
        ("api_key = \"glsa_\u{7}SECRETKEY\"\n", "2:17"),
        ("api_key = 12SECRETKEY\n", "2:13"),
        ("api_key = [\"glsa_SECRETKEY\"\n", "2:28"),
        ("api_key = { k = \"glsa_SECRETKEY\" \n", "2:33"),
        ("api_key = glsa SECRETKEY\n", "2:11"),
    ];

    #[test]
    fn a_malformed_toml_line_holding_the_key_is_located_but_never_quoted() {
        for (line, at) in MALFORMED_TOML {
            let text = format!("[grafana]\n{line}");
            let err = parse("r.toml", Path::new(""), Kind::Toml, &text).unwrap_err();
            let shown = format!("{err:#} {err:?}");
            assert!(!shown.contains("SECRET"), "{text:?}: {shown}");
            assert!(
                err.to_string()
                    .starts_with(&format!("r.toml:{at}: not valid TOML: ")),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn a_key_of_the_wrong_type_is_reported_by_its_type_alone() {
        for (value, kind) in [
            ("[\"glsa_SECRETKEY\"]", "array"),
            ("{ k = \"glsa_SECRETKEY\" }", "table"),
            ("1234567890", "integer"),
            ("true", "boolean"),
        ] {
            let text = format!("[grafana]\napi_key = {value}\n");
            let err = parse("r.toml", Path::new(""), Kind::Toml, &text).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("r.toml: [grafana] api_key must be a string, not {kind}")
            );
        }
    }

    #[test]
    fn a_malformed_ini_is_located_but_never_quoted() {
        for (text, at) in [
            ("[GRAFANA\nAPI_KEY = glsa_SECRETKEY\n", "3:1"),
            ("[GRAFANA]\n= glsa_SECRETKEY\n", "2:2"),
            ("[GRAFANA]\nAPI_KEY = glsa_SECRETKEY\n[COMMANDS\n", "4:1"),
            ("API_KEY = glsa_SECRETKEY\n[GRAFANA\n", "3:1"),
        ] {
            let err = parse("config.ini", Path::new(""), Kind::Ini, text).unwrap_err();
            let shown = format!("{err:#} {err:?}");
            assert!(!shown.contains("SECRET"), "{text:?}: {shown}");
            assert!(
                err.to_string()
                    .starts_with(&format!("config.ini:{at}: not a valid INI file: ")),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn the_key_file_is_a_path_from_the_config_folder_and_wins_over_the_key() {
        let text = "[grafana]\napi_key = \"inline\"\napi_key_file = \"keys/grafana\"\n";
        let c = parse("roce-gen.toml", Path::new("/etc/rg"), Kind::Toml, text).unwrap();
        assert_eq!(
            c.grafana.api_key_file.as_deref(),
            Some(Path::new("/etc/rg/keys/grafana"))
        );
        assert_eq!(
            c.warnings,
            ["roce-gen.toml: both an API key and an API key file are set; the key file is used"]
        );
        let c = ini("[GRAFANA]\nAPI_KEY_FILE = /run/secrets/grafana\n");
        assert_eq!(
            c.grafana.api_key_file.as_deref(),
            Some(Path::new("/run/secrets/grafana"))
        );
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn debug_output_hides_the_key() {
        let c = ini(EASYROCE);
        let shown = format!("{c:?}");
        assert!(!shown.contains("glsa_abc"), "{shown}");
        assert!(shown.contains("api_key: Some(\"***\")"), "{shown}");
    }

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(Kind::of(Path::new("x/roce-gen.TOML")), Kind::Toml);
        assert_eq!(Kind::of(Path::new("config.ini")), Kind::Ini);
        assert_eq!(Kind::of(Path::new("settings")), Kind::Ini);
    }
}
