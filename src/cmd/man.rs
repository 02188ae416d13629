//! `roce-gen man [SUBCOMMAND] [--dir DIR]`: the manual pages, generated from the clap
//! definitions: roce-gen(1), whose SUBCOMMANDS section names one roce-gen-SUBCOMMAND(1) page per
//! subcommand, and those pages, each ending with a SEE ALSO back to roce-gen(1).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

/// One page: its file name (`roce-gen-generate.1`) and its roff.
pub(crate) struct Page {
    /// The file name, section included.
    pub file: String,
    /// The page in roff.
    pub roff: Vec<u8>,
}

/// Every page: roce-gen(1) first, then one per subcommand in the order `--help` lists them.
fn pages() -> Result<Vec<Page>> {
    // No `help` subcommand in the pages: roce-gen(1) would name a roce-gen-help(1) that has
    // nothing to say beyond --help.
    let mut command =
        <crate::cli::Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    // Building propagates the global options into the subcommands and names each of them
    // `roce-gen-NAME`, the page's title.
    command.build();
    let source = format!("roce-gen {}", env!("CARGO_PKG_VERSION"));
    let mut pages = vec![render(command.clone(), &source, false)?];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(render(sub.clone(), &source, true)?);
    }
    Ok(pages)
}

/// What a page says beyond the clap definitions: its EXIT STATUS (the README's Commands table
/// gives the same words, which a test holds), EXAMPLES and FILES.
pub(crate) struct Extra {
    /// The subcommand, or `` for roce-gen(1).
    pub command: &'static str,
    pub exit: &'static str,
    /// (what it does, the command line).
    pub examples: &'static [(&'static str, &'static str)],
    /// (path, what it is).
    pub files: &'static [(&'static str, &'static str)],
}

const CONFIG: (&str, &str) = (
    "roce-gen.toml, config.ini",
    "the config file in the working folder (or --config FILE): the plan, the output folder, the Grafana settings",
);

/// Every page's extra sections.
pub(crate) const EXTRAS: &[Extra] = &[
    Extra {
        command: "",
        exit: "0 success; 1 the input is wrong (an invalid plan, a host not ready, a file that does not verify); 2 roce-gen could not run (a usage error, a missing or unreadable file, an output folder it may not replace)",
        examples: &[
            ("A plan to fill in", "roce-gen sample -o plan.xlsx"),
            (
                "Every problem of the plan, with its sheet and cell",
                "roce-gen validate plan.xlsx",
            ),
            (
                "One bundle per host in dist/",
                "roce-gen generate plan.xlsx",
            ),
            (
                "On each host, as root",
                "bash /media/usb/roce/run-here.sh precheck",
            ),
            (
                "The results back as one report",
                "roce-gen ingest dist/results --plan plan.xlsx",
            ),
        ],
        files: &[CONFIG, ("dist/", "the default output folder of generate")],
    },
    Extra {
        command: "sample",
        exit: "0",
        examples: &[("The sample plan to fill in", "roce-gen sample -o plan.xlsx")],
        files: &[],
    },
    Extra {
        command: "validate",
        exit: "0 valid, 1 invalid (with `--strict`, also when it warns)",
        examples: &[
            (
                "Every problem, with file, sheet, cell and value",
                "roce-gen validate plan.xlsx",
            ),
            (
                "For a pipeline: warnings fail too, as JSON",
                "roce-gen validate plan.xlsx --strict --format json",
            ),
        ],
        files: &[CONFIG],
    },
    Extra {
        command: "generate",
        exit: "0, 1 invalid plan (nothing written)",
        examples: &[
            (
                "One bundle per host in dist/",
                "roce-gen generate plan.xlsx",
            ),
            (
                "Two hosts again, the others kept",
                "roce-gen generate plan.xlsx --hosts gpu-001,gpu-002",
            ),
            (
                "Try it without a plan",
                "roce-gen generate --sample -o /tmp/dist",
            ),
        ],
        files: &[
            CONFIG,
            ("DIR/<host>.tar.gz", "one bundle per host"),
            (
                "DIR/index.json, DIR/SHA256SUMS",
                "what was generated, and the sums to check it",
            ),
            (
                "DIR/run-here.sh, DIR/ansible/",
                "running the bundles from the folder, or with Ansible",
            ),
        ],
    },
    Extra {
        command: "ingest",
        exit: "0 every planned host is ready, 1 a host is not or a file is unreadable; `--format prometheus -o FILE` is 0 once the file is written",
        examples: &[
            (
                "The cluster's verdict, on the console",
                "roce-gen ingest dist/results --plan plan.xlsx",
            ),
            (
                "The page for the customer",
                "roce-gen ingest dist/results --plan plan.xlsx --format html -o report.html",
            ),
            (
                "For CI",
                "roce-gen ingest results.tar.gz --plan plan.xlsx --format junit -o junit.xml",
            ),
        ],
        files: &[
            CONFIG,
            (
                "<host>.<phase>.json",
                "the result files the bundles write, in folders or .tar.gz archives",
            ),
        ],
    },
    Extra {
        command: "verify",
        exit: "0, 1 a file does not match",
        examples: &[
            (
                "An output folder, before copying it to the hosts",
                "roce-gen verify dist",
            ),
            (
                "A tarball and an unpacked bundle",
                "roce-gen verify gpu-001.tar.gz /opt/bundles/gpu-001",
            ),
        ],
        files: &[],
    },
    Extra {
        command: "plan",
        exit: "0, 1 invalid",
        examples: &[(
            "The plan as JSON, which roce-gen also reads",
            "roce-gen plan plan.xlsx > plan.json",
        )],
        files: &[CONFIG],
    },
    Extra {
        command: "dashboard",
        exit: "0, 1 Grafana refused the upload",
        examples: &[
            (
                "A dashboard to import offline",
                "roce-gen dashboard -o board.json",
            ),
            (
                "Uploaded",
                "roce-gen dashboard --push --grafana-url https://grafana.example",
            ),
        ],
        files: &[CONFIG],
    },
    Extra {
        command: "alerts",
        exit: "0, 1 invalid plan",
        examples: &[(
            "Alerting rules for Prometheus",
            "roce-gen alerts plan.xlsx -o roce-gen.rules.yml",
        )],
        files: &[CONFIG],
    },
    Extra {
        command: "completions",
        exit: "0",
        examples: &[(
            "Completion for bash",
            "roce-gen completions bash > /etc/bash_completion.d/roce-gen",
        )],
        files: &[],
    },
    Extra {
        command: "man",
        exit: "0, 2 no such subcommand",
        examples: &[(
            "Every page, for man(1)",
            "roce-gen man --dir /usr/local/share/man/man1",
        )],
        files: &[],
    },
];

/// A line of running text in roff: backslashes doubled, minus signs escaped, a leading `.` or
/// `'` protected.
fn roff_text(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// EXIT STATUS, EXAMPLES and FILES of the page of `command`.
fn extra_sections(command: &str) -> String {
    let Some(e) = EXTRAS.iter().find(|e| e.command == command) else {
        return String::new();
    };
    let mut out = format!(
        ".SH \"EXIT STATUS\"\n{}\n",
        roff_text(&e.exit.replace('`', ""))
    );
    if !e.examples.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (what, line) in e.examples {
            out.push_str(&format!(
                ".PP\n{}:\n.RS\n.nf\n{}\n.fi\n.RE\n",
                roff_text(what),
                roff_text(line)
            ));
        }
    }
    if !e.files.is_empty() {
        out.push_str(".SH FILES\n");
        for (path, what) in e.files {
            out.push_str(&format!(".TP\n{}\n{}\n", roff_text(path), roff_text(what)));
        }
    }
    out
}

fn render(command: clap::Command, source: &str, see_also: bool) -> Result<Page> {
    // Subcommands have their page's SEE ALSO; roce-gen(1)'s extras are under "".
    let name = if see_also {
        command.get_name().to_string()
    } else {
        String::new()
    };
    let man = clap_mangen::Man::new(command).source(source);
    let file = man.get_filename();
    let mut roff = Vec::new();
    man.render(&mut roff)
        .with_context(|| format!("rendering {file}"))?;
    roff.extend_from_slice(extra_sections(&name).as_bytes());
    if see_also {
        roff.extend_from_slice(b".SH \"SEE ALSO\"\nroce\\-gen(1)\n");
    }
    let roff = ascii(&String::from_utf8_lossy(&roff)).into_bytes();
    Ok(Page { file, roff })
}

/// The page in ASCII: every other character (the help's `…`, `✅`) as the `\[uXXXX]` escape that
/// groff and mandoc read, so that no formatter has to guess the encoding.
fn ascii(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for c in roff.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    out
}

/// Runs `man`: one page on stdout (roce-gen(1), or SUBCOMMAND's), or every page into `dir`.
pub(crate) fn run(subcommand: Option<&str>, dir: Option<&Path>) -> Result<ExitCode> {
    let pages = pages()?;
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for page in &pages {
            let path = dir.join(&page.file);
            crate::files::write_file_atomic(&path, &page.roff, true)?;
            super::console::detail(&format!("wrote {}", path.display()));
        }
        super::console::say(&format!(
            "wrote {} manual pages in {}",
            pages.len(),
            dir.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let wanted = match subcommand {
        None => "roce-gen.1".to_string(),
        Some(name) => format!("roce-gen-{name}.1"),
    };
    let Some(page) = pages.iter().find(|p| p.file == wanted) else {
        let names: Vec<&str> = pages
            .iter()
            .filter_map(|p| p.file.strip_prefix("roce-gen-")?.strip_suffix(".1"))
            .collect();
        bail!(
            "no manual page for '{}': the subcommands are {}",
            subcommand.unwrap_or_default(),
            names.join(", ")
        );
    };
    std::io::Write::write_all(&mut std::io::stdout(), &page.roff)?;
    Ok(ExitCode::SUCCESS)
}
