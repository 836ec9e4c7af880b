//! The benchmark-result format: one JSON file per benchmark run, under
//! `bench-results/<machine-id>/<name>.json`.
//!
//! Version 1 (`"schema": "lacuna.bench.v1"`). Every field below is required unless it is an
//! `Option`; unknown fields are rejected so that a typo cannot silently drop a figure.

use serde::{Deserialize, Serialize};

/// The value of the `schema` field this version of the format carries.
pub(crate) const SCHEMA_V1: &str = "lacuna.bench.v1";

/// One benchmark run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct BenchResult {
    /// Always [`SCHEMA_V1`].
    pub(crate) schema: String,
    /// The engine measured.
    pub(crate) engine: Engine,
    /// Git commit the run was made from: the one the `lacuna` binary embeds at build time
    /// (`-dirty` when built with uncommitted changes), for other engines the checkout's.
    pub(crate) repo_commit: String,
    /// When the run was made, RFC 3339 (`2026-11-30T06:00:00Z`).
    pub(crate) date: String,
    /// The machine it ran on.
    pub(crate) machine: Machine,
    /// The model file.
    pub(crate) model: Model,
    /// What was run.
    pub(crate) workload: Workload,
    /// What was measured.
    pub(crate) figures: Figures,
    /// Free-form remarks (build flags, noise seen, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) notes: Option<String>,
}

/// The engine measured: `lacuna` or `llama.cpp`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Engine {
    /// `lacuna` or `llama.cpp`.
    pub(crate) name: String,
    /// Its version or commit (for llama.cpp: the vendored release/commit).
    pub(crate) version: String,
    /// Build flavour: kernel path or build flags (`avx512vnni`, `amx`, ...).
    pub(crate) build: String,
}

/// The machine a run was made on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Machine {
    /// Short stable id; also the folder name under `bench-results/`.
    pub(crate) id: String,
    /// CPU model string as `/proc/cpuinfo` names it.
    pub(crate) cpu_model: String,
    /// Logical cores of the machine.
    pub(crate) cores: u32,
    /// Threads the engine was given for this run.
    pub(crate) threads: u32,
    /// SIMD features detected (`avx2`, `avx512vnni`, `amx-int8`, ...).
    pub(crate) simd: Vec<String>,
    /// Installed memory in bytes.
    pub(crate) ram_bytes: u64,
    /// GPU model, if the run used one.
    pub(crate) gpu: Option<String>,
}

/// The model a run loaded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Model {
    /// Short id used to group runs (`llada-8b-shape-4l-q4km`).
    pub(crate) id: String,
    /// GGUF `general.architecture` (`llada`, `dream`, `llada-moe`).
    pub(crate) architecture: String,
    /// Transformer layers in the file.
    pub(crate) layers: u32,
    /// Embedding width.
    pub(crate) d_model: u32,
    /// Attention heads.
    pub(crate) heads: u32,
    /// Key/value heads.
    pub(crate) kv_heads: u32,
    /// Feed-forward width.
    pub(crate) ffn: u32,
    /// Vocabulary size.
    pub(crate) vocab: u32,
    /// Quant mix (`Q4_K_M: Q4_K + Q6_K, F32 norms`).
    pub(crate) quant: String,
    /// File size in bytes.
    pub(crate) file_bytes: u64,
    /// True for random-weight fixtures, false for real checkpoints.
    pub(crate) synthetic: bool,
}

/// What a run did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Workload {
    /// `forward` (one full forward pass, all-position logits) or `generate` (end to end).
    pub(crate) kind: WorkloadKind,
    /// Tokens in the prompt (for `forward`: the canvas length).
    pub(crate) prompt_tokens: u32,
    /// Tokens generated (0 for `forward`).
    pub(crate) gen_tokens: u32,
    /// Denoising steps (`generate` only).
    pub(crate) steps: Option<u32>,
    /// Block length (`generate` only).
    pub(crate) block_length: Option<u32>,
    /// Sampler and its settings (`generate` only), e.g. `llada low_confidence t=0`.
    pub(crate) sampler: Option<String>,
    /// Key/value cache policy (`generate` only): `none`, `prefix` or `dual`; absent means
    /// `none` (files written before caches existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache: Option<String>,
}

/// The two kinds of benchmark run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WorkloadKind {
    /// One forward pass over the whole canvas.
    Forward,
    /// End-to-end generation.
    Generate,
}

/// Measured figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Figures {
    /// Timed runs (after warm-up).
    pub(crate) runs: u32,
    /// Time of one step (a forward pass for `forward`, a denoising step for `generate`).
    pub(crate) step_ms: Spread,
    /// Canvas tokens through the model per second (`prompt+gen tokens / step time`).
    pub(crate) forward_tokens_per_s: f64,
    /// Generated tokens per second end to end (`generate` only).
    pub(crate) generated_tokens_per_s: Option<f64>,
    /// Time from start to the first step, seconds (`generate` only).
    pub(crate) startup_s: Option<f64>,
    /// Peak resident set size, bytes, where measured.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// Whether `peak_rss_bytes` leaves out `lacuna bench`'s own 512 MiB bandwidth probe
    /// (recorded from 687ffa3 on; absent before, when the probe's buffer was counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) peak_rss_excludes_probe: Option<bool>,
    /// Denoiser calls (forward passes) per generation (`generate` only, where recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) forwards: Option<u32>,
    /// Canvas positions run through the model per forward, averaged (`generate` only, where
    /// recorded): the canvas length without a cache, less with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) positions_per_forward: Option<f64>,
    /// Bytes of mixture-of-experts weights read per forward, averaged (MoE models, where
    /// recorded): each expert some token was routed to, in the form the engine keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expert_bytes_per_forward: Option<f64>,
    /// How expert weights were kept: `compact` (the file's blocks) or `repacked` (MoE models,
    /// where recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) experts: Option<String>,
    /// How dense weights were kept: `compact`, `repacked` or `device-repacked` (where
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dense_weights: Option<String>,
    /// The floor of a step on this machine and how far the step is above it (where
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) floor: Option<Floor>,
    /// DiffusionGemma: the encoder's pass over the prompt, milliseconds (median over runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_pass_ms: Option<f64>,
    /// DiffusionGemma: the encoder's commit pass over a finished canvas, milliseconds
    /// (median; only where a run had more than one canvas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) commit_pass_ms: Option<f64>,
}

/// The floor of one step: the larger of its weight bytes over the measured memory read
/// bandwidth and its matmul operations over the measured int8 peak of the path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Floor {
    /// Memory read bandwidth on the benchmark's threads, GB/s.
    pub(crate) read_gb_s: f64,
    /// The path's int8 dot peak on the benchmark's threads, TOP/s.
    pub(crate) int8_tops: f64,
    /// Matmul operations per step (`2 * t * n * k` summed).
    pub(crate) ops_per_step: f64,
    /// Weight bytes per step as the file stores them.
    pub(crate) file_bytes_per_step: f64,
    /// The same reads as the engine holds the weights.
    pub(crate) held_bytes_per_step: f64,
    /// `file_bytes_per_step / read bandwidth`, ms.
    pub(crate) bandwidth_ms: f64,
    /// `ops_per_step / int8 peak`, ms.
    pub(crate) compute_ms: f64,
    /// The larger of the two, ms.
    pub(crate) floor_ms: f64,
    /// Which one binds: `bandwidth` or `compute`.
    pub(crate) binds: String,
    /// Median step over the floor.
    pub(crate) ratio: f64,
}

/// Median, min and max of a timing over the runs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spread {
    /// Median.
    pub(crate) median: f64,
    /// Minimum.
    pub(crate) min: f64,
    /// Maximum.
    pub(crate) max: f64,
}

/// A schema violation: the field path and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    /// Dotted path of the offending field (`figures.step_ms.median`), or `.` for the root.
    pub(crate) field: String,
    /// What is wrong.
    pub(crate) problem: String,
}

/// Parses and validates one result file's text.
pub(crate) fn parse(text: &str) -> Result<BenchResult, FieldError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let result: BenchResult = serde_path_to_error::deserialize(de).map_err(|e| FieldError {
        field: e.path().to_string(),
        problem: e.inner().to_string(),
    })?;
    validate(&result)?;
    Ok(result)
}

fn bad(field: &str, problem: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// Semantic checks serde cannot express.
fn validate(r: &BenchResult) -> Result<(), FieldError> {
    if r.schema != SCHEMA_V1 {
        return Err(bad(
            "schema",
            format!("expected \"{SCHEMA_V1}\", found \"{}\"", r.schema),
        ));
    }
    if !matches!(r.engine.name.as_str(), "lacuna" | "llama.cpp") {
        return Err(bad(
            "engine.name",
            format!(
                "expected \"lacuna\" or \"llama.cpp\", found \"{}\"",
                r.engine.name
            ),
        ));
    }
    for (field, value) in [
        ("repo_commit", &r.repo_commit),
        ("date", &r.date),
        ("engine.version", &r.engine.version),
        ("machine.id", &r.machine.id),
        ("model.id", &r.model.id),
    ] {
        if value.trim().is_empty() {
            return Err(bad(field, "must not be empty"));
        }
    }
    if !r
        .machine
        .id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad(
            "machine.id",
            "only ASCII letters, digits, '-' and '_' (it names a folder)",
        ));
    }
    if r.machine.threads == 0 || r.machine.cores == 0 {
        return Err(bad("machine.threads", "threads and cores must be positive"));
    }
    if r.figures.runs == 0 {
        return Err(bad("figures.runs", "must be at least 1"));
    }
    let s = r.figures.step_ms;
    for (field, v) in [
        ("figures.step_ms.median", s.median),
        ("figures.step_ms.min", s.min),
        ("figures.step_ms.max", s.max),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(
                field,
                format!("must be a positive finite number, found {v}"),
            ));
        }
    }
    if !(s.min <= s.median && s.median <= s.max) {
        return Err(bad(
            "figures.step_ms",
            format!(
                "needs min <= median <= max, found {} / {} / {}",
                s.min, s.median, s.max
            ),
        ));
    }
    if let Some(f) = &r.figures.floor {
        check_floor(f)?;
    }
    if !(r.figures.forward_tokens_per_s.is_finite() && r.figures.forward_tokens_per_s > 0.0) {
        return Err(bad(
            "figures.forward_tokens_per_s",
            "must be a positive finite number",
        ));
    }
    match r.workload.kind {
        WorkloadKind::Forward => {
            if r.workload.gen_tokens != 0 {
                return Err(bad(
                    "workload.gen_tokens",
                    "must be 0 for a forward workload",
                ));
            }
        }
        WorkloadKind::Generate => {
            if r.workload.gen_tokens == 0 {
                return Err(bad(
                    "workload.gen_tokens",
                    "must be positive for a generate workload",
                ));
            }
            if r.workload.steps.is_none() {
                return Err(bad("workload.steps", "required for a generate workload"));
            }
            if r.figures.generated_tokens_per_s.is_none() {
                return Err(bad(
                    "figures.generated_tokens_per_s",
                    "required for a generate workload",
                ));
            }
        }
    }
    if r.workload.prompt_tokens + r.workload.gen_tokens == 0 {
        return Err(bad(
            "workload.prompt_tokens",
            "the canvas must hold at least one token",
        ));
    }
    Ok(())
}

/// A floor's figures are positive, its floor the larger of its two parts, and `binds`
/// names that part.
fn check_floor(f: &Floor) -> Result<(), FieldError> {
    for (field, v) in [
        ("figures.floor.read_gb_s", f.read_gb_s),
        ("figures.floor.int8_tops", f.int8_tops),
        ("figures.floor.ops_per_step", f.ops_per_step),
        ("figures.floor.file_bytes_per_step", f.file_bytes_per_step),
        ("figures.floor.bandwidth_ms", f.bandwidth_ms),
        ("figures.floor.compute_ms", f.compute_ms),
        ("figures.floor.floor_ms", f.floor_ms),
        ("figures.floor.ratio", f.ratio),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(field, "must be a positive finite number"));
        }
    }
    let want = f.bandwidth_ms.max(f.compute_ms);
    if (f.floor_ms - want).abs() > 1e-6 * want {
        return Err(bad(
            "figures.floor.floor_ms",
            "must be the larger of bandwidth_ms and compute_ms",
        ));
    }
    let binds = if f.bandwidth_ms >= f.compute_ms {
        "bandwidth"
    } else {
        "compute"
    };
    if f.binds != binds {
        return Err(bad("figures.floor.binds", "must name the larger part"));
    }
    Ok(())
}
