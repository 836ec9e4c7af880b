//! `lacuna bench` (without `--forward`): end-to-end generation timing, written as a
//! `lacuna.bench.v1` result (`xtask/src/schema.rs`, workload kind `generate`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::common::{Probe, floor_line, peak_rss_bytes, rfc3339};

use anyhow::{Context, Result, bail};
use lacuna::models::Arch;
use lacuna::{
    CachePolicy, Engine, EngineOptions, GenerateRequest, ParallelConfig, ParallelRule, Prompt,
    median,
};

/// Generation settings of the end-to-end benchmark (flattened into `lacuna bench`).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct GenBenchArgs {
    /// Tokens to generate per run.
    #[arg(long, default_value_t = 128)]
    pub(super) gen_length: usize,
    /// Denoising steps per run.
    #[arg(long, default_value_t = 32)]
    steps: usize,
    /// Block length (LLaDA models; Dream's official sampler has no blocks and ignores it).
    #[arg(long, default_value_t = 32)]
    pub(super) block_length: usize,
    /// Prompt length in tokens (deterministic ids, no tokenizer involved).
    #[arg(long, default_value_t = 32)]
    pub(super) prompt_tokens: usize,
    /// Key/value cache policy: none, prefix or dual. Dream caches only in its block-wise
    /// parallel mode: with `--steps` = `--gen-length` the benchmark runs Dream in that mode
    /// with threshold 2 (one token per step) for every policy.
    #[arg(long, default_value = "none")]
    cache: CachePolicy,
    /// Write the result to `bench-results/<machine-id>/<model-id>-generate-t<threads>.json`
    /// under this repository root.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Machine id (folder name under bench-results/, e.g. `xeon-2c-amx`); needed by --save.
    #[arg(long)]
    machine_id: Option<String>,
    /// Model id for grouping results (default: the file name without extension).
    #[arg(long)]
    model_id: Option<String>,
    /// Free-form note stored with the result.
    #[arg(long)]
    notes: Option<String>,
}

/// The commit this binary was built from (embedded by `build.rs`; `-dirty` when the tree
/// had uncommitted changes).
fn repo_commit() -> String {
    env!("LACUNA_BUILD_COMMIT").to_string()
}

/// The quant mix of a model: the types of its matrices, and of its vectors.
fn quant_mix(engine: &Engine) -> String {
    let (mut mats, mut vecs) = (BTreeSet::new(), BTreeSet::new());
    for t in engine.model().file().tensors() {
        let set = if t.dims.len() >= 2 {
            &mut mats
        } else {
            &mut vecs
        };
        set.insert(t.ty.name());
    }
    let join = |s: &BTreeSet<&str>| s.iter().copied().collect::<Vec<_>>().join(" + ");
    format!("{}; vectors {}", join(&mats), join(&vecs))
}

/// The benchmark's request on `engine`'s model: deterministic prompt ids (no tokenizer),
/// the whole schedule every run (`keep_after_eos`). Dream caches only in its block-wise
/// parallel mode; a threshold above 1 commits exactly one token per step there, so with
/// steps = gen_length every cache policy (none too) does the same fixed work in the same
/// mode, comparable across policies (then `parallel` is set).
pub(super) fn bench_request(engine: &Engine, g: &GenBenchArgs) -> Result<GenerateRequest> {
    let arch = engine.arch();
    let vocab = engine.model().vocab_size();
    let mask = engine.mask_token_id();
    let prompt: Vec<u32> = (0..g.prompt_tokens)
        .map(|i| ((i as u64 * 7919 + 13) % vocab as u64) as u32)
        .map(|t| if t == mask { (t + 1) % vocab as u32 } else { t })
        .collect();
    let mut req = GenerateRequest::new(Prompt::Tokens(prompt));
    req.gen_length = g.gen_length;
    req.steps = g.steps;
    req.cache = g.cache;
    let dream_blocks = arch == Arch::Dream && g.steps == g.gen_length;
    if arch == Arch::Dream && req.cache != CachePolicy::None && !dream_blocks {
        bail!("a cached Dream benchmark commits one token per step: give --steps = --gen-length");
    }
    req.block_length = (arch.block_wise() || dream_blocks).then_some(g.block_length);
    if dream_blocks {
        req.parallel = Some(ParallelConfig {
            rule: ParallelRule::Threshold(2.0),
        });
    }
    req.keep_after_eos = true; // fixed work: the whole schedule every run
    Ok(req)
}

/// Runs the benchmark for `model` and prints (and optionally saves) the result.
pub(crate) fn run(
    model: &Path,
    threads: Option<usize>,
    experts: lacuna::models::WeightLayout,
    device: lacuna::models::Device,
    runs: usize,
    json: bool,
    g: GenBenchArgs,
) -> Result<()> {
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    if g.save.is_some() && g.machine_id.is_none() {
        bail!("--save needs --machine-id (the folder under bench-results/, e.g. xeon-2c-amx)");
    }
    let machine_id = g
        .machine_id
        .clone()
        .unwrap_or_else(|| "unspecified".to_string());
    let start = Instant::now();
    let mut engine = Engine::load(
        model,
        &EngineOptions {
            threads,
            weights: experts,
            device,
        },
    )
    .with_context(|| format!("loading {}", model.display()))?;
    let probe = Probe::measure(engine.threads(), engine.model().cpu().is_some());
    let cfg = engine.model().config().clone();
    let req = bench_request(&engine, &g)?;
    let dream_blocks = req.parallel.is_some();
    let mut step_ms = Vec::new();
    // DiffusionGemma's encoder passes: each run's prompt pass, and its commit passes.
    let (mut prompt_ms, mut commit_ms) = (Vec::new(), Vec::new());
    let mut totals = Vec::new();
    let mut startup_s = None;
    let mut forwards = 0;
    let mut all_forwards = 0u64;
    let mut positions_per_forward = 0.0;
    let parts0 = engine.model().part_times();
    for run in 0..runs {
        let out = engine.generate(&req, |_| {})?;
        forwards = out.stats.denoiser_calls;
        all_forwards += forwards as u64;
        positions_per_forward = out.positions_per_forward();
        if startup_s.is_none() {
            startup_s =
                Some(start.elapsed().as_secs_f64() - out.timings.total_s + out.timings.prepare_s);
        }
        tracing::info!(run, total_s = out.timings.total_s, "run done");
        step_ms.extend_from_slice(&out.timings.step_ms);
        if let Some((first, rest)) = out.timings.encode_ms.split_first() {
            prompt_ms.push(*first);
            commit_ms.extend_from_slice(rest);
        }
        totals.push(out.timings.total_s);
    }
    let parts = engine.model().part_times();
    let passes = all_forwards.max(1);
    let is_moe = engine.model().config().moe.is_some();
    let expert_bytes =
        is_moe.then(|| (parts.expert_bytes - parts0.expert_bytes) as f64 / passes as f64);
    let experts = is_moe.then(|| {
        super::common::layout_name(engine.model().cpu().map(|m| m.backend().experts_compact()))
    });
    let threads = engine.threads();
    let step_median = median(&step_ms);
    // The floor compares the mean step with the mean pass's work: a cached schedule mixes
    // window passes with the refreshes of whole canvases.
    let step_mean = step_ms.iter().sum::<f64>() / step_ms.len().max(1) as f64;
    let floor = probe.map(|p| p.floor(&parts0, &parts, step_mean));
    let step_min = step_ms.iter().copied().fold(f64::INFINITY, f64::min);
    let step_max = step_ms.iter().copied().fold(0.0, f64::max);
    let total_median = median(&totals);
    let tokens_per_s = g.gen_length as f64 / total_median;
    let canvas = (g.prompt_tokens + g.gen_length) as f64;
    let forward_tokens_per_s = canvas / (step_median / 1e3);
    let peak = peak_rss_bytes();
    let startup_s = startup_s.unwrap_or(0.0);

    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let flags: Vec<&str> = crate::doctor::cpuinfo_value(&cpuinfo, "flags")
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let simd: Vec<&str> = [
        "avx2",
        "avx_vnni",
        "avx512f",
        "avx512_vnni",
        "avx512_bf16",
        "amx_int8",
        "amx_bf16",
    ]
    .into_iter()
    .filter(|f| flags.contains(f))
    .collect();
    let model_id = g.model_id.clone().unwrap_or_else(|| {
        model
            .file_stem()
            .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
    });
    let file_bytes = std::fs::metadata(model).map_or(0, |m| m.len());
    let synthetic = engine.name().starts_with("lacuna fixture");
    let sampler = match cfg.arch {
        Arch::Dream if dream_blocks => "dream parallel 1 token/step t=0".to_string(),
        Arch::Dream => "dream origin t=0".to_string(),
        Arch::Rnd1 => "rnd1 entropy greedy".to_string(),
        Arch::Llada2 => "llada2 threshold 0.95 t=0".to_string(),
        _ => "llada low_confidence t=0".to_string(),
    };
    // The kernels that ran: the GPU backend's name (`cuda-sm90`) on a GPU, else the CPU path.
    let path = match engine.model().gpu_info() {
        Some(_) => engine.model().backend_name(),
        None => lacuna::cpu::Path::active()
            .map_or("unknown", |p| p.name())
            .to_string(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let result = serde_json::json!({
        "schema": "lacuna.bench.v1",
        "engine": { "name": "lacuna", "version": env!("CARGO_PKG_VERSION"), "build": path },
        "repo_commit": repo_commit(),
        "date": rfc3339(now),
        "machine": {
            "id": machine_id,
            "cpu_model": crate::doctor::cpuinfo_value(&cpuinfo, "model name").unwrap_or("unknown"),
            "cores": std::thread::available_parallelism().map_or(1, usize::from),
            "threads": threads,
            "simd": simd,
            "ram_bytes": crate::doctor::meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0),
            "gpu": engine.model().gpu_info().map(|g| g.to_string()),
        },
        "model": {
            "id": model_id,
            "architecture": cfg.arch.name(),
            "layers": cfg.n_layer,
            "d_model": cfg.n_embd,
            "heads": cfg.n_head,
            "kv_heads": cfg.n_head_kv,
            "ffn": cfg.n_ff,
            "vocab": cfg.n_vocab,
            "quant": quant_mix(&engine),
            "file_bytes": file_bytes,
            "synthetic": synthetic,
        },
        "workload": {
            "kind": "generate",
            "prompt_tokens": g.prompt_tokens,
            "gen_tokens": g.gen_length,
            "steps": g.steps,
            "block_length": req.block_length,
            "sampler": sampler,
            "cache": req.cache.name(),
        },
        "figures": {
            "runs": runs,
            "step_ms": { "median": step_median, "min": step_min, "max": step_max },
            "forward_tokens_per_s": forward_tokens_per_s,
            "generated_tokens_per_s": tokens_per_s,
            "startup_s": startup_s,
            "peak_rss_bytes": peak,
            "peak_rss_excludes_probe": peak.is_some() && super::common::peak_excludes_probe(),
            "forwards": forwards,
            "positions_per_forward": positions_per_forward,
            "expert_bytes_per_forward": expert_bytes,
            "experts": experts,
            "dense_weights": super::common::layout_name(engine.model().cpu().map(|m| m.backend().dense_compact())),
            "floor": floor,
            "prompt_pass_ms": (!prompt_ms.is_empty()).then(|| median(&prompt_ms)),
            "commit_pass_ms": (!commit_ms.is_empty()).then(|| median(&commit_ms)),
        },
        "notes": g.notes,
    });
    let mut result = result;
    if g.notes.is_none() {
        if let Some(obj) = result.as_object_mut() {
            obj.remove("notes");
        }
    }
    if let Some(fig) = result["figures"].as_object_mut() {
        fig.retain(|_, v| !v.is_null());
    }
    if let Some(root) = &g.save {
        let dir = root.join("bench-results").join(&machine_id);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join(format!(
            "{model_id}-generate-g{}-{}-t{threads}.json",
            g.gen_length,
            req.cache.name()
        ));
        std::fs::write(&file, serde_json::to_string_pretty(&result)? + "\n")
            .with_context(|| format!("writing {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    if json {
        let doc = serde_json::json!({
            "ms_per_step_median": step_median,
            "ms_per_step": step_ms,
            "tokens_per_s": tokens_per_s,
            "startup_s": startup_s,
            "peak_rss_bytes": peak,
            "result": result,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{} ({} layers) threads {threads}: {:.1} ms/step median (min {:.1}, max {:.1}), \
             {tokens_per_s:.2} generated tokens/s, cache {}, {positions_per_forward:.0} positions \
             per forward, startup {startup_s:.2} s, peak RSS {}",
            cfg.arch,
            cfg.n_layer,
            step_median,
            step_min,
            step_max,
            req.cache,
            peak.map_or("unknown".into(), |b| format!(
                "{:.2} GiB",
                b as f64 / (1u64 << 30) as f64
            )),
        );
        if let Some(f) = &floor {
            println!("{}", floor_line(f));
        }
    }
    Ok(())
}
