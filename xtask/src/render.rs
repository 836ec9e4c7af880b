//! The full benchmark table, rendered into `bench-results/README.md` from the result files:
//! one section per machine, one row per (model, workload, tier), Lacuna's best run beside
//! llama.cpp's best run and their ratio, then the machine's `lacuna serve` load tests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::generated::FULL;
use crate::schema::{BenchResult, Model, WorkloadKind};
use crate::serve::{self, ServeLoaded};

/// A result file: its path relative to the repository root (with `/` separators) and content.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// `bench-results/<machine>/<name>.json`.
    pub(crate) path: String,
    /// The parsed result.
    pub(crate) result: BenchResult,
}

/// One row of the full table: the runs of one model and workload at one tier on one machine.
#[derive(Debug, Clone)]
pub(crate) struct Row<'a> {
    /// Machine id.
    pub(crate) machine: &'a str,
    /// Forward or generate.
    pub(crate) kind: WorkloadKind,
    /// The workload as the table writes it (`forward, T=160`).
    pub(crate) workload: String,
    /// The tier suffix (see [`tier`]); empty for the machine's best.
    pub(crate) tier: &'static str,
    /// Every run the row cites, by path: its own, plus for a generate workload with a cache
    /// llama.cpp's runs of the same workload without one.
    pub(crate) runs: Vec<&'a Loaded>,
    /// Lacuna's fastest run.
    pub(crate) lacuna: Option<&'a Loaded>,
    /// llama.cpp's fastest run.
    pub(crate) llama: Option<&'a Loaded>,
}

impl Row<'_> {
    /// The model of the row's first file.
    pub(crate) fn model(&self) -> &Model {
        &self.runs[0].result.model
    }

    /// llama.cpp's best median over Lacuna's (above 1: Lacuna is faster), when both ran.
    pub(crate) fn speedup(&self) -> Option<f64> {
        let (a, b) = (self.lacuna?, self.llama?);
        Some(b.result.figures.step_ms.median / a.result.figures.step_ms.median)
    }

    /// The K/V cache policy of Lacuna's runs (`none` when absent).
    pub(crate) fn cache(&self) -> &str {
        self.lacuna
            .and_then(|l| l.result.workload.cache.as_deref())
            .unwrap_or("none")
    }
}

fn workload_label(r: &BenchResult) -> String {
    let w = &r.workload;
    match w.kind {
        WorkloadKind::Forward => format!("forward, T={}", w.prompt_tokens),
        WorkloadKind::Generate => {
            let mut s = format!(
                "generate, prompt {} + gen {}",
                w.prompt_tokens, w.gen_tokens
            );
            if let Some(steps) = w.steps {
                let _ = write!(s, ", {steps} steps");
            }
            if let Some(b) = w.block_length {
                let _ = write!(s, ", block {b}");
            }
            if let Some(sampler) = &w.sampler {
                let _ = write!(s, ", {sampler}");
            }
            if let Some(cache) = w.cache.as_deref().filter(|&c| c != "none") {
                let _ = write!(s, ", cache {cache}");
            }
            s
        }
    }
}

/// The suffix of a workload label for a run kept below its machine's best instructions.
pub(crate) const AVX2_ONLY: &str = ", AVX2 only (AVX-512 and AMX off)";
/// The suffix for a run with AMX unused on an AMX machine.
pub(crate) const AMX_OFF: &str = ", AMX off (AVX-512 kernels)";

/// The instruction tier a run kept to below what its machine has, as the suffix of its
/// workload label ("" when it used the machine's best): AVX2 only (a Lacuna path forced to
/// AVX2, a llama.cpp build with AVX2 kernels only) on an AVX-512 machine, or AMX off (a
/// Lacuna path forced below AMX, a llama.cpp build without it) on an AMX machine. Such runs
/// get rows of their own, compared only with each other: they stand for the many machines
/// of that tier.
fn tier(r: &BenchResult) -> &'static str {
    let has = |flag: &str| r.machine.simd.iter().any(|f| f.starts_with(flag));
    let build = r.engine.build.as_str();
    if build.starts_with("cuda") {
        // A GPU run: the CPU's instructions say nothing about it.
        ""
    } else if has("avx512") && (build == "cpu-avx2" || build.starts_with("avx2")) {
        AVX2_ONLY
    } else if has("amx") && (build.contains("no-amx") || !build.contains("amx")) {
        AMX_OFF
    } else {
        ""
    }
}

fn model_label(m: &Model) -> String {
    format!(
        "`{}`: {} {}L d{} h{}/{} ffn{} vocab{}, {}, {:.2} GB{}",
        m.id,
        m.architecture,
        m.layers,
        m.d_model,
        m.heads,
        m.kv_heads,
        m.ffn,
        m.vocab,
        m.quant,
        m.file_bytes as f64 / 1e9,
        if m.synthetic { ", random weights" } else { "" }
    )
}

fn best<'a>(runs: &[&'a Loaded], engine: &str) -> Option<&'a Loaded> {
    runs.iter()
        .copied()
        .filter(|l| l.result.engine.name == engine)
        .min_by(|a, b| {
            a.result
                .figures
                .step_ms
                .median
                .total_cmp(&b.result.figures.step_ms.median)
        })
}

fn cell(l: Option<&Loaded>) -> String {
    match l {
        None => "—".to_string(),
        Some(l) => {
            let r = &l.result;
            let floor = r.figures.floor.as_ref().map_or(String::new(), |f| {
                format!("; {:.1}× floor, {}", f.ratio, f.binds)
            });
            format!(
                "{:.1} ({} thr, {}{floor})",
                r.figures.step_ms.median, r.machine.threads, r.engine.build
            )
        }
    }
}

type RowKey = (String, WorkloadKind, String, &'static str);

/// The rows of the full table, by machine, then model, kind, workload label and tier.
pub(crate) fn rows(results: &[Loaded]) -> Vec<Row<'_>> {
    let mut machines: BTreeMap<&str, Vec<&Loaded>> = BTreeMap::new();
    for l in results {
        machines
            .entry(l.result.machine.id.as_str())
            .or_default()
            .push(l);
    }
    let mut out = Vec::new();
    for (machine, runs) in machines {
        let mut rows: BTreeMap<RowKey, Vec<&Loaded>> = BTreeMap::new();
        for l in runs {
            let key = (
                l.result.model.id.clone(),
                l.result.workload.kind,
                workload_label(&l.result),
                tier(&l.result),
            );
            rows.entry(key).or_default().push(l);
        }
        // llama.cpp has no cache: its uncached run of a generate workload is also the
        // comparison in that workload's rows with a cache.
        let cached: Vec<_> = rows
            .keys()
            .filter(|k| k.2.contains(", cache "))
            .cloned()
            .collect();
        for key in cached {
            let base = key.2.split(", cache ").next().unwrap_or_default();
            let uncached = (key.0.clone(), key.1, base.to_string(), key.3);
            let llama: Vec<&Loaded> = rows
                .get(&uncached)
                .map(|r| {
                    r.iter()
                        .copied()
                        .filter(|l| l.result.engine.name == "llama.cpp")
                        .collect()
                })
                .unwrap_or_default();
            if let Some(row) = rows.get_mut(&key) {
                row.extend(llama);
            }
        }
        for ((_, kind, workload, tier), mut runs) in rows {
            runs.sort_by(|a, b| a.path.cmp(&b.path));
            out.push(Row {
                machine,
                kind,
                workload,
                tier,
                lacuna: best(&runs, "lacuna"),
                llama: best(&runs, "llama.cpp"),
                runs,
            });
        }
    }
    out
}

/// Renders the Markdown that goes between the full table's markers (markers excluded).
pub(crate) fn render(results: &[Loaded], serve: &[ServeLoaded]) -> String {
    let mut out = String::new();
    if results.is_empty() && serve.is_empty() {
        out.push_str("_No benchmark results yet._\n");
        return out;
    }
    let rows = rows(results);
    let machines: BTreeSet<&str> = rows
        .iter()
        .map(|r| r.machine)
        .chain(serve.iter().map(|s| s.run.machine.id.as_str()))
        .collect();
    for (i, id) in machines.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mine: Vec<&Row> = rows.iter().filter(|r| r.machine == id).collect();
        match mine.first() {
            Some(first) => {
                let m = &first.runs[0].result.machine;
                let _ = writeln!(
                    out,
                    "#### Machine `{id}`: {}, {} cores, {:.0} GiB, {}{}",
                    m.cpu_model,
                    m.cores,
                    m.ram_bytes as f64 / (1u64 << 30) as f64,
                    m.simd.join(" "),
                    m.gpu
                        .as_ref()
                        .map(|g| format!(", GPU {g}"))
                        .unwrap_or_default()
                );
            }
            None => {
                let _ = writeln!(out, "#### Machine `{id}`");
            }
        }
        if !mine.is_empty() {
            out.push_str("\n| model | workload | Lacuna ms/step | llama.cpp ms/step (best threads) | speed-up | result files |\n");
            out.push_str("|---|---|---|---|---|---|\n");
        }
        for row in mine {
            let ratio = row
                .speedup()
                .map(|s| format!("{s:.2}×"))
                .unwrap_or_else(|| "—".to_string());
            let files: Vec<String> = row.runs.iter().map(|l| FULL.file_link(&l.path)).collect();
            let _ = writeln!(
                out,
                "| {} | {}{} | {} | {} | {} | {} |",
                model_label(row.model()),
                row.workload,
                row.tier,
                cell(row.lacuna),
                cell(row.llama),
                ratio,
                files.join(" ")
            );
        }
        out.push_str(&serve::render(serve, id));
    }
    out.push_str("\nSpeed-up = llama.cpp's best median ÷ Lacuna's best median on the same machine, model and workload (above 1 means Lacuna is faster). Rows marked \"AMX off\" compare runs with AMX unused on an AMX machine (Lacuna forced to its AVX-512 kernels, llama.cpp built without AMX), standing in for AVX-512 machines without AMX; rows marked \"AVX2 only\" compare Lacuna forced to its AVX2 kernels (`LACUNA_CPU_PATH=avx2`) with llama.cpp built with AVX2 kernels only (GCC and clang), standing in for AVX2-only machines (AMD Zen 2/3, Intel before VNNI), whose cache and memory differ from this one. llama.cpp has no K/V cache for these models: in a generate row with a cache its uncached run of the same workload is the comparison, and generate speed-ups at equal steps are end-to-end speed-ups.");
    if !serve.is_empty() {
        out.push_str(" Load tests: \"vs 1 concurrent\" = generated tokens/s at that concurrency ÷ at concurrency 1 with the same model, threads and request.");
    }
    out.push('\n');
    out
}
