//! Loading `bench-results/`, rewriting README.md, and verifying both agree.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::read;
use crate::render::{self, BEGIN, END, Loaded};
use crate::schema;

/// Folder of result files, relative to the repository root.
const RESULTS_DIR: &str = "bench-results";

/// Loads and validates every run result: each `*.json` directly inside
/// `bench-results/<machine-id>/`. Deeper folders hold raw data (criterion exports, kernel
/// microbenchmarks); those files are only checked to be JSON.
pub(crate) fn load(root: &Path) -> Result<Vec<Loaded>> {
    let dir = root.join(RESULTS_DIR);
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut machines: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    machines.sort_by_key(|e| e.file_name());
    for machine in machines {
        if !machine.file_type()?.is_dir() {
            continue; // README.md and the like.
        }
        let machine_name = machine.file_name().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(machine.path())?.collect::<Result<_, _>>()?;
        files.sort_by_key(|e| e.file_name());
        for file in files {
            let path = file.path();
            let rel = format!(
                "{RESULTS_DIR}/{machine_name}/{}",
                file.file_name().to_string_lossy()
            );
            if file.file_type()?.is_dir() {
                check_raw_json(&path, &rel)?;
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = read(&path)?;
            let result = schema::parse(&text)
                .map_err(|e| anyhow::anyhow!("{rel}: field `{}`: {}", e.field, e.problem))?;
            if result.machine.id != machine_name {
                bail!(
                    "{rel}: field `machine.id`: \"{}\" does not match its folder \"{machine_name}\"",
                    result.machine.id
                );
            }
            out.push(Loaded { path: rel, result });
        }
    }
    Ok(out)
}

/// Raw files below a machine folder must at least be well-formed JSON.
fn check_raw_json(dir: &Path, rel: &str) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = format!("{rel}/{}", entry.file_name().to_string_lossy());
        if entry.file_type()?.is_dir() {
            check_raw_json(&entry.path(), &name)?;
        } else if entry.path().extension().and_then(|e| e.to_str()) == Some("json") {
            serde_json::from_str::<serde_json::Value>(&read(&entry.path())?)
                .with_context(|| format!("{name}: not valid JSON"))?;
        }
    }
    Ok(())
}

/// Regenerates the table in README.md. Returns whether the file changed.
pub(crate) fn render_readme(root: &Path) -> Result<bool> {
    let results = load(root)?;
    let readme_path = root.join("README.md");
    let readme = read(&readme_path)?;
    let Some(new) = render::splice(&readme, &render::render(&results)) else {
        bail!("README.md lacks the markers:\n{BEGIN}\n{END}");
    };
    if new == readme {
        return Ok(false);
    }
    std::fs::write(&readme_path, new).context("cannot write README.md")?;
    Ok(true)
}

/// Checks result files, the README table and its citations. Returns the number of files.
pub(crate) fn verify(root: &Path) -> Result<usize> {
    let results = load(root)?;
    let readme = read(&root.join("README.md"))?;
    let Some(current) = render::current(&readme) else {
        bail!("README.md lacks the markers:\n{BEGIN}\n{END}");
    };
    // Every file a row cites must exist (a row with nothing behind it is a made-up figure).
    for cited in cited_files(current) {
        if !root.join(cited).is_file() {
            bail!("README.md: a benchmark row cites {cited}, which does not exist");
        }
    }
    let expected = render::render(&results);
    if current != expected {
        let (line_no, have, want) = first_difference(current, &expected);
        bail!(
            "README.md benchmark table differs from bench-results/ at table line {line_no}:\n  README:   {have}\n  expected: {want}\nrun `cargo xtask bench-render` and commit"
        );
    }
    Ok(results.len())
}

/// Paths inside `(...)` links that point into `bench-results/`.
fn cited_files(table: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = table;
    while let Some(i) = rest.find(&format!("]({RESULTS_DIR}/")) {
        let start = i + 2;
        let Some(len) = rest[start..].find(')') else {
            break;
        };
        out.push(&rest[start..start + len]);
        rest = &rest[start + len..];
    }
    out
}

fn first_difference<'a>(a: &'a str, b: &'a str) -> (usize, &'a str, &'a str) {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 1;
    loop {
        match (la.next(), lb.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (x, y) => return (n, x.unwrap_or("<end>"), y.unwrap_or("<end>")),
        }
    }
}

#[cfg(test)]
mod tests;
