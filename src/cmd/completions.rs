//! `roce-gen completions SHELL`: the shell completion script clap_complete writes for the
//! command line of [`crate::cli`], on stdout.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap_complete::Shell;

/// Runs `completions`.
pub(crate) fn run(shell: Shell) -> Result<ExitCode> {
    let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "roce-gen", &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    if shell == Shell::Bash {
        // clap_complete spells the state of a hyphenated program's subcommands two ways (its
        // issue 6421): without this, nothing after `roce-gen ingest` completes.
        script = script.replace("roce__subcmd__gen", "roce__gen");
    }
    std::io::stdout().write_all(script.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
