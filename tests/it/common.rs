//! Test helpers: a small in-memory workbook ([`Book`]) that tests edit cell by cell and write as
//! `.xlsx`/`.xlsm`, and [`roce_gen`] to run the binary in a folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use rust_xlsxwriter::Workbook;

/// Fails the test unless `tool` is on the PATH: the tools the tests run are required, never
/// skipped (a skipped check would read as a passing one); `.ci/run` installs them.
pub(crate) fn require(tool: &str) {
    assert!(
        on_path(tool),
        "{tool} is not installed: run `bash .ci/run`, which installs it"
    );
}

/// Whether a prerequisite of a test is there. When it is not, the test fails in CI (`CI` set, as
/// `.ci/run` runs it, which installs everything) and elsewhere says loudly what was not checked:
/// `None` then, so the test returns without reporting a pass it did not earn.
pub(crate) fn prerequisite(found: bool, missing: &str, not_checked: &str) -> Option<()> {
    if found {
        return Some(());
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{missing} (`bash .ci/run` installs it)"
    );
    eprintln!("NOT RUN: {missing}; {not_checked} was not checked");
    None
}

/// A site's signing key, made by the system's openssl in `dir` as a site makes one (RSA 2048,
/// quick to make): the private and the public key's paths, `NAME.pem` and `NAME.pub.pem`.
pub(crate) fn site_key(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    let openssl = |args: &[&str], out: &Path| {
        let run = Command::new("openssl")
            .args(args)
            .arg(out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    let rsa = [
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
    ];
    openssl(&rsa, &key);
    openssl(
        &["pkey", "-pubout", "-in", &key.display().to_string(), "-out"],
        &public,
    );
    (key, public)
}

/// Whether `program` is on the PATH.
pub(crate) fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether the system Python (the one `.ci/run` installs Debian modules for) imports `module`.
pub(crate) fn python_has(module: &str) -> bool {
    Command::new("/usr/bin/python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One cell of a test workbook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum C {
    /// Text.
    S(String),
    /// A number (Excel stores all numbers as floats).
    N(f64),
    /// A boolean.
    B(bool),
    /// Nothing.
    E,
    /// A formula and its saved result (rust_xlsxwriter always saves one; formulas without a
    /// saved result come from the openpyxl fixture).
    F(&'static str, &'static str),
}

/// Text cell.
pub(crate) fn s(text: &str) -> C {
    C::S(text.to_string())
}

/// One sheet: its name and rows, the header first.
#[derive(Debug, Clone)]
pub(crate) struct Sheet {
    pub(crate) name: String,
    pub(crate) rows: Vec<Vec<C>>,
}

/// A workbook under construction.
#[derive(Debug, Clone)]
pub(crate) struct Book {
    pub(crate) sheets: Vec<Sheet>,
    /// Merged ranges (first row, first col, last row, last col) per sheet name.
    pub(crate) merges: Vec<(String, (u32, u16, u32, u16))>,
}

fn row(cells: &[&str]) -> Vec<C> {
    cells
        .iter()
        .map(|c| if c.is_empty() { C::E } else { s(c) })
        .collect()
}

impl Book {
    /// A valid two-host plan with two NICs each, every optional column filled.
    pub(crate) fn base() -> Self {
        let cluster = vec![
            row(&["key", "value"]),
            row(&["cluster_name", "t1"]),
            row(&["trust", "dscp"]),
            vec![s("mtu"), C::N(4200.0)],
            vec![s("pfc_priorities"), C::N(3.0)],
            vec![s("ecn_priorities"), C::N(3.0)],
            row(&["persistence", "yes"]),
        ];
        let servers = vec![
            row(&["hostname", "mgmt_ip", "bmc_ip", "group"]),
            row(&["h1", "10.0.0.1", "10.0.1.1", "g1"]),
            row(&["h2", "10.0.0.2", "10.0.1.2", "g1"]),
        ];
        let mut nics = vec![row(&[
            "hostname",
            "ib_dev",
            "netdev",
            "ip",
            "gateway",
            "mtu",
            "rail",
            "pci",
            "mac",
            "switch",
            "switch_port",
        ])];
        for h in 1..=2 {
            for r in 0..2 {
                nics.push(vec![
                    C::S(format!("h{h}")),
                    C::S(format!("mlx5_{r}")),
                    C::S(format!("ens{}f0np0", r + 1)),
                    C::S(format!("10.1.{r}.{h}/24")),
                    C::S(format!("10.1.{r}.254")),
                    C::E,
                    C::N(f64::from(r)),
                    C::S(format!("0000:{:02x}:00.0", 0x1a + r)),
                    C::S(format!("b8:00:00:00:0{h}:0{r}")),
                    C::S(format!("leaf-{}", r + 1)),
                    C::S(format!("Eth1/{h}")),
                ]);
            }
        }
        Book {
            sheets: vec![
                Sheet {
                    name: "Cluster".into(),
                    rows: cluster,
                },
                Sheet {
                    name: "Servers".into(),
                    rows: servers,
                },
                Sheet {
                    name: "NICs".into(),
                    rows: nics,
                },
            ],
            merges: Vec::new(),
        }
    }

    /// A plan of `n` hosts `h1…hn` with two NICs each.
    pub(crate) fn hosts(n: usize) -> Book {
        let mut book = Book::base();
        let servers = book.sheet("Servers");
        let template = servers.rows[1].clone();
        servers.rows.truncate(1);
        for h in 1..=n {
            let mut row = template.clone();
            row[0] = C::S(format!("h{h}"));
            row[1] = C::S(format!("10.0.0.{h}"));
            row[2] = C::S(format!("10.0.1.{h}"));
            servers.rows.push(row);
        }
        let nics = book.sheet("NICs");
        let template: Vec<Vec<C>> = nics.rows[1..3].to_vec();
        nics.rows.truncate(1);
        for h in 1..=n {
            for (r, t) in template.iter().enumerate() {
                let mut row = t.clone();
                row[0] = C::S(format!("h{h}"));
                row[3] = C::S(format!("10.1.{r}.{h}/24"));
                row[8] = C::S(format!("b8:00:00:00:{h:02x}:0{r}"));
                row[10] = C::S(format!("Eth1/{h}"));
                nics.rows.push(row);
            }
        }
        book
    }

    /// The sheet called `name`.
    pub(crate) fn sheet(&mut self, name: &str) -> &mut Sheet {
        self.sheets
            .iter_mut()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no sheet {name}"))
    }

    /// Removes a sheet.
    pub(crate) fn drop_sheet(&mut self, name: &str) {
        self.sheets.retain(|s| s.name != name);
    }

    /// Sets a key of the Cluster sheet, adding the row if the key is not there yet.
    pub(crate) fn key(&mut self, key: &str, value: C) {
        let sheet = self.sheet("Cluster");
        match sheet.rows.iter_mut().find(|r| r[0] == s(key)) {
            Some(r) => r[1] = value,
            None => sheet.rows.push(vec![s(key), value]),
        }
    }

    /// Writes the book; `.xlsm` gets a real VBA project.
    pub(crate) fn write(&self, dir: &Path, file: &str) -> PathBuf {
        self.write_with(dir, file, |_, _| {})
    }

    /// Writes the book, letting `edit` change each worksheet (by sheet name) once it is filled.
    pub(crate) fn write_with(
        &self,
        dir: &Path,
        file: &str,
        edit: impl Fn(&str, &mut rust_xlsxwriter::Worksheet),
    ) -> PathBuf {
        let mut wb = Workbook::new();
        // A fixed creation time makes the workbook, and so plan_sha256, the same every run.
        let created = rust_xlsxwriter::ExcelDateTime::from_ymd(2026, 1, 1).unwrap();
        wb.set_properties(&rust_xlsxwriter::DocProperties::new().set_creation_datetime(&created));
        if file.ends_with(".xlsm") {
            wb.add_vba_project(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/vbaProject.bin"),
            )
            .expect("vba project");
        }
        for sheet in &self.sheets {
            let ws = wb.add_worksheet();
            ws.set_name(&sheet.name).expect("sheet name");
            for (r, cells) in (0u32..).zip(&sheet.rows) {
                for (c, cell) in (0u16..).zip(cells) {
                    match cell {
                        C::S(t) => drop(ws.write_string(r, c, t).unwrap()),
                        C::N(n) => drop(ws.write_number(r, c, *n).unwrap()),
                        C::B(b) => drop(ws.write_boolean(r, c, *b).unwrap()),
                        C::F(f, result) => {
                            let formula = rust_xlsxwriter::Formula::new(*f).set_result(*result);
                            ws.write_formula(r, c, formula).unwrap();
                        }
                        C::E => {}
                    }
                }
            }
            for (name, (r1, c1, r2, c2)) in &self.merges {
                if name == &sheet.name {
                    let top = sheet.rows[*r1 as usize][usize::from(*c1)].clone();
                    let C::S(text) = top else {
                        panic!("merge a text cell")
                    };
                    ws.merge_range(*r1, *c1, *r2, *c2, &text, &rust_xlsxwriter::Format::new())
                        .unwrap();
                }
            }
            edit(&sheet.name, ws);
        }
        let path = dir.join(file);
        wb.save(&path).expect("write workbook");
        path
    }
}

impl Sheet {
    /// The index of the column whose header (row 0) is `header`.
    pub(crate) fn col(&self, header: &str) -> usize {
        self.rows[0]
            .iter()
            .position(|c| *c == s(header))
            .unwrap_or_else(|| panic!("no column {header}"))
    }

    /// Sets the cell of column `header` in data row `row` (1 is the first row under the header).
    pub(crate) fn set(&mut self, row: usize, header: &str, value: C) {
        let col = self.col(header);
        self.rows[row][col] = value;
    }

    /// Renames a header.
    pub(crate) fn rename(&mut self, header: &str, to: &str) {
        let col = self.col(header);
        self.rows[0][col] = s(to);
    }

    /// Removes a column.
    pub(crate) fn drop_column(&mut self, header: &str) {
        let col = self.col(header);
        for r in &mut self.rows {
            if col < r.len() {
                r.remove(col);
            }
        }
    }
}

/// What a run of the binary did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// Exit code and both streams, for a snapshot.
    pub(crate) fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `roce-gen ARGS` in `dir`.
pub(crate) fn roce_gen(dir: &Path, args: &[&str]) -> Run {
    roce_gen_env(dir, args, &[])
}

/// Runs `roce-gen ARGS` in `dir` with these environment variables set. The variables roce-gen
/// reads are otherwise cleared, so that the caller's environment cannot change a test.
pub(crate) fn roce_gen_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_roce-gen"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("ROCE_GEN_GRAFANA_API_KEY")
        .env_remove("ROCE_GEN_KEY_PASSPHRASE")
        .envs(env.iter().copied())
        .output()
        .expect("run roce-gen");
    Run {
        code: out.status.code().expect("exit code, not a signal"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// A fresh temporary folder.
pub(crate) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The normalized plan JSON of `book`, asserting the plan is valid.
pub(crate) fn plan_json(book: &Book) -> String {
    let dir = tmp();
    book.write(dir.path(), "plan.xlsx");
    let run = roce_gen(dir.path(), &["plan", "plan.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    run.stdout
}

/// Asserts that `text` is the snapshot `tests/it/snapshots/NAME.snap` (`INSTA_UPDATE=always
/// cargo test` writes it after an intended change; review the diff).
pub(crate) fn snapshot(name: &str, text: impl std::fmt::Display) {
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false, snapshot_suffix => "" }, {
        insta::assert_snapshot!(name, text.to_string());
    });
}
