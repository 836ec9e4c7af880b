//! Hyperparameters: the keys llama.cpp's converter writes, llama.cpp's defaults, and typed
//! errors naming the key.

use lacuna_gguf::{GgufFile, GgufWriter, Value};

use crate::{Arch, Config, Error};

fn metadata(arch: &str, edit: &[(&str, Option<Value>)]) -> GgufFile {
    let k = |s: &str| format!("{arch}.{s}");
    let mut base: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::from(arch)),
        (k("block_count"), Value::U32(2)),
        (k("embedding_length"), Value::U32(256)),
        (k("feed_forward_length"), Value::U32(512)),
        (k("attention.head_count"), Value::U32(4)),
        (k("context_length"), Value::U32(4096)),
        (k("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        (k("vocab_size"), Value::U32(1000)),
        (k("expert_count"), Value::U32(8)),
        (k("expert_used_count"), Value::U32(2)),
    ];
    for (key, value) in edit {
        base.retain(|(k, _)| k != key);
        if let Some(v) = value {
            base.push((key.to_string(), v.clone()));
        }
    }
    let mut w = GgufWriter::new();
    for (key, value) in base {
        w.add_metadata(&key, value).unwrap();
    }
    GgufFile::from_vec(w.to_vec().unwrap()).unwrap()
}

fn config(arch: &str, edit: &[(&str, Option<Value>)]) -> Result<Config, Error> {
    Config::from_metadata(metadata(arch, edit).metadata())
}

#[test]
fn llama_cpp_defaults_apply() {
    let c = config("llada", &[]).unwrap();
    assert_eq!(c.arch, Arch::Llada);
    assert_eq!((c.n_head, c.n_head_kv, c.head_dim), (4, 4, 64));
    assert_eq!(c.rope_freq_base, 10_000.0);
    assert_eq!(c.rope_freq_scale, 1.0);
    assert_eq!(c.mask_token_id, None);
    assert!(!c.shift_logits);
    assert!(c.moe.is_none());
    let c = config(
        "dream",
        &[("dream.attention.head_count_kv", Some(Value::U32(2)))],
    )
    .unwrap();
    assert_eq!((c.q_dim(), c.kv_dim()), (256, 128));
    assert!(
        c.shift_logits,
        "Dream shifts when diffusion.shift_logits is absent"
    );
    let c = config(
        "dream",
        &[("diffusion.shift_logits", Some(Value::Bool(false)))],
    )
    .unwrap();
    assert!(!c.shift_logits);
}

#[test]
fn moe_expert_width_falls_back_like_llama_cpp() {
    let m = config("llada-moe", &[]).unwrap().moe.unwrap();
    assert_eq!((m.n_expert, m.n_expert_used, m.n_ff_exp), (8, 2, 256));
    let m = config(
        "llada-moe",
        &[(
            "llada-moe.expert_feed_forward_length",
            Some(Value::U32(1024)),
        )],
    )
    .unwrap()
    .moe
    .unwrap();
    assert_eq!(m.n_ff_exp, 1024);
    let e = config("llada-moe", &[("llada-moe.expert_count", None)]).unwrap_err();
    assert!(e.to_string().contains("llada-moe.expert_count"), "{e}");
}

#[test]
fn bad_metadata_names_the_key() {
    let cases: [(&str, &str, Option<Value>); 8] = [
        ("llada", "llada.block_count", Some(Value::U32(0))),
        (
            "llada",
            "llada.attention.head_count_kv",
            Some(Value::U32(3)),
        ),
        ("llada", "llada.attention.layer_norm_rms_epsilon", None),
        (
            "llada",
            "llada.attention.layer_norm_rms_epsilon",
            Some(Value::F32(-1.0)),
        ),
        ("llada", "llada.rope.dimension_count", Some(Value::U32(32))),
        (
            "llada",
            "tokenizer.ggml.mask_token_id",
            Some(Value::U32(1000)),
        ),
        ("dream", "dream.feed_forward_length", None),
        ("llada", "llada.embedding_length", Some(Value::from("wide"))),
    ];
    for (arch, key, value) in cases {
        let e = config(arch, &[(key, value.clone())]).unwrap_err();
        assert!(e.to_string().contains(key), "{key} = {value:?}: {e}");
    }
    let e = config("llama", &[]).unwrap_err();
    assert!(
        matches!(e, Error::UnknownArchitecture { ref name } if name == "llama"),
        "{e}"
    );
}

#[test]
fn mask_token_id_is_read() {
    let c = config(
        "llada",
        &[("tokenizer.ggml.mask_token_id", Some(Value::U32(999)))],
    )
    .unwrap();
    assert_eq!(c.mask_token_id, Some(999));
}

/// The LLaDA2 keys on top of the shared base, as the BailingMoE-v2 converter writes them.
fn llada2(edit: &[(&str, Option<Value>)]) -> Result<Config, Error> {
    let mut all: Vec<(&str, Option<Value>)> = vec![
        ("llada2.expert_gating_func", Some(Value::U32(2))),
        ("llada2.expert_shared_count", Some(Value::U32(1))),
        ("llada2.expert_feed_forward_length", Some(Value::U32(128))),
        ("llada2.leading_dense_block_count", Some(Value::U32(1))),
        ("llada2.expert_weights_norm", Some(Value::Bool(true))),
        ("llada2.expert_weights_scale", Some(Value::F32(2.5))),
        ("llada2.expert_group_count", Some(Value::U32(4))),
        ("llada2.expert_group_used_count", Some(Value::U32(2))),
        ("llada2.rope.dimension_count", Some(Value::U32(32))),
    ];
    all.extend_from_slice(edit);
    config("llada2", &all)
}

#[test]
fn llada2_and_rnd1_read_their_routing() {
    let c = llada2(&[]).unwrap();
    assert_eq!((c.head_dim, c.n_rot), (64, 32));
    let m = c.moe.unwrap();
    assert_eq!(m.gating, crate::Gating::Sigmoid);
    assert!(m.norm_weights);
    assert_eq!((m.n_group, m.n_group_used), (4, 2));
    assert_eq!(
        (m.n_expert_shared, m.n_ff_shared, m.n_dense_lead),
        (1, 128, 1)
    );
    assert_eq!(m.weights_scale, 2.5);
    let c = llada2(&[
        (
            "llada2.expert_shared_feed_forward_length",
            Some(Value::U32(96)),
        ),
        ("llada2.expert_shared_count", Some(Value::U32(2))),
        ("llada2.nextn_predict_layers", Some(Value::U32(1))),
    ])
    .unwrap();
    assert_eq!(c.moe.unwrap().n_ff_shared, 192);
    assert_eq!(c.n_layer, 1, "NextN layers are not run");
    let r = config("rnd1", &[]).unwrap();
    let m = r.moe.unwrap();
    assert!(m.norm_weights && m.gating == crate::Gating::Softmax);
    assert!(
        r.shift_logits,
        "RND1's converter writes no shift key: shifted"
    );
    assert!(!config("llada-moe", &[]).unwrap().moe.unwrap().norm_weights);
}

#[test]
fn bad_llada2_and_rnd1_metadata_names_the_key() {
    let cases: [(&str, Option<Value>); 7] = [
        ("llada2.rope.dimension_count", Some(Value::U32(128))),
        ("llada2.rope.dimension_count", Some(Value::U32(7))),
        ("llada2.expert_gating_func", None),
        ("llada2.expert_gating_func", Some(Value::U32(4))),
        ("llada2.expert_group_used_count", Some(Value::U32(4))),
        ("llada2.leading_dense_block_count", Some(Value::U32(3))),
        ("llada2.nextn_predict_layers", Some(Value::U32(2))),
    ];
    for (key, value) in cases {
        let e = llada2(&[(key, value.clone())]).unwrap_err();
        assert!(e.to_string().contains(key), "{key} = {value:?}: {e}");
    }
    // Partial RoPE is LLaDA2's only.
    let e = config(
        "rnd1",
        &[("rnd1.rope.dimension_count", Some(Value::U32(32)))],
    )
    .unwrap_err();
    assert!(e.to_string().contains("rnd1.rope.dimension_count"), "{e}");
    let e = config("rnd1", &[("rnd1.expert_used_count", Some(Value::U32(9)))]).unwrap_err();
    assert!(e.to_string().contains("rnd1.expert_used_count"), "{e}");
}

#[test]
fn a_missing_mask_id_is_found_by_its_text() {
    let tokens = |t: &[&str]| {
        Some(Value::Array(lacuna_gguf::Array::String(
            t.iter().map(|s| s.to_string()).collect(),
        )))
    };
    let c = config(
        "llada",
        &[(
            "tokenizer.ggml.tokens",
            tokens(&["a", "<|mask|>", "<|mdm_mask|>"]),
        )],
    )
    .unwrap();
    assert_eq!(c.mask_token_id, Some(2));
    let c = config(
        "llada-moe",
        &[(
            "tokenizer.ggml.tokens",
            tokens(&["a", "<|mask|>", "<|mdm_mask|>"]),
        )],
    )
    .unwrap();
    assert_eq!(c.mask_token_id, Some(1));
    // The metadata's id wins; no mask text and no id: none.
    let c = config(
        "llada-moe",
        &[
            ("tokenizer.ggml.tokens", tokens(&["a", "<|mask|>"])),
            ("tokenizer.ggml.mask_token_id", Some(Value::U32(0))),
        ],
    )
    .unwrap();
    assert_eq!(c.mask_token_id, Some(0));
    let c = config("dream", &[("tokenizer.ggml.tokens", tokens(&["a", "b"]))]).unwrap();
    assert_eq!(c.mask_token_id, None);
}
