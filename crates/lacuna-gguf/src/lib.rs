//! The GGUF container: a zero-copy reader over a memory-mapped file and a writer used by
//! tests and fixture generators.
//!
//! This is the only crate that touches `memmap2`. It validates every count, length and
//! offset of a file before it allocates or slices, so a truncated or hostile file yields a
//! typed [`Error`] carrying the byte offset, never a panic, a hang, or an allocation out of
//! proportion to the file's size. The ggml type table itself lives in [`lacuna_quant`].
//!
//! ```no_run
//! use lacuna_gguf::GgufFile;
//! let f = GgufFile::open("model.gguf")?;
//! let layers: u32 = f.metadata().get("llada.block_count")?;
//! let vocab = f.metadata().get_str_array("tokenizer.ggml.tokens")?;
//! let embd = f.tensor("token_embd.weight")?; // dims, ggml type, offset, n_bytes
//! let bytes: &[u8] = f.tensor_data("token_embd.weight")?; // borrowed from the map
//! # Ok::<(), lacuna_gguf::Error>(())
//! ```

mod cursor;
mod error;
mod file;
mod header;
mod metadata;
mod value;
mod writer;

pub use error::{Error, Result};
pub use file::{GgufFile, SharedBytes};
pub use header::{Header, TensorInfo};
pub use lacuna_quant::GgmlType;
pub use metadata::{FromValue, Metadata};
pub use value::{Array, Value, ValueType};
pub use writer::GgufWriter;

/// The four bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";

/// Tensor data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// The metadata key that sets the data alignment (a u32 power of two).
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// How deeply arrays may nest (an array of arrays is depth 2). Real files use depth 1;
/// the limit keeps hostile nesting from exhausting the stack.
pub const MAX_ARRAY_DEPTH: usize = 16;
