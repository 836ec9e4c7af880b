//! The README's headline table: one row per workload family, the family's best row of the
//! full table with its speed-up, beside the spread of every compared row of the family (so
//! its losses too). The README's form keeps each cell short; its detail in
//! `bench-results/README.md` gives each row's whole workload and links the result files
//! behind its figures.

use std::fmt::Write as _;

use crate::generated::{HEADLINE, HEADLINE_DETAIL};
use crate::render::{AMX_OFF, AVX2_ONLY, Row};
use crate::schema::WorkloadKind;
use crate::serve::{self, ServeLoaded};

/// The workload families of the headline table, in the order it lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Family {
    /// One forward pass of a dense model, at the machine's best instructions.
    Forward,
    /// The same with AMX unused (AVX-512 kernels), on an AMX machine.
    ForwardAmxOff,
    /// The same on AVX2 kernels only, on an AVX-512 machine.
    ForwardAvx2,
    /// End-to-end generation without a K/V cache (exact).
    GenerateNone,
    /// End-to-end generation with Fast-dLLM's dual cache (approximate).
    GenerateDual,
    /// Files quantized by llama-quantize's presets.
    Presets,
    /// Mixture-of-experts architectures.
    Moe,
}

impl Family {
    fn label(self) -> &'static str {
        match self {
            Family::Forward => "forward pass",
            Family::ForwardAmxOff => "forward pass, AMX off (AVX-512)",
            Family::ForwardAvx2 => "forward pass, AVX2 only",
            Family::GenerateNone => "generate, no cache (exact)",
            Family::GenerateDual => "generate, dual cache (approximate)",
            Family::Presets => "llama-quantize presets",
            Family::Moe => "mixture of experts",
        }
    }
}

/// GGUF architectures with expert layers.
const MOE_ARCHITECTURES: [&str; 3] = ["llada-moe", "llada2", "rnd1"];

/// The family a row of the full table belongs to, if any: MoE architectures first, then
/// preset files (any run's quant names llama-quantize), then dense forward by tier and
/// generate by cache at the machine's best tier. Prefix-cache rows and the tiers below the
/// best of anything but dense forward passes stay in the full table only.
pub(crate) fn family(row: &Row) -> Option<Family> {
    let best_tier = row.tier.is_empty();
    if MOE_ARCHITECTURES.contains(&row.model().architecture.as_str()) {
        return best_tier.then_some(Family::Moe);
    }
    if row
        .runs
        .iter()
        .any(|l| l.result.model.quant.contains("llama-quantize"))
    {
        return best_tier.then_some(Family::Presets);
    }
    match row.kind {
        WorkloadKind::Forward => match row.tier {
            "" => Some(Family::Forward),
            AMX_OFF => Some(Family::ForwardAmxOff),
            AVX2_ONLY => Some(Family::ForwardAvx2),
            _ => None,
        },
        WorkloadKind::Generate if best_tier => match row.cache() {
            "none" => Some(Family::GenerateNone),
            "dual" => Some(Family::GenerateDual),
            _ => None,
        },
        WorkloadKind::Generate => None,
    }
}

/// A family's headline: its row with the largest speed-up, and every compared row's
/// speed-up, ascending. Rows compared with llama.cpp's own cmake build (its best build, the
/// speed reference of `shared/ORACLE.md`) take precedence over rows compared with the
/// `llama-cpp-sys-2` logits oracle's builds: the headline is one of them where the family
/// has any; the spread keeps every row.
#[derive(Debug, Clone)]
pub(crate) struct Pick<'a> {
    /// The family.
    pub(crate) family: Family,
    /// Its row with the largest speed-up (the first such row on a tie).
    pub(crate) row: &'a Row<'a>,
    /// The speed-ups of all its rows where both engines ran, ascending.
    pub(crate) speedups: Vec<f64>,
}

/// One pick per family that has a row where both engines ran, in [`Family`] order.
pub(crate) fn select<'a>(rows: &'a [Row<'a>]) -> Vec<Pick<'a>> {
    let mut picks: Vec<Pick<'a>> = Vec::new();
    for row in rows {
        let (Some(family), Some(s)) = (family(row), row.speedup()) else {
            continue;
        };
        match picks.iter_mut().find(|p| p.family == family) {
            Some(p) => {
                let better = match (against_oracle(p.row), against_oracle(row)) {
                    (true, false) => true,
                    (false, true) => false,
                    _ => s > p.row.speedup().unwrap_or(f64::NEG_INFINITY),
                };
                if better {
                    p.row = row;
                }
                p.speedups.push(s);
            }
            None => picks.push(Pick {
                family,
                row,
                speedups: vec![s],
            }),
        }
    }
    for p in &mut picks {
        p.speedups.sort_by(f64::total_cmp);
    }
    picks.sort_by_key(|p| p.family);
    picks
}

/// Whether the row's llama.cpp run is a build of the `llama-cpp-sys-2` oracle crate, not
/// llama.cpp's own cmake build.
fn against_oracle(row: &Row<'_>) -> bool {
    row.llama
        .is_some_and(|l| l.result.engine.version.starts_with("llama-cpp-sys-2"))
}

/// The load test with the largest throughput gain over one request at a time, its
/// baseline, and every gain (ascending).
#[derive(Debug, Clone)]
pub(crate) struct ServePick<'a> {
    /// The run at concurrency above 1 with the largest gain.
    pub(crate) run: &'a ServeLoaded,
    /// The run at concurrency 1 it is compared with.
    pub(crate) baseline: &'a ServeLoaded,
    /// Gains of every run above concurrency 1 that has a baseline, ascending.
    pub(crate) gains: Vec<f64>,
}

/// The serve family's pick, if some run above concurrency 1 has a baseline.
pub(crate) fn select_serve(runs: &[ServeLoaded]) -> Option<ServePick<'_>> {
    let mut pick: Option<ServePick> = None;
    for (run, baseline) in serve::with_baselines(runs) {
        let Some(baseline) = baseline.filter(|_| run.run.workload.concurrency > 1) else {
            continue;
        };
        let gain = serve::ratio(run, baseline);
        match &mut pick {
            Some(p) => {
                if gain > serve::ratio(p.run, p.baseline) {
                    p.run = run;
                    p.baseline = baseline;
                }
                p.gains.push(gain);
            }
            None => {
                pick = Some(ServePick {
                    run,
                    baseline,
                    gains: vec![gain],
                })
            }
        }
    }
    if let Some(p) = &mut pick {
        p.gains.sort_by(f64::total_cmp);
    }
    pick
}

/// The fastest instruction set a machine's kernels use, as the tiers name them.
fn best_instructions(simd: &[String]) -> &'static str {
    let has = |flag: &str| simd.iter().any(|f| f.starts_with(flag));
    if has("amx") {
        "AMX"
    } else if has("avx512") {
        "AVX-512"
    } else if has("avx2") {
        "AVX2"
    } else {
        "portable code"
    }
}

/// `3 rows: 1.07×–2.59×, median 1.72×` (ascending input).
fn spread(sorted: &[f64]) -> String {
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    match n {
        1 => "1 row".to_string(),
        _ => format!(
            "{n} rows: {:.2}×–{:.2}×, median {median:.2}×",
            sorted[0],
            sorted[n - 1]
        ),
    }
}

/// The workload of a row: the canvas for a forward pass; for a generation, the prompt,
/// generation length and steps (`brief`: the generation length alone).
fn workload(row: &Row, brief: bool) -> String {
    let w = &row.runs[0].result.workload;
    match row.kind {
        WorkloadKind::Forward => format!("T={}", w.prompt_tokens),
        WorkloadKind::Generate if brief => format!("gen {}", w.gen_tokens),
        WorkloadKind::Generate => format!(
            "prompt {} + gen {}, {} steps",
            w.prompt_tokens,
            w.gen_tokens,
            w.steps.unwrap_or_default()
        ),
    }
}

/// The two forms of the headline table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `README.md`: short cells (the family, its best row, both figures, the speed-up, the
    /// spread), no files; the detail is a link away.
    Short,
    /// `bench-results/README.md`: every workload detail and the result files of each row.
    Detail,
}

/// The Markdown that goes between the README's headline markers (markers excluded): one
/// row per family with short cells, the detail in [`render_detail`].
pub(crate) fn render(rows: &[Row], serve_runs: &[ServeLoaded]) -> String {
    render_form(rows, serve_runs, Form::Short)
}

/// The Markdown between the headline-detail markers of `bench-results/README.md`: the same
/// rows with their full workloads and the result files behind each figure.
pub(crate) fn render_detail(rows: &[Row], serve_runs: &[ServeLoaded]) -> String {
    render_form(rows, serve_runs, Form::Detail)
}

fn render_form(rows: &[Row], serve_runs: &[ServeLoaded], form: Form) -> String {
    let picks = select(rows);
    let serve_pick = select_serve(serve_runs);
    if picks.is_empty() && serve_pick.is_none() {
        return "_No compared benchmark results yet._\n".to_string();
    }
    let section = match form {
        Form::Short => HEADLINE,
        Form::Detail => HEADLINE_DETAIL,
    };
    let mut machines: Vec<&str> = picks.iter().map(|p| p.row.machine).collect();
    machines.extend(serve_pick.iter().map(|p| p.run.run.machine.id.as_str()));
    machines.sort_unstable();
    machines.dedup();
    // With several machines each row names its own: in a column of its own in the short
    // form, after the workload in the detail.
    let several = machines.len() > 1;
    let on = |machine: &str| match (several, form) {
        (false, _) => String::new(),
        (true, Form::Short) => format!(" | `{machine}`"),
        (true, Form::Detail) => format!(" on `{machine}`"),
    };
    let all_synthetic = picks.iter().all(|p| p.row.model().synthetic);
    let mut out = String::new();
    if let [machine] = machines.as_slice() {
        match picks.first().map(|p| &p.row.runs[0].result.machine) {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "Machine `{machine}`: {}, {} cores, {:.0} GiB; a row with no instruction set named runs its best ({}).\n",
                    m.cpu_model,
                    m.cores,
                    m.ram_bytes as f64 / (1u64 << 30) as f64,
                    best_instructions(&m.simd)
                );
            }
            None => {
                let _ = writeln!(out, "Machine `{machine}`.\n");
            }
        }
    }
    match form {
        Form::Short if several => {
            out.push_str("| family | best row | machine | Lacuna | baseline | speed-up | all compared rows |\n");
            out.push_str("|---|---|---|---|---|---|---|\n");
        }
        Form::Short => {
            out.push_str(
                "| family | best row | Lacuna | baseline | speed-up | all compared rows |\n",
            );
            out.push_str("|---|---|---|---|---|---|\n");
        }
        Form::Detail => {
            out.push_str("| family | its best row | Lacuna | baseline | speed-up | every compared row of the family | files |\n");
            out.push_str("|---|---|---|---|---|---|---|\n");
        }
    }
    for p in &picks {
        let row = p.row;
        let (Some(lacuna), Some(llama)) = (row.lacuna, row.llama) else {
            continue;
        };
        let synthetic = if row.model().synthetic && !all_synthetic {
            ", random weights"
        } else {
            ""
        };
        let baseline = if row.kind == WorkloadKind::Generate && row.cache() != "none" {
            "llama.cpp, no cache"
        } else {
            "llama.cpp"
        };
        let _ = write!(
            out,
            "| {} | `{}`{synthetic}, {}{} | {:.1} ms/step | {baseline} {:.1} ms/step | {:.2}× | {} |",
            p.family.label(),
            row.model().id,
            workload(row, form == Form::Short),
            on(row.machine),
            lacuna.result.figures.step_ms.median,
            llama.result.figures.step_ms.median,
            row.speedup().unwrap_or_default(),
            spread(&p.speedups),
        );
        if form == Form::Detail {
            let _ = write!(
                out,
                " {} {} |",
                section.link("Lacuna", &lacuna.path),
                section.link("llama.cpp", &llama.path),
            );
        }
        out.push('\n');
    }
    if let Some(p) = &serve_pick {
        let r = &p.run.run;
        let _ = write!(
            out,
            "| `lacuna serve`, {} concurrent vs 1 | `{}`, {}{}{} | {:.1} tokens/s | 1 at a time {:.1} tokens/s | {:.2}× | {} |",
            r.workload.concurrency,
            r.model.id,
            r.workload.endpoint,
            if r.workload.stream { ", stream" } else { "" },
            on(&r.machine.id),
            r.figures.generated_tokens_per_s,
            p.baseline.run.figures.generated_tokens_per_s,
            serve::ratio(p.run, p.baseline),
            spread(&p.gains),
        );
        if form == Form::Detail {
            let _ = write!(
                out,
                " {} {} |",
                section.link(
                    &format!("{} concurrent", r.workload.concurrency),
                    &p.run.path
                ),
                section.link("1 concurrent", &p.baseline.path),
            );
        }
        out.push('\n');
    }
    out.push('\n');
    match form {
        Form::Short => {
            if all_synthetic && !picks.is_empty() {
                out.push_str(
                    "Random weights in real models' shapes and quant mixes: speed, not quality. ",
                );
            }
            out.push_str("Speed-up = llama.cpp's best median ÷ Lacuna's, same machine, file and workload; `lacuna serve`: tokens/s ÷ one request at a time. Workloads, files and caveats: ");
            out.push_str(&section.link(
                "bench-results/README.md",
                "bench-results/README.md#headline-rows",
            ));
            out.push_str(".\n");
        }
        Form::Detail => {
            if all_synthetic && !picks.is_empty() {
                out.push_str("Every model compared with llama.cpp above has random weights in a real model's shape and quant mix: these are speed figures, not quality. ");
            }
            out.push_str("Each row is its family's row with the largest speed-up; the column after it spreads every row of the family where both engines ran, losses (below 1×) included. Speed-up = llama.cpp's best median ÷ Lacuna's (above 1 = Lacuna faster), same machine, file, workload and instructions; a cached generate row is compared with llama.cpp's run without a cache (it has none for these models). `lacuna serve`: generated tokens/s at that concurrency ÷ one request at a time. Every row, figure and file: the table below.\n");
        }
    }
    out
}

#[cfg(test)]
mod tests;
