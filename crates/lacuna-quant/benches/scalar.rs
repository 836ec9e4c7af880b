//! Baseline throughput of the scalar reference code: `dequantize_row` and `vec_dot` per
//! type on a 4096-element row (one LLaDA-8B hidden row), through the byte-level dispatch.
//! `Throughput::Elements`, so figures read as weights per second.

// criterion_group!/criterion_main! generate public functions that cannot carry docs.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lacuna_quant::{GgmlType, can_dequantize, dequantize_row, quantize_row, vec_dot, vec_dot_type};
use std::hint::black_box;

const N: usize = 4096;

fn row(seed: f32) -> Vec<f32> {
    (0..N)
        .map(|i| ((i as f32 + seed) * 0.61).sin() * 1.7)
        .collect()
}

/// A row of `ty`: quantized where there is a quantizer, else valid random-ish bytes.
fn bytes(ty: GgmlType, seed: f32) -> Vec<u8> {
    let len = N / ty.block_size() * ty.type_size();
    let mut out = vec![0u8; len];
    if quantize_row(ty, &row(seed), &mut out).is_err() {
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
        }
        // keep the leading f16 scale of every block finite
        for block in out.chunks_exact_mut(ty.type_size()) {
            block[1] &= 0x3b;
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let types: Vec<GgmlType> = GgmlType::ALL
        .iter()
        .copied()
        .filter(|&t| can_dequantize(t))
        .collect();
    let mut g = c.benchmark_group("dequantize_row");
    g.throughput(Throughput::Elements(N as u64));
    for &ty in &types {
        let src = bytes(ty, 0.0);
        let mut dst = vec![0f32; N];
        g.bench_function(BenchmarkId::from_parameter(ty), |b| {
            b.iter(|| dequantize_row(ty, black_box(&src), &mut dst).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("vec_dot");
    g.throughput(Throughput::Elements(N as u64));
    for &ty in &types {
        let Some(yt) = vec_dot_type(ty) else { continue };
        let x = bytes(ty, 0.0);
        let y = bytes(yt, 3.0);
        g.bench_function(BenchmarkId::from_parameter(ty), |b| {
            b.iter(|| vec_dot(ty, N, black_box(&x), black_box(&y)).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("quantize_row");
    g.throughput(Throughput::Elements(N as u64));
    for ty in [
        GgmlType::Q8_0,
        GgmlType::Q8_K,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
    ] {
        let x = row(0.0);
        let mut dst = vec![0u8; N / ty.block_size() * ty.type_size()];
        g.bench_function(BenchmarkId::from_parameter(ty), |b| {
            b.iter(|| quantize_row(ty, black_box(&x), &mut dst).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // short runs: this is a baseline for the fast kernels, not the figure of record
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_millis(800));
    targets = bench
}
criterion_main!(benches);
