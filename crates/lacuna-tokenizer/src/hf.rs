//! Builds the Hugging Face `tokenizers::Tokenizer` that reproduces llama.cpp's encoding.
//!
//! * BPE (`gpt2`): the pre-tokenizer's regexes as `Split(Isolated)` steps, then byte-level
//!   mapping without its own regex; a BPE model with the file's merges (a repeated pair keeps
//!   its first rank, as llama.cpp's `emplace`) and `ignore_merges` where llama.cpp sets it.
//! * SPM (`llama`): a normalizer that prepends `▁` to every text piece (llama.cpp prefixes a
//!   space to every fragment that follows a special token or starts the text) and turns
//!   spaces into `▁`; a BPE model with byte fallback whose merges are every split of every
//!   token into two tokens, ranked by the merged token's score (highest first), which is
//!   the order llama.cpp's score-driven bigram queue merges in.
//! * No added tokens: control, unknown and user-defined tokens are split off the raw text
//!   by [`crate::partition`] first, as llama.cpp's partitioning does, and only the text
//!   between them reaches this pipeline. (The `tokenizers` added-token table costs time
//!   quadratic in its size to build: 155 s for 100,000 user-defined tokens.)

use std::collections::HashMap;

use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormSeq};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSeq;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{SplitDelimiterBehavior, Tokenizer};

use crate::vocab::{TokenAttr, Vocab, VocabKind};
use crate::{Error, Result};

/// SentencePiece's whitespace marker.
pub(crate) const SPM_SPACE: &str = "\u{2581}";

fn hf(what: &'static str) -> impl FnOnce(tokenizers::Error) -> Error {
    move |source| Error::Hf { what, source }
}

/// The token → id map with llama.cpp's rule for repeated texts (the last id wins).
fn vocab_map(vocab: &Vocab) -> HashMap<String, u32> {
    let mut map = HashMap::with_capacity(vocab.tokens.len());
    for (i, t) in vocab.tokens.iter().enumerate() {
        map.insert(t.clone(), i as u32);
    }
    map
}

/// Builds the plain-text pipeline (no added tokens).
pub(crate) fn build(vocab: &Vocab) -> Result<Tokenizer> {
    let map = vocab_map(vocab);
    let tok = match vocab.kind {
        VocabKind::Bpe(pre) => {
            // Drop merges whose parts or result are not tokens: llama.cpp would build a
            // non-token symbol and then fall back to its bytes; real vocabularies have none.
            let merges: Vec<(String, String)> = vocab
                .merges
                .iter()
                .filter(|(a, b)| {
                    map.contains_key(a)
                        && map.contains_key(b)
                        && map.contains_key(&format!("{a}{b}"))
                })
                .cloned()
                .collect();
            let model = BPE::builder()
                .vocab_and_merges(
                    map.into_iter().collect::<tokenizers::models::bpe::Vocab>(),
                    merges,
                )
                .ignore_merges(pre.ignore_merges)
                .build()
                .map_err(hf("building the BPE model"))?;
            let mut tok = Tokenizer::new(model);
            let mut steps = Vec::new();
            for r in pre.kind.regexes() {
                let split = Split::new(
                    SplitPattern::Regex((*r).to_owned()),
                    SplitDelimiterBehavior::Isolated,
                    false,
                )
                .map_err(hf("compiling a pre-tokenizer regex"))?;
                steps.push(split.into());
            }
            steps.push(ByteLevel::new(false, false, false).into());
            tok.with_pre_tokenizer(Some(PreSeq::new(steps)));
            tok
        }
        // Encoded by `crate::gemma4` (llama.cpp merges to texts that are not tokens, which a
        // `tokenizers` BPE refuses to build): an empty model stands in.
        VocabKind::Gemma4 => Tokenizer::new(BPE::default()),
        VocabKind::Spm => {
            let merges = spm_merges(vocab, &map);
            let model = BPE::builder()
                .vocab_and_merges(
                    map.into_iter().collect::<tokenizers::models::bpe::Vocab>(),
                    merges,
                )
                .byte_fallback(true)
                .build()
                .map_err(hf("building the SentencePiece BPE model"))?;
            let mut tok = Tokenizer::new(model);
            let replace =
                Replace::new(" ", SPM_SPACE).map_err(hf("building the space normalizer"))?;
            let norm = if vocab.add_space_prefix {
                NormSeq::new(vec![
                    Prepend::new(SPM_SPACE.to_owned()).into(),
                    replace.into(),
                ])
            } else {
                NormSeq::new(vec![replace.into()])
            };
            tok.with_normalizer(Some(norm));
            tok
        }
    };
    Ok(tok)
}

/// Every split of every non-byte token into two tokens, ranked by the merged token's score
/// (higher first; equal scores by lower id).
fn spm_merges(vocab: &Vocab, map: &HashMap<String, u32>) -> Vec<(String, String)> {
    let mut order: Vec<u32> = (0..vocab.tokens.len() as u32)
        .filter(|&i| !vocab.attrs[i as usize].contains_any(TokenAttr::BYTE))
        .collect();
    order.sort_by(|&a, &b| {
        vocab.scores[b as usize]
            .total_cmp(&vocab.scores[a as usize])
            .then(a.cmp(&b))
    });
    let mut merges = Vec::new();
    for id in order {
        let text = &vocab.tokens[id as usize];
        if map.get(text) != Some(&id) {
            continue; // a repeated text: only its last id is reachable
        }
        for (pos, _) in text.char_indices().skip(1) {
            let (a, b) = text.split_at(pos);
            if map.contains_key(a) && map.contains_key(b) {
                merges.push((a.to_owned(), b.to_owned()));
            }
        }
    }
    merges
}
