//! How long `GgufFile::open` takes on a 5 GB model-shaped file (an 8B-parameter layout
//! in Q4_K/Q6_K with a 126k-token vocabulary), written sparse so it costs no disk. Opening
//! maps the file and parses only the header, so this should be milliseconds.
//!
//! `cargo bench -p lacuna-gguf --bench open`

// criterion_group!/criterion_main! generate public functions that cannot carry docs.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use lacuna_gguf::GgufFile;

#[path = "../examples/common/model_shaped.rs"]
mod model_shaped;

fn open(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model-5gb.gguf");
    model_shaped::model_shaped(&path);
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
