//! Chat templates stored in a GGUF, rendered and tokenized with special parsing.

use std::path::Path;

use lacuna_gguf::GgufFile;
use lacuna_tokenizer::{ChatMessage, ChatTemplate, Error, Tokenizer};

fn load(name: &str) -> Tokenizer {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.gguf"));
    Tokenizer::from_gguf(&GgufFile::open(path).unwrap()).unwrap()
}

#[test]
fn llada_style_template_from_the_file_renders_and_tokenizes_markers_as_control_tokens() {
    let tok = load("bpe-llama3");
    let tmpl = ChatTemplate::from_tokenizer(&tok).unwrap();
    let prompt = tmpl
        .render(&[ChatMessage::new("user", "What is 2+2?")], true)
        .unwrap();
    assert_eq!(
        prompt,
        "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    // The template already holds BOS: encode without adding another.
    let ids = tok.encode(&prompt, false, true).unwrap();
    let text = |id: u32| tok.vocab().token_text(id).unwrap().to_owned();
    assert_eq!(text(ids[0]), "<|startoftext|>");
    assert_eq!(text(ids[1]), "<|start_header_id|>");
    assert!(ids.iter().any(|&id| text(id) == "<|eot_id|>"));
    assert_eq!(
        tok.detokenize(&ids, false, true).unwrap(),
        prompt.as_bytes()
    );
}

#[test]
fn dream_style_template_from_the_file_renders() {
    let tok = load("bpe-qwen2");
    let tmpl = ChatTemplate::from_tokenizer(&tok).unwrap();
    let out = tmpl
        .render(&[ChatMessage::new("user", "hi")], true)
        .unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn a_file_without_template_says_so() {
    let tok = load("bpe-gpt2");
    assert!(matches!(
        ChatTemplate::from_tokenizer(&tok),
        Err(Error::NoChatTemplate)
    ));
}
