//! The `roce-gen` binary: parses the command line, runs it, and maps the outcome to the exit status
//! the README's Commands section documents (0 success, 1 the input is wrong, 2 roce-gen could not
//! run).

use std::io::ErrorKind;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = roce_gen::cli::Cli::parse();
    match roce_gen::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`roce-gen plan x.xlsx | head`) is the reader's choice, not a failure.
            let broken_pipe = err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| {
                        c.downcast_ref::<serde_json::Error>()
                            .and_then(serde_json::Error::io_error_kind)
                    })
                    == Some(ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            roce_gen::print_error(&err);
            ExitCode::from(2)
        }
    }
}
