//! Writes the tiny LLaDA trained by `tools/train-tiny/train.py` as a `llada` GGUF, laid out
//! the way llama.cpp's `convert_hf_to_gguf.py` (`LLaDAModel`) writes LLaDA-8B: the same
//! metadata keys, tensor names (gguf-py's tensor map for `model.transformer.*`), ggml dims
//! (PyTorch shapes reversed) and Q/K rows permuted so that ggml's normal-mode RoPE computes
//! LLaDA's `rotate_half` RoPE. 2-D weights get `--type` (f32, f16 or q8_0, quantized with
//! Lacuna's ggml-exact quantizer), 1-D norms stay F32 as llama-quantize leaves them.
//!
//! The block-diffusion twin (`train_tasks.py --arch llada2`) is written as a `llada2` GGUF
//! instead (see `llada2.rs`): its safetensors' config says `"arch": "llada2"`; with
//! `--bailingmoe2`, as llama.cpp's autoregressive `bailingmoe2` (the oracle of its graph).
//!
//! Usage: train-tiny-export --weights W.safetensors --tokenizer tokenizer.json --out M.gguf
//!        [--type q8_0|f16|f32] [--name NAME] [--pre NAME] [--raw-only] [--bailingmoe2]
//!
//! `--pre` is `tokenizer.ggml.pre` (default `llama-bpe`, the KJV model's; the task model's is
//! `qwen2`); `--raw-only` leaves out the chat template (the task model knows raw prompts only).

mod llada2;
mod safetensors;
mod vocab;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail, ensure};
use half::f16;
use lacuna_gguf::{GgmlType, GgufWriter};

use crate::safetensors::Tensor;

struct Args {
    weights: PathBuf,
    tokenizer: PathBuf,
    out: PathBuf,
    ty: GgmlType,
    name: String,
    pre: String,
    raw_only: bool,
    bailingmoe2: bool,
}

fn args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let (mut weights, mut tokenizer, mut out) = (None, None, None);
    let (mut ty, mut name) = (GgmlType::Q8_0, "lacuna-tiny-kjv".to_string());
    let (mut pre, mut raw_only, mut bailingmoe2) = (vocab::PRE.to_string(), false, false);
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--weights" => weights = Some(PathBuf::from(val()?)),
            "--tokenizer" => tokenizer = Some(PathBuf::from(val()?)),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--name" => name = val()?,
            "--pre" => pre = val()?,
            "--raw-only" => raw_only = true,
            "--bailingmoe2" => bailingmoe2 = true,
            "--type" => {
                ty = match val()?.as_str() {
                    "f32" => GgmlType::F32,
                    "f16" => GgmlType::F16,
                    "q8_0" => GgmlType::Q8_0,
                    other => bail!("--type {other}: expected f32, f16 or q8_0"),
                }
            }
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(Args {
        weights: weights.context("--weights is required")?,
        tokenizer: tokenizer.context("--tokenizer is required")?,
        out: out.context("--out is required")?,
        ty,
        name,
        pre,
        raw_only,
        bailingmoe2,
    })
}

/// `general.file_type` (llama_ftype) of an all-`ty` model.
fn file_type(ty: GgmlType) -> u32 {
    match ty {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        _ => 7, // LLAMA_FTYPE_MOSTLY_Q8_0
    }
}

/// `LLaDAModel.permute`: within each head, row `j * hd/2 + i` (rotate_half pairs `i` and
/// `i + hd/2`) moves to row `2i + j` (ggml normal-mode pairs `2i`, `2i + 1`).
fn permute_rows(t: &Tensor, n_head: usize) -> Tensor {
    let (rows, cols) = (t.shape[0], t.shape[1]);
    let hd = rows / n_head;
    let mut data = vec![0.0; t.data.len()];
    for h in 0..n_head {
        for i in 0..hd / 2 {
            for j in 0..2 {
                let src = h * hd + j * (hd / 2) + i;
                let dst = h * hd + 2 * i + j;
                data[dst * cols..(dst + 1) * cols]
                    .copy_from_slice(&t.data[src * cols..(src + 1) * cols]);
            }
        }
    }
    Tensor {
        shape: t.shape.clone(),
        data,
    }
}

fn encode(t: &Tensor, ty: GgmlType) -> Result<(GgmlType, Vec<u8>)> {
    let ty = if t.shape.len() == 1 {
        GgmlType::F32
    } else {
        ty
    };
    let bytes = match ty {
        GgmlType::F32 => t.data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        GgmlType::F16 => t
            .data
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_bits().to_le_bytes())
            .collect(),
        _ => {
            let row = *t.shape.last().context("scalar tensor")?;
            let mut out = Vec::new();
            for r in t.data.chunks_exact(row) {
                let mut b = vec![0u8; row / ty.block_size() * ty.type_size()];
                lacuna_quant::quantize_row(ty, r, &mut b)?;
                out.extend_from_slice(&b);
            }
            out
        }
    };
    Ok((ty, bytes))
}

/// The block-diffusion twin: `llada2` metadata, tensors by their own (GGUF) names.
fn export_llada2(
    a: &Args,
    tensors: BTreeMap<String, Tensor>,
    meta: &BTreeMap<String, String>,
    cfg: &serde_json::Value,
) -> Result<()> {
    let arch = if a.bailingmoe2 { "bailingmoe2" } else { "llada2" };
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", arch)?;
    w.add_metadata("general.name", a.name.as_str())?;
    w.add_metadata("general.file_type", file_type(a.ty))?;
    if a.ty == GgmlType::Q8_0 {
        w.add_metadata("general.quantization_version", 2u32)?;
    }
    llada2::metadata(&mut w, cfg, arch)?;
    let (sp, n_tok) = vocab::add(&mut w, &a.tokenizer, &a.pre, a.raw_only)?;
    ensure!(
        Some(n_tok as u64) == cfg["vocab_size"].as_u64(),
        "tokenizer has {n_tok} tokens, model {}",
        cfg["vocab_size"]
    );
    ensure!(
        cfg["mask_token_id"].as_u64() == Some(u64::from(sp.mask)),
        "model trained with mask id {}, tokenizer says {}",
        cfg["mask_token_id"],
        sp.mask
    );
    let n = llada2::tensors(&mut w, tensors, a.ty, encode)?;
    w.write_file(&a.out)?;
    let size = std::fs::metadata(&a.out)?.len();
    println!(
        "wrote {} ({arch}, {n} tensors, {size} bytes, step {})",
        a.out.display(),
        meta.get("step").map_or("?", String::as_str)
    );
    Ok(())
}

fn main() -> Result<()> {
    let a = args()?;
    let (mut tensors, meta) = safetensors::read(&a.weights)?;
    let cfg: serde_json::Value =
        serde_json::from_str(meta.get("config").context("no config in __metadata__")?)?;
    if cfg["arch"] == "llada2" {
        return export_llada2(&a, tensors, &meta, &cfg);
    }
    let u = |k: &str| -> Result<usize> {
        Ok(cfg[k].as_u64().with_context(|| format!("config.{k}"))? as usize)
    };
    let (n_vocab, d, n_layer, n_head, n_ff, n_ctx) = (
        u("vocab_size")?,
        u("d_model")?,
        u("n_layers")?,
        u("n_heads")?,
        u("mlp_hidden_size")?,
        u("max_sequence_length")?,
    );
    let theta = cfg["rope_theta"].as_f64().context("rope_theta")? as f32;
    let eps = cfg["rms_norm_eps"].as_f64().context("rms_norm_eps")? as f32;

    let mut w = GgufWriter::new();
    let k = |s: &str| format!("llada.{s}");
    w.add_metadata("general.architecture", "llada")?;
    w.add_metadata("general.name", a.name.as_str())?;
    w.add_metadata(&k("block_count"), n_layer as u32)?;
    w.add_metadata(&k("context_length"), n_ctx as u32)?;
    w.add_metadata(&k("embedding_length"), d as u32)?;
    w.add_metadata(&k("feed_forward_length"), n_ff as u32)?;
    w.add_metadata(&k("attention.head_count"), n_head as u32)?;
    w.add_metadata(&k("attention.head_count_kv"), n_head as u32)?;
    w.add_metadata(&k("rope.freq_base"), theta)?;
    w.add_metadata(&k("attention.layer_norm_rms_epsilon"), eps)?;
    w.add_metadata("general.file_type", file_type(a.ty))?;
    w.add_metadata(&k("vocab_size"), n_vocab as u32)?;
    w.add_metadata(&k("rope.dimension_count"), (d / n_head) as u32)?;
    w.add_metadata(&k("attention.causal"), false)?;
    w.add_metadata("diffusion.shift_logits", false)?;
    if a.ty == GgmlType::Q8_0 {
        w.add_metadata("general.quantization_version", 2u32)?;
    }
    let (sp, n_tok) = vocab::add(&mut w, &a.tokenizer, &a.pre, a.raw_only)?;
    ensure!(
        n_tok == n_vocab,
        "tokenizer has {n_tok} tokens, model {n_vocab}"
    );
    ensure!(
        cfg["mask_token_id"].as_u64() == Some(u64::from(sp.mask)),
        "model trained with mask id {}, tokenizer says {}",
        cfg["mask_token_id"],
        sp.mask
    );

    // HF name -> GGUF name (gguf-py tensor_mapping for LLaDA's `model.transformer.*`).
    let mut names: Vec<(String, String)> = vec![(
        "model.transformer.wte.weight".into(),
        "token_embd.weight".into(),
    )];
    for il in 0..n_layer {
        for (hf, gg) in [
            ("attn_norm", "attn_norm"),
            ("q_proj", "attn_q"),
            ("k_proj", "attn_k"),
            ("v_proj", "attn_v"),
            ("attn_out", "attn_output"),
            ("ff_norm", "ffn_norm"),
            ("ff_proj", "ffn_gate"),
            ("up_proj", "ffn_up"),
            ("ff_out", "ffn_down"),
        ] {
            names.push((
                format!("model.transformer.blocks.{il}.{hf}.weight"),
                format!("blk.{il}.{gg}.weight"),
            ));
        }
    }
    names.push((
        "model.transformer.ln_f.weight".into(),
        "output_norm.weight".into(),
    ));
    names.push((
        "model.transformer.ff_out.weight".into(),
        "output.weight".into(),
    ));

    let mut written = BTreeMap::new();
    for (hf, gg) in &names {
        let mut t = tensors
            .remove(hf)
            .with_context(|| format!("tensor {hf} missing"))?;
        if hf.ends_with("q_proj.weight") || hf.ends_with("k_proj.weight") {
            t = permute_rows(&t, n_head);
        }
        let dims: Vec<u64> = t.shape.iter().rev().map(|&x| x as u64).collect();
        let (ty, bytes) = encode(&t, a.ty)?;
        w.add_tensor(gg, &dims, ty, bytes)?;
        written.insert(gg.clone(), ty);
    }
    ensure!(tensors.is_empty(), "unmapped tensors: {:?}", tensors.keys());
    w.write_file(&a.out)?;
    let size = std::fs::metadata(&a.out)?.len();
    println!(
        "wrote {} ({} tensors, {size} bytes, step {})",
        a.out.display(),
        written.len(),
        meta.get("step").map_or("?", String::as_str)
    );
    Ok(())
}
