//! Peak int8 dot throughput per path, one thread: the denominator of the GEMM "fraction of
//! peak" figures. Criterion's element throughput is int ops/s (multiply + add = 2 ops).
//! `LACUNA_BENCH_CLOCK=cpu` times with the thread's CPU clock (see `benches/gemm.rs`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lacuna_cpu::Path;
use lacuna_cpu::peak::{int8_dot_ops, thread_cpu_time};

const ITERS: u64 = 1 << 20;

fn peak(c: &mut Criterion) {
    let mut g = c.benchmark_group("int8_dot_peak");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(2));
    for path in Path::available() {
        let ops = int8_dot_ops(path, ITERS).expect("available");
        g.throughput(Throughput::Elements(ops));
        if std::env::var("LACUNA_BENCH_CLOCK").as_deref() == Ok("cpu") {
            g.bench_function(path.name(), |b| {
                b.iter_custom(|iters| {
                    let t0 = thread_cpu_time().expect("thread CPU clock");
                    for _ in 0..iters {
                        std::hint::black_box(int8_dot_ops(path, ITERS).expect("available"));
                    }
                    thread_cpu_time().expect("thread CPU clock") - t0
                })
            });
        } else {
            g.bench_function(path.name(), |b| b.iter(|| int8_dot_ops(path, ITERS)));
        }
    }
    g.finish();
}

// criterion's macro generates an undocumented function.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, peak);
}
criterion_main!(group::benches);
