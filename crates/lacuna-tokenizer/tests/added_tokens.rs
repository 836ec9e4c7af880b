//! Vocabularies with many control and user-defined tokens (issue 16): they load in time
//! linear in their size, and `encode` splits text at them exactly as llama.cpp's
//! `tokenizer_st_partition` does — checked against a literal transcription of that loop
//! on random texts built from the token texts plus filler.

use lacuna_gguf::{Array, GgufFile, GgufWriter, Value};
use lacuna_tokenizer::{Error, TokenAttr, Tokenizer};
use proptest::prelude::*;

/// GGUF token types.
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER: i32 = 4;
const BYTE: i32 = 6;

/// GPT-2's byte → char map.
fn byte_level(b: u8) -> char {
    let printable = (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    if printable {
        return char::from(b);
    }
    let offset = (0..b)
        .filter(|&x| !((33..=126).contains(&x) || (161..=172).contains(&x) || x >= 174))
        .count() as u32;
    char::from_u32(256 + offset).unwrap()
}

/// A base vocabulary (the SentencePiece specials, every byte, a few words) followed by
/// `extra` (text, type), written as GGUF metadata.
fn file(spm: bool, extra: &[(String, i32)], name: Option<&str>) -> GgufFile {
    let mut tokens: Vec<(String, i32)> = ["<unk>", "<s>", "</s>", "<|endoftext|>"]
        .iter()
        .zip([UNKNOWN, CONTROL, CONTROL, CONTROL])
        .map(|(t, ty)| ((*t).to_owned(), ty))
        .collect();
    if spm {
        tokens.extend((0..=255u8).map(|b| (format!("<0x{b:02X}>"), BYTE)));
        for w in [
            "▁", "a", "b", "h", "i", "x", "▁a", "▁b", "ab", "▁ab", "▁x", "hi", "▁hi",
        ] {
            tokens.push((w.to_owned(), NORMAL));
        }
    } else {
        tokens.extend((0..=255u8).map(|b| (byte_level(b).to_string(), NORMAL)));
        for w in ["ab", "Ġa", "Ġab", "hi", "Ġhi"] {
            tokens.push((w.to_owned(), NORMAL));
        }
    }
    tokens.extend_from_slice(extra);
    let scores: Vec<f32> = (0..tokens.len()).map(|i| -(i as f32)).collect();
    let mut w = GgufWriter::new();
    if let Some(name) = name {
        w.add_metadata("general.name", name).unwrap();
    }
    w.add_metadata("tokenizer.ggml.model", if spm { "llama" } else { "gpt2" })
        .unwrap();
    w.add_metadata("tokenizer.ggml.pre", "gpt-2").unwrap();
    let (texts, types): (Vec<String>, Vec<i32>) = tokens.into_iter().unzip();
    w.add_metadata("tokenizer.ggml.tokens", Value::Array(Array::String(texts)))
        .unwrap();
    w.add_metadata("tokenizer.ggml.token_type", types).unwrap();
    w.add_metadata("tokenizer.ggml.scores", scores).unwrap();
    w.add_metadata("tokenizer.ggml.bos_token_id", 1u32).unwrap();
    w.add_metadata("tokenizer.ggml.eos_token_id", 2u32).unwrap();
    w.add_metadata("tokenizer.ggml.add_bos_token", true)
        .unwrap();
    w.add_metadata("tokenizer.ggml.add_eos_token", true)
        .unwrap();
    w.add_metadata(
        "tokenizer.ggml.merges",
        vec!["a b", "Ġ a", "Ġa b", "h i", "Ġ hi"],
    )
    .unwrap();
    GgufFile::from_vec(w.to_vec().unwrap()).unwrap()
}

fn load(spm: bool, extra: &[(String, i32)], name: Option<&str>) -> Tokenizer {
    Tokenizer::from_gguf(&file(spm, extra, name)).unwrap()
}

fn id_of(tok: &Tokenizer, text: &str) -> u32 {
    (0..tok.n_vocab() as u32)
        .rev()
        .find(|&i| tok.vocab().token_text(i) == Some(text))
        .unwrap()
}

/// C's `isspace`.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// llama.cpp's `tokenize`: `tokenizer_st_partition` transcribed literally (cache sorted
/// by text length, longest first, equal lengths by id; each token splits every raw
/// fragment at each occurrence, left to right), then BOS, each raw fragment encoded on
/// its own (it holds no token text any more, so `encode` leaves it whole), tokens as they
/// are, EOS.
fn reference(tok: &Tokenizer, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
    enum Frag {
        Raw(usize, usize),
        Tok(u32),
    }
    let v = tok.vocab();
    let bytes = text.as_bytes();
    let cached = TokenAttr::CONTROL | TokenAttr::USER_DEFINED | TokenAttr::UNKNOWN;
    let mut cache: Vec<u32> = (0..v.len() as u32)
        .filter(|&i| v.token_attr(i).unwrap().contains_any(cached))
        .collect();
    cache.sort_by_key(|&i| std::cmp::Reverse(v.token_text(i).unwrap().len()));
    let mut buffer = Vec::new();
    if !text.is_empty() {
        buffer.push(Frag::Raw(0, text.len()));
    }
    for id in cache {
        let attr = v.token_attr(id).unwrap();
        if !parse_special && attr.contains_any(TokenAttr::CONTROL | TokenAttr::UNKNOWN) {
            continue;
        }
        let needle = v.token_text(id).unwrap().as_bytes();
        let mut next = Vec::new();
        for frag in buffer {
            let Frag::Raw(mut off, mut len) = frag else {
                next.push(frag);
                continue;
            };
            loop {
                let hay = &bytes[off..off + len];
                let Some(rel) = hay.windows(needle.len()).position(|w| w == needle) else {
                    if len > 0 {
                        next.push(Frag::Raw(off, len));
                    }
                    break;
                };
                let m = off + rel;
                let mut left = m - off;
                if attr.contains_any(TokenAttr::LSTRIP) {
                    while left > 0 && is_c_space(bytes[off + left - 1]) {
                        left -= 1;
                    }
                }
                if left > 0 {
                    next.push(Frag::Raw(off, left));
                }
                next.push(Frag::Tok(id));
                let mut r_off = m + needle.len();
                let mut r_len = off + len - r_off;
                if attr.contains_any(TokenAttr::RSTRIP) {
                    while r_len > 0 && is_c_space(bytes[r_off]) {
                        r_off += 1;
                        r_len -= 1;
                    }
                }
                (off, len) = (r_off, r_len);
            }
        }
        buffer = next;
    }
    let sp = v.special();
    let mut ids = Vec::new();
    if add_special && v.add_bos() {
        ids.extend(sp.bos);
    }
    for frag in buffer {
        match frag {
            Frag::Tok(id) => ids.push(id),
            Frag::Raw(o, l) => {
                ids.extend(tok.encode(&text[o..o + l], false, parse_special).unwrap())
            }
        }
    }
    if add_special && v.add_eos() {
        ids.extend(sp.eos);
    }
    ids
}

#[test]
fn a_hundred_thousand_user_defined_tokens_load_without_an_added_token_table() {
    let extra: Vec<(String, i32)> = (0..100_000)
        .map(|i| (format!("<filler_{i}>"), USER))
        .collect();
    let tok = load(false, &extra, None);
    assert!(tok.hf().get_added_tokens_decoder().is_empty());
    let ids = tok
        .encode("ab<filler_99999>hi<filler_7><filler_70>", false, false)
        .unwrap();
    let expect = [
        id_of(&tok, "ab"),
        id_of(&tok, "<filler_99999>"),
        id_of(&tok, "hi"),
        id_of(&tok, "<filler_7>"),
        id_of(&tok, "<filler_70>"),
    ];
    assert_eq!(ids, expect);
}

#[test]
fn a_longer_token_beats_an_earlier_shorter_one_it_overlaps() {
    let extra = [("<a".to_owned(), USER), ("a>b".to_owned(), CONTROL)];
    for spm in [false, true] {
        let tok = load(spm, &extra, None);
        let (short, long) = (id_of(&tok, "<a"), id_of(&tok, "a>b"));
        let with = tok.encode("<a>b", false, true).unwrap();
        assert_eq!(with.last(), Some(&long), "spm={spm}: {with:?}");
        assert!(!with.contains(&short));
        // special parsing off: the control token is text, so the user-defined one matches
        let without = tok.encode("<a>b", false, false).unwrap();
        assert_eq!(without.first(), Some(&short), "spm={spm}: {without:?}");
        assert!(!without.contains(&long));
    }
}

#[test]
fn sentencepiece_prefixes_a_space_to_text_after_a_user_defined_token() {
    let tok = load(true, &[("<u>".to_owned(), USER)], None);
    let ids = tok.encode("a<u>b", true, false).unwrap();
    let expect = [
        id_of(&tok, "<s>"),
        id_of(&tok, "▁a"),
        id_of(&tok, "<u>"),
        id_of(&tok, "▁b"),
        id_of(&tok, "</s>"),
    ];
    assert_eq!(ids, expect);
}

#[test]
fn phi3_names_give_special_tokens_rstrip_as_llama_cpp_does() {
    let extra = [("<|user|>".to_owned(), CONTROL)];
    let tok = load(true, &extra, Some("Phi-3-mini-4k-instruct"));
    let v = tok.vocab();
    let rstrip = |t: &str| {
        v.token_attr(id_of(&tok, t))
            .unwrap()
            .contains_any(TokenAttr::RSTRIP)
    };
    assert!(rstrip("<|user|>") && rstrip("</s>"));
    assert!(!rstrip("<s>") && !rstrip("<unk>") && !rstrip("<|endoftext|>"));
    let ids = tok
        .encode("<|user|> \n\thi</s>  x<s> x", false, true)
        .unwrap();
    let sp = id_of(&tok, "▁");
    let expect = [
        id_of(&tok, "<|user|>"),
        id_of(&tok, "▁hi"),
        id_of(&tok, "</s>"),
        id_of(&tok, "▁x"),
        id_of(&tok, "<s>"),
        sp,
        id_of(&tok, "▁x"),
    ];
    assert_eq!(ids, expect);
    // the same text without the name keeps the whitespace
    let plain = load(true, &extra, None);
    assert_ne!(
        plain.encode("<|user|> \n\thi", false, true).unwrap()[1],
        expect[1]
    );
}

#[test]
fn a_phi3_vocabulary_without_its_named_tokens_is_an_error() {
    let mut w = GgufWriter::new();
    w.add_metadata("general.name", "phi3-tiny").unwrap();
    w.add_metadata("tokenizer.ggml.model", "llama").unwrap();
    w.add_metadata("tokenizer.ggml.tokens", vec!["<unk>", "<s>", "a"])
        .unwrap();
    let f = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
    let err = Tokenizer::from_gguf(&f).unwrap_err();
    assert!(
        matches!(err, Error::MissingRuleToken { text: "</s>", .. }),
        "{err}"
    );
}

/// Added-token texts over a small alphabet so they overlap, nest and repeat.
fn added() -> impl Strategy<Value = Vec<(String, i32)>> {
    let text = prop_oneof![
        "[ab<>|]{1,5}",
        "<\\|[a-c]{0,3}\\|?>?",
        "[ ab]{1,3}",
        Just("日本".to_owned()),
        Just("é<".to_owned()),
    ];
    let ty =
        prop_oneof![3 => Just(USER), 2 => Just(CONTROL), 1 => Just(UNKNOWN), 1 => Just(NORMAL)];
    prop::collection::vec((text, ty), 1..120)
}

prop_compose! {
    fn case()(extra in added())
        (picks in prop::collection::vec(prop_oneof![
            2 => (0..extra.len()).prop_map(Some),
            1 => Just(None),
        ], 0..20),
         filler in prop::collection::vec("[abhix<>| \t\n]{0,4}|日|é", 20),
         extra in Just(extra))
        -> (Vec<(String, i32)>, String) {
        let mut text = String::new();
        for (i, p) in picks.iter().enumerate() {
            if let Some(t) = p {
                text.push_str(&extra[*t].0);
            }
            text.push_str(&filler[i]);
        }
        (extra, text)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn encode_matches_llama_cpps_partition_loop(
        (extra, text) in case(),
        spm in any::<bool>(),
        phi3 in any::<bool>(),
        add_special in any::<bool>(),
    ) {
        let tok = load(spm, &extra, phi3.then_some("phi-3"));
        for parse_special in [false, true] {
            prop_assert_eq!(
                tok.encode(&text, add_special, parse_special).unwrap(),
                reference(&tok, &text, add_special, parse_special),
                "parse_special={}", parse_special
            );
        }
    }
}
