//! [`Tokenizer`]: the vocabulary plus the Hugging Face pipeline built from it.

use lacuna_gguf::{GgufFile, Metadata};

use crate::decode::{self, StreamDecoder};
use crate::partition::{Fragment, SpecialMatcher};
use crate::vocab::{TokenId, Vocab, VocabKind};
use crate::{Error, Result};

/// A tokenizer built from GGUF metadata that produces llama.cpp's token ids.
///
/// ```no_run
/// let file = lacuna_gguf::GgufFile::open("model.gguf")?;
/// let tok = lacuna_tokenizer::Tokenizer::from_gguf(&file)?;
/// let ids = tok.encode("Hello <|mdm_mask|>", true, true)?;
/// let text = tok.decode(&ids)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Tokenizer {
    vocab: Vocab,
    hf: tokenizers::Tokenizer,
    specials: SpecialMatcher,
    pieces: Vec<Vec<u8>>,
    /// Gemma 4's own BPE (`None` for the vocabularies the `tokenizers` pipeline encodes).
    gemma4: Option<crate::gemma4::Gemma4>,
}

impl Tokenizer {
    /// Builds the tokenizer of a GGUF file.
    pub fn from_gguf(file: &GgufFile) -> Result<Self> {
        Self::from_metadata(file.metadata())
    }

    /// Builds the tokenizer from `tokenizer.ggml.*` metadata.
    pub fn from_metadata(md: &Metadata) -> Result<Self> {
        Self::from_vocab(Vocab::from_metadata(md)?)
    }

    /// Builds the tokenizer from an already read vocabulary.
    pub fn from_vocab(vocab: Vocab) -> Result<Self> {
        let hf = crate::hf::build(&vocab)?;
        let specials = SpecialMatcher::new(&vocab)?;
        let pieces = (0..vocab.len())
            .map(|id| decode::piece(&vocab, id))
            .collect();
        let gemma4 =
            (vocab.kind() == VocabKind::Gemma4).then(|| crate::gemma4::Gemma4::new(&vocab));
        Ok(Self {
            vocab,
            hf,
            specials,
            pieces,
            gemma4,
        })
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// Number of tokens.
    pub fn n_vocab(&self) -> usize {
        self.vocab.len()
    }

    /// The underlying Hugging Face tokenizer for plain text: it has no added tokens (no
    /// BOS/EOS, control or user-defined tokens), since [`Tokenizer::encode`] splits those
    /// off the text itself, as llama.cpp does, before handing it the pieces between them.
    pub fn hf(&self) -> &tokenizers::Tokenizer {
        &self.hf
    }

    /// Encodes `text` as `llama_tokenize(text, add_special, parse_special)` does: with
    /// `add_special`, BOS/EOS as the vocabulary asks; with `parse_special`, control-token
    /// text becomes the control token, otherwise it is encoded as plain text (user-defined
    /// tokens are matched either way).
    ///
    /// The text is first split at those tokens as llama.cpp's `tokenizer_st_partition`
    /// does (longest token text first, LSTRIP/RSTRIP honoured); each piece of plain text
    /// between them is then encoded on its own (for SentencePiece, with its prefix space).
    pub fn encode(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<TokenId>> {
        let fragments = self.specials.partition(text, parse_special)?;
        let special = self.vocab.special();
        let mut ids = Vec::with_capacity(text.len() / 3 + 2);
        if add_special && self.vocab.add_bos() {
            if let Some(bos) = special.bos {
                ids.push(bos);
            }
        }
        for fragment in fragments {
            match fragment {
                Fragment::Token(id) => ids.push(id),
                Fragment::Text(piece) if self.gemma4.is_some() => {
                    if let Some(g) = &self.gemma4 {
                        g.encode(piece, &mut ids);
                    }
                }
                Fragment::Text(piece) => {
                    let enc = self
                        .hf
                        .encode_fast(piece, false)
                        .map_err(|source| Error::Hf {
                            what: "encoding",
                            source,
                        })?;
                    ids.extend_from_slice(enc.get_ids());
                }
            }
        }
        if add_special && self.vocab.add_eos() {
            if let Some(eos) = special.eos {
                ids.push(eos);
            }
        }
        Ok(ids)
    }

    /// The bytes of one token, as `llama_token_to_piece(id, 0, special)`: control and
    /// unknown tokens are empty unless `special`.
    pub fn token_bytes(&self, id: TokenId, special: bool) -> Result<&[u8]> {
        let i = id as usize;
        let Some(piece) = self.pieces.get(i) else {
            return Err(Error::TokenOutOfRange {
                id,
                n_vocab: self.n_vocab(),
            });
        };
        if !special && decode::is_hidden_special(self.vocab.attrs[i]) {
            return Ok(&[]);
        }
        Ok(piece)
    }

    /// `llama_detokenize(ids, remove_special, unparse_special)` as bytes: drops a leading
    /// BOS / trailing EOS with `remove_special` (when the vocabulary adds them), strips the
    /// SentencePiece prefix space, and applies the vocabulary's space clean-up.
    pub fn detokenize(
        &self,
        ids: &[TokenId],
        remove_special: bool,
        unparse_special: bool,
    ) -> Result<Vec<u8>> {
        let special = self.vocab.special();
        let mut ids = ids;
        let mut remove_space = self.vocab.add_space_prefix;
        if remove_special && self.vocab.add_bos() {
            if let (Some(&first), Some(bos)) = (ids.first(), special.bos) {
                if first == bos {
                    remove_space = false;
                    ids = &ids[1..];
                }
            }
        }
        if remove_special && self.vocab.add_eos() {
            if let (Some(&last), Some(eos)) = (ids.last(), special.eos) {
                if last == eos {
                    ids = &ids[..ids.len() - 1];
                }
            }
        }
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let mut piece = self.token_bytes(id, unparse_special)?;
            if remove_space {
                if let Some(rest) = piece.strip_prefix(b" ") {
                    piece = rest;
                }
            }
            remove_space = false;
            out.extend_from_slice(piece);
        }
        if self.vocab.clean_spaces {
            decode::clean_spaces(&mut out);
        }
        Ok(out)
    }

    /// The tokens' bytes one after another (control tokens as nothing): no prefix space
    /// removed, no space clean-up (what a structured-output constraint checked).
    pub fn concat_bytes(&self, ids: &[TokenId]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id, false)?);
        }
        Ok(out)
    }

    /// [`Tokenizer::concat_bytes`] as text, invalid UTF-8 as U+FFFD.
    pub fn concat(&self, ids: &[TokenId]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.concat_bytes(ids)?).into_owned())
    }

    /// Decodes ids to text (`detokenize(ids, false, false)`), invalid UTF-8 as U+FFFD.
    pub fn decode(&self, ids: &[TokenId]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.detokenize(ids, false, false)?).into_owned())
    }

    /// A decoder for a live view, one token at a time (`special`: render control tokens).
    pub fn stream_decoder(&self, special: bool) -> StreamDecoder<'_> {
        StreamDecoder::new(self, special)
    }

    /// Whether this is a SentencePiece-style vocabulary.
    pub fn is_spm(&self) -> bool {
        matches!(self.vocab.kind(), VocabKind::Spm)
    }
}
