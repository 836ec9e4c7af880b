//! Times whole forward passes of a GGUF file on the CUDA backend (and, with `--cpu`, on the
//! CPU backend): `cuda_forward MODEL T [T ...]` prints one JSON line per canvas length with
//! the median, min and max of 5 timed passes after one warm-up. Used by
//! `tools/bench/cuda-device.sh` on the GPU machine.

use std::time::Instant;

use lacuna_gguf::GgufFile;
use lacuna_models::{Backend, CpuBackend, CudaBackend, Model};

fn time<B: Backend>(model: &mut Model<B>, t: usize) -> Result<Vec<f64>, lacuna_models::Error> {
    let tokens: Vec<u32> = (0..t as u32).map(|i| (i * 37 + 11) % 500).collect();
    let rows: Vec<usize> = (0..t).collect();
    let mut out = vec![0.0; t * model.vocab_size()];
    model.forward(&tokens, &rows, &mut out)?;
    let mut ms = Vec::new();
    for _ in 0..5 {
        let c = Instant::now();
        // Logits come back to the host, so each pass ends synchronised.
        model.forward(&tokens, &rows, &mut out)?;
        ms.push(c.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cpu = args.iter().any(|a| a == "--cpu");
    let mut args = args.into_iter().filter(|a| a != "--cpu");
    let path = args
        .next()
        .ok_or("usage: cuda_forward MODEL T [T ...] [--cpu]")?;
    let lens: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let load = Instant::now();
    let report = |backend: &str, t: usize, ms: &[f64], load_s: f64| {
        println!(
            "{{\"backend\":\"{backend}\",\"model\":\"{path}\",\"tokens\":{t},\"median_ms\":{:.3},\"min_ms\":{:.3},\"max_ms\":{:.3},\"runs\":{},\"load_s\":{load_s:.2}}}",
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() - 1],
            ms.len()
        );
    };
    if cpu {
        let mut m = Model::load(GgufFile::open(&path)?, CpuBackend::new())?;
        let load_s = load.elapsed().as_secs_f64();
        for &t in &lens {
            report(&m.backend().name(), t, &time(&mut m, t)?, load_s);
        }
    } else {
        let mut m = Model::load(GgufFile::open(&path)?, CudaBackend::new(0)?)?;
        let load_s = load.elapsed().as_secs_f64();
        for &t in &lens {
            report(&m.backend().name(), t, &time(&mut m, t)?, load_s);
        }
    }
    Ok(())
}
