//! Errors of the GGUF crate.

use std::path::PathBuf;

use crate::ValueType;

/// Everything that can be wrong with a GGUF file or with a request made of one.
///
/// Errors found while parsing carry `offset`: the byte offset in the file where the
/// offending field starts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, inspected or mapped.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing a GGUF file failed.
    #[error("cannot write GGUF: {source}")]
    Write {
        /// The underlying error.
        #[from]
        source: std::io::Error,
    },
    /// The file does not start with `GGUF`.
    #[error("not a GGUF file: magic is {found:02x?}, expected \"GGUF\" at offset 0")]
    BadMagic {
        /// The first four bytes (fewer when the file is shorter).
        found: Vec<u8>,
    },
    /// The version field reads as a byte-swapped small number: a big-endian GGUF file.
    #[error("big-endian GGUF files are unsupported (version field reads {raw:#010x} at offset 4)")]
    BigEndian {
        /// The version field as read little-endian.
        raw: u32,
    },
    /// A GGUF version other than 2 or 3.
    #[error("unsupported GGUF version {version} at offset 4 (supported: 2, 3)")]
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The file ends inside a field.
    #[error("file truncated at offset {offset}: {what} needs {needed} bytes, {available} left")]
    Truncated {
        /// Where the field starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the file from `offset`.
        available: u64,
    },
    /// A count or length that cannot fit in what is left of the file.
    #[error("{what} at offset {offset} is {count}, which cannot fit in the {available} bytes left")]
    CountTooLarge {
        /// Where the count field starts.
        offset: u64,
        /// What is being counted.
        what: &'static str,
        /// The count found.
        count: u64,
        /// Bytes left in the file after the count field.
        available: u64,
    },
    /// A metadata value type id GGUF does not define.
    #[error("unknown metadata value type {id} at offset {offset}")]
    UnknownValueType {
        /// Where the type field starts.
        offset: u64,
        /// The id found.
        id: u32,
    },
    /// A tensor's ggml type id that ggml does not define.
    #[error("tensor {tensor:?} has unknown ggml type id {id} at offset {offset}")]
    UnknownGgmlType {
        /// Where the type field starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// The id found.
        id: u32,
    },
    /// A string that is not valid UTF-8.
    #[error("string at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// Where the string's bytes start.
        offset: u64,
    },
    /// A boolean byte other than 0 or 1.
    #[error("boolean at offset {offset} is {value}, expected 0 or 1")]
    InvalidBool {
        /// Where the byte is.
        offset: u64,
        /// The byte found.
        value: u8,
    },
    /// Arrays nested deeper than [`crate::MAX_ARRAY_DEPTH`].
    #[error("arrays nested deeper than {max} levels at offset {offset}")]
    NestingTooDeep {
        /// Where the too-deep array's type field starts.
        offset: u64,
        /// The limit.
        max: usize,
    },
    /// A metadata key that appears twice.
    #[error("duplicate metadata key {key:?} at offset {offset}")]
    DuplicateKey {
        /// Where the second occurrence starts.
        offset: u64,
        /// The key.
        key: String,
    },
    /// A tensor name that appears twice.
    #[error("duplicate tensor name {name:?} at offset {offset}")]
    DuplicateTensor {
        /// Where the second occurrence starts.
        offset: u64,
        /// The name.
        name: String,
    },
    /// `n_dims` outside `1..=4`.
    #[error("tensor {tensor:?} has {n_dims} dimensions at offset {offset}, expected 1 to 4")]
    BadDimCount {
        /// Where the `n_dims` field starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// The count found.
        n_dims: u32,
    },
    /// A dimension of size zero.
    #[error("tensor {tensor:?} has dimension {axis} of size 0 at offset {offset}")]
    ZeroDim {
        /// Where the dimension field starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// Which dimension (0 = `ne[0]`).
        axis: usize,
    },
    /// The element count or byte size of a tensor overflows (or a dimension exceeds
    /// `i64::MAX`, ggml's limit).
    #[error("tensor {tensor:?} at offset {offset}: {what} overflows")]
    SizeOverflow {
        /// Where the tensor's info starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// Which quantity overflows.
        what: &'static str,
    },
    /// `ne[0]` is not a multiple of the type's block size.
    #[error(
        "tensor {tensor:?} at offset {offset}: row length {ne0} is not a multiple of {ty}'s block size {block_size}"
    )]
    RowNotBlockMultiple {
        /// Where the tensor's info starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// `ne[0]`.
        ne0: u64,
        /// The tensor's type.
        ty: lacuna_quant::GgmlType,
        /// Elements per block of that type.
        block_size: usize,
    },
    /// A tensor data offset that is not a multiple of the file's alignment.
    #[error(
        "tensor {tensor:?}: data offset {data_offset} (field at offset {offset}) is not a multiple of the alignment {alignment}"
    )]
    MisalignedTensor {
        /// Where the offset field starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// The tensor's offset relative to the data section.
        data_offset: u64,
        /// The file's alignment.
        alignment: u64,
    },
    /// Tensor data that does not lie inside the file (or whose end overflows).
    #[error(
        "tensor {tensor:?}: data at relative offset {data_offset} with {n_bytes} bytes (field at offset {offset}) ends past the end of the {file_len}-byte file"
    )]
    TensorOutOfBounds {
        /// Where the offset field starts.
        offset: u64,
        /// The tensor.
        tensor: String,
        /// The tensor's offset relative to the data section.
        data_offset: u64,
        /// The tensor's size in bytes.
        n_bytes: u64,
        /// The file's length.
        file_len: u64,
    },
    /// Two tensors whose data overlap.
    #[error("tensors {first:?} and {second:?} overlap in the data section")]
    TensorOverlap {
        /// The tensor that starts first.
        first: String,
        /// The tensor that starts inside it.
        second: String,
    },
    /// `general.alignment` of a type other than `u32`.
    #[error("general.alignment at offset {offset} has type {found}, expected u32")]
    AlignmentType {
        /// Where the key starts.
        offset: u64,
        /// The type found.
        found: ValueType,
    },
    /// `general.alignment` zero or not a power of two.
    #[error("general.alignment {value} (at offset {offset}) is not a nonzero power of two")]
    BadAlignment {
        /// Where the key starts (0 when set through the writer).
        offset: u64,
        /// The value found.
        value: u64,
    },
    /// A metadata key that is absent.
    #[error("metadata key {key:?} is missing")]
    MissingKey {
        /// The key.
        key: String,
    },
    /// A metadata key whose value has another type than asked for.
    #[error("metadata key {key:?} has type {found}, expected {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The type asked for.
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// A tensor that is absent.
    #[error("no tensor named {name:?}")]
    MissingTensor {
        /// The name.
        name: String,
    },
    /// A tensor's bytes cannot be viewed as the requested element type.
    #[error("tensor {name:?} ({ty}) cannot be viewed as {target}: {reason:?}")]
    TensorView {
        /// The tensor.
        name: String,
        /// Its ggml type.
        ty: lacuna_quant::GgmlType,
        /// The requested element type.
        target: &'static str,
        /// Why not (length or alignment).
        reason: bytemuck::PodCastError,
    },
    /// A tensor given to the writer whose byte length does not match its dims and type.
    #[error("tensor {name:?}: {got} bytes given, dims and type need {expected}")]
    TensorSize {
        /// The tensor.
        name: String,
        /// Bytes the dims and type need.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// A tensor given to the writer whose shape is invalid (see the parse errors).
    #[error("tensor {name:?}: invalid shape {dims:?} for {ty}")]
    InvalidShape {
        /// The tensor.
        name: String,
        /// Its dims.
        dims: Vec<u64>,
        /// Its type.
        ty: lacuna_quant::GgmlType,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
