//! `lacuna list`: the GGUF files in the Hugging Face cache, with their architecture and quant.

use anyhow::{Result, anyhow};
use lacuna_hub::{HubCache, summarize};

/// Arguments of `lacuna list`.
#[derive(clap::Args)]
pub(crate) struct ListArgs {
    /// Also print each file's path.
    #[arg(long)]
    paths: bool,
}

/// Prints one row per cached `.gguf` file; a file that does not parse shows its error.
pub(crate) fn run(a: ListArgs) -> Result<()> {
    let cache = HubCache::from_env().map_err(|e| anyhow!("{e}"))?;
    let files = cache.list().map_err(|e| anyhow!("{e}"))?;
    if files.is_empty() {
        println!(
            "no GGUF files in {} (fetch one with `lacuna pull OWNER/REPO:QUANT`)",
            cache.dir().display()
        );
        return Ok(());
    }
    let rows: Vec<[String; 5]> = files
        .iter()
        .map(|f| {
            let (arch, quant) = match summarize(&f.path) {
                Ok(s) => (
                    s.architecture.unwrap_or_else(|| "-".into()),
                    s.quant.unwrap_or_else(|| "-".into()),
                ),
                Err(e) => (format!("error: {e}"), String::new()),
            };
            [f.repo.clone(), f.file.clone(), size(f.size), quant, arch]
        })
        .collect();
    let header = ["REPO", "FILE", "SIZE", "QUANT", "ARCH"].map(String::from);
    let mut width = [0usize; 4];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for (i, row) in std::iter::once(&header).chain(&rows).enumerate() {
        let mut line = String::new();
        for (w, cell) in width.iter().zip(row) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        line.push_str(&row[4]);
        if a.paths && i > 0 {
            line.push_str(&format!("  {}", files[i - 1].path.display()));
        }
        println!("{}", line.trim_end());
    }
    Ok(())
}

/// `n` bytes in binary units (`4.07 GiB`).
fn size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}
