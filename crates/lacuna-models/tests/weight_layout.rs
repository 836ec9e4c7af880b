//! `WeightLayout`: compact weights (ggml's blocks) give the same logits as repacked ones, bit
//! for bit, for dense and mixture-of-experts models, and the layout asked for is the one
//! each kind of weight gets.

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Model, WeightLayout};

fn load(arch: Arch, quant: QuantMix, layout: WeightLayout) -> Model {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    Model::load(
        GgufFile::from_vec(bytes).unwrap(),
        CpuBackend::with_layout(layout),
    )
    .unwrap()
}

/// Logits of every third row of an `n`-token canvas (from 128 tokens on, compact matrices
/// take their panel-decoding path; below, the few-token kernels).
fn logits(m: &mut Model, n: u32) -> Vec<f32> {
    let tokens: Vec<u32> = (0..n).map(|i| (i * 37 + 11) % 500).collect();
    let rows: Vec<usize> = (0..tokens.len()).step_by(3).collect();
    let mut out = vec![0.0; rows.len() * m.vocab_size()];
    m.forward(&tokens, &rows, &mut out).unwrap();
    out
}

#[test]
fn compact_weights_give_the_repacked_logits_bit_for_bit() {
    for arch in [Arch::Llada, Arch::Dream, Arch::LladaMoe, Arch::Llada2] {
        for quant in [QuantMix::Q4KM, QuantMix::Q8_0] {
            let mut fast = load(arch, quant, WeightLayout::Fast);
            let mut compact = load(arch, quant, WeightLayout::Compact);
            assert!(!fast.backend().dense_compact() && !fast.backend().experts_compact());
            assert!(compact.backend().dense_compact() && compact.backend().experts_compact());
            for n in [40, 130] {
                let (want, got) = (logits(&mut fast, n), logits(&mut compact, n));
                assert!(
                    want.iter()
                        .zip(&got)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{arch:?} {quant:?}, {n} tokens"
                );
            }
        }
    }
}

#[test]
fn compact_weights_take_the_size_of_the_file() {
    let fast = load(Arch::Llada, QuantMix::Q4KM, WeightLayout::Fast);
    let compact = load(Arch::Llada, QuantMix::Q4KM, WeightLayout::Compact);
    let (f, c) = (fast.weight_bytes(), compact.weight_bytes());
    // Repacked Q4_K/Q6_K take about 9.9/10.25 bits per weight (4.9/8.75 in the small form
    // of the AVX-512 and AVX2 kernels), the file 4.5/6.56.
    assert!(c < f, "compact {c} vs repacked {f}");
    assert!(f * 10 < c * 21, "compact {c} vs repacked {f}");
}

#[test]
fn auto_keeps_weights_repacked_when_they_fit() {
    // A tiny model always fits: auto is the fast layout.
    let m = load(Arch::LladaMoe, QuantMix::Q4KM, WeightLayout::Auto);
    assert!(!m.backend().dense_compact() && !m.backend().experts_compact());
}
