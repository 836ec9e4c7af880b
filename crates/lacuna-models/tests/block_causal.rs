//! LLaDA2's block-causal attention and its exact cache, and the typed errors of malformed
//! LLaDA2 and RND1 files. (Logit parity with llama.cpp is in `parity.rs`.)

mod common;

use lacuna_gguf::{GgmlType, GgufFile, Value};
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Error, KvCache, Model, PassSpec};
use lacuna_sampler::Pass;

fn tiny(arch: Arch, quant: QuantMix) -> Model {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap()
}

fn canvas(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 37 + 11) % 500).collect()
}

/// Logits of `rows` of a full pass with attention blocks of `block`.
fn logits(m: &mut Model, block: usize, tokens: &[u32], rows: &[usize]) -> Vec<f32> {
    let mut out = vec![0.0; rows.len() * m.vocab_size()];
    let spec = PassSpec::full().with_block(block);
    m.forward_pass(&mut KvCache::new(), spec, tokens, rows, &mut out)
        .unwrap();
    out
}

#[test]
fn later_blocks_do_not_reach_earlier_ones_and_a_block_sees_itself_whole() {
    let mut m = tiny(Arch::Llada2, QuantMix::F32);
    assert_eq!(m.attention_block(), Some(32), "LLaDA2's default block");
    let base = canvas(12);
    let rows: Vec<usize> = (0..8).collect();
    let before = logits(&mut m, 4, &base, &rows);
    // Changing block 2 (positions 8..12) leaves blocks 0 and 1 bit for bit.
    let mut later = base.clone();
    later[9] = 3;
    later[11] = 4;
    assert_eq!(logits(&mut m, 4, &later, &rows), before);
    // So does cutting the canvas after block 1 (the official code's truncation).
    assert_eq!(logits(&mut m, 4, &base[..8], &rows), before);
    // Within a block attention is bidirectional: position 7 changes row 4.
    let mut inside = base.clone();
    inside[7] = 5;
    let v = m.vocab_size();
    assert_ne!(logits(&mut m, 4, &inside, &[4]), before[4 * v..5 * v]);
    // Blocks of the whole canvas are plain bidirectional attention: row 0 sees position 11.
    let all = logits(&mut m, 64, &base, &[0]);
    assert_ne!(logits(&mut m, 64, &later, &[0]), all);
}

#[test]
fn the_block_cache_gives_the_logits_of_a_full_pass() {
    for quant in [QuantMix::F32, QuantMix::Q4KM] {
        let mut m = tiny(Arch::Llada2, quant);
        let mut cache = KvCache::new();
        let (fill, full) = (Pass::Fill, Pass::Full);
        fn b4(pass: &Pass) -> PassSpec<'_> {
            PassSpec::new(pass).with_block(4)
        }
        let v = m.vocab_size();
        let mut tokens = canvas(8);
        // Fill over blocks 0-1, then grow block by block as the sampler does: each window
        // is the previous block (now final) and the new one.
        let mut out = vec![0.0; 4 * v];
        m.forward_pass(&mut cache, b4(&fill), &tokens, &[4, 5, 6, 7], &mut out)
            .unwrap();
        for blk in 2..5 {
            let (start, end) = (blk * 4, blk * 4 + 4);
            tokens[start - 2] = 7; // the previous block's last commits
            tokens.extend(canvas(end)[start..end].iter().copied());
            let rows: Vec<usize> = (start..end).collect();
            let mut cached = vec![0.0; 4 * v];
            let window = Pass::Window(start - 4..end);
            m.forward_pass(&mut cache, b4(&window), &tokens, &rows, &mut cached)
                .unwrap();
            let mut exact = vec![0.0; 4 * v];
            m.forward_pass(&mut cache, b4(&full), &tokens, &rows, &mut exact)
                .unwrap();
            let full = exact;
            let err = cached
                .iter()
                .zip(&full)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(err <= 1e-4, "{quant:?} block {blk}: max |diff| {err}");
        }
        // A window that starts past what the cache holds is refused.
        m.forward_pass(&mut cache, b4(&fill), &tokens[..8], &[7], &mut out[..v])
            .unwrap();
        let window = Pass::Window(12..16);
        let r = m.forward_pass(&mut cache, b4(&window), &tokens[..16], &[12], &mut out[..v]);
        assert!(matches!(r, Err(Error::CacheNotFilled { .. })), "{r:?}");
        // So is a window over a cache computed with another block length.
        let b2 = PassSpec::new(&window).with_block(2);
        let r = m.forward_pass(&mut cache, b2, &tokens, &[12], &mut out[..v]);
        assert!(matches!(r, Err(Error::CacheNotFilled { .. })), "{r:?}");
    }
}

#[test]
fn attention_blocks_are_llada2_only_and_positive() {
    let m = tiny(Arch::Llada2, QuantMix::F32);
    assert!(matches!(
        m.resolve_attention_block(Some(0)),
        Err(Error::ZeroAttentionBlock)
    ));
    for arch in [Arch::Llada, Arch::Rnd1] {
        let mut m = tiny(arch, QuantMix::F32);
        assert_eq!(m.attention_block(), None);
        let e = m.resolve_attention_block(Some(4)).unwrap_err();
        assert!(e.to_string().contains(arch.name()), "{e}");
        // A pass asking for one is refused the same way.
        let mut out = vec![0.0; m.vocab_size()];
        let spec = PassSpec::full().with_block(4);
        let e = m.forward_pass(&mut KvCache::new(), spec, &[1, 2], &[0], &mut out);
        assert!(matches!(e, Err(Error::NotBlockCausal { .. })), "{e:?}");
    }
}

/// The tiny two-layer F32 fixture of `arch`, edited (see `common::edited`).
fn edited(
    arch: Arch,
    edit: impl Fn(&str, Value) -> Option<Value>,
    tensor: impl Fn(&str) -> Option<(Vec<u64>, GgmlType)>,
) -> Result<Model, Error> {
    common::edited(
        &FixtureSpec::new(arch, Shape::Tiny, 2, QuantMix::F32),
        edit,
        tensor,
    )
}

#[test]
fn malformed_llada2_and_rnd1_files_name_the_tensor_or_key() {
    let keep = |_: &str, v: Value| Some(v);
    let drop = |name: &'static str| move |n: &str| (n == name).then(|| (vec![], GgmlType::F32));
    // Missing tensors: the shared expert, the fused QKV, an expert tensor, the dense lead.
    for name in [
        "blk.1.ffn_up_shexp.weight",
        "blk.0.attn_qkv.weight",
        "blk.1.ffn_down_exps.weight",
        "blk.0.ffn_gate.weight",
    ] {
        let e = edited(Arch::Llada2, keep, drop(name)).unwrap_err();
        assert!(
            matches!(&e, Error::MissingTensor { name: n } if n == name),
            "{name}: {e}"
        );
    }
    let e = edited(Arch::Rnd1, keep, drop("blk.1.ffn_gate_inp.weight")).unwrap_err();
    assert!(e.to_string().contains("blk.1.ffn_gate_inp.weight"), "{e}");
    // Expert count in the metadata differs from the tensors' (32: still a whole number of
    // LLaDA2's 4 expert groups).
    let more = |k: &str, v: Value| {
        Some(if k.ends_with(".expert_count") {
            Value::U32(32)
        } else {
            v
        })
    };
    for arch in [Arch::Llada2, Arch::Rnd1] {
        let e = edited(arch, more, |_| None).unwrap_err();
        assert!(matches!(e, Error::TensorShape { .. }), "{arch}: {e}");
        assert!(e.to_string().contains("blk."), "{arch}: {e}");
    }
    // Rotary dimensions wider than the head.
    let wide = |k: &str, v: Value| {
        Some(if k == "llada2.rope.dimension_count" {
            Value::U32(80)
        } else {
            v
        })
    };
    let e = edited(Arch::Llada2, wide, |_| None).unwrap_err();
    assert!(e.to_string().contains("llada2.rope.dimension_count"), "{e}");
    assert!(e.to_string().contains("exceed the head width 64"), "{e}");
    // A selection bias of the wrong length.
    let bias = |n: &str| (n == "blk.1.exp_probs_b.bias").then(|| (vec![15], GgmlType::F32));
    let e = edited(Arch::Llada2, keep, bias).unwrap_err();
    assert!(e.to_string().contains("blk.1.exp_probs_b.bias"), "{e}");
}

/// Blocks of 4 and 5 over the 12-token canvas of the parity tests (three whole blocks; two and
/// a ragged one) against `tools/llada2-ref/reference.py`, a float64 numpy transcription of the
/// Hugging Face LLaDA2 modeling code with `generate`'s block mask, run on the same F32 fixture
/// (`tests/data/regen.sh`). Lacuna computes in f32: measured relative L2 error <= 5.4e-7 per
/// row; the bound leaves 18x.
#[test]
fn block_causal_logits_match_the_transcribed_modeling_code() {
    const TOKENS: [u32; 12] = [1, 2, 3, 4, 5, 511, 511, 7, 300, 42, 0, 255];
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let spec = FixtureSpec::new(Arch::Llada2, Shape::Tiny, 2, QuantMix::F32);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let want = std::fs::read_to_string(format!("{data}/llada2-f32.fnv64")).unwrap();
    assert_eq!(
        format!("{hash:016x}"),
        want.trim(),
        "fixture changed: rerun regen.sh"
    );
    let mut m = Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap();
    let v = m.vocab_size();
    for block in [4, 5] {
        let reference = common::read_logits(&format!("{data}/llada2-f32-block{block}.logits"));
        let mut got = vec![0.0; TOKENS.len() * v];
        m.forward_all_with_block(&TOKENS, Some(block), &mut got)
            .unwrap();
        for (row, (rel, same_top1)) in common::rows(&got, &reference, v).into_iter().enumerate() {
            assert!(
                rel <= 1e-5 && same_top1,
                "block {block} row {row}: relative L2 error {rel:.2e}"
            );
        }
    }
}
