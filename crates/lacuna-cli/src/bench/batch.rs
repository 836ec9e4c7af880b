//! `lacuna bench --batch 1,2,4,8`: what batching buys. With `--forward`, a cached denoising
//! step: for each batch size B, B canvases (each `--prompt-tokens` + `--gen-length`
//! positions, their own tokens) get their key/value caches filled, then one batched forward
//! of B window passes (`--block-length` positions each, the dual cache's window, logits for
//! every window row) is timed, against the same window alone. Without `--forward`, whole
//! generations: B at once on a [`SharedEngine`] (seeds 0..B), against one alone.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use lacuna::models::{
    AnyModel, Backend, BatchPass, Device, KvCache, Model, PassSpec, WeightLayout,
};
use lacuna::sampler::Pass;
use lacuna::{CancelToken, SharedEngine, median};

use super::common::{Probe, floor_line, layout_name, load_engine};
use super::generate::{GenBenchArgs, bench_request};

/// Profiling steps for the per-part split (after the timed ones).
const PROFILE_STEPS: usize = 2;

/// What `lacuna bench --batch` was asked.
pub(super) struct BatchBench<'a> {
    pub(super) model: &'a Path,
    pub(super) batch: &'a [usize],
    pub(super) prompt: usize,
    pub(super) gen_length: usize,
    pub(super) window: usize,
    pub(super) threads: Option<usize>,
    pub(super) runs: usize,
    pub(super) json: bool,
    pub(super) weights: WeightLayout,
    pub(super) device: Device,
}

/// One batch size's figures.
struct Row {
    batch: usize,
    ms: Vec<f64>,
    floor: Option<serde_json::Value>,
    /// Mean ms per part (gemm, attention, lm_head, other) of two profiling steps.
    parts: [f64; 4],
}

/// Runs the benchmark and prints the result.
pub(super) fn run(a: &BatchBench<'_>) -> Result<()> {
    if a.batch.is_empty() || a.batch.contains(&0) || a.runs == 0 || a.window == 0 {
        bail!("--batch sizes, --runs and --block-length must be at least 1");
    }
    let len = a.prompt + a.gen_length;
    if a.prompt + a.window > len {
        bail!("--block-length must be at most --gen-length");
    }
    let mut engine = load_engine(a.model, a.threads, a.weights, a.device)?;
    if len > engine.context_length() {
        bail!(
            "--prompt-tokens + --gen-length exceed the context ({})",
            engine.context_length()
        );
    }
    let probe = Probe::measure(engine.threads(), engine.model().cpu().is_some());
    let mut rows = Vec::new();
    for &b in a.batch {
        let (ms, floor, parts) = engine.install(|m| match m {
            AnyModel::Cpu(m) => time_steps(m, a, b, len, probe.as_ref()),
            AnyModel::Cuda(m) => time_steps(m, a, b, len, probe.as_ref()),
        })?;
        rows.push(Row {
            batch: b,
            ms,
            floor,
            parts,
        });
    }
    let model = engine.model();
    let solo = rows.iter().find(|r| r.batch == 1).map(|r| median(&r.ms));
    if a.json {
        let out = serde_json::json!({
            "model": a.model.display().to_string(),
            "architecture": model.config().arch.name(),
            "layers": model.config().n_layer,
            "canvas": len,
            "window": a.window,
            "rows_per_canvas": a.window,
            "threads": engine.threads(),
            "runs": a.runs,
            "backend": model.backend_name(),
            "build_commit": env!("LACUNA_BUILD_COMMIT"),
            "dense_weights": layout_name(model.cpu().map(|m| m.backend().dense_compact())),
            "batches": rows.iter().map(|r| {
                let m = median(&r.ms);
                serde_json::json!({
                    "batch": r.batch,
                    "ms_per_batched_step": r.ms,
                    "ms_per_batched_step_median": m,
                    "ms_per_canvas_step": m / r.batch as f64,
                    "speedup_vs_alone": solo.map(|s| s * r.batch as f64 / m),
                    "parts_ms_mean": {
                        "gemm": r.parts[0],
                        "attention": r.parts[1],
                        "lm_head": r.parts[2],
                        "norms_rope_other": r.parts[3],
                    },
                    "floor": r.floor,
                })
            }).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &rows {
            let m = median(&r.ms);
            let speedup = solo.map_or(String::new(), |s| {
                format!(", {:.2}x the canvases run alone", s * r.batch as f64 / m)
            });
            println!(
                "batch {}: {m:.1} ms per batched step of {} windows of {} positions \
                 ({:.1} ms per canvas{speedup})",
                r.batch,
                r.batch,
                a.window,
                m / r.batch as f64,
            );
            println!(
                "  gemm {:.1} ms, attention {:.1} ms, lm_head {:.1} ms, other {:.1} ms",
                r.parts[0], r.parts[1], r.parts[2], r.parts[3]
            );
            if let Some(f) = &r.floor {
                println!("  {}", floor_line(f));
            }
        }
    }
    Ok(())
}

/// Fills `b` caches, then times `a.runs` batched window steps (after one warm-up).
fn time_steps<B: Backend>(
    model: &mut Model<B>,
    a: &BatchBench<'_>,
    b: usize,
    len: usize,
    probe: Option<&Probe>,
) -> Result<(Vec<f64>, Option<serde_json::Value>, [f64; 4])> {
    let vocab = model.vocab_size();
    let mask = model.mask_token_id();
    let canvases: Vec<Vec<u32>> = (0..b)
        .map(|c| {
            (0..len)
                .map(|i| {
                    let t = ((i as u64 * 7919 + 13 + c as u64 * 101) % vocab as u64) as u32;
                    // The window's positions are masked, as a step's are.
                    let masked = i >= a.prompt && i < a.prompt + a.window;
                    match mask {
                        Some(m) if masked => m,
                        Some(m) if t == m => (t + 1) % vocab as u32,
                        _ => t,
                    }
                })
                .collect()
        })
        .collect();
    let mut caches: Vec<KvCache<B::Buf>> = (0..b).map(|_| KvCache::new()).collect();
    let mut one = vec![0.0f32; vocab];
    for (cache, tokens) in caches.iter_mut().zip(&canvases) {
        model.forward_pass(cache, PassSpec::new(&Pass::Fill), tokens, &[0], &mut one)?;
    }
    let window = Pass::Window(a.prompt..a.prompt + a.window);
    let rows: Vec<usize> = (a.prompt..a.prompt + a.window).collect();
    let mut outs: Vec<Vec<f32>> = (0..b).map(|_| vec![0.0f32; rows.len() * vocab]).collect();
    let mut step = |model: &mut Model<B>| -> Result<()> {
        let mut passes: Vec<BatchPass<'_, B::Buf>> = caches
            .iter_mut()
            .zip(&canvases)
            .zip(outs.iter_mut())
            .map(|((cache, tokens), out)| BatchPass {
                cache: Some(cache),
                spec: PassSpec::new(&window),
                tokens,
                rows: Some(&rows),
                out,
            })
            .collect();
        for r in model.forward_batch(&mut passes)? {
            r?;
        }
        Ok(())
    };
    step(model)?; // warm-up
    let parts0 = model.part_times();
    let mut ms = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        let start = Instant::now();
        step(model)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let parts = model.part_times();
    let floor = probe.map(|p| p.floor(&parts0, &parts, median(&ms)));
    // The split by part, from separate profiling steps (the timed ones read no clock).
    model.reset_part_times();
    model.set_profiling(true);
    for _ in 0..PROFILE_STEPS {
        step(model)?;
    }
    model.set_profiling(false);
    let p = model.part_times();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e3 / f64::from(p.passes.max(1));
    let split = [per(p.gemm), per(p.attention), per(p.lm_head), per(p.other)];
    Ok((ms, floor, split))
}

/// `lacuna bench --batch` without `--forward`: `runs` rounds per batch size, each B
/// generations of the benchmark's request started at once (seeds 0..B).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_generate(
    model: &Path,
    batch: &[usize],
    threads: Option<usize>,
    weights: WeightLayout,
    device: Device,
    runs: usize,
    json: bool,
    g: &GenBenchArgs,
) -> Result<()> {
    if batch.is_empty() || batch.contains(&0) || runs == 0 {
        bail!("--batch sizes and --runs must be at least 1");
    }
    let engine = load_engine(model, threads, weights, device)?;
    let request = bench_request(&engine, g)?;
    let shared = SharedEngine::new(engine);
    let prepared: Vec<_> = (0..batch.iter().copied().max().unwrap_or(1))
        .map(|i| shared.prepare(&request.for_choice(i)))
        .collect::<Result<_, _>>()?;
    let round = |b: usize| -> Result<f64> {
        let start = Instant::now();
        std::thread::scope(|scope| {
            let handles: Vec<_> = prepared[..b]
                .iter()
                .map(|p| scope.spawn(|| shared.generate(p, &CancelToken::new(), |_| {})))
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a generation panicked"))??;
            }
            Ok::<(), anyhow::Error>(())
        })?;
        Ok(start.elapsed().as_secs_f64())
    };
    round(1)?; // warm-up
    let mut rows = Vec::new();
    for &b in batch {
        let before = shared.stats();
        let walls: Vec<f64> = (0..runs).map(|_| round(b)).collect::<Result<_>>()?;
        let after = shared.stats();
        let forwards = (after.forwards - before.forwards).max(1);
        let passes_per_forward = (after.passes - before.passes) as f64 / forwards as f64;
        rows.push((b, walls, passes_per_forward));
    }
    let tokens = |b: usize, wall: f64| (b * request.gen_length) as f64 / wall;
    let solo = rows
        .iter()
        .find(|r| r.0 == 1)
        .map(|r| tokens(1, median(&r.1)));
    if json {
        let out = serde_json::json!({
            "model": model.display().to_string(),
            "architecture": shared.arch().name(),
            "threads": shared.threads(),
            "prompt_tokens": g.prompt_tokens,
            "gen_length": request.gen_length,
            "steps": request.steps,
            "cache": request.cache.name(),
            "runs": runs,
            "build_commit": env!("LACUNA_BUILD_COMMIT"),
            "batches": rows.iter().map(|(b, walls, ppf)| {
                let tps = tokens(*b, median(walls));
                serde_json::json!({
                    "batch": b,
                    "wall_s": walls,
                    "wall_s_median": median(walls),
                    "generated_tokens_per_s": tps,
                    "speedup_vs_alone": solo.map(|s| tps / s),
                    "passes_per_forward": ppf,
                })
            }).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for (b, walls, ppf) in &rows {
            let wall = median(walls);
            let tps = tokens(*b, wall);
            let speedup = solo.map_or(String::new(), |s| format!(", {:.2}x one alone", tps / s));
            println!(
                "batch {b}: {wall:.2} s for {b} generations of {} tokens: {tps:.1} tokens/s\
                 {speedup}; {ppf:.2} passes per forward",
                request.gen_length
            );
        }
    }
    Ok(())
}
