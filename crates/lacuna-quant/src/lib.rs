//! ggml's tensor element types: the type table (id, block size, bytes per block) shared by
//! the GGUF reader, the `#[repr(C)]` block formats bit-exact with ggml, and plain scalar
//! reference code (dequantize, quantize, dot products) that every fast kernel is tested
//! against.
//!
//! No `unsafe` here beyond `bytemuck` derives.

mod error;
mod types;

pub use error::Error;
pub use types::{GgmlType, QK_K};
