//! `diffusion-gemma` against Hugging Face transformers' own DiffusionGemma
//! (`tools/diffusion-gemma-ref/make_ref.py`, run in float64 on a tiny random model whose
//! weights it wrote in llama.cpp #24423's GGUF layout): the encoder's prompt rows (causal,
//! crossing the sliding window), the decoder's canvas without and with self-conditioning,
//! and, after the encoder's commit pass over that canvas, the next canvas.

mod common;

use lacuna_gguf::GgufFile;
use lacuna_models::{CpuBackend, Error, KvCache, Model};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/diffusion-gemma");

/// Measured worst relative L2 error per row (f32 against float64): see the test's comment.
const BOUND: f64 = 1e-5;

struct Case {
    prompt: Vec<u32>,
    canvas: Vec<u32>,
    committed: Vec<u32>,
    canvas_b: Vec<u32>,
    sc_temperature: f32,
}

fn case() -> Case {
    // `key value...` lines.
    let text = std::fs::read_to_string(format!("{DATA}/tokens.txt")).unwrap();
    let field = |k: &str| -> Vec<&str> {
        let line = text
            .lines()
            .find(|l| l.split(' ').next() == Some(k))
            .unwrap();
        line.split(' ').skip(1).collect()
    };
    let ids = |k: &str| -> Vec<u32> { field(k).iter().map(|x| x.parse().unwrap()).collect() };
    Case {
        prompt: ids("prompt"),
        canvas: ids("canvas"),
        committed: ids("committed"),
        canvas_b: ids("canvas_b"),
        sc_temperature: field("sc_temperature")[0].parse().unwrap(),
    }
}

fn model() -> Model {
    Model::load(
        GgufFile::open(format!("{DATA}/tiny-f32.gguf")).unwrap(),
        CpuBackend::new(),
    )
    .unwrap()
}

fn check(what: &str, got: &[f32], vocab: usize) -> f64 {
    let want = common::read_logits(&format!("{DATA}/{what}.logits"));
    assert_eq!(got.len(), want.len(), "{what}");
    let mut worst = 0.0f64;
    for (row, (rel, same_top1)) in common::rows(got, &want, vocab).into_iter().enumerate() {
        assert!(
            rel <= BOUND && same_top1,
            "{what} row {row}: relative L2 error {rel:.2e}, same arg-max {same_top1}"
        );
        worst = worst.max(rel);
    }
    eprintln!("{what}: worst row {worst:.2e}");
    worst
}

/// Worst row errors measured: encoder ~1e-7, decoder ~1e-7 (all four well under 1e-6):
/// the bound leaves ten times or more.
#[test]
fn encoder_decoder_self_conditioning_and_commit_match_transformers() {
    let c = case();
    let mut m = model();
    let v = m.vocab_size();
    assert_eq!(m.canvas_length(), Some(c.canvas.len()));
    assert!(m.has_self_conditioning());
    let mut cache = KvCache::new();
    let mut enc = vec![0.0; c.prompt.len() * v];
    m.gemma_encode(&mut cache, &c.prompt, Some(&mut enc))
        .unwrap();
    let mut worst = check("encoder", &enc, v);
    let mut dec = vec![0.0; c.canvas.len() * v];
    m.gemma_decode(&mut cache, &c.canvas, None, &mut dec)
        .unwrap();
    worst = worst.max(check("decoder", &dec, v));
    // The decoder commits nothing: the same pass again gives the same bits.
    let mut again = vec![0.0; dec.len()];
    m.gemma_decode(&mut cache, &c.canvas, None, &mut again)
        .unwrap();
    assert_eq!(dec, again);
    // The reference's own input (its decoder logits over the temperature, in f32): this
    // pass magnifies a difference in its input about a hundred times.
    let sc = common::read_logits(&format!("{DATA}/decoder-sc-input.logits"));
    let ours: Vec<f32> = dec.iter().map(|x| x / c.sc_temperature).collect();
    assert!(common::rel_l2(&ours, &sc) <= BOUND);
    let mut with_sc = vec![0.0; dec.len()];
    m.gemma_decode(&mut cache, &c.canvas, Some(&sc), &mut with_sc)
        .unwrap();
    worst = worst.max(check("decoder-sc", &with_sc, v));
    assert_ne!(with_sc, dec, "self-conditioning changed nothing");
    m.gemma_encode(&mut cache, &c.committed, None).unwrap();
    let mut next = vec![0.0; c.canvas_b.len() * v];
    m.gemma_decode(&mut cache, &c.canvas_b, None, &mut next)
        .unwrap();
    worst = worst.max(check("decoder-next", &next, v));
    eprintln!("worst relative L2 error per row: {worst:.2e}");
}

/// `forward_all` is #24423's unified pass: prompt rows from the encoder, the last
/// `canvas_length` rows from the decoder over the prompt's keys and values.
#[test]
fn the_unified_pass_is_encoder_rows_then_decoder_rows() {
    let c = case();
    let mut m = model();
    let v = m.vocab_size();
    let tokens: Vec<u32> = c.prompt.iter().chain(&c.canvas).copied().collect();
    let mut all = vec![0.0; tokens.len() * v];
    m.forward_all(&tokens, &mut all).unwrap();
    let (enc, dec) = all.split_at(c.prompt.len() * v);
    check("encoder", enc, v);
    check("decoder", dec, v);
    // Selected rows: the same values.
    let rows = [1, c.prompt.len() + 2];
    let mut some = vec![0.0; rows.len() * v];
    m.forward(&tokens, &rows, &mut some).unwrap();
    assert_eq!(&some[..v], &all[v..2 * v]);
    assert_eq!(&some[v..], &all[rows[1] * v..(rows[1] + 1) * v]);
}

#[test]
fn masked_diffusion_passes_and_bad_inputs_are_refused_by_name() {
    let c = case();
    let mut m = model();
    let v = m.vocab_size();
    let mut cache = KvCache::new();
    let mut out = vec![0.0; c.canvas.len() * v];
    let fill = lacuna_models::PassSpec {
        pass: &lacuna_sampler::Pass::Fill,
        attention_block: None,
    };
    let e = m
        .forward_pass(&mut cache, fill, &c.canvas, &[0], &mut out[..v])
        .unwrap_err();
    assert!(matches!(e, Error::NotMaskedDiffusion { .. }), "{e}");
    let mut bad = c.canvas.clone();
    bad[3] = 9999;
    let e = m
        .gemma_decode(&mut cache, &bad, None, &mut out)
        .unwrap_err();
    assert!(
        matches!(e, Error::TokenOutOfRange { position: 3, .. }),
        "{e}"
    );
    let e = m
        .gemma_decode(&mut cache, &c.canvas, Some(&out[..v]), &mut out.clone())
        .unwrap_err();
    assert!(matches!(e, Error::OutputLength { .. }), "{e}");
    let e = m.gemma_encode(&mut cache, &[], None).unwrap_err();
    assert!(matches!(e, Error::CanvasLength { .. }), "{e}");
}

fn fixture_spec() -> lacuna_models::fixture::FixtureSpec {
    use lacuna_models::Arch;
    use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape};
    FixtureSpec::new(Arch::DiffusionGemma, Shape::Tiny, 6, QuantMix::Q8_0)
}

/// The fixture writes the layout of the published files: the 28 `diffusion-gemma.*` and
/// `diffusion.*` keys of Unsloth's (beside the tokenizer and `general.*` ones), every tensor
/// #24423 loads; without the optional self-conditioning tensors it still loads (and runs
/// every step unconditioned); a file with part of that block, or without a required tensor
/// or key, is refused naming it.
#[test]
fn the_published_layout_loads_and_missing_parts_are_named() {
    use lacuna_gguf::{GgmlType, Value};
    let spec = fixture_spec();
    let keep = |_: &str, v: Value| Some(v);
    let none = |_: &str| None;
    let m = common::edited(&spec, keep, none).unwrap();
    let md = m.file().metadata();
    let keys: Vec<&str> = md.iter().map(|(k, _)| k).collect();
    let ours = keys.iter().filter(|k| k.starts_with("diffusion")).count();
    assert_eq!(ours, 25, "{keys:?}");
    // Unsloth's files hold 44 keys (the dump of #24423's Q8_0 conversion); the writer adds
    // `general.alignment`.
    assert_eq!(
        keys.iter().filter(|k| **k != "general.alignment").count(),
        44,
        "{keys:?}"
    );
    assert_eq!(md.get_str("tokenizer.ggml.model").unwrap(), "gemma4");
    let g = m.config().gemma.as_ref().unwrap();
    // Five sliding layers, then a global one (the last is always global).
    let pattern: Vec<bool> = g.layers.iter().map(|l| l.sliding).collect();
    assert_eq!(pattern, [true, true, true, true, true, false]);
    assert_eq!((g.layers[0].head_dim, g.layers[5].head_dim), (64, 128));
    assert_eq!((g.layers[0].n_head_kv, g.layers[5].n_head_kv), (2, 1));
    assert!(!g.layers[5].has_v && g.layers[0].has_v);
    assert_eq!(
        (g.canvas_length, g.sliding_window, g.softcap),
        (32, 16, Some(30.0))
    );
    assert!(m.has_self_conditioning());

    // Without the self-conditioning block: loads, and conditioning is ignored.
    let no_sc = |n: &str| n.starts_with("self_cond_").then(|| (vec![], GgmlType::F32));
    let mut m = common::edited(&spec, keep, no_sc).unwrap();
    assert!(!m.has_self_conditioning());
    let v = m.vocab_size();
    let canvas: Vec<u32> = (0..32).map(|i| (i * 7 + 3) % 500).collect();
    let mut cache = KvCache::new();
    m.gemma_encode(&mut cache, &[1, 2, 3], None).unwrap();
    let (mut a, mut b) = (vec![0.0; 32 * v], vec![0.0; 32 * v]);
    m.gemma_decode(&mut cache, &canvas, None, &mut a).unwrap();
    let sc = vec![0.5; 32 * v];
    m.gemma_decode(&mut cache, &canvas, Some(&sc), &mut b)
        .unwrap();
    assert_eq!(a, b);

    // Part of the block, or a required tensor, missing: named.
    for name in [
        "self_cond_up.weight",
        "rope_freqs.weight",
        "blk.5.attn_k.weight",
        "blk.0.attn_v.weight",
        "blk.2.ffn_gate_up_exps.weight",
        "blk.3.post_ffw_norm_2.weight",
    ] {
        let drop = move |n: &str| (n == name).then(|| (vec![], GgmlType::F32));
        let e = common::edited(&spec, keep, drop).unwrap_err().to_string();
        assert!(e.contains(name), "{name}: {e}");
    }
    // The output scalars are optional (1 when absent), as in llama.cpp's loader.
    let no_scalar =
        |n: &str| (n == "blk.1.enc_layer_output_scale.weight").then(|| (vec![], GgmlType::F32));
    common::edited(&spec, keep, no_scalar).unwrap();
}

#[test]
fn bad_metadata_is_refused_naming_the_key() {
    use lacuna_gguf::{Array, GgmlType, Value};
    let spec = fixture_spec();
    let none = |_: &str| -> Option<(Vec<u64>, GgmlType)> { None };
    let cases: Vec<(&str, Option<Value>)> = vec![
        ("diffusion.canvas_length", None),
        ("diffusion.canvas_length", Some(Value::U32(0))),
        (
            "diffusion-gemma.attention.head_count_kv",
            Some(Value::Array(Array::I32(vec![2; 5]))),
        ),
        (
            "diffusion-gemma.attention.head_count_kv",
            Some(Value::Array(Array::I32(vec![3; 6]))),
        ),
        (
            "diffusion-gemma.attention.sliding_window_pattern",
            Some(Value::Array(Array::Bool(vec![true; 4]))),
        ),
        (
            "diffusion-gemma.attention.sliding_window_pattern",
            Some(Value::Array(Array::F32(vec![1.0; 6]))),
        ),
        ("diffusion-gemma.attention.key_length_swa", None),
        (
            "diffusion-gemma.rope.dimension_count_swa",
            Some(Value::U32(65)),
        ),
        (
            "diffusion-gemma.final_logit_softcapping",
            Some(Value::F32(-3.0)),
        ),
        ("diffusion-gemma.expert_feed_forward_length", None),
        ("diffusion.eb_t_min", Some(Value::F32(0.0))),
    ];
    for (key, value) in cases {
        let e = if key.starts_with("diffusion.eb_") {
            // The fixture writes no sampler keys (as the published files): add one.
            with_key(key, value.clone().unwrap())
        } else {
            let v = value.clone();
            let edit = move |k: &str, old: Value| if k == key { v.clone() } else { Some(old) };
            common::edited(&spec, edit, none)
        };
        let e = e
            .err()
            .unwrap_or_else(|| panic!("{key} = {value:?} was accepted"));
        assert!(e.to_string().contains(key), "{key}: {e}");
    }
}

/// The fixture with one key added.
fn with_key(key: &str, value: lacuna_gguf::Value) -> Result<Model, Error> {
    use lacuna_gguf::{GgufFile, GgufWriter};
    let src = GgufFile::from_vec(
        lacuna_models::fixture::build(&fixture_spec())
            .unwrap()
            .to_vec()
            .unwrap(),
    )
    .unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in src.metadata().iter() {
        if k != "general.alignment" {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    w.add_metadata(key, value).unwrap();
    for info in src.tensors() {
        w.add_tensor(
            &info.name,
            &info.dims,
            info.ty,
            src.info_data(info).to_vec(),
        )
        .unwrap();
    }
    Model::load(
        GgufFile::from_vec(w.to_vec().unwrap()).unwrap(),
        CpuBackend::new(),
    )
}
