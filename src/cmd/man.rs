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

fn render(command: clap::Command, source: &str, see_also: bool) -> Result<Page> {
    let man = clap_mangen::Man::new(command).source(source);
    let file = man.get_filename();
    let mut roff = Vec::new();
    man.render(&mut roff)
        .with_context(|| format!("rendering {file}"))?;
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
