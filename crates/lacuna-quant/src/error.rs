//! Errors of the quant crate.

use crate::GgmlType;

/// What can go wrong when interpreting or producing ggml-typed data.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A ggml type id that no ggml version defines (or that was removed from ggml).
    #[error("unknown ggml type id {id}")]
    UnknownType {
        /// The id as found.
        id: u32,
    },
    /// The type exists, but this crate has no scalar routine for that operation on it.
    #[error("{op} is not supported for ggml type {ty}")]
    Unsupported {
        /// The type asked for.
        ty: GgmlType,
        /// The operation: `"dequantize"`, `"quantize"` or `"vec_dot"`.
        op: &'static str,
    },
    /// An element count that is not a whole number of blocks of the type.
    #[error("{n} elements is not a multiple of the {ty} block size {block}")]
    PartialBlock {
        /// The type.
        ty: GgmlType,
        /// The element count given.
        n: usize,
        /// Elements per block of `ty`.
        block: usize,
    },
    /// A buffer whose length does not match the element count.
    #[error("{what} for {ty}: expected {expected} {unit}, found {found}")]
    LengthMismatch {
        /// The type.
        ty: GgmlType,
        /// Which buffer: `"source"`, `"destination"`, `"rhs"`...
        what: &'static str,
        /// Unit of the lengths: `"bytes"`, `"elements"` or `"blocks"`.
        unit: &'static str,
        /// The length needed.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// Bytes that cannot be viewed in place as blocks of the type (misaligned or not a
    /// whole number of blocks).
    #[error("bytes cannot be viewed as {ty} blocks: {reason}")]
    Cast {
        /// The type.
        ty: GgmlType,
        /// bytemuck's reason.
        reason: &'static str,
    },
}
