//! A `tokenizers::Tokenizer` built from a GGUF file's `tokenizer.ggml.*` metadata, token
//! for token identical to llama.cpp, plus chat-template rendering.
//!
//! * [`Tokenizer::from_gguf`] reads the vocabulary ([`Vocab`]): the model (`gpt2` byte-level
//!   BPE with a pre-tokenizer from the [`pretok::SUPPORTED`] table, or `llama`
//!   SentencePiece-style BPE with byte fallback), token types, merges or scores, special
//!   ids (including the diffusion mask token) and BOS/EOS flags. Anything else is a typed
//!   [`Error`] naming it.
//! * [`Tokenizer::encode`] matches `llama_tokenize`, [`Tokenizer::detokenize`] matches
//!   `llama_detokenize`, [`StreamDecoder`] decodes a live canvas token by token.
//! * [`ChatTemplate`] renders `tokenizer.chat_template` with minijinja.
//!
//! Parity with llama.cpp is checked by `tests/parity.rs` against ids recorded with
//! `tools/llama-oracle` for the fixture vocabularies of `tools/tokenizer-fixtures`.

mod chat;
mod decode;
mod error;
mod gemma4;
mod hf;
mod partition;
pub mod pretok;
mod tokenizer;
mod vocab;

pub use chat::{ChatMessage, ChatTemplate};
pub use decode::StreamDecoder;
pub use error::{Error, Result};
pub use tokenizer::Tokenizer;
pub use vocab::{DEFAULT_MASK_IDS, SpecialTokens, TokenAttr, TokenId, Vocab, VocabKind};
