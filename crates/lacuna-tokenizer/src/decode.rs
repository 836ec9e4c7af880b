//! Token → bytes exactly as llama.cpp's `token_to_piece` and `detokenize`, and a
//! streaming decoder that never splits a UTF-8 character across updates.

use crate::hf::SPM_SPACE;
use crate::vocab::{TokenAttr, Vocab, VocabKind, parse_byte_token};

/// GPT-2's byte → char map (bytes that are printable map to themselves, the rest to
/// U+0100 upwards), inverted: char → byte.
fn byte_level_inverse() -> &'static std::collections::HashMap<char, u8> {
    static MAP: std::sync::OnceLock<std::collections::HashMap<char, u8>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = std::collections::HashMap::with_capacity(256);
        let mut next = 256u32;
        for b in 0..=255u8 {
            let printable = (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
            let c = if printable {
                char::from(b)
            } else {
                let c = char::from_u32(next).unwrap_or('\u{fffd}');
                next += 1;
                c
            };
            map.insert(c, b);
        }
        map
    })
}

/// llama.cpp's `llama_decode_text`: byte-level chars back to bytes; a char outside the
/// map becomes `[UNK_BYTE_0x<hex>` + the whole text + `]`, as llama.cpp writes it.
fn byte_level_decode(text: &str, out: &mut Vec<u8>) {
    let map = byte_level_inverse();
    for c in text.chars() {
        match map.get(&c) {
            Some(&b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.extend_from_slice(text.as_bytes());
                out.push(b']');
            }
        }
    }
}

/// `llama_token_to_piece(id, lstrip = 0, special = true)`; the caller suppresses control
/// and unknown tokens when special rendering is off. `id` must be in range.
pub(crate) fn piece(vocab: &Vocab, id: usize) -> Vec<u8> {
    let attr = vocab.attrs[id];
    let text = &vocab.tokens[id];
    if attr.contains_any(TokenAttr::UNKNOWN | TokenAttr::CONTROL | TokenAttr::USER_DEFINED) {
        return text.as_bytes().to_vec();
    }
    if attr.contains_any(TokenAttr::NORMAL) {
        return match vocab.kind {
            VocabKind::Spm | VocabKind::Gemma4 => text.replace(SPM_SPACE, " ").into_bytes(),
            VocabKind::Bpe(_) => {
                let mut out = Vec::with_capacity(text.len());
                byte_level_decode(text, &mut out);
                out
            }
        };
    }
    if attr.contains_any(TokenAttr::BYTE) {
        // Checked at load: every BYTE token parses.
        return parse_byte_token(text).map(|b| vec![b]).unwrap_or_default();
    }
    Vec::new() // unused and undefined tokens render as nothing
}

/// Whether a token is hidden when special rendering is off.
pub(crate) fn is_hidden_special(attr: TokenAttr) -> bool {
    attr.contains_any(TokenAttr::UNKNOWN | TokenAttr::CONTROL)
}

/// llama.cpp's `clean_up_tokenization_spaces` passes over the decoded bytes.
pub(crate) fn clean_spaces(text: &mut Vec<u8>) {
    // " ?", " !", " .", " ,": drop the space.
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    for (i, &x) in text.iter().enumerate() {
        if i > 0 && text[i - 1] == b' ' && matches!(x, b'?' | b'!' | b'.' | b',') {
            out.pop();
        }
        out.push(x);
    }
    // " ' " between spaces: drop both spaces.
    let mut t = std::mem::take(&mut out);
    let mut i = 0;
    while i < t.len() {
        let x = t[i];
        if i > 0 && x == b'\'' && i + 1 < t.len() && t[i - 1] == b' ' && t[i + 1] == b' ' {
            out.pop();
            out.push(x);
            t[i + 1] = 0; // llama.cpp overwrites the skipped space with NUL in place
            i += 2;
            continue;
        }
        out.push(x);
        i += 1;
    }
    // " 's", " 'm", " 're", " 've": drop the space.
    let t = std::mem::take(&mut out);
    for (i, &x) in t.iter().enumerate() {
        if i > 0 && t[i - 1] == b' ' && x == b'\'' && i + 1 < t.len() {
            let x1 = t[i + 1];
            let drop = matches!(x1, b's' | b'm')
                || (i + 2 < t.len() && matches!((x1, t[i + 2]), (b'r', b'e') | (b'v', b'e')));
            if drop {
                out.pop();
            }
        }
        out.push(x);
    }
    *text = out;
}

/// Decodes tokens one at a time into text for a live view: bytes of a character split
/// across tokens are held back until the character is complete, and invalid bytes become
/// U+FFFD once they can no longer start a valid character.
#[derive(Debug)]
pub struct StreamDecoder<'t> {
    tokenizer: &'t crate::Tokenizer,
    special: bool,
    pending: Vec<u8>,
}

impl<'t> StreamDecoder<'t> {
    pub(crate) fn new(tokenizer: &'t crate::Tokenizer, special: bool) -> Self {
        Self {
            tokenizer,
            special,
            pending: Vec::new(),
        }
    }

    /// Adds one token; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, id: crate::TokenId) -> crate::Result<String> {
        let bytes = self.tokenizer.token_bytes(id, self.special)?;
        self.pending.extend_from_slice(bytes);
        Ok(self.take_complete())
    }

    /// Returns whatever is held back, with incomplete characters as U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }

    fn take_complete(&mut self) -> String {
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // from_utf8 just validated this prefix, so this never falls back.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        None => {
                            // An incomplete character at the end: keep it for the next token.
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{fffd}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
