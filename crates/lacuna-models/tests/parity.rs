//! Parity with llama.cpp: every architecture x quant mix, on the tiny 2-layer fixtures, against
//! the logits llama.cpp computed for the same file (`tests/data/*.logits`, written by
//! `tests/data/regen.sh` with `tools/llama-oracle`).
//!
//! LLaDA2 has no graph in llama.cpp: its reference is the same weights written as llama.cpp's
//! autoregressive `bailingmoe2` (the backbone LLaDA2 was trained from) run with causal
//! attention, against Lacuna's LLaDA2 with attention blocks of 1 (block-causal attention
//! whose blocks are single positions is causal attention). The tiny LLaDA2 fixture has a
//! dense first layer and a routed second one (16 experts in 4 groups, 2 groups and 4 experts
//! used, one shared expert, sigmoid gating with selection bias, normalised weights times
//! 2.5), fused QKV and half-width RoPE, so every part of the graph is covered; its
//! bidirectional-within-block part is covered by `tests/block_causal.rs`.
//!
//! Thresholds, per position (row of logits); every row must also keep llama.cpp's arg-max:
//! - F32: relative L2 error <= 1e-5 on every row. Both sides compute in f32 and differ only in
//!   summation order; measured <= 8e-7, so the bound has a 12x margin.
//! - Q8_0, Q4_K_M: <= 1e-5 on all but at most 2 of the 12 rows, and <= 5e-3 on those two.
//!   Lacuna quantizes activations exactly as ggml does (Q8_K for K-quants, Q8_0 for Q8_0), so
//!   rows usually agree to ~1e-7 (measured). But the quantization is a discontinuity: when
//!   a summation-order difference of ~1e-7 upstream moves one activation across a rounding
//!   boundary, that element changes by one quantization step and the row's logits by ~1e-3
//!   (one step of 1/127 in one of 256 elements). Measured: `llada-moe` Q8_0 has two such rows
//!   (1.9e-3, 3.1e-3); `llada-moe` Q4_K_M has one (1.4e-3).
//! - LLaDA2 Q8_0/Q4_K_M: the looser rows may reach 1e-2 (see `bounds`).
//! - F16: <= 1e-3, BF16: <= 5e-3 on every row (measured 3.2e-4 and 1.9e-3). Lacuna rounds
//!   activations to f16/bf16 as ggml's `vec_dot_type` says; llama.cpp's result differs by
//!   about the size of that rounding on dense F16/BF16 matmuls. The cause is not found yet
//!   (see the crate report); the bound is ~3x the measured error so a regression still fails.

mod common;

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Model};

const TOKENS: [u32; 12] = [1, 2, 3, 4, 5, 511, 511, 7, 300, 42, 0, 255];
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

struct Bounds {
    /// Relative L2 error bound for most rows.
    rel: f64,
    /// A looser bound for at most `n_loose` rows.
    loose: f64,
    n_loose: usize,
}

fn bounds(arch: Arch, quant: QuantMix) -> Bounds {
    let tight = |rel| Bounds {
        rel,
        loose: rel,
        n_loose: 0,
    };
    match quant {
        QuantMix::F32 => tight(1e-5),
        QuantMix::F16 => tight(1e-3),
        QuantMix::Bf16 => tight(5e-3),
        QuantMix::Q8_0 | QuantMix::Q4KM => Bounds {
            rel: 1e-5,
            // LLaDA2 multiplies routed expert outputs by 2.5 (`expert_weights_scale`), and
            // a flipped activation step inside a routed expert grows with it: measured one
            // Q8_0 row at 6.9e-3 (the other 11 at ~1e-7).
            loose: if arch == Arch::Llada2 { 1e-2 } else { 5e-3 },
            n_loose: 2,
        },
    }
}

fn check(arch: Arch, quant: QuantMix) {
    let name = format!("{}-{}", arch.name(), quant.name());
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    let want_hash = std::fs::read_to_string(format!("{DATA}/{name}.fnv64")).unwrap();
    assert_eq!(
        format!("{:016x}", fnv64(&bytes)),
        want_hash.trim(),
        "{name}: the fixture generator no longer writes the file the reference logits were \
         computed from; rerun tests/data/regen.sh"
    );
    if arch == Arch::Llada2 {
        let twin = FixtureSpec {
            bailingmoe2_twin: true,
            ..spec.clone()
        };
        let twin = build(&twin).unwrap().to_vec().unwrap();
        let want = std::fs::read_to_string(format!("{DATA}/bailingmoe2-{}.fnv64", quant.name()));
        assert_eq!(
            format!("{:016x}", fnv64(&twin)),
            want.unwrap().trim(),
            "{name}: the bailingmoe2 twin changed; rerun tests/data/regen.sh"
        );
    }
    let reference = common::read_logits(&format!("{DATA}/{name}.logits"));
    let mut model = Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap();
    // LLaDA2 against llama.cpp's autoregressive `bailingmoe2` graph: causal attention.
    let block = (arch == Arch::Llada2).then_some(1);
    let vocab = model.vocab_size();
    assert_eq!(
        reference.len(),
        TOKENS.len() * vocab,
        "{name}: reference size"
    );
    let mut got = vec![0.0f32; TOKENS.len() * vocab];
    model
        .forward_all_with_block(&TOKENS, block, &mut got)
        .unwrap();
    let b = bounds(arch, quant);
    let mut loose_rows = 0;
    for (row, (rel, same_top1)) in common::rows(&got, &reference, vocab)
        .into_iter()
        .enumerate()
    {
        assert!(
            same_top1,
            "{name}: row {row} top-1 differs (rel L2 {rel:.2e})"
        );
        if rel > b.rel {
            loose_rows += 1;
            assert!(
                rel <= b.loose,
                "{name}: row {row} relative L2 error {rel:.2e} > {:.0e}",
                b.loose
            );
        }
    }
    assert!(
        loose_rows <= b.n_loose,
        "{name}: {loose_rows} rows above {:.0e}",
        b.rel
    );
}

macro_rules! parity {
    ($($test:ident: $arch:expr, $quant:expr;)*) => {
        $( #[test] fn $test() { check($arch, $quant); } )*
    };
}

parity! {
    llada_f32: Arch::Llada, QuantMix::F32;
    llada_f16: Arch::Llada, QuantMix::F16;
    llada_bf16: Arch::Llada, QuantMix::Bf16;
    llada_q8_0: Arch::Llada, QuantMix::Q8_0;
    llada_q4_k_m: Arch::Llada, QuantMix::Q4KM;
    dream_f32: Arch::Dream, QuantMix::F32;
    dream_f16: Arch::Dream, QuantMix::F16;
    dream_bf16: Arch::Dream, QuantMix::Bf16;
    dream_q8_0: Arch::Dream, QuantMix::Q8_0;
    dream_q4_k_m: Arch::Dream, QuantMix::Q4KM;
    llada_moe_f32: Arch::LladaMoe, QuantMix::F32;
    llada_moe_f16: Arch::LladaMoe, QuantMix::F16;
    llada_moe_bf16: Arch::LladaMoe, QuantMix::Bf16;
    llada_moe_q8_0: Arch::LladaMoe, QuantMix::Q8_0;
    llada_moe_q4_k_m: Arch::LladaMoe, QuantMix::Q4KM;
    rnd1_f32: Arch::Rnd1, QuantMix::F32;
    rnd1_f16: Arch::Rnd1, QuantMix::F16;
    rnd1_bf16: Arch::Rnd1, QuantMix::Bf16;
    rnd1_q8_0: Arch::Rnd1, QuantMix::Q8_0;
    rnd1_q4_k_m: Arch::Rnd1, QuantMix::Q4KM;
    llada2_f32: Arch::Llada2, QuantMix::F32;
    llada2_f16: Arch::Llada2, QuantMix::F16;
    llada2_bf16: Arch::Llada2, QuantMix::Bf16;
    llada2_q8_0: Arch::Llada2, QuantMix::Q8_0;
    llada2_q4_k_m: Arch::Llada2, QuantMix::Q4KM;
}
