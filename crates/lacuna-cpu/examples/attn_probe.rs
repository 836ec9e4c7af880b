//! Dev probe: one attention call at LLaDA-8B head shapes, single thread, best of N.
fn main() {
    let t: usize = std::env::args().nth(1).map_or(544, |s| s.parse().unwrap());
    let (nh, hd) = (32, 128);
    let q: Vec<f32> = (0..t * nh * hd)
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let k: Vec<f32> = (0..t * nh * hd)
        .map(|i| ((i * 104_729) % 2003) as f32 / 1000.0 - 1.0)
        .collect();
    let v = q.clone();
    let mut out = vec![0.0f32; t * nh * hd];
    let shape = lacuna_cpu::AttnShape {
        queries: t,
        keys: t,
        n_head: nh,
        n_head_kv: nh,
        head_dim: hd,
        scale: 0.088,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut ws = lacuna_cpu::Workspace::new();
    let best = pool.install(|| {
        (0..5)
            .map(|_| {
                let t0 = std::time::Instant::now();
                lacuna_cpu::attention(&q, &k, &v, shape, &mut out, &mut ws).unwrap();
                t0.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    });
    let flops = 4.0 * (nh * t * t * hd) as f64;
    println!(
        "T={t}: {:.1} ms, {:.1} GFLOP/s",
        best * 1e3,
        flops / best / 1e9
    );
}
