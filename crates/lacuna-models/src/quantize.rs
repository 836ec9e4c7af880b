//! `llama-quantize` without an importance matrix: a file of F32/F16/BF16 weights rewritten
//! under a [`Preset`], each tensor given the type llama.cpp would give it and quantized with
//! ggml's reference quantizers (`lacuna-quant`, bit-exact), in llama-quantize's tensor order.

use std::collections::HashMap;

use lacuna_gguf::{GgmlType, GgufFile, GgufWriter, Metadata};
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
    let mut w = quantized_metadata(src.metadata(), preset)?;
    let mut tensors: Vec<_> = src.tensors().iter().collect();
    tensors.sort_by(|a, b| quantize_order(&a.name, &b.name));
    let plan = plan(
        src.metadata(),
        preset,
        tensors
            .iter()
            .map(|t| (t.name.as_str(), t.dims.as_slice(), t.ty)),
    )?;
    for t in tensors {
        let ty = plan.type_of(&t.name)?;
        let data = convert(&t.name, t.ty, ty, &t.dims, src.info_data(t))?;
        w.add_tensor(&t.name, &t.dims, ty, data)?;
    }
    Ok(w)
}

/// A writer holding `src`'s metadata as [`quantize`] writes it under `preset`.
pub(crate) fn quantized_metadata(src: &Metadata, preset: Preset) -> Result<GgufWriter> {
    let mut w = GgufWriter::new();
    for (key, value) in src.iter() {
        if key != "general.file_type" && key != "general.quantization_version" {
            w.add_metadata(key, value.clone())?;
        }
    }
    w.add_metadata("general.quantization_version", 2u32)?;
    w.add_metadata("general.file_type", preset.ftype())?;
    Ok(w)
}

/// The type llama-quantize gives each tensor of a file.
#[derive(Debug)]
pub(crate) struct Plan(HashMap<String, GgmlType>);

impl Plan {
    /// The type of tensor `name`.
    pub(crate) fn type_of(&self, name: &str) -> Result<GgmlType> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| Error::MissingTensor {
                name: name.to_string(),
            })
    }
}

/// The plan of a file with metadata `md` and tensors `(name, dims, type)`, in any order:
/// they are planned in llama-quantize's order, on which its counters (the `attn_v` and
/// `ffn_down` layers given more bits) depend. A tensor the preset leaves alone keeps its type.
pub(crate) fn plan<'a>(
    md: &Metadata,
    preset: Preset,
    tensors: impl IntoIterator<Item = (&'a str, &'a [u64], GgmlType)>,
) -> Result<Plan> {
    let cfg = Config::from_metadata(md)?;
    let facts = ModelFacts {
        n_layer: cfg.n_layer,
        n_gqa: cfg.n_head / cfg.n_head_kv.max(1),
        n_expert: cfg.moe.map_or(0, |m| m.n_expert),
    };
    let mut tensors: Vec<_> = tensors.into_iter().collect();
    tensors.sort_by(|a, b| quantize_order(a.0, b.0));
    let mut planner = TypePlanner::new(preset, facts, tensors.iter().map(|t| t.0));
    let types = tensors.iter().map(|&(name, dims, source)| {
        let ty = planner.type_of(TensorFacts { name, dims }, source);
        (name.to_string(), ty)
    });
    Ok(Plan(types.collect()))
}

/// The bytes of tensor `name` (`from`, dims `dims`) as `to`: the same bytes when the types
/// agree, else each row dequantized and quantized with ggml's reference quantizer.
pub(crate) fn convert(
    name: &str,
    from: GgmlType,
    to: GgmlType,
    dims: &[u64],
    bytes: &[u8],
) -> Result<Vec<u8>> {
    if to == from {
        return Ok(bytes.to_vec());
    }
    if !matches!(from, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        return Err(Error::AlreadyQuantized {
            name: name.to_string(),
            ty: from,
        });
    }
    requantize(from, to, dims[0] as usize, bytes).map_err(|source| Error::Decode {
        name: name.to_string(),
        source,
    })
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
