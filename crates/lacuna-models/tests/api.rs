//! The model API the sampler uses: selected rows, the `Denoiser` trait, reuse across passes,
//! and typed errors for bad input and bad files.

mod common;

use lacuna_gguf::{GgmlType, GgufFile, Value};
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Error, Model};
use lacuna_sampler::Denoiser;

fn tiny(arch: Arch, quant: QuantMix) -> Model {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap()
}

const CANVAS: [u32; 10] = [5, 17, 511, 511, 300, 2, 511, 9, 100, 511];

#[test]
fn selected_rows_equal_the_full_pass() {
    for arch in Arch::ALL {
        let mut m = tiny(arch, QuantMix::Q4KM);
        let v = m.vocab_size();
        let mut all = vec![0.0; CANVAS.len() * v];
        m.forward_all(&CANVAS, &mut all).unwrap();
        let rows = [2usize, 3, 6, 9];
        let mut some = vec![1.0; rows.len() * v];
        m.forward(&CANVAS, &rows, &mut some).unwrap();
        for (i, &r) in rows.iter().enumerate() {
            assert_eq!(
                &some[i * v..(i + 1) * v],
                &all[r * v..(r + 1) * v],
                "{arch} row {r}"
            );
        }
        // The buffers are reused: a second, shorter pass gives the same rows again.
        let mut again = vec![0.0; rows.len() * v];
        Denoiser::logits(&mut m.bind(None).unwrap(), &CANVAS, &rows, &mut again).unwrap();
        assert_eq!(again, some, "{arch}: repeat pass");
        let mut short = vec![0.0; 3 * v];
        m.forward_all(&CANVAS[..3], &mut short).unwrap();
        assert!(short.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn metadata_accessors() {
    let mut m = tiny(Arch::Dream, QuantMix::F32);
    assert_eq!(m.arch(), Arch::Dream);
    assert!(m.shift_logits(), "Dream shifts its logits");
    assert_eq!(m.mask_token_id(), Some(511));
    assert_eq!(m.vocab_size(), 512);
    assert_eq!(Denoiser::vocab_size(&m.bind(None).unwrap()), 512);
    assert_eq!(m.context_length(), 4096);
    assert_eq!(m.config().n_head_kv, 2);
    let m = tiny(Arch::Llada, QuantMix::F32);
    assert!(!m.shift_logits());
    let moe = tiny(Arch::LladaMoe, QuantMix::F32).config().moe.unwrap();
    assert_eq!((moe.n_expert, moe.n_expert_used, moe.n_ff_exp), (8, 2, 256));
}

#[test]
fn bad_input_is_a_typed_error() {
    let mut m = tiny(Arch::Llada, QuantMix::F32);
    let v = m.vocab_size();
    let mut out = vec![0.0; 2 * v];
    assert!(matches!(
        m.forward_all(&[1, 512], &mut out),
        Err(Error::TokenOutOfRange {
            token: 512,
            position: 1,
            ..
        })
    ));
    assert!(matches!(
        m.forward_all(&[], &mut []),
        Err(Error::CanvasLength { len: 0, .. })
    ));
    assert!(matches!(
        m.forward(&[1, 2, 3], &[2, 1], &mut out),
        Err(Error::BadRow { row: 1, .. })
    ));
    assert!(matches!(
        m.forward(&[1, 2, 3], &[1, 3], &mut out),
        Err(Error::BadRow { row: 3, .. })
    ));
    assert!(matches!(
        m.forward(&[1, 2, 3], &[1], &mut out),
        Err(Error::OutputLength {
            expected: 512,
            found: 1024
        })
    ));
    let long = vec![1u32; 4097];
    let mut out = vec![0.0; long.len() * v];
    assert!(matches!(
        m.forward_all(&long, &mut out),
        Err(Error::CanvasLength { len: 4097, .. })
    ));
}

/// The tiny one-layer llada F32 fixture, edited (see `common::edited`).
fn edited(
    edit: impl Fn(&str, Value) -> Option<Value>,
    tensor: impl Fn(&str) -> Option<(Vec<u64>, GgmlType)>,
) -> Result<Model, Error> {
    let spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 1, QuantMix::F32);
    common::edited(&spec, edit, tensor)
}

#[test]
fn bad_files_name_the_key_or_tensor() {
    let keep = |_: &str, v| Some(v);
    let same = |_: &str| None;
    assert!(edited(keep, same).is_ok());
    let e = edited(|k, v| (k != "llada.block_count").then_some(v), same).unwrap_err();
    assert!(e.to_string().contains("llada.block_count"), "{e}");
    let e = edited(
        |k, v| {
            Some(if k == "general.architecture" {
                Value::from("gpt9")
            } else {
                v
            })
        },
        same,
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::UnknownArchitecture { ref name } if name == "gpt9"),
        "{e}"
    );
    let e = edited(
        |k, v| {
            Some(if k == "llada.attention.head_count_kv" {
                Value::U32(3)
            } else {
                v
            })
        },
        same,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("llada.attention.head_count_kv"),
        "{e}"
    );
    let e = edited(
        |k, v| {
            Some(if k == "llada.embedding_length" {
                Value::from("wide")
            } else {
                v
            })
        },
        same,
    )
    .unwrap_err();
    assert!(e.to_string().contains("llada.embedding_length"), "{e}");
    let e = edited(keep, |n| {
        (n == "blk.0.attn_q.weight").then(|| (vec![256, 128], GgmlType::F32))
    })
    .unwrap_err();
    assert!(
        matches!(e, Error::TensorShape { ref name, .. } if name == "blk.0.attn_q.weight"),
        "{e}"
    );
    let e = edited(keep, |n| {
        (n == "blk.0.ffn_up.weight").then(|| (vec![], GgmlType::F32))
    })
    .unwrap_err();
    assert!(
        matches!(e, Error::MissingTensor { ref name } if name == "blk.0.ffn_up.weight"),
        "{e}"
    );
    let e = edited(keep, |n| {
        (n == "blk.0.attn_k.weight").then(|| (vec![256, 256], GgmlType::IQ2_XXS))
    })
    .unwrap_err();
    assert!(
        matches!(e, Error::TensorType { ref name, ty: GgmlType::IQ2_XXS, .. } if name == "blk.0.attn_k.weight"),
        "{e}"
    );
}

#[test]
fn tied_embeddings_use_token_embd_as_lm_head() {
    let mut spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 1, QuantMix::Q8_0);
    spec.tied = true;
    let file = GgufFile::from_vec(build(&spec).unwrap().to_vec().unwrap()).unwrap();
    assert!(file.tensor("output.weight").is_err());
    let mut m = Model::load(file, CpuBackend::new()).unwrap();
    let mut out = vec![0.0; 3 * m.vocab_size()];
    m.forward_all(&[1, 2, 3], &mut out).unwrap();
    assert!(out.iter().all(|x| x.is_finite()) && out.iter().any(|&x| x != 0.0));
}
