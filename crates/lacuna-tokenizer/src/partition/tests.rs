use proptest::prelude::*;

use super::*;
use crate::vocab::{SpecialTokens, VocabKind};

const C: TokenAttr = TokenAttr::CONTROL;
const U: TokenAttr = TokenAttr::USER_DEFINED;
const K: TokenAttr = TokenAttr::UNKNOWN;
const N: TokenAttr = TokenAttr::NORMAL;
const L: TokenAttr = TokenAttr::LSTRIP;
const R: TokenAttr = TokenAttr::RSTRIP;

/// A vocabulary with only what partitioning reads: texts and attributes.
fn vocab(tokens: &[(&str, TokenAttr)]) -> Vocab {
    Vocab {
        kind: VocabKind::Spm,
        tokens: tokens.iter().map(|(t, _)| (*t).to_owned()).collect(),
        attrs: tokens.iter().map(|&(_, a)| a).collect(),
        scores: vec![0.0; tokens.len()],
        merges: Vec::new(),
        special: SpecialTokens::default(),
        add_bos: false,
        add_eos: false,
        add_space_prefix: false,
        clean_spaces: false,
        architecture: None,
        chat_template: None,
        eog: Vec::new(),
    }
}

/// llama.cpp's `tokenizer_st_partition`, transcribed literally: the cache sorted by text
/// length (longest first; a stable sort, so equal lengths by id), then for each token
/// every raw fragment searched left to right and split at each occurrence.
fn reference<'t>(v: &Vocab, text: &'t str, parse_special: bool) -> Vec<Fragment<'t>> {
    enum Frag {
        Raw(usize, usize),
        Tok(TokenId),
    }
    let bytes = text.as_bytes();
    let mut cache: Vec<usize> = (0..v.tokens.len())
        .filter(|&i| v.attrs[i].contains_any(CACHED) && !v.tokens[i].is_empty())
        .collect();
    cache.sort_by_key(|&i| std::cmp::Reverse(v.tokens[i].len()));
    let mut buffer = Vec::new();
    if !text.is_empty() {
        buffer.push(Frag::Raw(0, text.len()));
    }
    for id in cache {
        let attr = v.attrs[id];
        if !parse_special && attr.contains_any(SPECIAL_ONLY) {
            continue;
        }
        let needle = v.tokens[id].as_bytes();
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
                next.push(Frag::Tok(id as TokenId));
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
    buffer
        .into_iter()
        .map(|f| match f {
            Frag::Raw(o, l) => Fragment::Text(&text[o..o + l]),
            Frag::Tok(id) => Fragment::Token(id),
        })
        .collect()
}

fn split<'t>(v: &Vocab, text: &'t str, parse_special: bool) -> Vec<Fragment<'t>> {
    SpecialMatcher::new(v)
        .unwrap()
        .partition(text, parse_special)
        .unwrap()
}

use Fragment::{Text as T, Token as Tok};

#[test]
fn the_longest_token_wins_even_when_a_shorter_one_starts_earlier() {
    let v = vocab(&[("ab", U), ("bcd", U)]);
    assert_eq!(split(&v, "abcd", true), [T("a"), Tok(1)]);
    assert_eq!(split(&v, "abcdab", false), [T("a"), Tok(1), Tok(0)]);
}

#[test]
fn a_token_that_is_a_prefix_of_another_only_matches_outside_it() {
    let v = vocab(&[("<a", U), ("<ab>", C), ("x", N)]);
    assert_eq!(
        split(&v, "<ab><a<ab", true),
        [Tok(1), Tok(0), Tok(0), T("b")]
    );
    // with special parsing off the control token is plain text, and "<a" matches inside it
    assert_eq!(
        split(&v, "<ab><a<ab", false),
        [Tok(0), T("b>"), Tok(0), Tok(0), T("b")]
    );
}

#[test]
fn parse_special_off_keeps_only_tokens_that_are_user_defined_alone() {
    let v = vocab(&[("<c>", C), ("<k>", K), ("<u>", U), ("<cu>", C | U)]);
    assert_eq!(
        split(&v, "<c><k><u><cu>", true),
        [Tok(0), Tok(1), Tok(2), Tok(3)]
    );
    assert_eq!(
        split(&v, "<c><k><u><cu>", false),
        [T("<c><k>"), Tok(2), T("<cu>")]
    );
}

#[test]
fn lstrip_and_rstrip_drop_c_whitespace_inside_the_fragment_only() {
    let v = vocab(&[("<l>", U | L), ("<r>", U | R), ("<xx>", C)]);
    assert_eq!(
        split(&v, "a \t<l> b<r> \n\x0bc", true),
        [T("a"), Tok(0), T(" b"), Tok(1), T("c")]
    );
    // stripping stops at an earlier match; all-whitespace pieces vanish
    assert_eq!(split(&v, "<xx>  <l>", true), [Tok(2), Tok(0)]);
    assert_eq!(split(&v, "<r>  <r>", true), [Tok(1), Tok(1)]);
    // U+00A0 and other non-ASCII spaces are not C whitespace
    assert_eq!(split(&v, "\u{a0}<l>", true), [T("\u{a0}"), Tok(0)]);
}

#[test]
fn repeated_texts_take_the_lowest_id_allowed_in_the_mode() {
    let v = vocab(&[("<t>", C), ("<t>", U), ("<t>", U)]);
    assert_eq!(split(&v, "<t>", true), [Tok(0)]);
    assert_eq!(split(&v, "<t>", false), [Tok(1)]);
}

#[test]
fn no_tokens_or_no_matches_give_the_whole_text_and_empty_text_nothing() {
    let v = vocab(&[("a", N)]);
    assert_eq!(split(&v, "abc", true), [T("abc")]);
    assert_eq!(split(&v, "", true), []);
    let v = vocab(&[("<u>", U)]);
    assert_eq!(split(&v, "abc", true), [T("abc")]);
    assert_eq!(split(&v, "", false), []);
}

fn attr() -> impl Strategy<Value = TokenAttr> {
    let kind = prop_oneof![Just(C), Just(U), Just(K), Just(N), Just(C | U)];
    (kind, any::<bool>(), any::<bool>()).prop_map(|(k, l, r)| {
        let mut a = k;
        if l {
            a = a | L;
        }
        if r {
            a = a | R;
        }
        a
    })
}

prop_compose! {
    /// Small tokens over a small alphabet, so they overlap, nest and repeat.
    fn tokens()(toks in prop::collection::vec(("[ab< >\t]{1,4}|é|日a", attr()), 1..12)) -> Vec<(String, TokenAttr)> {
        toks
    }
}

prop_compose! {
    fn case()(toks in tokens())
        (picks in prop::collection::vec(prop_oneof![
            (0..toks.len()).prop_map(Some),
            Just(None),
        ], 0..16),
         filler in prop::collection::vec("[ab<> \t\né]{0,3}", 16),
         toks in Just(toks))
        -> (Vec<(String, TokenAttr)>, String) {
        let mut text = String::new();
        for (i, p) in picks.iter().enumerate() {
            if let Some(t) = p {
                text.push_str(&toks[*t].0);
            }
            text.push_str(&filler[i]);
        }
        (toks, text)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn automaton_partition_equals_llama_cpps_loop((toks, text) in case(), parse_special in any::<bool>()) {
        let refs: Vec<(&str, TokenAttr)> = toks.iter().map(|(t, a)| (t.as_str(), *a)).collect();
        let v = vocab(&refs);
        prop_assert_eq!(split(&v, &text, parse_special), reference(&v, &text, parse_special));
    }
}
