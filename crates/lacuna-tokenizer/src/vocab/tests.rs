use lacuna_gguf::{GgufFile, GgufWriter};

use super::*;

/// A small byte-level BPE vocabulary; `extra` adds or overrides keys.
fn bpe_file(extra: &[(&str, lacuna_gguf::Value)]) -> GgufFile {
    let base: Vec<(&str, lacuna_gguf::Value)> = vec![
        ("general.architecture", "llada".into()),
        ("tokenizer.ggml.model", "gpt2".into()),
        ("tokenizer.ggml.pre", "gpt-2".into()),
        (
            "tokenizer.ggml.tokens",
            vec![
                "a",
                "b",
                "ab",
                "Ġ",
                "Ġab",
                "<|endoftext|>",
                "<|mdm_mask|>",
                "<tool>",
            ]
            .into(),
        ),
        (
            "tokenizer.ggml.token_type",
            vec![1i32, 1, 1, 1, 1, 1, 3, 4].into(),
        ),
        ("tokenizer.ggml.merges", vec!["a b", "Ġ ab", "a b"].into()),
    ];
    let mut w = GgufWriter::new();
    for (k, v) in &base {
        let v = extra.iter().find(|(ek, _)| ek == k).map_or(v, |(_, ev)| ev);
        w.add_metadata(k, v.clone()).unwrap();
    }
    for (k, v) in extra {
        if !base.iter().any(|(bk, _)| bk == k) {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    GgufFile::from_vec(w.to_vec().unwrap()).unwrap()
}

fn vocab(extra: &[(&str, lacuna_gguf::Value)]) -> Result<Vocab> {
    Vocab::from_metadata(bpe_file(extra).metadata())
}

#[test]
fn reads_tokens_types_and_deduplicated_merges() {
    let v = vocab(&[]).unwrap();
    assert_eq!(v.len(), 8);
    assert_eq!(
        v.merges,
        vec![("a".into(), "b".into()), ("Ġ".into(), "ab".into())]
    );
    assert_eq!(v.token_attr(7), Some(TokenAttr::USER_DEFINED));
    assert_eq!(v.token_attr(6), Some(TokenAttr::CONTROL));
    assert!(matches!(v.kind(), VocabKind::Bpe(p) if p.name == "gpt-2"));
}

#[test]
fn end_of_text_typed_normal_is_made_control_like_llama_cpp() {
    let v = vocab(&[]).unwrap();
    let a = v.token_attr(5).unwrap();
    assert!(a.contains_any(TokenAttr::CONTROL) && a.contains_any(TokenAttr::NORMAL));
    assert_eq!(v.special().eot, Some(5));
}

#[test]
fn special_ids_come_from_keys_and_out_of_range_is_an_error() {
    let v = vocab(&[
        ("tokenizer.ggml.bos_token_id", 5u32.into()),
        ("tokenizer.ggml.eos_token_id", 5u32.into()),
        ("tokenizer.ggml.mask_token_id", 6u32.into()),
        ("tokenizer.ggml.add_bos_token", true.into()),
    ])
    .unwrap();
    assert_eq!(v.special().bos, Some(5));
    assert_eq!(v.special().mask, Some(6));
    assert!(v.add_bos() && !v.add_eos());
    let err = vocab(&[("tokenizer.ggml.bos_token_id", 8u32.into())]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::SpecialTokenOutOfRange {
                key: "tokenizer.ggml.bos_token_id",
                id: 8,
                n_vocab: 8
            }
        ),
        "{err}"
    );
}

#[test]
fn bpe_default_bos_eos_are_llama_cpps_eleven_and_dropped_when_out_of_range() {
    let v = vocab(&[]).unwrap();
    assert_eq!(v.special().bos, None); // 11 >= 8 tokens
    assert_eq!(v.special().unk, None);
}

#[test]
fn mask_defaults_to_the_architecture_id_only_inside_the_vocabulary() {
    let v = vocab(&[]).unwrap();
    assert_eq!(
        v.special().mask,
        None,
        "llada's 126336 is outside an 8-token vocabulary"
    );
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("tokenizer.ggml.model", "llama").unwrap();
    let tokens: Vec<String> = (0..126_337).map(|i| format!("t{i}")).collect();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        lacuna_gguf::Value::Array(lacuna_gguf::Array::String(tokens)),
    )
    .unwrap();
    let f = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
    let v = Vocab::from_metadata(f.metadata()).unwrap();
    assert_eq!(v.special().mask, Some(126_336));
    assert_eq!(
        (v.special().bos, v.special().eos, v.special().unk),
        (Some(1), Some(2), Some(0))
    );
    assert!(v.add_bos() && v.add_space_prefix);
}

#[test]
fn unsupported_model_and_pre_tokenizers_are_named() {
    let err = vocab(&[("tokenizer.ggml.model", "bert".into())]).unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedModel { model } if model == "bert"),
        "{err}"
    );
    let err = vocab(&[("tokenizer.ggml.pre", "deepseek-llm".into())]).unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedPreTokenizer { pre, .. } if pre == "deepseek-llm"),
        "{err}"
    );
}

#[test]
fn missing_pre_tokenizer_is_an_error_not_a_guess() {
    let mut w = GgufWriter::new();
    w.add_metadata("tokenizer.ggml.model", "gpt2").unwrap();
    w.add_metadata("tokenizer.ggml.tokens", vec!["a"]).unwrap();
    w.add_metadata("tokenizer.ggml.merges", Vec::<&str>::new())
        .unwrap();
    let f = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
    assert!(matches!(
        Vocab::from_metadata(f.metadata()),
        Err(Error::MissingPreTokenizer)
    ));
}

#[test]
fn short_type_array_and_wrong_types_are_errors_naming_the_key() {
    let err = vocab(&[("tokenizer.ggml.token_type", vec![1i32, 1].into())]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LengthMismatch {
                key: "tokenizer.ggml.token_type",
                expected: 8,
                found: 2
            }
        ),
        "{err}"
    );
    let err = vocab(&[("tokenizer.ggml.add_bos_token", 1u32.into())]).unwrap_err();
    assert!(
        err.to_string().contains("tokenizer.ggml.add_bos_token"),
        "{err}"
    );
}

#[test]
fn byte_tokens_must_read_0x_hex() {
    assert_eq!(parse_byte_token("<0x0A>"), Some(10));
    assert_eq!(parse_byte_token("<0xff>"), Some(255));
    assert_eq!(parse_byte_token("<0x0A"), None);
    assert_eq!(parse_byte_token("<0x0AB>"), None);
    let err = vocab(&[(
        "tokenizer.ggml.token_type",
        vec![6i32, 1, 1, 1, 1, 1, 3, 4].into(),
    )])
    .unwrap_err();
    assert!(matches!(err, Error::BadByteToken { id: 0, .. }), "{err}");
}

#[test]
fn scores_may_be_f32_or_i32_and_other_types_are_named() {
    let v = vocab(&[(
        "tokenizer.ggml.scores",
        vec![1i32, 2, 3, 4, 5, 6, 7, 8].into(),
    )])
    .unwrap();
    assert_eq!(v.scores[7], 8.0);
    let v = vocab(&[("tokenizer.ggml.scores", vec![0.5f32; 8].into())]).unwrap();
    assert_eq!(v.scores[0], 0.5);
    let err = vocab(&[("tokenizer.ggml.scores", vec![1u8; 8].into())]).unwrap_err();
    assert!(err.to_string().contains("tokenizer.ggml.scores"), "{err}");
    let err = vocab(&[("tokenizer.ggml.scores", vec![0.5f32; 3].into())]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LengthMismatch {
                key: "tokenizer.ggml.scores",
                ..
            }
        ),
        "{err}"
    );
}
