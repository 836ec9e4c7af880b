//! `lacuna`, the command line of the Lacuna inference engine.

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Local inference engine for diffusion language models.
#[derive(Parser)]
#[command(name = "lacuna", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version of every Lacuna crate this binary was built from.
    Version,
}

fn main() {
    if let Err(err) = run(Cli::parse()) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Version => {
            println!("lacuna {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
