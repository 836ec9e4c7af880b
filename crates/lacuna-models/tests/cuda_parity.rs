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
use lacuna_models::{
    Arch, Backend, BatchPass, Buffers, CpuBackend, CudaBackend, KvCache, Model, PassSpec, Weights,
};
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
        // Ragged tiles on both sides: n and t not multiples of 64, k of 256 or 32; the last
        // three split k (2 splits; 8 of 2 chunks, as a 4096-wide product at 32 tokens is;
        // 6 splits of 3 chunks over 13, the last split empty).
        for (n, k, t) in [
            (1, 256, 1),
            (70, 512, 3),
            (129, 768, 65),
            (64, 1024, 160),
            (512, 4096, 32),
            (96, 3328, 7),
        ] {
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

/// GPU rows against CPU rows: each within 2e-2 relative L2; where the arg-max differs, the
/// CPU must see the GPU's pick as a near-tie (its logit within 5% of the row's standard
/// deviation of the CPU's top logit: random weights make such ties common, and one int8
/// step of a flipped activation moves logits that much), and at most one row in 50 (or a
/// single row) may differ.
fn check_rows(got: &[f32], want: &[f32], vocab: usize, what: &str) {
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
    let (mut flips, mut worst) = (0usize, 0f64);
    let n = want.len() / vocab;
    for (i, (g, w)) in got
        .chunks_exact(vocab)
        .zip(want.chunks_exact(vocab))
        .enumerate()
    {
        let e = rel_l2(g, w);
        worst = worst.max(e);
        assert!(e < 2e-2, "{what}: row {i} relative L2 {e:e}");
        let (mg, mw) = (argmax(g), argmax(w));
        if mg != mw {
            flips += 1;
            let mean = w.iter().map(|&x| f64::from(x)).sum::<f64>() / vocab as f64;
            let sd = (w
                .iter()
                .map(|&x| (f64::from(x) - mean).powi(2))
                .sum::<f64>()
                / vocab as f64)
                .sqrt();
            let gap = f64::from(w[mw] - w[mg]);
            eprintln!(
                "{what}: row {i} arg-max {mg} on the GPU, {mw} on the CPU (CPU gap {gap:.3e} = {:.4} sd)",
                gap / sd
            );
            assert!(
                gap <= 0.05 * sd,
                "{what}: row {i}: the GPU picks {mg}, the CPU {mw}, {:.4} sd apart",
                gap / sd
            );
        }
    }
    assert!(
        flips <= 1 || flips * 50 <= n,
        "{what}: {flips} of {n} rows pick another token"
    );
    eprintln!("{what}: worst row relative L2 {worst:.2e}, {flips} of {n} arg-maxes differ");
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
            check_rows(&b, &a, v, &format!("{arch:?} {quant:?} n={n} {pass:?}"));
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

/// One canvas's pass of the batch check: tokens, the pass, the rows read, and for a window
/// the stale canvas its cache is filled from first.
struct BatchItem {
    tokens: Vec<u32>,
    pass: Pass,
    rows: Vec<usize>,
    stale: Option<Vec<u32>>,
}

fn batch_items() -> Vec<BatchItem> {
    let canvas =
        |n: u32, salt: u32| -> Vec<u32> { (0..n).map(|i| (i * 37 + salt) % 500).collect() };
    let stale = |v: &[u32]| -> Vec<u32> {
        v.iter()
            .enumerate()
            .map(|(i, &t)| if i % 3 == 0 { (t + 101) % 500 } else { t })
            .collect()
    };
    let (a, b, c, d) = (canvas(40, 11), canvas(17, 5), canvas(65, 29), canvas(33, 3));
    vec![
        BatchItem {
            pass: Pass::Full,
            rows: (0..40).step_by(3).collect(),
            stale: None,
            tokens: a,
        },
        BatchItem {
            pass: Pass::Fill,
            rows: (0..17).collect(),
            stale: None,
            tokens: b,
        },
        BatchItem {
            pass: Pass::Window(32..64),
            rows: (32..64).filter(|i| i % 4 != 1).collect(),
            stale: Some(stale(&c)),
            tokens: c,
        },
        BatchItem {
            pass: Pass::Window(8..11),
            rows: vec![8, 10],
            stale: Some(stale(&d)),
            tokens: d,
        },
    ]
}

/// The cache `item`'s pass starts from: empty, or filled from its stale canvas.
fn start_cache<B: Backend>(model: &mut Model<B>, item: &BatchItem) -> KvCache<B::Buf> {
    let mut cache = KvCache::new();
    if let Some(stale) = &item.stale {
        let mut out = vec![0.0; model.vocab_size()];
        model
            .forward_pass(
                &mut cache,
                PassSpec::new(&Pass::Fill),
                stale,
                &[0],
                &mut out,
            )
            .unwrap();
    }
    cache
}

/// Every item's pass alone (`batch = false`) or all of them as one `forward_batch`: the
/// logits of each item's rows.
fn run_items<B: Backend>(model: &mut Model<B>, items: &[BatchItem], batch: bool) -> Vec<Vec<f32>> {
    let v = model.vocab_size();
    let mut caches: Vec<_> = items.iter().map(|it| start_cache(model, it)).collect();
    let mut outs: Vec<Vec<f32>> = items
        .iter()
        .map(|it| vec![f32::NAN; it.rows.len() * v])
        .collect();
    if !batch {
        for ((it, cache), out) in items.iter().zip(&mut caches).zip(&mut outs) {
            model
                .forward_pass(cache, PassSpec::new(&it.pass), &it.tokens, &it.rows, out)
                .unwrap();
        }
        return outs;
    }
    let mut passes: Vec<BatchPass<'_, B::Buf>> = items
        .iter()
        .zip(caches.iter_mut().zip(outs.iter_mut()))
        .map(|(it, (cache, out))| BatchPass {
            cache: Some(cache),
            spec: PassSpec::new(&it.pass),
            tokens: &it.tokens,
            rows: Some(&it.rows),
            out,
        })
        .collect();
    for r in model.forward_batch(&mut passes).unwrap() {
        r.unwrap();
    }
    drop(passes);
    outs
}

/// `Model::forward_batch` on the GPU: several canvases' passes (full, fill, windows over
/// stale caches, of different lengths) as one forward give each pass its logits alone on
/// the GPU (bit-identical is reported, 1e-6 relative L2 is required: a GPU GEMM may tile
/// rows differently when the product has more of them) and agree with the CPU backend's
/// batch within the whole-forward bounds above.
#[test]
fn batched_passes_match_each_pass_alone_on_the_gpu() {
    if gpu_or_skip().is_none() {
        return;
    }
    for arch in [Arch::Llada, Arch::Dream, Arch::LladaMoe, Arch::Llada2] {
        let bytes = fixture(arch, QuantMix::Q4KM);
        let mut gpu = Model::load(
            GgufFile::from_vec(bytes.clone()).unwrap(),
            CudaBackend::new(0).unwrap(),
        )
        .unwrap();
        let mut cpu = Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap();
        let v = gpu.vocab_size();
        let items = batch_items();
        let solo = run_items(&mut gpu, &items, false);
        let outs = run_items(&mut gpu, &items, true);
        // The CPU backend's batch, for the cross-backend bound.
        let cpu_outs = run_items(&mut cpu, &items, true);
        for (i, it) in items.iter().enumerate() {
            let identical = outs[i]
                .iter()
                .zip(&solo[i])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            let e = rel_l2(&outs[i], &solo[i]);
            eprintln!(
                "batch {arch:?} item {i} {:?}: vs alone on the GPU rel L2 {e:e}, bit-identical {identical}",
                it.pass
            );
            assert!(
                e < 1e-6,
                "{arch:?} item {i} {:?}: batch vs alone rel L2 {e:e}",
                it.pass
            );
            check_rows(
                &outs[i],
                &cpu_outs[i],
                v,
                &format!("batch {arch:?} item {i} {:?}", it.pass),
            );
        }
    }
}
