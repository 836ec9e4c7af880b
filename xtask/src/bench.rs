//! Loading `bench-results/`, rewriting the generated tables, and verifying both agree.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::generated::{FULL, HEADLINE, HEADLINE_DETAIL, Section};
use crate::read;
use crate::render::{self, Loaded};
use crate::serve::{self, SERVE_KIND, ServeLoaded};
use crate::{headline, schema};

/// Folder of result files, relative to the repository root.
const RESULTS_DIR: &str = "bench-results";

/// Everything under `bench-results/` that the tables render.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// Run results (`lacuna.bench.v1`), by path.
    pub(crate) runs: Vec<Loaded>,
    /// `lacuna serve` load tests (`lacuna.serve-load.raw.v0`), by path.
    pub(crate) serve: Vec<ServeLoaded>,
}

impl Results {
    fn files(&self) -> usize {
        self.runs.len() + self.serve.len()
    }
}

/// Loads and validates every run result: each `*.json` directly inside
/// `bench-results/<machine-id>/`. Deeper folders hold raw data (criterion exports, kernel
/// microbenchmarks, load tests); those files are checked to be JSON, and the load tests
/// among them (`"kind": "lacuna.serve-load.raw.v0"`) are read for the tables.
pub(crate) fn load(root: &Path) -> Result<Results> {
    let dir = root.join(RESULTS_DIR);
    let mut out = Results::default();
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
                check_raw_json(&path, &rel, &machine_name, &mut out.serve)?;
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
            out.runs.push(Loaded { path: rel, result });
        }
    }
    out.serve.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Raw files below a machine folder must at least be well-formed JSON; load tests among them
/// are read.
fn check_raw_json(
    dir: &Path,
    rel: &str,
    machine: &str,
    serve: &mut Vec<ServeLoaded>,
) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = format!("{rel}/{}", entry.file_name().to_string_lossy());
        if entry.file_type()?.is_dir() {
            check_raw_json(&entry.path(), &name, machine, serve)?;
        } else if entry.path().extension().and_then(|e| e.to_str()) == Some("json") {
            let value: serde_json::Value = serde_json::from_str(&read(&entry.path())?)
                .with_context(|| format!("{name}: not valid JSON"))?;
            if value.get("kind").and_then(|k| k.as_str()) != Some(SERVE_KIND) {
                continue;
            }
            let run = serve::parse(value)
                .map_err(|e| anyhow::anyhow!("{name}: field `{}`: {}", e.field, e.problem))?;
            if run.machine.id != machine {
                bail!(
                    "{name}: field `machine.id`: \"{}\" does not match its folder \"{machine}\"",
                    run.machine.id
                );
            }
            serve.push(ServeLoaded { path: name, run });
        }
    }
    Ok(())
}

/// The three generated parts: the headline table (README.md), its detail and the full table
/// (bench-results/README.md), each with the text it should hold.
fn expected(results: &Results) -> [(Section, String); 3] {
    let rows = render::rows(&results.runs);
    [
        (HEADLINE, headline::render(&rows, &results.serve)),
        (
            HEADLINE_DETAIL,
            headline::render_detail(&rows, &results.serve),
        ),
        (FULL, render::render(&results.runs, &results.serve)),
    ]
}

fn missing_markers(section: &Section) -> anyhow::Error {
    anyhow::anyhow!(
        "{} lacks the markers:\n{}\n{}",
        section.file,
        section.begin,
        section.end
    )
}

/// Regenerates both tables. Returns the files that changed.
pub(crate) fn render_readme(root: &Path) -> Result<Vec<&'static str>> {
    let results = load(root)?;
    let mut changed = Vec::new();
    for (section, body) in expected(&results) {
        let path = root.join(section.file);
        let doc = read(&path)?;
        let new = section
            .splice(&doc, &body)
            .ok_or_else(|| missing_markers(&section))?;
        if new != doc {
            std::fs::write(&path, new).with_context(|| format!("cannot write {}", section.file))?;
            if !changed.contains(&section.file) {
                changed.push(section.file);
            }
        }
    }
    Ok(changed)
}

/// Checks result files, both tables and what they cite. Returns the number of files read.
pub(crate) fn verify(root: &Path) -> Result<usize> {
    let results = load(root)?;
    for (section, want) in expected(&results) {
        let doc = read(&root.join(section.file))?;
        let have = section
            .current(&doc)
            .ok_or_else(|| missing_markers(&section))?;
        // Every file a row cites must exist (a row with nothing behind it is a made-up figure).
        for cited in section.cited(have) {
            if !root.join(&cited).is_file() {
                bail!(
                    "{}: a benchmark row cites {cited}, which does not exist",
                    section.file
                );
            }
        }
        if have != want {
            let (line_no, have, want) = first_difference(have, &want);
            bail!(
                "{} benchmark table differs from bench-results/ at table line {line_no}:\n  file:     {have}\n  expected: {want}\nrun cargo xtask bench-render and commit",
                section.file
            );
        }
    }
    Ok(results.files())
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
