//! Dev probe: best-of-N GEMM timing (thread CPU clock). Not a benchmark of record.
use lacuna_cpu::peak::thread_cpu_time;
use lacuna_cpu::{PackedWeight, Path, Workspace, matmul_on};
use lacuna_quant::GgmlType;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = Path::from_name(&args[1]).unwrap();
    let ty = *GgmlType::ALL
        .iter()
        .find(|t| t.name().eq_ignore_ascii_case(&args[2]))
        .unwrap();
    let n: usize = args[3].parse().unwrap();
    let k: usize = args[4].parse().unwrap();
    let t: usize = args[5].parse().unwrap();
    let iters: usize = args.get(6).map_or(30, |s| s.parse().unwrap());
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let row = ty.row_bytes(k as u64).unwrap() as usize;
    let mut bytes: Vec<u8> = (0..n * row)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect();
    let small = half::f16::from_f32(0.01).to_le_bytes();
    let offs: &[usize] = match ty {
        GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        GgmlType::Q6_K => &[208],
        _ => &[0],
    };
    for b in bytes.chunks_exact_mut(ty.type_size()) {
        for &o in offs {
            b[o..o + 2].copy_from_slice(&small);
        }
    }
    // Optional 7th argument: cycle through this many copies of the weight, so that (with
    // enough of them) each run streams its weights from memory as a forward pass does,
    // instead of finding them in the last-level cache.
    let copies: usize = args.get(7).map_or(1, |s| s.parse().unwrap());
    let ws_all: Vec<PackedWeight> =
        vec![PackedWeight::new(ty, n, k, &bytes).unwrap(); copies.max(1)];
    let x: Vec<f32> = (0..t * k)
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let mut y = vec![0.0f32; t * n];
    let mut ws = Workspace::new();
    // PROBE_THREADS=2: time the GEMM on that many threads by wall clock (the peak loop stays
    // one thread, CPU time).
    let threads: usize = std::env::var("PROBE_THREADS").map_or(1, |s| s.parse().unwrap());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    // Each kernel run is paired with a run of the path's peak loop, so the ratio is taken
    // under the same (noisy) conditions.
    let peak_path = if path == Path::Amx { Path::Amx } else { path };
    let mut peaks = Vec::new();
    let mut times: Vec<f64> = pool.install(|| {
        (0..iters)
            .map(|i| {
                let w = &ws_all[i % ws_all.len()];
                let t0 = thread_cpu_time().unwrap();
                let ops = lacuna_cpu::peak::int8_dot_ops(peak_path, 1 << 18).unwrap();
                peaks.push(ops as f64 / (thread_cpu_time().unwrap() - t0).as_secs_f64() / 1e9);
                if threads > 1 {
                    let t0 = std::time::Instant::now();
                    matmul_on(path, &x, t, w, &mut y, &mut ws).unwrap();
                    return t0.elapsed().as_secs_f64();
                }
                let t0 = thread_cpu_time().unwrap();
                matmul_on(path, &x, t, w, &mut y, &mut ws).unwrap();
                (thread_cpu_time().unwrap() - t0).as_secs_f64()
            })
            .collect()
    });
    peaks.sort_by(f64::total_cmp);
    times.sort_by(f64::total_cmp);
    let ops = 2.0 * (t * n * k) as f64 / 1e9;
    println!(
        "{} {} {n}x{k} T{t}: best {:.1} GOP/s  median {:.1} GOP/s; peak best {:.0} median {:.0}; best/best {:.1}%",
        path.name(),
        ty.name(),
        ops / times[0],
        ops / times[iters / 2],
        peaks[iters - 1],
        peaks[iters / 2],
        100.0 * ops / times[0] / peaks[iters - 1]
    );
}
