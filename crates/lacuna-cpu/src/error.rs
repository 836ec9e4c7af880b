//! Errors of the CPU kernel crate.

use lacuna_quant::GgmlType;

use crate::Path;

/// What can go wrong when preparing or running a CPU kernel.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The weight type has no GEMM kernel here.
    #[error("no CPU matmul kernel for weight type {ty}")]
    UnsupportedType {
        /// The weight type asked for.
        ty: GgmlType,
    },
    /// The inner dimension is not a whole number of blocks of the weight type.
    #[error("K = {k} is not a multiple of the {ty} block size {block}")]
    RaggedK {
        /// The weight type.
        ty: GgmlType,
        /// The inner dimension.
        k: usize,
        /// The block size of `ty`.
        block: usize,
    },
    /// A buffer has the wrong length for the shape it is used with.
    #[error("{what}: expected {expected} elements, found {found}")]
    BadLength {
        /// Which argument is wrong.
        what: &'static str,
        /// Length implied by the shape.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// A shape whose element count overflows `usize`, or a zero dimension where one is needed.
    #[error("bad shape for {what}: {detail}")]
    BadShape {
        /// Which argument is wrong.
        what: &'static str,
        /// The dimensions that are wrong.
        detail: &'static str,
    },
    /// The instruction path was forced but this CPU (or its kernel) cannot run it.
    #[error("instruction path {path} is not available on this machine")]
    PathUnavailable {
        /// The path asked for.
        path: Path,
    },
    /// `LACUNA_CPU_PATH` (or a path name) names no known path.
    #[error("unknown CPU path name {name:?} (expected scalar|avx2|avxvnni|avx512vnni|amx)")]
    UnknownPath {
        /// The name as given.
        name: String,
    },
}
