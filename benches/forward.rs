//! One forward pass over T canvas tokens with every position's logits (what a denoising
//! step without a cache costs); throughput in tokens.

#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lacuna_benches::bench_engine;

fn forward(c: &mut Criterion) {
    let (mut engine, name) = bench_engine().expect("loading the bench model");
    let vocab = engine.model().vocab_size();
    let mut group = c.benchmark_group(format!("forward/{name}"));
    group.sample_size(10);
    for t in [64usize, 160] {
        let t = t.min(engine.context_length());
        let tokens: Vec<u32> = (0..t as u32).map(|i| (i * 7919) % vocab as u32).collect();
        let mut out = vec![0.0f32; t * vocab];
        group.throughput(Throughput::Elements(t as u64));
        group.bench_function(format!("T{t}"), |b| {
            b.iter(|| engine.logits(&tokens, &mut out).expect("forward"))
        });
    }
    group.finish();
}

criterion_group!(benches, forward);
criterion_main!(benches);
