//! Tokenizer construction time for vocabularies with many user-defined tokens (issue 16:
//! a 100,000-token vocabulary of user-defined filler took 155 s to load). Figures are added
//! tokens per second; construction should grow linearly with their number.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use lacuna_gguf::{Array, GgufFile, GgufWriter, Value};
use lacuna_tokenizer::Tokenizer;

/// A byte-level BPE vocabulary: 26 letters, a few merges, then `n` user-defined fillers.
fn file(n: usize) -> GgufFile {
    let mut tokens: Vec<String> = ('a'..='z').map(String::from).collect();
    tokens.extend(["ab", "abc", "<|endoftext|>"].map(String::from));
    let mut types = vec![1i32; tokens.len()];
    *types.last_mut().unwrap() = 3;
    tokens.extend((0..n).map(|i| format!("<filler_{i}>")));
    types.resize(tokens.len(), 4);
    let mut w = GgufWriter::new();
    w.add_metadata("tokenizer.ggml.model", "gpt2").unwrap();
    w.add_metadata("tokenizer.ggml.pre", "gpt-2").unwrap();
    w.add_metadata("tokenizer.ggml.tokens", Value::Array(Array::String(tokens)))
        .unwrap();
    w.add_metadata("tokenizer.ggml.token_type", types).unwrap();
    w.add_metadata("tokenizer.ggml.merges", vec!["a b", "ab c"])
        .unwrap();
    GgufFile::from_vec(w.to_vec().unwrap()).unwrap()
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000, 250_000] {
        let f = file(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &f, |b, f| {
            b.iter(|| Tokenizer::from_gguf(black_box(f)).unwrap())
        });
    }
    group.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::load);
}
criterion_main!(group::benches);
