//! Splitting text at special and user-defined tokens, as llama.cpp's
//! `tokenizer_st_partition` does, before the plain-text pieces go to the model.
//!
//! llama.cpp's rule: every CONTROL, USER_DEFINED and UNKNOWN token is in a cache sorted by
//! text length, longest first. Token by token in that order, every text fragment not yet
//! claimed is split at each occurrence of the token's text, left to right, without
//! overlaps. With `parse_special` off, tokens that are CONTROL or UNKNOWN are skipped, so
//! only user-defined tokens take part. A token with LSTRIP also drops the whitespace (C
//! `isspace`) just before it inside its fragment, RSTRIP the whitespace just after it.
//!
//! Note the order is longest token first over the whole text, not leftmost-longest: with
//! tokens `bcd` and `ab`, `"abcd"` splits as `a` + `bcd`. A leftmost-longest scan would
//! give `ab` + `cd`, so a plain `LeftmostLongest` automaton is not llama.cpp's rule.
//!
//! llama.cpp's loop costs O(tokens × text) per encode. Here one Aho–Corasick automaton over
//! the distinct texts (built in time linear in their total length) reports every
//! occurrence in one pass, overlapping ones included; the occurrences are then taken in
//! llama.cpp's order (length descending, then id, then position) unless they overlap text
//! already claimed. Matching costs O(text + occurrences × log occurrences); occurrences are
//! at most the text's length times the longest chain of tokens each a suffix of the next.
//!
//! Ties: llama.cpp sorts with `std::sort`, whose order among tokens of equal length is
//! unspecified; this module takes the lower id first (what a stable sort gives, and what
//! libstdc++ gives for up to 16 cached tokens). It matters only when two equal-length
//! texts overlap in the input, or two tokens share a text.

use std::collections::{BTreeMap, HashMap};

use aho_corasick::{AhoCorasick, MatchKind};

use crate::vocab::{TokenAttr, TokenId, Vocab};
use crate::{Error, Result};

/// A piece of the input after partitioning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fragment<'t> {
    /// Plain text, for the model (never empty).
    Text(&'t str),
    /// A special or user-defined token matched by its text.
    Token(TokenId),
}

/// One token a pattern stands for, with its strip flags.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    id: TokenId,
    lstrip: bool,
    rstrip: bool,
}

/// A distinct token text: the token it becomes with special parsing on (the lowest id of
/// that text), and off (the lowest id that is user-defined only), if any.
#[derive(Debug, Clone, Copy)]
struct Pattern {
    special: Candidate,
    plain: Option<Candidate>,
}

/// The automaton over every partitioning token's text.
#[derive(Debug, Clone)]
pub(crate) struct SpecialMatcher {
    /// `None` when no token takes part.
    automaton: Option<AhoCorasick>,
    patterns: Vec<Pattern>,
}

/// The token types llama.cpp caches for partitioning.
const CACHED: TokenAttr =
    TokenAttr(TokenAttr::CONTROL.0 | TokenAttr::USER_DEFINED.0 | TokenAttr::UNKNOWN.0);
/// The types skipped when special parsing is off.
const SPECIAL_ONLY: TokenAttr = TokenAttr(TokenAttr::CONTROL.0 | TokenAttr::UNKNOWN.0);

/// C's `isspace` in the "C" locale, which llama.cpp's strip loops use.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// An occurrence of a pattern in the text, as the candidate chosen for this mode.
#[derive(Debug, Clone, Copy)]
struct Occurrence {
    start: usize,
    end: usize,
    token: Candidate,
}

/// Text claimed so far: start → (end, the token, or `None` for stripped whitespace).
/// Intervals never overlap.
type Claimed = BTreeMap<usize, (usize, Option<TokenId>)>;

impl SpecialMatcher {
    /// Collects llama.cpp's special-token cache and builds the automaton over its texts.
    pub(crate) fn new(vocab: &Vocab) -> Result<Self> {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut texts: Vec<&str> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        for (i, (text, &attr)) in vocab.tokens.iter().zip(&vocab.attrs).enumerate() {
            if !attr.contains_any(CACHED) || text.is_empty() {
                continue;
            }
            let cand = Candidate {
                id: i as TokenId,
                lstrip: attr.contains_any(TokenAttr::LSTRIP),
                rstrip: attr.contains_any(TokenAttr::RSTRIP),
            };
            let plain = (!attr.contains_any(SPECIAL_ONLY)).then_some(cand);
            // Ids ascend, so the first token seen for a text is the lowest id.
            match index.get(text.as_str()) {
                Some(&p) => {
                    let pat = &mut patterns[p];
                    pat.plain = pat.plain.or(plain);
                }
                None => {
                    index.insert(text, patterns.len());
                    texts.push(text);
                    patterns.push(Pattern {
                        special: cand,
                        plain,
                    });
                }
            }
        }
        let automaton = if texts.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&texts)
                    .map_err(|source| Error::SpecialTokenMatcher {
                        n_texts: texts.len(),
                        source,
                    })?,
            )
        };
        Ok(Self {
            automaton,
            patterns,
        })
    }

    /// Splits `text` into plain-text fragments and matched tokens, in order.
    pub(crate) fn partition<'t>(
        &self,
        text: &'t str,
        parse_special: bool,
    ) -> Result<Vec<Fragment<'t>>> {
        let whole = || {
            if text.is_empty() {
                Vec::new()
            } else {
                vec![Fragment::Text(text)]
            }
        };
        let Some(ac) = &self.automaton else {
            return Ok(whole());
        };
        let mut found: Vec<Occurrence> = Vec::new();
        let matches = ac
            .try_find_overlapping_iter(text)
            .map_err(|source| Error::SpecialTokenSearch { source })?;
        for m in matches {
            let pat = &self.patterns[m.pattern().as_usize()];
            let token = if parse_special {
                Some(pat.special)
            } else {
                pat.plain
            };
            if let Some(token) = token {
                found.push(Occurrence {
                    start: m.start(),
                    end: m.end(),
                    token,
                });
            }
        }
        if found.is_empty() {
            return Ok(whole());
        }
        // llama.cpp's order: longest text first, then the cache order (id), then left to right.
        found.sort_unstable_by(|a, b| {
            (b.end - b.start)
                .cmp(&(a.end - a.start))
                .then(a.token.id.cmp(&b.token.id))
                .then(a.start.cmp(&b.start))
        });
        let bytes = text.as_bytes();
        let mut claimed = Claimed::new();
        for occ in found {
            let (start, end) = (occ.start, occ.end);
            let overlaps = claimed
                .range(..end)
                .next_back()
                .is_some_and(|(_, &(e, _))| e > start);
            if overlaps {
                continue;
            }
            // The fragment this occurrence lies in runs from the end of the claim before it
            // to the start of the claim after it.
            let left = claimed
                .range(..start)
                .next_back()
                .map_or(0, |(_, &(e, _))| e);
            let right = claimed.range(end..).next().map_or(bytes.len(), |(&s, _)| s);
            claimed.insert(start, (end, Some(occ.token.id)));
            if occ.token.lstrip {
                let mut s = start;
                while s > left && is_c_space(bytes[s - 1]) {
                    s -= 1;
                }
                if s < start {
                    claimed.insert(s, (start, None));
                }
            }
            if occ.token.rstrip {
                let mut e = end;
                while e < right && is_c_space(bytes[e]) {
                    e += 1;
                }
                if e > end {
                    claimed.insert(end, (e, None));
                }
            }
        }
        // Every boundary is a match boundary of a UTF-8 pattern in UTF-8 text, or next to
        // an ASCII whitespace byte, so each slice below falls on character boundaries.
        let mut out = Vec::with_capacity(2 * claimed.len() + 1);
        let mut pos = 0;
        for (&start, &(end, token)) in &claimed {
            if start > pos {
                out.push(Fragment::Text(&text[pos..start]));
            }
            if let Some(id) = token {
                out.push(Fragment::Token(id));
            }
            pos = end;
        }
        if pos < text.len() {
            out.push(Fragment::Text(&text[pos..]));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
