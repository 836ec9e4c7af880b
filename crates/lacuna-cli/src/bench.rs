//! `lacuna bench`: the forward pass over a canvas (`--forward`, [`forward`]), a cached step
//! batched over several canvases (`--batch`, [`batch`]) or end-to-end generation
//! ([`generate`]), all through the engine.

use std::path::PathBuf;

use anyhow::Result;
use lacuna::models::{Device, WeightLayout};

mod batch;
mod common;
mod forward;
mod generate;

/// Arguments of `lacuna bench`.
#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// GGUF model file, or hf:OWNER/REPO:QUANT (see `lacuna pull`).
    #[arg(short = 'm', long)]
    model: PathBuf,
    /// Time the forward pass (without it: end-to-end generation).
    #[arg(long)]
    forward: bool,
    /// Batch sizes, e.g. 1,2,4,8. With --forward: a cached denoising step batched over that
    /// many canvases (each a window of --block-length positions over a canvas of
    /// --prompt-tokens + --gen-length, its cache filled first). Without: that many
    /// generations at once on a shared engine, their passes batched. Reports the time and
    /// the speedup over running the canvases alone.
    #[arg(long, value_delimiter = ',')]
    batch: Vec<usize>,
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
    #[arg(long, default_value = "auto")]
    weights: WeightLayout,
    /// Where the model runs: cpu, cuda, cuda:N or auto (see `lacuna run --help`).
    #[arg(long, default_value = "auto")]
    device: Device,
    #[command(flatten)]
    generate: generate::GenBenchArgs,
}

/// Runs the benchmark and prints the result.
pub(crate) fn run(mut a: BenchArgs) -> Result<()> {
    a.model = crate::pull::resolve_model(&a.model)?;
    if !a.batch.is_empty() && !a.forward {
        return batch::run_generate(
            &a.model,
            &a.batch,
            a.threads,
            a.weights,
            a.device,
            a.runs,
            a.json,
            &a.generate,
        );
    }
    if !a.batch.is_empty() {
        return batch::run(&batch::BatchBench {
            model: &a.model,
            batch: &a.batch,
            prompt: a.generate.prompt_tokens,
            gen_length: a.generate.gen_length,
            window: a.generate.block_length,
            threads: a.threads,
            runs: a.runs,
            json: a.json,
            weights: a.weights,
            device: a.device,
        });
    }
    if a.forward {
        forward::run(&forward::ForwardBench {
            model: &a.model,
            seq_len: a.seq_len,
            threads: a.threads,
            runs: a.runs,
            json: a.json,
            weights: a.weights,
            device: a.device,
        })
    } else {
        generate::run(
            &a.model, a.threads, a.weights, a.device, a.runs, a.json, a.generate,
        )
    }
}
