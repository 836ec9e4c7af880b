//! The CUDA backend against the CPU backend, on a GPU: every GEMM kernel on random shapes
//! and data against the host twin of its arithmetic, and whole forward passes of the LLaDA,
//! Dream, LLaDA-MoE and LLaDA2 fixtures (full, cached window, block-causal) against the CPU
//! backend's logits.
//!
//! Skips where no GPU is usable; `LACUNA_REQUIRE_GPU=1` (the GPU machine's script,
//! `tools/bench/cuda-device.sh`) turns a skip into a failure.
//!
//! Thresholds: both backends quantize activations to the same int8 formats, and their
//! integer sums are identical; what differs is the order of float additions (tile folds,
//! the attention's online softmax, RMSNorm's reduction tree). Per GEMM that is ~1e-6
//! relative; through a 2-layer random-weight fixture a quantization boundary can flip a
//! few activations (one int8 step, 1/127 of a block's range), so per-row relative L2 is
//! bounded at 2e-2 and the arg-max token must agree on at least 98% of rows.

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, Backend, CpuBackend, CudaBackend, KvCache, Model, PassSpec};
use lacuna_sampler::Pass;

mod common;
use common::{quantized, rel_l2, values};

fn gpu_or_skip() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(
                std::env::var_os("LACUNA_REQUIRE_GPU").is_none(),
                "LACUNA_REQUIRE_GPU is set but: {e}"
            );
            eprintln!("skipped: {e}");
            None
        }
    }
}

#[test]
fn every_gemm_kernel_matches_its_host_twin() {
    let Some(mut be) = gpu_or_skip() else { return };
    let mut case = 0u64;
    let types = lacuna_cuda::repack::TYPES
        .into_iter()
        .filter(|&t| lacuna_quant::can_quantize(t));
    for ty in types {
        // Ragged tiles on both sides: n and t not multiples of 64, k of 256 or 32.
        for (n, k, t) in [(1, 256, 1), (70, 512, 3), (129, 768, 65), (64, 1024, 160)] {
            case += 1;
            let w = values(case, n * k);
            let bytes = quantized(ty, n, k, &w);
            let x = values(case ^ 0xabcdef, t * k);
            let host = lacuna_cuda::repack::Repacked::new(ty, n, k, &bytes).unwrap();
            let want = host.reference_matmul(&x, t);
            let wt = be.prepare_weight(ty, n, k, &bytes).unwrap();
            let xb = be.prepare_vector(x).unwrap();
            let mut got = vec![0.0f32; t * n];
            be.matmul_to_host(CudaBackend::view(&xb, 0..t * k), t, &wt, &mut got)
                .unwrap();
            let e = rel_l2(&got, &want);
            assert!(e < 1e-4, "{ty} n={n} k={k} t={t}: relative L2 {e:e}");
        }
    }
}

fn fixture(arch: Arch, quant: QuantMix) -> Vec<u8> {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    build(&spec).unwrap().to_vec().unwrap()
}

fn compare(arch: Arch, quant: QuantMix, gpu: CudaBackend) {
    let bytes = fixture(arch, quant);
    let mut cpu = Model::load(
        GgufFile::from_vec(bytes.clone()).unwrap(),
        CpuBackend::new(),
    )
    .unwrap();
    let mut cuda = Model::load(GgufFile::from_vec(bytes).unwrap(), gpu).unwrap();
    let v = cpu.vocab_size();
    let (mut cpu_cache, mut gpu_cache) = (KvCache::new(), KvCache::new());
    for n in [40usize, 130] {
        let tokens: Vec<u32> = (0..n as u32).map(|i| (i * 37 + 11) % 500).collect();
        let rows: Vec<usize> = (0..n).step_by(3).collect();
        let passes: Vec<Pass> = vec![Pass::Full, Pass::Fill, Pass::Window(8..24)];
        for pass in &passes {
            let rows: Vec<usize> = match pass {
                Pass::Window(w) => w.clone().collect(),
                _ => rows.clone(),
            };
            let (mut a, mut b) = (vec![0.0; rows.len() * v], vec![0.0; rows.len() * v]);
            let spec = PassSpec::new(pass);
            cpu.forward_pass(&mut cpu_cache, spec, &tokens, &rows, &mut a)
                .unwrap();
            cuda.forward_pass(&mut gpu_cache, spec, &tokens, &rows, &mut b)
                .unwrap();
            let mut agree = 0;
            for (e, same_top1) in common::rows(&b, &a, v) {
                assert!(
                    e < 2e-2,
                    "{arch:?} {quant:?} n={n} {pass:?}: row relative L2 {e:e}"
                );
                agree += usize::from(same_top1);
            }
            let frac = agree as f64 / rows.len() as f64;
            assert!(
                frac >= 0.98,
                "{arch:?} {quant:?} n={n} {pass:?}: top-1 agreement {frac}"
            );
            eprintln!("{arch:?} {quant:?} n={n} {pass:?}: top-1 agreement {frac}");
        }
    }
}

#[test]
fn whole_forwards_match_the_cpu_backend() {
    if gpu_or_skip().is_none() {
        return;
    }
    for arch in [Arch::Llada, Arch::Dream, Arch::LladaMoe, Arch::Llada2] {
        for quant in [QuantMix::Q4KM, QuantMix::Q8_0, QuantMix::F16] {
            compare(arch, quant, CudaBackend::new(0).unwrap());
        }
    }
}
