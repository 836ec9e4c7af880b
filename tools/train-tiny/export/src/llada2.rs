//! The block-diffusion twin (`tools/train-tiny/model_llada2.py`) as a `llada2` GGUF: metadata
//! under the keys LLaDA2.0's converter writes (BailingMoE-v2's, as Lacuna's `llada2` fixture
//! writes them), tensors already under their GGUF names in the safetensors (PyTorch shapes,
//! reversed into ggml dims; experts stacked `[expert, rows, cols]`). The router and every 1-D
//! tensor stay F32, as llama-quantize leaves them.

use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use lacuna_gguf::{GgmlType, GgufWriter};

use crate::safetensors::Tensor;

/// Writes the twin's metadata from its training config `cfg` (the model's `Config2`) under
/// `arch`'s keys: `llada2`, or `bailingmoe2` (llama.cpp's autoregressive graph of the same
/// tensors: the llama.cpp oracle of LLaDA2's graph, run causal against attention blocks of 1).
pub(crate) fn metadata(w: &mut GgufWriter, cfg: &serde_json::Value, arch: &str) -> Result<()> {
    let u = |k: &str| -> Result<u32> {
        Ok(cfg[k].as_u64().with_context(|| format!("config.{k}"))? as u32)
    };
    let f = |k: &str| -> Result<f32> {
        Ok(cfg[k].as_f64().with_context(|| format!("config.{k}"))? as f32)
    };
    let k = |s: &str| format!("{arch}.{s}");
    w.add_metadata(&k("vocab_size"), u("vocab_size")?)?;
    w.add_metadata(&k("context_length"), u("max_sequence_length")?)?;
    w.add_metadata(&k("embedding_length"), u("d_model")?)?;
    w.add_metadata(&k("block_count"), u("n_layers")?)?;
    w.add_metadata(&k("feed_forward_length"), u("ffn")?)?;
    w.add_metadata(&k("attention.head_count"), u("n_heads")?)?;
    w.add_metadata(&k("attention.head_count_kv"), u("n_kv_heads")?)?;
    w.add_metadata(&k("attention.key_length"), u("head_dim")?)?;
    w.add_metadata(&k("attention.value_length"), u("head_dim")?)?;
    w.add_metadata(&k("rope.freq_base"), f("rope_theta")?)?;
    w.add_metadata(&k("attention.layer_norm_rms_epsilon"), f("rms_norm_eps")?)?;
    w.add_metadata(&k("rope.dimension_count"), u("n_rot")?)?;
    w.add_metadata(&k("expert_count"), u("n_experts")?)?;
    w.add_metadata(&k("expert_used_count"), u("n_experts_used")?)?;
    w.add_metadata(&k("expert_feed_forward_length"), u("expert_ffn")?)?;
    w.add_metadata(&k("leading_dense_block_count"), u("n_dense_lead")?)?;
    w.add_metadata(&k("expert_shared_count"), 1u32)?;
    w.add_metadata(&k("expert_shared_feed_forward_length"), u("shared_ffn")?)?;
    // The twin's weights are normalised and unscaled; sigmoid gating; one group.
    w.add_metadata(&k("expert_weights_scale"), 1.0f32)?;
    w.add_metadata(&k("expert_weights_norm"), true)?;
    w.add_metadata(&k("expert_gating_func"), 2u32)?;
    w.add_metadata(&k("expert_group_count"), 1u32)?;
    w.add_metadata(&k("expert_group_used_count"), 1u32)?;
    if arch == "llada2" {
        w.add_metadata("diffusion.shift_logits", false)?;
    }
    Ok(())
}

/// Writes every tensor of `tensors` (GGUF-named) with `encode`; the router stays F32.
pub(crate) fn tensors(
    w: &mut GgufWriter,
    tensors: BTreeMap<String, Tensor>,
    ty: GgmlType,
    encode: impl Fn(&Tensor, GgmlType) -> Result<(GgmlType, Vec<u8>)>,
) -> Result<usize> {
    ensure!(
        tensors.contains_key("token_embd.weight") && tensors.contains_key("output.weight"),
        "not a llada2 twin's weights (no token_embd/output)"
    );
    let n = tensors.len();
    for (name, t) in tensors {
        let dims: Vec<u64> = t.shape.iter().rev().map(|&x| x as u64).collect();
        let ty = if name.ends_with("ffn_gate_inp.weight") {
            GgmlType::F32
        } else {
            ty
        };
        let (ty, bytes) = encode(&t, ty)?;
        w.add_tensor(&name, &dims, ty, bytes)?;
    }
    Ok(n)
}
