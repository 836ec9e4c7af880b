//! How long `GgufFile::open` takes on a 5 GB model-shaped file (an 8B-parameter layout
//! in Q4_K/Q6_K with a 126k-token vocabulary), written sparse so it costs no disk. Opening
//! maps the file and parses only the header, so this should be milliseconds.
//!
//! `cargo bench -p lacuna-gguf --bench open`

// criterion_group!/criterion_main! generate public functions that cannot carry docs.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use lacuna_gguf::{GgmlType, GgufFile, GgufWriter};

const VOCAB: u64 = 126_464;
const EMBD: u64 = 4096;
const FFN: u64 = 12_288;
const LAYERS: usize = 32;

fn model_shaped(path: &std::path::Path) {
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

fn open(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model-5gb.gguf");
    model_shaped(&path);
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 5_000_000_000, "file is {len} bytes");
    c.bench_function("open_5gb_model_shaped", |b| {
        b.iter(|| {
            let f = GgufFile::open(black_box(&path)).unwrap();
            black_box(f.tensors().iter().map(|t| t.n_bytes).sum::<u64>())
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = open
}
criterion_main!(benches);
