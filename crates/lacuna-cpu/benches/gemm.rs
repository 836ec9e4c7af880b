//! Quantized GEMM at LLaDA-8B shapes. Criterion's element throughput is int ops/s
//! (`2 * T * N * K`), i.e. GOP/s when divided by 1e9.
//!
//! The full grid is large; environment variables select a subset (comma lists):
//! `LACUNA_BENCH_TYPES` (default `q4_K,q6_K`), `LACUNA_BENCH_NK` (default
//! `4096x4096,12288x4096,4096x12288,126464x4096`), `LACUNA_BENCH_T` (default `32,160,544`),
//! `LACUNA_BENCH_THREADS` (default `1,2`), `LACUNA_BENCH_PATHS` (default: the best path),
//! `LACUNA_BENCH_LAYOUT` (`fast` repacked, `compact` ggml's blocks; default `fast`).
//! `LACUNA_BENCH_CLOCK=cpu` times 1-thread cases with the thread's CPU clock instead of the
//! wall clock (robust to other jobs on a shared machine; 2-thread cases stay wall-clock).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lacuna_cpu::peak::thread_cpu_time;
use lacuna_cpu::{PackedWeight, Path, Workspace, matmul_on};
use lacuna_quant::GgmlType;

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn ty(name: &str) -> GgmlType {
    *GgmlType::ALL
        .iter()
        .find(|t| t.name().eq_ignore_ascii_case(name))
        .unwrap_or_else(|| panic!("unknown type {name}"))
}

/// Random bytes with finite, small f16 scales: valid blocks of any type benchmarked.
fn weight_bytes(ty: GgmlType, n: usize, k: usize) -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let row = ty.row_bytes(k as u64).expect("k fits the block") as usize;
    let mut bytes: Vec<u8> = (0..n * row).map(|_| next() as u8).collect();
    let small = half::f16::from_f32(0.01).to_le_bytes();
    match ty {
        GgmlType::F32 => bytes
            .chunks_exact_mut(4)
            .for_each(|c| c.copy_from_slice(&0.01f32.to_le_bytes())),
        GgmlType::F16 | GgmlType::BF16 => bytes
            .chunks_exact_mut(2)
            .for_each(|c| c.copy_from_slice(&small)),
        _ => {
            let offsets: &[usize] = match ty {
                GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q4_1 | GgmlType::Q5_1 => &[0, 2],
                GgmlType::Q6_K => &[208],
                GgmlType::Q3_K => &[108],
                GgmlType::Q2_K => &[80, 82],
                // The E8M0 exponent byte: 2^(120 - 128) per level.
                GgmlType::MXFP4 => {
                    bytes.chunks_exact_mut(17).for_each(|b| b[0] = 120);
                    &[]
                }
                _ => &[0],
            };
            for b in bytes.chunks_exact_mut(ty.type_size()) {
                for &o in offsets {
                    b[o..o + 2].copy_from_slice(&small);
                }
            }
        }
    }
    bytes
}

fn gemm(c: &mut Criterion) {
    let paths: Vec<Path> = match std::env::var("LACUNA_BENCH_PATHS") {
        Ok(v) => v
            .split(',')
            .map(|p| Path::from_name(p).expect("path name"))
            .collect(),
        Err(_) => vec![Path::best()],
    };
    let mut g = c.benchmark_group("gemm");
    g.sample_size(10);
    g.warm_up_time(std::time::Duration::from_millis(500));
    g.measurement_time(std::time::Duration::from_secs(2));
    for tname in list("LACUNA_BENCH_TYPES", "q4_K,q6_K") {
        let ty = ty(&tname);
        for nk in list(
            "LACUNA_BENCH_NK",
            "4096x4096,12288x4096,4096x12288,126464x4096",
        ) {
            let (n, k) = nk.split_once('x').expect("NxK");
            let (n, k): (usize, usize) = (n.parse().expect("N"), k.parse().expect("K"));
            for layout in list("LACUNA_BENCH_LAYOUT", "fast") {
                let bytes = weight_bytes(ty, n, k);
                let w = match layout.as_str() {
                    "compact" => PackedWeight::compact(ty, n, k, &bytes).expect("compact"),
                    _ => PackedWeight::new(ty, n, k, &bytes).expect("pack"),
                };
                for t in list("LACUNA_BENCH_T", "32,160,544") {
                    let t: usize = t.parse().expect("T");
                    let x: Vec<f32> = (0..t * k)
                        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
                        .collect();
                    let mut y = vec![0.0f32; t * n];
                    g.throughput(Throughput::Elements((2 * t * n * k) as u64));
                    for &path in &paths {
                        for threads in list("LACUNA_BENCH_THREADS", "1,2") {
                            let threads: usize = threads.parse().expect("threads");
                            let pool = rayon::ThreadPoolBuilder::new()
                                .num_threads(threads)
                                .build()
                                .expect("pool");
                            let mut ws = Workspace::new();
                            let id = BenchmarkId::new(
                                format!("{}/{}/{layout}/{n}x{k}", path.name(), ty.name()),
                                format!("T{t}/th{threads}"),
                            );
                            let cpu_clock = threads == 1
                                && std::env::var("LACUNA_BENCH_CLOCK").as_deref() == Ok("cpu");
                            g.bench_function(id, |b| {
                                pool.install(|| {
                                    if cpu_clock {
                                        // One pool thread does all the work: time its CPU clock.
                                        b.iter_custom(|iters| {
                                            let t0 = thread_cpu_time().expect("thread CPU clock");
                                            for _ in 0..iters {
                                                matmul_on(path, &x, t, &w, &mut y, &mut ws)
                                                    .expect("matmul");
                                            }
                                            thread_cpu_time().expect("thread CPU clock") - t0
                                        })
                                    } else {
                                        b.iter(|| {
                                            matmul_on(path, &x, t, &w, &mut y, &mut ws)
                                                .expect("matmul")
                                        })
                                    }
                                })
                            });
                        }
                    }
                }
            }
        }
    }
    g.finish();
}

// criterion's macro generates an undocumented function.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, gemm);
}
criterion_main!(group::benches);
