//! Errors of the model crate.

use lacuna_quant::GgmlType;

/// Everything that can go wrong loading or running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA backend failed (no driver, no NVRTC, out of memory, a kernel error).
    #[error(transparent)]
    Cuda(#[from] lacuna_cuda::Error),
    /// The GGUF container is unreadable or a metadata key is missing or mistyped.
    #[error(transparent)]
    Gguf(#[from] lacuna_gguf::Error),
    /// `general.architecture` names an architecture Lacuna does not run.
    #[error("unknown architecture {name:?} (supported: {})", crate::Arch::names())]
    UnknownArchitecture {
        /// The value of `general.architecture`.
        name: String,
    },
    /// A metadata value is present but unusable (zero, inconsistent with another key, ...).
    #[error("metadata {key}: {detail}")]
    BadMetadata {
        /// The offending key.
        key: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A tensor the architecture needs is absent.
    #[error("tensor {name} is missing")]
    MissingTensor {
        /// The tensor's name.
        name: String,
    },
    /// A tensor has other dimensions than the hyperparameters imply.
    #[error("tensor {name} has dims {found:?}, expected {expected:?}")]
    TensorShape {
        /// The tensor's name.
        name: String,
        /// Dims in ggml order the config implies.
        expected: Vec<u64>,
        /// Dims in the file.
        found: Vec<u64>,
    },
    /// A tensor has a type the graph cannot use in that role.
    #[error("tensor {name} has type {ty}, which is unsupported here (supported: {supported})")]
    TensorType {
        /// The tensor's name.
        name: String,
        /// Its type.
        ty: GgmlType,
        /// The supported types, for the message.
        supported: &'static str,
    },
    /// A token id outside the vocabulary.
    #[error("token {token} at position {position} is outside the vocabulary (size {vocab})")]
    TokenOutOfRange {
        /// The token id.
        token: u32,
        /// Where it is on the canvas.
        position: usize,
        /// The vocabulary size.
        vocab: usize,
    },
    /// A canvas that is empty or longer than the context.
    #[error("canvas of {len} tokens is outside 1..={max}")]
    CanvasLength {
        /// The canvas length.
        len: usize,
        /// The model's context length.
        max: usize,
    },
    /// A window pass was asked for without a cache filled for a canvas of this length.
    #[error(
        "window pass over a canvas of {len} tokens, but the key/value cache holds {cached} (run a fill pass first)"
    )]
    CacheNotFilled {
        /// The canvas length.
        len: usize,
        /// The canvas length the cache was filled for (0: empty).
        cached: usize,
    },
    /// A window pass's range is empty or leaves the canvas, or a requested row is outside it.
    #[error(
        "window {start}..{end} is empty, outside the canvas of {len} tokens, or misses row {row}"
    )]
    BadWindow {
        /// Window start.
        start: usize,
        /// Window end (exclusive).
        end: usize,
        /// The canvas length.
        len: usize,
        /// A requested row outside the window (`end` when the window itself is bad).
        row: usize,
    },
    /// A block-causal attention setting on an architecture whose attention is bidirectional.
    #[error("{arch} attends bidirectionally; only llada2 takes an attention block length")]
    NotBlockCausal {
        /// The model's architecture.
        arch: crate::Arch,
    },
    /// An attention block length of 0.
    #[error("the attention block length must be at least 1")]
    ZeroAttentionBlock,
    /// Requested rows are not ascending, distinct and inside the canvas.
    #[error("row {row} is not ascending, distinct and below the canvas length {len}")]
    BadRow {
        /// The offending row.
        row: usize,
        /// The canvas length.
        len: usize,
    },
    /// The output buffer has the wrong length.
    #[error("output buffer holds {found} values, expected {expected}")]
    OutputLength {
        /// Values expected (rows x vocab).
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// The backend cannot run a model of this shape (found once, at load).
    #[error("the {backend} backend cannot run this model: its {what} is {value} ({supported})")]
    UnsupportedShape {
        /// The backend's name ([`crate::Backend::name`]).
        backend: String,
        /// The hyperparameter, e.g. `head width`.
        what: &'static str,
        /// Its value.
        value: usize,
        /// What the backend takes, for the message.
        supported: &'static str,
    },
    /// A `diffusion-gemma` operation on a masked-diffusion model.
    #[error("{arch} is a masked-diffusion model: the encoder/decoder passes are diffusion-gemma's")]
    NotUniformState {
        /// The model's architecture.
        arch: crate::Arch,
    },
    /// A masked-diffusion pass (cached, windowed, block-causal) on `diffusion-gemma`, which
    /// runs through its encoder and decoder instead.
    #[error(
        "{arch} runs a prompt through its encoder and a canvas through its decoder; cached and \
         windowed masked-diffusion passes do not apply to it"
    )]
    NotMaskedDiffusion {
        /// The model's architecture.
        arch: crate::Arch,
    },
    /// A tensor's values are unusable (a non-finite scale, a non-positive factor).
    #[error("tensor {name}: {detail}")]
    BadTensor {
        /// The tensor.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// The backend lacks an operation the model's graph needs.
    #[error(
        "the {backend} backend cannot run this model: it has no {op} operation yet (use the CPU)"
    )]
    MissingOp {
        /// The backend's name ([`crate::Backend::name`]).
        backend: String,
        /// The operation.
        op: &'static str,
    },
    /// A CPU kernel rejected its arguments.
    #[error("CPU kernel: {0}")]
    Cpu(#[from] lacuna_cpu::Error),
    /// A tensor's data could not be decoded.
    #[error("tensor {name}: {source}")]
    Decode {
        /// The tensor (and row) being decoded.
        name: String,
        /// What `lacuna-quant` found wrong.
        source: lacuna_quant::Error,
    },
    /// Quantizing needs float weights.
    #[error(
        "tensor {name} is already {ty}; quantize from an F32, F16 or BF16 file (requantizing \
         loses precision twice)"
    )]
    AlreadyQuantized {
        /// The tensor.
        name: String,
        /// Its type.
        ty: GgmlType,
    },
    /// The fixture generator was asked for something it cannot build.
    #[error("fixture: {0}")]
    Fixture(&'static str),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
