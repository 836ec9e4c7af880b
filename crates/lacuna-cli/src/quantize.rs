//! `lacuna quantize IN OUT PRESET`: llama-quantize without an importance matrix.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lacuna::gguf::GgufFile;
use lacuna::models::Preset;

/// Arguments of `lacuna quantize`.
#[derive(clap::Args)]
pub(crate) struct QuantizeArgs {
    /// GGUF file with F32, F16 or BF16 weights.
    input: PathBuf,
    /// Where to write the quantized GGUF.
    output: PathBuf,
    /// llama-quantize preset: Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_S,
    /// Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, Q8_0, IQ4_NL, IQ4_XS, MXFP4_MOE.
    preset: String,
}

/// Quantizes `input` into `output`.
pub(crate) fn run(a: QuantizeArgs) -> Result<()> {
    let preset = Preset::from_name(&a.preset).with_context(|| {
        let all: Vec<_> = Preset::ALL.iter().map(|p| p.name()).collect();
        format!("unknown preset {:?} ({})", a.preset, all.join(", "))
    })?;
    let src = GgufFile::open(&a.input).with_context(|| format!("opening {}", a.input.display()))?;
    let start = std::time::Instant::now();
    let w = lacuna::models::quantize(&src, preset)?;
    w.write_file(&a.output)
        .with_context(|| format!("writing {}", a.output.display()))?;
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} ({}, {:.1} MB, {:.1} s)",
        a.output.display(),
        preset.name(),
        size as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
