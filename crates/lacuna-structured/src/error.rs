//! The one error type of constraint compilation: every variant names what is wrong (the
//! schema keyword and where it is, the grammar line, the limit passed).

/// Why a constraint cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A JSON Schema keyword this compiler does not support (or not with this value).
    #[error("unsupported JSON Schema keyword `{keyword}` at {path}: {why}")]
    UnsupportedKeyword {
        /// The keyword.
        keyword: String,
        /// A JSON pointer to the schema that holds it (`#` is the root).
        path: String,
        /// What is not supported about it.
        why: String,
    },
    /// The schema is malformed (a keyword with a value of the wrong type, a dangling `$ref`).
    #[error("invalid JSON Schema at {path}: {message}")]
    InvalidSchema {
        /// A JSON pointer to the offending schema.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A `$ref` cycle: a recursive schema describes a context-free language.
    #[error(
        "the schema is recursive ({reference} refers back to itself): recursive schemas are \
         context-free, not regular, and are not supported"
    )]
    RecursiveSchema {
        /// The reference that closes the cycle.
        reference: String,
    },
    /// A regex that does not parse.
    #[error("invalid regex: {message}")]
    Regex {
        /// The parser's message.
        message: String,
    },
    /// A regex feature a canvas constraint cannot have (look-around, anchors inside the
    /// pattern, byte classes).
    #[error("unsupported regex feature: {feature}")]
    RegexFeature {
        /// What it is.
        feature: String,
    },
    /// A GBNF grammar that does not parse.
    #[error("grammar, line {line}: {message}")]
    Grammar {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A GBNF grammar with recursion: context-free, not regular.
    #[error(
        "the grammar is context-free, not regular: rule `{rule}` refers back to itself; \
         only grammars without recursion are supported"
    )]
    NotRegular {
        /// A rule on the cycle.
        rule: String,
    },
    /// `choice` with no strings.
    #[error("`choice` needs at least one string")]
    EmptyChoice,
    /// The language is empty: no output can satisfy the constraint.
    #[error("no output can satisfy the constraint (its language is empty)")]
    Empty,
    /// Over a compile budget (automaton size, work, time).
    #[error("the constraint is too large to compile: {what} over the limit of {limit}")]
    TooLarge {
        /// What ran over.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The constraint's shortest output is longer than the tokens the request allows.
    #[error(
        "no answer of at most {max_tokens} tokens satisfies the constraint: its shortest \
         answer is {min_tokens} tokens"
    )]
    TooShort {
        /// Tokens of the shortest output.
        min_tokens: usize,
        /// Tokens allowed.
        max_tokens: usize,
    },
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;
