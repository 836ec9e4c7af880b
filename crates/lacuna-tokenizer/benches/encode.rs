//! Encode throughput on a long text (~200 KB: the parity corpus repeated), per fixture
//! vocabulary. Figures are bytes of input per second.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_main};
use lacuna_gguf::GgufFile;
use lacuna_tokenizer::Tokenizer;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn long_text() -> String {
    let corpus: Vec<String> =
        serde_json::from_slice(&std::fs::read(fixtures().join("corpus.json")).unwrap()).unwrap();
    let once = corpus.join(" ");
    let mut text = String::new();
    while text.len() < 200_000 {
        text.push_str(&once);
        text.push('\n');
    }
    text
}

fn encode(c: &mut Criterion) {
    let text = long_text();
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    for name in ["bpe-llama3", "bpe-qwen2", "spm"] {
        let file = GgufFile::open(fixtures().join(format!("{name}.gguf"))).unwrap();
        let tok = Tokenizer::from_gguf(&file).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| tok.encode(black_box(&text), true, true).unwrap())
        });
    }
    group.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::encode);
}
criterion_main!(group::benches);
