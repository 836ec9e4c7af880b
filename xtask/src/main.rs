//! `cargo xtask`: repository tasks.
//!
//! - `bench-render`: regenerates, from `bench-results/`, the full benchmark table and the
//!   headline's detail in `bench-results/README.md` and the headline table (one row per
//!   workload family) in `README.md`.
//! - `bench-verify`: fails when a result file breaks the schema, when either table is not
//!   what `bench-render` would write, or when a table row cites a missing file.
//! - `docs-check`: fails, naming file and line, when `README.md` is over 10,000 characters,
//!   a paragraph or list item of `README.md` or `docs/*.md` is over 600, or a relative link
//!   there names a missing file or heading (see [`docs`]).

mod bench;
mod docs;
mod generated;
mod headline;
mod render;
mod schema;
mod serve;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

fn repo_root() -> PathBuf {
    // xtask lives one level below the root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench-render") => bench::render_readme(&repo_root()).map(|changed| {
            if changed.is_empty() {
                println!("benchmark tables already up to date");
            }
            for file in changed {
                println!("{file}: benchmark table updated");
            }
        }),
        Some("bench-verify") => bench::verify(&repo_root()).map(|n| {
            println!("bench-verify: {n} result file(s) valid, benchmark tables up to date");
        }),
        Some("docs-check") => docs::check(&repo_root()).map(|n| {
            println!(
                "docs-check: {n} Markdown file(s) within the rules, every relative link found"
            );
        }),
        _ => usage(),
    };
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

fn usage() -> Result<()> {
    bail!("usage: cargo xtask <bench-render|bench-verify|docs-check>")
}

/// Reads a file to a string, naming it on failure.
fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}
