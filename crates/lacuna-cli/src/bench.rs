//! `lacuna bench --forward`: times the all-position forward pass over a canvas, the same
//! work `llama-oracle bench` times in llama.cpp.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use lacuna_models::AnyModel;

/// Arguments of `lacuna bench`.
#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// GGUF model file, or hf:OWNER/REPO:QUANT (see `lacuna pull`).
    #[arg(short = 'm', long)]
    model: PathBuf,
    /// Time the forward pass (without it: end-to-end generation, see gen_bench).
    #[arg(long)]
    forward: bool,
    /// Canvas length in tokens (--forward).
    #[arg(long, default_value_t = 0)]
    seq_len: usize,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Timed passes after one warm-up.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Print JSON (otherwise a one-line summary).
    #[arg(long)]
    json: bool,
    /// Quantized weights: auto, compact or fast (see `lacuna run --help`).
    #[arg(long, default_value = "auto", value_parser = ["auto", "compact", "fast"])]
    weights: String,
    /// Where the model runs: cpu, cuda, cuda:N or auto (see `lacuna run --help`).
    #[arg(long, default_value = "auto", value_parser = crate::run::parse_device)]
    device: lacuna_models::Device,
    #[command(flatten)]
    generate: crate::gen_bench::GenBenchArgs,
}

/// Sizes the global rayon pool once (before any parallel work).
pub(crate) fn init_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        if n == 0 {
            bail!("--threads must be at least 1");
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("starting the thread pool")?;
    }
    Ok(())
}

/// How a backend keeps weights: compact or repacked on the CPU, repacked for the tensor
/// cores on a GPU.
pub(crate) fn layout_name(cpu_compact: Option<bool>) -> &'static str {
    match cpu_compact {
        Some(true) => "compact",
        Some(false) => "repacked",
        None => "device-repacked",
    }
}

fn ms(d: std::time::Duration, passes: u32) -> f64 {
    d.as_secs_f64() * 1e3 / f64::from(passes.max(1))
}

/// Runs the benchmark and prints the result.
pub(crate) fn run(mut a: BenchArgs) -> Result<()> {
    a.model = crate::pull::resolve_model(&a.model)?;
    let experts = lacuna_models::WeightLayout::from_name(&a.weights).unwrap_or_default();
    if !a.forward {
        return crate::gen_bench::run(
            &a.model, a.threads, experts, a.device, a.runs, a.json, a.generate,
        );
    }
    if a.seq_len == 0 || a.runs == 0 {
        bail!("--seq-len and --runs must be at least 1");
    }
    init_threads(a.threads)?;
    let load = Instant::now();
    let file = lacuna_gguf::GgufFile::open(&a.model)
        .with_context(|| format!("loading {}", a.model.display()))?;
    let mut model = AnyModel::load(file, a.device, experts)
        .with_context(|| format!("loading {}", a.model.display()))?;
    let load_s = load.elapsed().as_secs_f64();
    let vocab = model.vocab_size();
    // The same deterministic ids `llama-oracle bench` feeds.
    let tokens: Vec<u32> = (0..a.seq_len)
        .map(|i| ((i as u64 * 7919 + 13) % vocab as u64) as u32)
        .collect();
    let mut logits = vec![0.0f32; a.seq_len * vocab];
    model.forward_all(&tokens, &mut logits)?; // warm-up
    model.reset_part_times();
    let mut times = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        let start = Instant::now();
        model.forward_all(&tokens, &mut logits)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(&logits);
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let parts = model.part_times();
    let cfg = model.config();
    let threads = rayon::current_num_threads();
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
            "ms_per_forward_min": sorted[0],
            "ms_per_forward_max": sorted[n - 1],
            "load_s": load_s,
            "parts_ms_mean": {
                "gemm": ms(parts.gemm, parts.passes),
                "attention": ms(parts.attention, parts.passes),
                "lm_head": ms(parts.lm_head, parts.passes),
                "norms_rope_other": ms(parts.other, parts.passes),
            },
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "seq_len {} threads {threads}: median {median:.2} ms (min {:.2}, max {:.2}) over {} runs; \
             gemm {:.1} ms, attention {:.1} ms, lm_head {:.1} ms, other {:.1} ms per pass",
            a.seq_len,
            sorted[0],
            sorted[n - 1],
            a.runs,
            ms(parts.gemm, parts.passes),
            ms(parts.attention, parts.passes),
            ms(parts.lm_head, parts.passes),
            ms(parts.other, parts.passes),
        );
    }
    Ok(())
}
