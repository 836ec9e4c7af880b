//! Parity with llama.cpp: every fixture vocabulary × every corpus string × special-token
//! parsing on/off must give exactly the ids `tools/llama-oracle` recorded, and the same
//! detokenized text, token pieces, special ids and flags.
//!
//! Re-record with `tools/tokenizer-fixtures/record.sh` (needs the oracle built).

use std::path::{Path, PathBuf};

use lacuna_gguf::GgufFile;
use lacuna_tokenizer::{TokenAttr, Tokenizer};
use serde::Deserialize;

#[derive(Deserialize)]
struct VocabInfo {
    n_vocab: i32,
    bos: i32,
    eos: i32,
    eot: i32,
    mask: i32,
    add_bos: bool,
    add_eos: bool,
    attrs: Vec<u32>,
    pieces_hex: Vec<String>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
    decoded: String,
    roundtrip: bool,
}

#[derive(Deserialize)]
struct Recorded {
    parse_special: bool,
    add_special: bool,
    vocab: VocabInfo,
    cases: Vec<Case>,
}

const FIXTURES: &[&str] = &[
    "bpe-gpt2",
    "bpe-llama3",
    "bpe-qwen2",
    "bpe-llada-moe",
    "bpe-default",
    "spm",
    "spm-noprefix",
    "gemma4",
];

/// The committed fixtures, or another recorded set (same file names) named by
/// `LACUNA_TOKENIZER_FIXTURES`, e.g. a larger random corpus recorded locally.
fn dir() -> PathBuf {
    match std::env::var_os("LACUNA_TOKENIZER_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
    }
}

fn load(name: &str) -> Tokenizer {
    let file = GgufFile::open(dir().join(format!("{name}.gguf"))).unwrap();
    Tokenizer::from_gguf(&file).unwrap()
}

fn recorded(name: &str, mode: &str) -> Recorded {
    let bytes = std::fs::read(dir().join(format!("{name}.{mode}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn opt(id: i32) -> Option<u32> {
    u32::try_from(id).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The attribute bits Lacuna models (llama.cpp also sets LSTRIP/RSTRIP/NORMALIZED, and
/// UNUSED on control tokens whose text says "unused").
const MODELLED: u32 = TokenAttr::UNKNOWN.0
    | TokenAttr::NORMAL.0
    | TokenAttr::CONTROL.0
    | TokenAttr::USER_DEFINED.0
    | TokenAttr::BYTE.0;

#[test]
fn vocabulary_facts_match_llama_cpp() {
    for name in FIXTURES {
        let tok = load(name);
        let rec = recorded(name, "special");
        let v = tok.vocab();
        assert_eq!(tok.n_vocab() as i32, rec.vocab.n_vocab, "{name}: n_vocab");
        let sp = v.special();
        assert_eq!(sp.bos, opt(rec.vocab.bos), "{name}: bos");
        assert_eq!(sp.eos, opt(rec.vocab.eos), "{name}: eos");
        // llama.cpp picks EOT among several candidates in hash-map order: require only that
        // both picks are end-of-generation tokens.
        match opt(rec.vocab.eot) {
            Some(eot) => {
                assert!(
                    v.eog_ids().contains(&eot),
                    "{name}: llama.cpp eot {eot} not in {:?}",
                    v.eog_ids()
                );
                assert!(v.eog_ids().contains(&sp.eot.unwrap()), "{name}: eot");
            }
            None => assert_eq!(sp.eot, None, "{name}: eot"),
        }
        assert_eq!(sp.mask, opt(rec.vocab.mask), "{name}: mask");
        assert_eq!(v.add_bos(), rec.vocab.add_bos, "{name}: add_bos");
        assert_eq!(v.add_eos(), rec.vocab.add_eos, "{name}: add_eos");
        for id in 0..tok.n_vocab() as u32 {
            let ours = v.token_attr(id).unwrap().0 & MODELLED;
            let theirs = rec.vocab.attrs[id as usize] & MODELLED;
            assert_eq!(
                ours,
                theirs,
                "{name}: attrs of token {id} {:?}",
                v.token_text(id)
            );
            let piece = hex(tok.token_bytes(id, true).unwrap());
            assert_eq!(
                piece, rec.vocab.pieces_hex[id as usize],
                "{name}: piece of token {id}"
            );
        }
    }
}

#[test]
fn every_corpus_string_encodes_to_llama_cpp_ids() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in FIXTURES {
        let tok = load(name);
        for mode in ["special", "plain"] {
            let rec = recorded(name, mode);
            assert!(rec.add_special);
            assert!(rec.cases.len() >= 300, "{name}: corpus too small");
            for case in &rec.cases {
                let ids = tok.encode(&case.text, true, rec.parse_special).unwrap();
                checked += 1;
                if ids != case.ids {
                    failures.push(format!(
                        "{name}/{mode}: {:?}\n   llama.cpp {:?}\n   lacuna    {:?}",
                        case.text, case.ids, ids
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn detokenize_matches_llama_cpp_and_roundtrips_where_it_does() {
    let mut failures = Vec::new();
    for name in FIXTURES {
        let tok = load(name);
        for mode in ["special", "plain"] {
            for case in &recorded(name, mode).cases {
                let decoded = tok.decode(&case.ids).unwrap();
                if decoded != case.decoded {
                    failures.push(format!(
                        "{name}/{mode}: {:?}: llama.cpp {:?} lacuna {:?}",
                        case.text, case.decoded, decoded
                    ));
                }
                if case.roundtrip {
                    let ids = tok.encode(&case.text, true, mode == "special").unwrap();
                    assert_eq!(
                        tok.decode(&ids).unwrap(),
                        case.text,
                        "{name}/{mode}: roundtrip"
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
