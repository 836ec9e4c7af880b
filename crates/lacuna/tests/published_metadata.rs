//! Files laid out as the published conversions are (metadata as llama.cpp's converters write
//! it), at fixture sizes: the special tokens by their real texts, the tokenizer's pre name,
//! the chat template as shipped, keys the converter leaves out left out.

mod common;

use common::{one_thread, tiny_bytes};
use lacuna::gguf::{Array, GgufFile, GgufWriter, Value};
use lacuna::models::Arch;
use lacuna::{ChatMessage, Engine, Prompt};

/// GSAI-ML/LLaDA-8B-Instruct's `chat_template` (tokenizer_config.json): `trim`,
/// `loop.index0` and `bos_token`, and the assistant header always appended.
const LLADA_TEMPLATE: &str = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";

/// The tiny fixture of `arch` with `special` token texts placed at the given ids (as control
/// tokens), metadata keys `set` (replacing) and `drop` removed.
fn published(
    arch: Arch,
    special: &[(usize, &str)],
    set: &[(&str, Value)],
    drop: &[&str],
) -> Engine {
    let src = GgufFile::from_vec(tiny_bytes(arch)).unwrap();
    let md = src.metadata();
    let Some(Value::Array(Array::String(mut tokens))) = md.value("tokenizer.ggml.tokens").cloned()
    else {
        panic!("fixture has string tokens")
    };
    let Some(Value::Array(Array::I32(mut types))) = md.value("tokenizer.ggml.token_type").cloned()
    else {
        panic!("fixture has token types")
    };
    for &(id, text) in special {
        tokens[id] = text.to_string();
        types[id] = 3;
    }
    let mut w = GgufWriter::new();
    for (k, v) in md.iter() {
        let replaced = set.iter().any(|(s, _)| *s == k);
        if k == "general.alignment" || drop.contains(&k) || replaced {
            continue;
        }
        let v = match k {
            "tokenizer.ggml.tokens" => Value::Array(Array::String(tokens.clone())),
            "tokenizer.ggml.token_type" => Value::Array(Array::I32(types.clone())),
            _ => v.clone(),
        };
        w.add_metadata(k, v).unwrap();
    }
    for (k, v) in set {
        w.add_metadata(k, v.clone()).unwrap();
    }
    for t in src.tensors() {
        w.add_tensor(&t.name, &t.dims, t.ty, src.info_data(t).to_vec())
            .unwrap();
    }
    let file = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
    Engine::from_gguf(file, &one_thread()).unwrap()
}

#[test]
fn llada_8b_instruct_layout() {
    // The fixture's mask sits at its last id (511) under LLaDA's text `<|mdm_mask|>`; an
    // older conversion without `tokenizer.ggml.mask_token_id` finds it by that text.
    let engine = published(
        Arch::Llada,
        &[
            (300, "<|startoftext|>"),
            (301, "<|eot_id|>"),
            (302, "<|start_header_id|>"),
            (303, "<|end_header_id|>"),
        ],
        &[
            ("tokenizer.ggml.pre", Value::from("bailingmoe")),
            ("tokenizer.ggml.bos_token_id", Value::U32(300)),
            ("tokenizer.ggml.add_bos_token", Value::Bool(true)),
            ("tokenizer.chat_template", Value::from(LLADA_TEMPLATE)),
        ],
        &["tokenizer.ggml.mask_token_id"],
    );
    assert_eq!(engine.mask_token_id(), 511);
    assert!(
        engine.eos_ids().contains(&301),
        "EOT found by its text: {:?}",
        engine.eos_ids()
    );
    assert!(engine.has_chat_template());
    let prompt = Prompt::Chat(vec![ChatMessage::new("user", "  Hello  ")]);
    let ids = engine.prompt_tokens(&prompt).unwrap();
    // Control tokens decode to nothing (as llama.cpp renders them); their ids show the
    // structure, the text shows `trim`.
    assert_eq!(
        engine.tokenizer().decode(&ids).unwrap(),
        "user\n\nHelloassistant\n\n"
    );
    let count = |id| ids.iter().filter(|&&t| t == id).count();
    assert_eq!(ids[0], 300, "bos_token first (loop.index0 == 0)");
    assert_eq!((count(301), count(302), count(303)), (1, 2, 2));
    assert_eq!(ids.iter().filter(|&&t| t == 300).count(), 1, "one BOS");
    assert!(
        !engine.model().shift_logits(),
        "LLaDA's converter writes shift_logits = false"
    );
}

#[test]
fn dream_and_rnd1_layouts_shift_without_the_key() {
    for arch in [Arch::Dream, Arch::Rnd1] {
        let engine = published(
            arch,
            &[(300, "<|im_start|>"), (301, "<|im_end|>")],
            &[("tokenizer.ggml.pre", Value::from("qwen2"))],
            &["diffusion.shift_logits"],
        );
        assert!(
            engine.model().shift_logits(),
            "{arch}: no key means shifted"
        );
        assert!(engine.eos_ids().contains(&301), "{arch}: <|im_end|> ends");
    }
}

#[test]
fn llada_moe_and_llada2_layouts() {
    for (arch, pre) in [
        (Arch::LladaMoe, "bailingmoe2"),
        (Arch::LladaMoe, "llada-moe"),
        (Arch::Llada2, "bailingmoe2"),
    ] {
        let engine = published(
            arch,
            &[(300, "<|role_end|>"), (301, "<|mask|>")],
            &[("tokenizer.ggml.pre", Value::from(pre))],
            &["tokenizer.ggml.mask_token_id"],
        );
        assert_eq!(engine.mask_token_id(), 301, "{arch}: the mask by its text");
        assert!(!engine.model().shift_logits(), "{arch}");
    }
}
