//! A whole generation (prompt 16 + 64 tokens, one token per step, blocks of 32, greedy) per
//! cache policy, through `Engine::generate`; throughput in generated tokens.

#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lacuna::{CachePolicy, GenerateRequest, Prompt};
use lacuna_benches::bench_engine;

fn generate(c: &mut Criterion) {
    let (mut engine, name) = bench_engine().expect("loading the bench model");
    let vocab = engine.model().vocab_size() as u32;
    let prompt: Vec<u32> = (0..16u32).map(|i| (i * 104_729) % vocab).collect();
    let mut group = c.benchmark_group(format!("generate/{name}"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(64));
    for cache in [CachePolicy::None, CachePolicy::Prefix, CachePolicy::Dual] {
        let mut r = GenerateRequest::new(Prompt::Tokens(prompt.clone()));
        r.gen_length = 64;
        r.steps = 64;
        r.block_length = Some(32);
        r.keep_after_eos = true; // fixed work: random weights may end early otherwise
        if engine.arch() == lacuna::models::Arch::Dream {
            // Dream caches only in its block-wise parallel mode.
            r.parallel = Some(lacuna::ParallelConfig {
                rule: lacuna::ParallelRule::Factor(1e-9),
            });
        }
        r.cache = cache;
        group.bench_function(format!("gen64-{cache}"), |b| {
            b.iter(|| engine.generate(&r, |_| {}).expect("generate"))
        });
    }
    group.finish();
}

criterion_group!(benches, generate);
criterion_main!(benches);
