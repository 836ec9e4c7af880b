//! `lacuna bench --forward`: times the all-position forward pass over a canvas through the
//! engine, the same work `llama-oracle bench` times in llama.cpp; the per-part split comes
//! from separate profiling passes, so the timed passes read no clock inside.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use lacuna::median;
use lacuna::models::{Device, WeightLayout};

use super::common::{Probe, floor_line, layout_name, load_engine};

/// Profiling passes for the per-part split (after the timed ones).
const PROFILE_PASSES: usize = 3;

/// What `lacuna bench --forward` was asked.
pub(super) struct ForwardBench<'a> {
    pub(super) model: &'a Path,
    pub(super) seq_len: usize,
    pub(super) threads: Option<usize>,
    pub(super) runs: usize,
    pub(super) json: bool,
    pub(super) weights: WeightLayout,
    pub(super) device: Device,
}

fn ms(d: std::time::Duration, passes: u32) -> f64 {
    d.as_secs_f64() * 1e3 / f64::from(passes.max(1))
}

/// Runs the benchmark and prints the result.
pub(super) fn run(a: &ForwardBench<'_>) -> Result<()> {
    if a.seq_len == 0 || a.runs == 0 {
        bail!("--seq-len and --runs must be at least 1");
    }
    let mut engine = load_engine(a.model, a.threads, a.weights, a.device)?;
    let load_s = engine.load_s();
    let probe = Probe::measure(engine.threads(), engine.model().cpu().is_some());
    let vocab = engine.model().vocab_size();
    // The same deterministic ids `llama-oracle bench` feeds.
    let tokens: Vec<u32> = (0..a.seq_len)
        .map(|i| ((i as u64 * 7919 + 13) % vocab as u64) as u32)
        .collect();
    let mut logits = vec![0.0f32; a.seq_len * vocab];
    engine.logits(&tokens, &mut logits)?; // warm-up
    let mut times = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        let start = Instant::now();
        engine.logits(&tokens, &mut logits)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(&logits);
    }
    engine.model_mut().reset_part_times();
    engine.model_mut().set_profiling(true);
    for _ in 0..PROFILE_PASSES.min(a.runs) {
        engine.logits(&tokens, &mut logits)?;
    }
    engine.model_mut().set_profiling(false);
    let median = median(&times);
    let (min, max) = times.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| {
        (lo.min(t), hi.max(t))
    });
    let model = engine.model();
    let parts = model.part_times();
    let cfg = model.config();
    let threads = engine.threads();
    let floor = probe.map(|p| p.floor(&Default::default(), &parts, median));
    if a.json {
        let out = serde_json::json!({
            "model": a.model.display().to_string(),
            "architecture": cfg.arch.name(),
            "layers": cfg.n_layer,
            "seq_len": a.seq_len,
            "threads": threads,
            "runs": a.runs,
            "backend": model.backend_name(),
            "gpu": model.gpu_info().map(|g| g.to_string()),
            "build_commit": env!("LACUNA_BUILD_COMMIT"),
            "experts": layout_name(model.cpu().map(|m| m.backend().experts_compact())),
            "dense_weights": layout_name(model.cpu().map(|m| m.backend().dense_compact())),
            "weight_bytes": model.weight_bytes(),
            "ms_per_forward": times,
            "ms_per_forward_median": median,
            "ms_per_forward_min": min,
            "ms_per_forward_max": max,
            "load_s": load_s,
            "profiling_passes": parts.passes,
            "parts_ms_mean": {
                "gemm": ms(parts.gemm, parts.passes),
                "attention": ms(parts.attention, parts.passes),
                "lm_head": ms(parts.lm_head, parts.passes),
                "norms_rope_other": ms(parts.other, parts.passes),
            },
            "floor": floor,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "seq_len {} threads {threads}: median {median:.2} ms (min {min:.2}, max {max:.2}) \
             over {} runs; gemm {:.1} ms, attention {:.1} ms, lm_head {:.1} ms, other {:.1} ms \
             per pass ({} profiling passes)",
            a.seq_len,
            a.runs,
            ms(parts.gemm, parts.passes),
            ms(parts.attention, parts.passes),
            ms(parts.lm_head, parts.passes),
            ms(parts.other, parts.passes),
            parts.passes,
        );
        if let Some(f) = &floor {
            println!("{}", floor_line(f));
        }
    }
    Ok(())
}
