//! The generator shared by `benches/open.rs` and `examples/sparse_model.rs`: a 5 GB file
//! shaped like an 8B-parameter model (Q4_K/Q6_K, 126k-token vocabulary), all tensors left
//! as holes so it costs no disk.

use lacuna_gguf::{GgmlType, GgufWriter};

const VOCAB: u64 = 126_464;
const EMBD: u64 = 4096;
const FFN: u64 = 12_288;
const LAYERS: usize = 32;

/// Writes the model-shaped sparse file to `path`.
pub(crate) fn model_shaped(path: &std::path::Path) {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("llada.block_count", LAYERS as u32).unwrap();
    w.add_metadata("llada.embedding_length", EMBD as u32)
        .unwrap();
    let tokens: Vec<String> = (0..VOCAB).map(|i| format!("tok{i}")).collect();
    w.add_metadata("tokenizer.ggml.tokens", tokens).unwrap();
    w.add_metadata("tokenizer.ggml.scores", vec![0.0f32; VOCAB as usize])
        .unwrap();
    w.add_metadata("tokenizer.ggml.token_type", vec![1i32; VOCAB as usize])
        .unwrap();
    w.add_tensor_zeroed("token_embd.weight", &[EMBD, VOCAB], GgmlType::Q4_K)
        .unwrap();
    for l in 0..LAYERS {
        for t in ["attn_q", "attn_k", "attn_v", "attn_output"] {
            w.add_tensor_zeroed(
                &format!("blk.{l}.{t}.weight"),
                &[EMBD, EMBD],
                GgmlType::Q4_K,
            )
            .unwrap();
        }
        for t in ["ffn_gate", "ffn_up"] {
            w.add_tensor_zeroed(&format!("blk.{l}.{t}.weight"), &[EMBD, FFN], GgmlType::Q4_K)
                .unwrap();
        }
        w.add_tensor_zeroed(
            &format!("blk.{l}.ffn_down.weight"),
            &[FFN, EMBD],
            GgmlType::Q6_K,
        )
        .unwrap();
        for t in ["attn_norm", "ffn_norm"] {
            w.add_tensor_zeroed(&format!("blk.{l}.{t}.weight"), &[EMBD], GgmlType::F32)
                .unwrap();
        }
    }
    w.add_tensor_zeroed("output_norm.weight", &[EMBD], GgmlType::F32)
        .unwrap();
    w.add_tensor_zeroed("output.weight", &[EMBD, VOCAB], GgmlType::Q6_K)
        .unwrap();
    w.write_file(path).unwrap();
}
