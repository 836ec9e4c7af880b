//! `llama-quantize` without an importance matrix: a file of F32/F16/BF16 weights rewritten
//! under a [`Preset`], each tensor given the type llama.cpp would give it and quantized with
//! ggml's reference quantizers (`lacuna-quant`, bit-exact), in llama-quantize's tensor order.

use lacuna_gguf::{GgmlType, GgufFile, GgufWriter};
use rayon::prelude::*;

use crate::preset::{ModelFacts, Preset, TensorFacts, TypePlanner, quantize_order};
use crate::{Config, Error, Result};

/// The tensor types and the metadata of `src` quantized under `preset`.
///
/// The metadata is copied with `general.file_type` set to the preset's `llama_ftype` and
/// `general.quantization_version` to 2 (moved to the end, as llama.cpp's `gguf_set_val`
/// does). Tensors already quantized are an error (llama-quantize needs
/// `--allow-requantize` for them, which loses precision twice).
pub fn quantize(src: &GgufFile, preset: Preset) -> Result<GgufWriter> {
    let cfg = Config::from_metadata(src.metadata())?;
    let facts = ModelFacts {
        n_layer: cfg.n_layer,
        n_gqa: cfg.n_head / cfg.n_head_kv.max(1),
        n_expert: cfg.moe.map_or(0, |m| m.n_expert),
    };
    let mut w = GgufWriter::new();
    for (key, value) in src.metadata().iter() {
        if key != "general.file_type" && key != "general.quantization_version" {
            w.add_metadata(key, value.clone())?;
        }
    }
    w.add_metadata("general.quantization_version", 2u32)?;
    w.add_metadata("general.file_type", preset.ftype())?;

    let mut tensors: Vec<_> = src.tensors().iter().collect();
    tensors.sort_by(|a, b| quantize_order(&a.name, &b.name));
    let mut planner = TypePlanner::new(preset, facts, tensors.iter().map(|t| t.name.as_str()));
    for t in tensors {
        let ty = planner.type_of(
            TensorFacts {
                name: &t.name,
                dims: &t.dims,
            },
            t.ty,
        );
        let bytes = src.info_data(t);
        let data = if ty == t.ty {
            bytes.to_vec()
        } else {
            if !matches!(t.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
                return Err(Error::AlreadyQuantized {
                    name: t.name.clone(),
                    ty: t.ty,
                });
            }
            requantize(t.ty, ty, t.dims[0] as usize, bytes).map_err(|source| Error::Decode {
                name: t.name.clone(),
                source,
            })?
        };
        w.add_tensor(&t.name, &t.dims, ty, data)?;
    }
    Ok(w)
}

/// Rows of `n_per_row` elements of `from` (a float type) converted to `to`.
fn requantize(
    from: GgmlType,
    to: GgmlType,
    n_per_row: usize,
    bytes: &[u8],
) -> std::result::Result<Vec<u8>, lacuna_quant::Error> {
    let in_row = from.type_size() * n_per_row;
    let out_row = to.type_size() * n_per_row / to.block_size();
    let rows = bytes.len() / in_row;
    let mut out = vec![0u8; rows * out_row];
    out.par_chunks_mut(out_row)
        .zip(bytes.par_chunks(in_row))
        .try_for_each_init(
            || vec![0.0f32; n_per_row],
            |x, (o, i)| {
                lacuna_quant::dequantize_row(from, i, x)?;
                lacuna_quant::quantize_row_chunk(to, x, o)
            },
        )?;
    Ok(out)
}
