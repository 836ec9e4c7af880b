//! `lacuna fixture`: writes a deterministic random-weight GGUF of a supported architecture.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use lacuna::models::fixture::{FixtureSpec, QuantMix, Shape, build, build_preset};
use lacuna::models::{Arch, Preset};

/// Arguments of `lacuna fixture`.
#[derive(clap::Args)]
pub(crate) struct FixtureArgs {
    /// Architecture: llada, dream, llada-moe, rnd1, llada2 or diffusion-gemma.
    #[arg(long)]
    arch: String,
    /// Size preset: tiny, llada-8b, dream-7b, llada-moe-7b, llada2-mini, rnd1-30b,
    /// diffusiongemma-26b-a4b.
    #[arg(long, default_value = "tiny")]
    shape: String,
    /// Transformer blocks.
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Weight types drawn directly in the quantized domain: f32, f16, bf16, q8_0, q4_k_m.
    #[arg(long, default_value = "f32")]
    quant: String,
    /// Instead: F32 weights quantized under this llama-quantize preset (Q2_K, Q3_K_S,
    /// Q3_K_M, Q3_K_L, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, Q8_0,
    /// IQ4_NL, IQ4_XS, MXFP4_MOE), as llama-quantize would.
    #[arg(long, conflicts_with = "quant")]
    preset: Option<String>,
    /// Leave out `output.weight` (the LM head is then the token embedding).
    #[arg(long)]
    tied: bool,
    /// PRNG seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// With `--arch llada2`: write the same weights as llama.cpp's autoregressive
    /// `bailingmoe2` (the oracle of LLaDA2's graph with attention blocks of 1).
    #[arg(long)]
    bailingmoe2_twin: bool,
    /// A `tokenizer.chat_template` (Jinja) to store, so the fixture serves chat requests.
    #[arg(long, value_name = "JINJA")]
    chat_template: Option<String>,
    /// Where to write the GGUF file.
    #[arg(long)]
    out: PathBuf,
}

/// Builds and writes the fixture.
pub(crate) fn run(a: FixtureArgs) -> Result<()> {
    let arch = Arch::from_name(&a.arch)?;
    let Some(shape) = Shape::from_name(&a.shape) else {
        bail!(
            "unknown --shape {:?} (tiny, llada-8b, dream-7b, llada-moe-7b, llada2-mini, rnd1-30b, \
             diffusiongemma-26b-a4b)",
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
    spec.bailingmoe2_twin = a.bailingmoe2_twin;
    let (mut writer, what) = match &a.preset {
        Some(name) => {
            let preset = Preset::from_name(name).with_context(|| {
                let all: Vec<_> = Preset::ALL.iter().map(|p| p.name()).collect();
                format!("unknown --preset {name:?} ({})", all.join(", "))
            })?;
            (build_preset(&spec, preset)?, preset.name())
        }
        None => (build(&spec)?, quant.name()),
    };
    if let Some(t) = &a.chat_template {
        writer.add_metadata("tokenizer.chat_template", t.as_str())?;
    }
    writer
        .write_file(&a.out)
        .with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "wrote {} ({arch}, {} layers, {what})",
        a.out.display(),
        a.layers,
    );
    Ok(())
}
