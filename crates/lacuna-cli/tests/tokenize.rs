//! `lacuna tokenize` prints the ids llama.cpp recorded for the fixture vocabularies.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lacuna-tokenizer/tests/fixtures")
        .join(name)
}

fn lacuna(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lacuna"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn prints_llama_cpp_ids_with_and_without_special_parsing() {
    let model = fixture("bpe-llama3.gguf");
    let model = model.to_str().unwrap();
    // Recorded with tools/llama-oracle for this fixture (see ../lacuna-tokenizer/tests/parity.rs).
    let (ok, out, err) = lacuna(&["tokenize", "-m", model, "Hello world"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "3501 39 3317 687");
    let (ok, with, _) = lacuna(&["tokenize", "-m", model, "<|mdm_mask|>"]);
    assert!(ok);
    assert_eq!(with.trim(), "3501 3507");
    let (ok, without, _) = lacuna(&["tokenize", "--no-special", "-m", model, "<|mdm_mask|>"]);
    assert!(ok);
    assert_ne!(without.trim(), "3501 3507");
    assert!(without.trim().split(' ').count() > 2);
}

#[test]
fn json_lists_ids_and_pieces() {
    let model = fixture("bpe-llama3.gguf");
    let (ok, out, err) = lacuna(&[
        "tokenize",
        "--json",
        "-m",
        model.to_str().unwrap(),
        "Hello world",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ids"], serde_json::json!([3501, 39, 3317, 687]));
    let pieces: Vec<&str> = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["piece"].as_str().unwrap())
        .collect();
    assert_eq!(pieces.concat(), "<|startoftext|>Hello world");
}

#[test]
fn missing_file_is_a_clear_error() {
    let (ok, _, err) = lacuna(&["tokenize", "-m", "/nonexistent.gguf", "x"]);
    assert!(!ok);
    assert!(err.contains("nonexistent.gguf"), "{err}");
}

#[test]
fn unsupported_pre_tokenizer_is_named() {
    let mut w = lacuna::gguf::GgufWriter::new();
    w.add_metadata("tokenizer.ggml.model", "gpt2").unwrap();
    w.add_metadata("tokenizer.ggml.pre", "deepseek-coder")
        .unwrap();
    w.add_metadata("tokenizer.ggml.tokens", vec!["a"]).unwrap();
    w.add_metadata("tokenizer.ggml.merges", Vec::<&str>::new())
        .unwrap();
    let path =
        std::env::temp_dir().join(format!("lacuna-cli-tokenize-{}.gguf", std::process::id()));
    w.write_file(&path).unwrap();
    let (ok, _, err) = lacuna(&["tokenize", "-m", path.to_str().unwrap(), "x"]);
    std::fs::remove_file(&path).unwrap();
    assert!(!ok);
    assert!(
        err.contains("unsupported pre-tokenizer \"deepseek-coder\""),
        "{err}"
    );
}
