//! Errors of the tokenizer crate.

/// Everything that can go wrong building a tokenizer from GGUF metadata, encoding,
/// decoding or rendering a chat template.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A metadata key is missing or has the wrong type (the GGUF error names the key).
    #[error(transparent)]
    Gguf(#[from] lacuna_gguf::Error),
    /// `tokenizer.ggml.model` names a tokenizer Lacuna does not implement.
    #[error(
        "unsupported tokenizer model {model:?} (tokenizer.ggml.model); supported: \"gpt2\", \"llama\""
    )]
    UnsupportedModel {
        /// The value found.
        model: String,
    },
    /// A byte-level BPE vocabulary without `tokenizer.ggml.pre`. llama.cpp falls back to
    /// "default" with a warning; Lacuna refuses to guess.
    #[error(
        "tokenizer.ggml.pre is missing: the pre-tokenizer of this BPE vocabulary is unknown (llama.cpp would guess \"default\"; Lacuna does not guess)"
    )]
    MissingPreTokenizer,
    /// `tokenizer.ggml.pre` names a pre-tokenizer Lacuna does not implement.
    #[error("unsupported pre-tokenizer {pre:?} (tokenizer.ggml.pre); supported: {supported}")]
    UnsupportedPreTokenizer {
        /// The value found.
        pre: String,
        /// The names Lacuna accepts.
        supported: String,
    },
    /// The vocabulary has no tokens.
    #[error("tokenizer.ggml.tokens is empty")]
    EmptyVocab,
    /// A per-token array is shorter than the token list.
    #[error("{key} has {found} entries but the vocabulary has {expected} tokens")]
    LengthMismatch {
        /// The array's key.
        key: &'static str,
        /// Number of tokens.
        expected: usize,
        /// Number of entries found.
        found: usize,
    },
    /// A special-token id outside the vocabulary.
    #[error("{key} = {id} is outside the vocabulary of {n_vocab} tokens")]
    SpecialTokenOutOfRange {
        /// The metadata key.
        key: &'static str,
        /// The id found.
        id: u64,
        /// Vocabulary size.
        n_vocab: usize,
    },
    /// A BYTE-type token whose text is not `<0xXX>`.
    #[error("token {id} has type BYTE but its text {text:?} is not of the form <0xXX>")]
    BadByteToken {
        /// The token id.
        id: u32,
        /// Its text.
        text: String,
    },
    /// The Hugging Face `tokenizers` pipeline could not be built or run.
    #[error("tokenizers: {what}: {source}")]
    Hf {
        /// What was being done.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: tokenizers::Error,
    },
    /// The Aho–Corasick automaton over the special and user-defined token texts could not
    /// be built (its size limits were exceeded).
    #[error("building the matcher over {n_texts} special/user-defined token texts: {source}")]
    SpecialTokenMatcher {
        /// Number of distinct token texts.
        n_texts: usize,
        /// The underlying error.
        #[source]
        source: aho_corasick::BuildError,
    },
    /// Searching the text for special and user-defined tokens failed.
    #[error("searching for special/user-defined tokens: {source}")]
    SpecialTokenSearch {
        /// The underlying error.
        #[source]
        source: aho_corasick::MatchError,
    },
    /// A model-specific token-attribute rule of llama.cpp names a token the vocabulary
    /// lacks; llama.cpp fails to load such a file too.
    #[error(
        "{rule} needs the token {text:?}, which the vocabulary lacks (llama.cpp refuses this file too)"
    )]
    MissingRuleToken {
        /// The rule, e.g. "Phi-3 RSTRIP attributes".
        rule: &'static str,
        /// The token text.
        text: &'static str,
    },
    /// A token id outside the vocabulary was given to decode.
    #[error("token id {id} is outside the vocabulary of {n_vocab} tokens")]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// Vocabulary size.
        n_vocab: usize,
    },
    /// The file has no `tokenizer.chat_template`.
    #[error("the model has no chat template (tokenizer.chat_template)")]
    NoChatTemplate,
    /// The chat template failed to parse or render, or used something unsupported.
    #[error("chat template: {0:#}")]
    Template(#[from] minijinja::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
