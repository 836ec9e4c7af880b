//! Errors of the quant crate.

/// What can go wrong when interpreting ggml-typed data.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A ggml type id that no ggml version defines (or that was removed from ggml).
    #[error("unknown ggml type id {id}")]
    UnknownType {
        /// The id as found.
        id: u32,
    },
}
