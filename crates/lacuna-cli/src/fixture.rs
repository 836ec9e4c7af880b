//! `lacuna fixture`: writes a deterministic random-weight GGUF of a supported architecture.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use lacuna_models::Arch;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};

/// Arguments of `lacuna fixture`.
#[derive(clap::Args)]
pub(crate) struct FixtureArgs {
    /// Architecture: llada, dream or llada-moe.
    #[arg(long)]
    arch: String,
    /// Size preset: tiny, llada-8b, dream-7b, llada-moe-7b.
    #[arg(long, default_value = "tiny")]
    shape: String,
    /// Transformer blocks.
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Weight types: f32, f16, bf16, q8_0, q4_k_m.
    #[arg(long, default_value = "f32")]
    quant: String,
    /// Leave out `output.weight` (the LM head is then the token embedding).
    #[arg(long)]
    tied: bool,
    /// PRNG seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to write the GGUF file.
    #[arg(long)]
    out: PathBuf,
}

/// Builds and writes the fixture.
pub(crate) fn run(a: FixtureArgs) -> Result<()> {
    let arch = Arch::from_name(&a.arch)?;
    let Some(shape) = Shape::from_name(&a.shape) else {
        bail!(
            "unknown --shape {:?} (tiny, llada-8b, dream-7b, llada-moe-7b)",
            a.shape
        );
    };
    let Some(quant) = QuantMix::from_name(&a.quant) else {
        bail!(
            "unknown --quant {:?} (f32, f16, bf16, q8_0, q4_k_m)",
            a.quant
        );
    };
    let mut spec = FixtureSpec::new(arch, shape, a.layers, quant);
    spec.tied = a.tied;
    spec.seed = a.seed;
    let writer = build(&spec)?;
    writer
        .write_file(&a.out)
        .with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "wrote {} ({arch}, {} layers, {})",
        a.out.display(),
        a.layers,
        quant.name()
    );
    Ok(())
}
