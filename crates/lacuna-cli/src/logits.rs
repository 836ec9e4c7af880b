//! `lacuna logits`: one forward pass (bidirectional; block-causal for LLaDA2), raw logits of
//! every position to a file.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lacuna::models::Device;
use lacuna::{Engine, EngineOptions};

/// Arguments of `lacuna logits`.
#[derive(clap::Args)]
pub(crate) struct LogitsArgs {
    /// GGUF model file, or hf:OWNER/REPO:QUANT (see `lacuna pull`).
    #[arg(short = 'm', long)]
    model: PathBuf,
    /// Comma-separated token ids, e.g. `1,2,3`.
    #[arg(long, value_delimiter = ',', required = true)]
    tokens: Vec<u32>,
    /// Where to write f32 little-endian logits `[positions x vocab]` (before any Dream shift).
    #[arg(long)]
    out: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// LLaDA2 only: the block length of its block-causal attention (default 32; 1 is
    /// causal attention, as llama.cpp's `bailingmoe2` computes).
    #[arg(long)]
    attention_block: Option<usize>,
    /// Where the model runs: cpu, cuda, cuda:N or auto (see `lacuna run --help`).
    #[arg(long, default_value = "auto")]
    device: Device,
}

/// Runs the forward pass and writes the logits.
pub(crate) fn run(mut a: LogitsArgs) -> Result<()> {
    a.model = crate::pull::resolve_model(&a.model)?;
    let options = EngineOptions {
        threads: a.threads,
        device: a.device,
        ..EngineOptions::default()
    };
    let mut engine = Engine::load(&a.model, &options)
        .map_err(crate::run::flat)
        .with_context(|| format!("loading {}", a.model.display()))?;
    let vocab = engine.model().vocab_size();
    let mut logits = vec![0.0f32; a.tokens.len() * vocab];
    engine
        .logits_with_block(&a.tokens, a.attention_block, &mut logits)
        .map_err(crate::run::flat)?;
    let bytes: Vec<u8> = logits.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&a.out, bytes).with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "wrote {} positions x {vocab} vocab f32 logits to {}",
        a.tokens.len(),
        a.out.display()
    );
    Ok(())
}
