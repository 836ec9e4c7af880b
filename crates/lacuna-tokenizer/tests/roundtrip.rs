//! Properties on random data: lossless round trips where llama.cpp has them, and the
//! streaming decoder agreeing with whole-sequence decoding.

use std::path::Path;

use lacuna_gguf::GgufFile;
use lacuna_tokenizer::{Error, Tokenizer};
use proptest::prelude::*;

fn load(name: &str) -> Tokenizer {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.gguf"));
    Tokenizer::from_gguf(&GgufFile::open(path).unwrap()).unwrap()
}

thread_local! {
    static QWEN2: Tokenizer = load("bpe-qwen2");
    static MOE: Tokenizer = load("bpe-llada-moe");
    static SPM: Tokenizer = load("spm");
    static LLAMA3: Tokenizer = load("bpe-llama3");
}

/// Text with a bias towards the hard cases: whitespace runs, digits, combining marks,
/// emoji, CJK, apostrophes.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        "[ \t\n\r]{1,4}",
        "[0-9]{1,8}",
        "[a-zA-Z']{1,6}",
        Just("\u{301}".to_owned()),
        Just("👨‍👩‍👧".to_owned()),
        Just("日本語".to_owned()),
        Just("\u{a0}".to_owned()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Byte-level BPE without space clean-up (qwen2, llada-moe) is lossless on any text.
    #[test]
    fn byte_level_bpe_roundtrips(s in text()) {
        for tok in [&QWEN2, &MOE] {
            tok.with(|t| {
                let ids = t.encode(&s, false, false).unwrap();
                prop_assert_eq!(t.decode(&ids).unwrap(), s.clone());
                Ok(())
            })?;
        }
    }

    /// SentencePiece with byte fallback is lossless too (its prefix space is stripped).
    #[test]
    fn spm_roundtrips(s in text()) {
        SPM.with(|t| {
            let ids = t.encode(&s, false, false).unwrap();
            prop_assert_eq!(t.decode(&ids).unwrap(), s.clone());
            Ok(())
        })?;
    }

    /// Streaming decode, token by token, equals decoding all bytes at once; partial UTF-8
    /// from byte tokens is held back, never emitted broken.
    #[test]
    fn stream_decoder_matches_whole_decode(ids in prop::collection::vec(0u32..3000, 0..40), special in any::<bool>()) {
        SPM.with(|t| {
            let mut stream = t.stream_decoder(special);
            let mut streamed = String::new();
            let mut bytes = Vec::new();
            for &id in &ids {
                let part = stream.push(id).unwrap();
                streamed.push_str(&part);
                bytes.extend_from_slice(t.token_bytes(id, special).unwrap());
            }
            streamed.push_str(&stream.finish());
            prop_assert_eq!(streamed, String::from_utf8_lossy(&bytes).into_owned());
            Ok(())
        })?;
    }

    /// Encoding never fails and every id is inside the vocabulary.
    #[test]
    fn encode_ids_are_in_range(s in text(), special in any::<bool>()) {
        LLAMA3.with(|t| {
            for id in t.encode(&s, true, special).unwrap() {
                prop_assert!((id as usize) < t.n_vocab());
            }
            Ok(())
        })?;
    }
}

#[test]
fn stream_decoder_holds_a_split_character_until_complete() {
    SPM.with(|t| {
        // "é" = C3 A9 as two byte-fallback tokens.
        let id_of = |text: &str| {
            (0..t.n_vocab() as u32)
                .find(|&i| t.vocab().token_text(i) == Some(text))
                .unwrap()
        };
        let (c3, a9) = (id_of("<0xC3>"), id_of("<0xA9>"));
        let mut s = t.stream_decoder(false);
        assert_eq!(s.push(c3).unwrap(), "");
        assert_eq!(s.push(a9).unwrap(), "é");
        assert_eq!(s.push(c3).unwrap(), "");
        assert_eq!(s.finish(), "\u{fffd}");
    });
}

#[test]
fn out_of_range_ids_are_errors() {
    SPM.with(|t| {
        let n = t.n_vocab() as u32;
        assert!(matches!(t.decode(&[n]), Err(Error::TokenOutOfRange { id, .. }) if id == n));
        assert!(t.stream_decoder(true).push(u32::MAX).is_err());
    });
}

#[test]
fn special_text_is_a_token_only_when_parsing_specials() {
    LLAMA3.with(|t| {
        let mask = t.vocab().special().mask.unwrap();
        let with = t.encode("a <|mdm_mask|> b", false, true).unwrap();
        let without = t.encode("a <|mdm_mask|> b", false, false).unwrap();
        assert!(with.contains(&mask));
        assert!(!without.contains(&mask));
        // user-defined tokens are matched either way, as in llama.cpp
        let tool = (0..t.n_vocab() as u32)
            .find(|&i| t.vocab().token_text(i) == Some("<tool>"))
            .unwrap();
        assert!(t.encode("x<tool>y", false, false).unwrap().contains(&tool));
        // BOS only with add_special, because this vocabulary asks for it
        let bos = t.vocab().special().bos.unwrap();
        assert_eq!(t.encode("x", true, true).unwrap()[0], bos);
        assert_ne!(t.encode("x", false, true).unwrap()[0], bos);
    });
}
