//! Load tests of `lacuna serve`: the raw files `tools/bench/serve_load.py` writes below
//! `bench-results/<machine-id>/serve-load/` (`"kind": "lacuna.serve-load.raw.v0"`).
//!
//! The script owns that format; this reads only the fields the tables show, ignores the rest,
//! and names the file and field when one of those is missing or wrong.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::generated::FULL;
use crate::schema::FieldError;

/// The `kind` a load-test file carries.
pub(crate) const SERVE_KIND: &str = "lacuna.serve-load.raw.v0";

/// The fields of one load test that the tables use.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct ServeRun {
    /// The machine it ran on.
    pub(crate) machine: ServeMachine,
    /// The model the server loaded.
    pub(crate) model: ServeModel,
    /// What the clients sent.
    pub(crate) workload: ServeWorkload,
    /// What was measured.
    pub(crate) figures: ServeFigures,
}

/// `machine` of a load test.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct ServeMachine {
    /// Also the folder name under `bench-results/`.
    pub(crate) id: String,
    /// Threads the server was given.
    pub(crate) threads: u32,
}

/// `model` of a load test.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct ServeModel {
    /// Short id (`lacuna-demo`, `llada8b-4l-q4km`).
    pub(crate) id: String,
}

/// `workload` of a load test.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct ServeWorkload {
    /// `chat` or `completion`.
    pub(crate) endpoint: String,
    /// Whether the requests streamed (SSE).
    pub(crate) stream: bool,
    /// Requests in flight at once.
    pub(crate) concurrency: u32,
    /// The request body every client sent.
    pub(crate) request: serde_json::Value,
}

/// `figures` of a load test.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct ServeFigures {
    /// Requests measured.
    pub(crate) requests: u32,
    /// Requests that succeeded.
    pub(crate) ok: u32,
    /// Requests that failed (not 429).
    pub(crate) errors: u32,
    /// Requests refused with 429.
    pub(crate) rejected_429: u32,
    /// Successful requests per second of wall time.
    pub(crate) requests_per_s: f64,
    /// Generated tokens per second of wall time, all requests together.
    pub(crate) generated_tokens_per_s: f64,
    /// Per-request latency at the client.
    pub(crate) latency_ms: Percentiles,
    /// Time to the first chunk with content (streaming only).
    pub(crate) time_to_first_content_ms: Option<Percentiles>,
}

/// The percentile the tables show.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
pub(crate) struct Percentiles {
    /// Median.
    pub(crate) p50: f64,
}

/// A load-test file: its path relative to the repository root and the fields read.
#[derive(Debug, Clone)]
pub(crate) struct ServeLoaded {
    /// `bench-results/<machine>/serve-load/<name>.json`.
    pub(crate) path: String,
    /// The fields read.
    pub(crate) run: ServeRun,
}

/// Reads the fields of a load-test file's JSON.
pub(crate) fn parse(value: serde_json::Value) -> Result<ServeRun, FieldError> {
    let run: ServeRun = serde_path_to_error::deserialize(value).map_err(|e| FieldError {
        field: e.path().to_string(),
        problem: e.inner().to_string(),
    })?;
    let f = &run.figures;
    if !(f.generated_tokens_per_s.is_finite() && f.generated_tokens_per_s > 0.0) {
        return Err(FieldError {
            field: "figures.generated_tokens_per_s".into(),
            problem: "must be a positive finite number".into(),
        });
    }
    if run.workload.concurrency == 0 {
        return Err(FieldError {
            field: "workload.concurrency".into(),
            problem: "must be at least 1".into(),
        });
    }
    Ok(run)
}

/// Runs that differ only in concurrency share a key: the run at concurrency 1 is the others'
/// baseline. The key includes the file's series (its name without the `-c<N>-` part), so
/// runs of another build or server setting (`--tag`: `-nobatch`, ...) keep their own baseline.
fn key(l: &ServeLoaded) -> (String, String, String, bool, u32, String, String) {
    let r = &l.run;
    (
        r.machine.id.clone(),
        r.model.id.clone(),
        r.workload.endpoint.clone(),
        r.workload.stream,
        r.machine.threads,
        r.workload.request.to_string(),
        series(&l.path),
    )
}

/// `…-g32-s32-c4-n16-t2-batch.json` → `…-g32-s32-c*-n16-t2-batch.json`.
fn series(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let name = name.strip_suffix(".json").unwrap_or(name);
    let mut parts: Vec<&str> = name.split('-').collect();
    for p in parts.iter_mut() {
        if p.len() > 1 && p.starts_with('c') && p[1..].bytes().all(|b| b.is_ascii_digit()) {
            *p = "c*";
        }
    }
    parts.join("-")
}

/// Each run with the run at concurrency 1 of the same model, endpoint and request, if there
/// is one (the run itself when its concurrency is 1). Ordered by machine, model, endpoint,
/// concurrency, then path.
pub(crate) fn with_baselines(runs: &[ServeLoaded]) -> Vec<(&ServeLoaded, Option<&ServeLoaded>)> {
    let mut base = BTreeMap::new();
    for l in runs.iter().filter(|l| l.run.workload.concurrency == 1) {
        base.entry(key(l)).or_insert(l);
    }
    let mut out: Vec<_> = runs
        .iter()
        .map(|l| (l, base.get(&key(l)).copied()))
        .collect();
    out.sort_by_key(|(l, _)| {
        let r = &l.run;
        (
            r.machine.id.as_str(),
            r.model.id.as_str(),
            r.workload.endpoint.as_str(),
            r.workload.concurrency,
            l.path.as_str(),
        )
    });
    out
}

/// Throughput at the run's concurrency over throughput at concurrency 1.
pub(crate) fn ratio(run: &ServeLoaded, baseline: &ServeLoaded) -> f64 {
    run.run.figures.generated_tokens_per_s / baseline.run.figures.generated_tokens_per_s
}

/// `chat, stream, max_tokens 64, steps 16, 4 concurrent`.
pub(crate) fn workload_label(r: &ServeRun) -> String {
    let w = &r.workload;
    let mut s = w.endpoint.clone();
    if w.stream {
        s.push_str(", stream");
    }
    if let Some(n) = w.request.get("max_tokens") {
        let _ = write!(s, ", max_tokens {n}");
    }
    if let Some(d) = w.request.get("diffusion").and_then(|d| d.as_object()) {
        // By name, whatever order the JSON map keeps (serde_json's `preserve_order` may be
        // on in a workspace build).
        let mut fields: Vec<(&String, &serde_json::Value)> = d.iter().collect();
        fields.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in fields {
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            let _ = write!(s, ", {k} {v}");
        }
    }
    let _ = write!(s, ", {} concurrent", w.concurrency);
    s
}

/// The full table's section of load tests on one machine (empty when it has none).
pub(crate) fn render(runs: &[ServeLoaded], machine: &str) -> String {
    let runs: Vec<ServeLoaded> = runs
        .iter()
        .filter(|l| l.run.machine.id == machine)
        .cloned()
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n`lacuna serve` under load (`tools/bench/serve_load.py`):\n\n\
         | model | requests | generated tokens/s | requests/s | latency p50 | first content p50 | ok / errors / 429 | vs 1 concurrent | result file |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for (l, base) in with_baselines(&runs) {
        let r = &l.run;
        let f = &r.figures;
        let vs = match base {
            Some(b) if b.path != l.path => format!("{:.2}×", ratio(l, b)),
            Some(_) => "baseline".to_string(),
            None => "—".to_string(),
        };
        let first = f
            .time_to_first_content_ms
            .map(|p| format!("{:.0} ms", p.p50))
            .unwrap_or_else(|| "—".to_string());
        let _ = writeln!(
            out,
            "| `{}` | {}, {} requests, {} thr | {:.1} | {:.3} | {:.0} ms | {first} | {} / {} / {} | {vs} | {} |",
            r.model.id,
            workload_label(r),
            f.requests,
            r.machine.threads,
            f.generated_tokens_per_s,
            f.requests_per_s,
            f.latency_ms.p50,
            f.ok,
            f.errors,
            f.rejected_429,
            FULL.file_link(&l.path),
        );
    }
    out
}
