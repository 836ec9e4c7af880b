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

fn same_bits(want: &[f32], got: &[f32], what: &str) {
    assert_eq!(want.len(), got.len(), "{what}");
    assert!(
        want.iter()
            .zip(got)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "{what}"
    );
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
                same_bits(&want, &got, &format!("{arch:?} {quant:?}, {n} tokens"));
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

fn load_spec(spec: &FixtureSpec, layout: WeightLayout) -> Model {
    let bytes = build(spec).unwrap().to_vec().unwrap();
    Model::load(
        GgufFile::from_vec(bytes).unwrap(),
        CpuBackend::with_layout(layout),
    )
    .unwrap()
}

/// A tied LM head kept compact holds the table's rows unchanged, and the embedding reads its
/// rows there instead of from the file: the logits stay those of the repacked head.
#[test]
fn a_tied_compact_head_gives_the_repacked_logits_bit_for_bit() {
    for quant in [QuantMix::Q4KM, QuantMix::Q8_0] {
        let mut spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 2, quant);
        spec.tied = true;
        let mut fast = load_spec(&spec, WeightLayout::Fast);
        let mut compact = load_spec(&spec, WeightLayout::Compact);
        let (want, got) = (logits(&mut fast, 40), logits(&mut compact, 40));
        same_bits(&want, &got, &format!("{quant:?}"));
    }
}

/// DiffusionGemma (tied head, the transposed embedding of self-conditioning handed to the
/// backend without a copy, the decoder reading its signal from the logits buffer): compact
/// and repacked give the same encoder and decoder logits, conditioned or not.
#[test]
fn diffusion_gemma_compact_gives_the_repacked_logits_bit_for_bit() {
    for quant in [QuantMix::Q4KM, QuantMix::Q8_0] {
        let spec = FixtureSpec::new(Arch::DiffusionGemma, Shape::Tiny, 2, quant);
        let run = |layout| {
            let mut m = load_spec(&spec, layout);
            assert!(m.has_self_conditioning());
            let (v, c) = (m.vocab_size(), m.canvas_length().unwrap());
            let prompt: Vec<u32> = (0..9).map(|i| (i * 37 + 11) % v as u32).collect();
            let canvas: Vec<u32> = (0..c as u32).map(|i| (i * 53 + 5) % v as u32).collect();
            let mut cache = lacuna_models::KvCache::new();
            let mut enc = vec![0.0; prompt.len() * v];
            m.gemma_encode(&mut cache, &prompt, Some(&mut enc)).unwrap();
            let mut first = vec![0.0; c * v];
            m.gemma_decode_in_place(&mut cache, &canvas, false, &mut first)
                .unwrap();
            // The processed logits of a step at temperature 0.5 condition the next.
            let mut second: Vec<f32> = first.iter().map(|x| x / 0.5).collect();
            m.gemma_decode_in_place(&mut cache, &canvas, true, &mut second)
                .unwrap();
            assert_ne!(first, second, "self-conditioning changes the logits");
            [enc, first, second]
        };
        let (want, got) = (run(WeightLayout::Fast), run(WeightLayout::Compact));
        for (what, (w, g)) in ["encoder", "decoder", "conditioned"]
            .iter()
            .zip(want.iter().zip(&got))
        {
            same_bits(w, g, &format!("{quant:?} {what}"));
        }
    }
}

/// Compact matrices, experts included, are read in place from the file's bytes (a memory
/// map for a file on disk, or the owned bytes), none copied; repacked ones are all copies. Mapped or owned,
/// the logits are the same bits.
#[test]
fn compact_weights_are_read_in_place_from_the_file() {
    let spec = FixtureSpec::new(Arch::LladaMoe, Shape::Tiny, 2, QuantMix::Q4KM);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    let path = std::env::temp_dir().join(format!("lacuna-in-place-{}.gguf", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let mut mapped = Model::load(
        GgufFile::open(&path).unwrap(),
        CpuBackend::with_layout(WeightLayout::Compact),
    )
    .unwrap();
    let mut owned = load(Arch::LladaMoe, QuantMix::Q4KM, WeightLayout::Compact);
    let fast = load(Arch::LladaMoe, QuantMix::Q4KM, WeightLayout::Fast);
    for m in [&mapped, &owned] {
        // All but the F32 routers (one `experts x d` per layer), which have no compact form
        // and are repacked (their rows padded to a whole panel).
        let c = m.config();
        let (d, experts) = (c.n_embd, c.moe.as_ref().unwrap().n_expert);
        let router = lacuna_cpu::PackedWeight::new(
            lacuna_quant::GgmlType::F32,
            experts,
            d,
            &vec![0u8; experts * d * 4],
        )
        .unwrap();
        assert_eq!(
            m.weight_bytes() - m.weight_bytes_in_file(),
            c.n_layer * router.packed_bytes()
        );
    }
    assert_eq!(fast.weight_bytes_in_file(), 0);
    let dense = load(Arch::Llada, QuantMix::Q4KM, WeightLayout::Compact);
    assert_eq!(dense.weight_bytes_in_file(), dense.weight_bytes());
    for n in [40, 130] {
        let (want, got) = (logits(&mut owned, n), logits(&mut mapped, n));
        same_bits(&want, &got, &format!("mapped, {n} tokens"));
    }
    drop(mapped);
    std::fs::remove_file(&path).unwrap();
}
