//! Gemma 4's tokenizer (`tokenizer.ggml.model = "gemma4"`), as llama.cpp's BPE session runs it
//! with its `GEMMA4` pre-tokenizer (`llama-vocab.cpp`, pull requests #21343 and #21534):
//!
//! * every space (0x20) becomes `▁`; there is no other normalisation and no prefix space;
//! * the text splits into runs of `\n` and runs of anything else (no word split);
//! * a run of newlines that is itself a token is that token;
//! * otherwise BPE from single code points: the adjacent pair of lowest merge rank merges
//!   first (ties: the left-most), whether or not the merged text is a token;
//! * each final piece is its token, or else one `<0xXX>` byte token per byte (a byte without
//!   one is dropped; `<unk>` is never produced).
//!
//! This is not a Hugging Face `tokenizers` BPE: that one refuses merges whose result is not in
//! the vocabulary, which llama.cpp never checks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::vocab::{TokenId, Vocab};

/// The merge ranks and the text → id map of a `gemma4` vocabulary.
#[derive(Debug)]
pub(crate) struct Gemma4 {
    /// Rank of each merge, keyed `"left right"`: symbols never hold a space (spaces are
    /// `▁` by then), so the key is unambiguous and a lookup needs no pair of strings.
    ranks: HashMap<String, u32>,
    ids: HashMap<String, TokenId>,
    bytes: [Option<TokenId>; 256],
}

/// One symbol of a word being merged: a byte range of the word, linked to its neighbours.
#[derive(Debug, Clone, Copy)]
struct Sym {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

impl Gemma4 {
    pub(crate) fn new(vocab: &Vocab) -> Self {
        let mut ids = HashMap::with_capacity(vocab.tokens.len());
        for (i, t) in vocab.tokens.iter().enumerate() {
            ids.insert(t.clone(), i as TokenId); // the last id of a repeated text
        }
        let mut ranks = HashMap::with_capacity(vocab.merges.len());
        for (rank, (a, b)) in vocab.merges.iter().enumerate() {
            ranks.entry(format!("{a} {b}")).or_insert(rank as u32);
        }
        let mut bytes = [None; 256];
        for (b, slot) in bytes.iter_mut().enumerate() {
            *slot = ids.get(&format!("<0x{b:02X}>")).copied();
        }
        Self { ranks, ids, bytes }
    }

    /// Appends the ids of a piece of plain text (between special tokens) to `out`.
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<TokenId>) {
        let text = text.replace(' ', crate::hf::SPM_SPACE);
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let newlines = rest.starts_with('\n');
            let end = rest
                .find(|c: char| (c == '\n') != newlines)
                .unwrap_or(rest.len());
            let (word, tail) = rest.split_at(end);
            self.word(word, newlines, out);
            rest = tail;
        }
    }

    fn rank(&self, key: &mut String, word: &str, a: &Sym, b: &Sym) -> Option<u32> {
        key.clear();
        key.push_str(&word[a.start..a.start + a.len]);
        key.push(' ');
        key.push_str(&word[b.start..b.start + b.len]);
        self.ranks.get(key.as_str()).copied()
    }

    fn word(&self, word: &str, newlines: bool, out: &mut Vec<TokenId>) {
        if newlines {
            if let Some(&id) = self.ids.get(word) {
                out.push(id);
                return;
            }
        }
        let mut syms: Vec<Sym> = Vec::with_capacity(word.len());
        for (i, (start, c)) in word.char_indices().enumerate() {
            syms.push(Sym {
                start,
                len: c.len_utf8(),
                prev: i.checked_sub(1),
                next: None,
            });
            if i > 0 {
                syms[i - 1].next = Some(i);
            }
        }
        // (rank, left index), lowest first; the text of the pair when queued, to skip
        // entries a later merge made stale (llama.cpp's `llm_bigram_bpe`).
        let mut queue: BinaryHeap<Reverse<(u32, usize, usize, usize)>> = BinaryHeap::new();
        let mut key = String::new();
        let mut push = |queue: &mut BinaryHeap<_>, syms: &[Sym], l: usize, r: usize| {
            if let Some(rank) = self.rank(&mut key, word, &syms[l], &syms[r]) {
                queue.push(Reverse((rank, l, r, syms[l].len + syms[r].len)));
            }
        };
        for i in 1..syms.len() {
            push(&mut queue, &syms, i - 1, i);
        }
        while let Some(Reverse((_, l, r, len))) = queue.pop() {
            let (a, b) = (syms[l], syms[r]);
            // Stale: either side merged away, or the pair's text changed since it was queued
            // (symbols only grow to the right, so adjacency plus the length is the text).
            if a.len == 0 || b.len == 0 || a.next != Some(r) || a.len + b.len != len {
                continue;
            }
            syms[l].len += b.len;
            syms[r].len = 0;
            syms[l].next = b.next;
            if let Some(n) = b.next {
                syms[n].prev = Some(l);
            }
            if let Some(p) = syms[l].prev {
                push(&mut queue, &syms, p, l);
            }
            if let Some(n) = syms[l].next {
                push(&mut queue, &syms, l, n);
            }
        }
        let mut at = if syms.is_empty() { None } else { Some(0) };
        while let Some(i) = at {
            let s = syms[i];
            let piece = &word[s.start..s.start + s.len];
            match self.ids.get(piece) {
                Some(&id) => out.push(id),
                None => out.extend(piece.bytes().filter_map(|b| self.bytes[usize::from(b)])),
            }
            at = s.next;
        }
    }
}
