//! ggml's tensor element types: the type table (id, block size, bytes per block) shared by
//! the GGUF reader, the `#[repr(C)]` block formats bit-exact with ggml, and plain scalar
//! reference code (dequantize, quantize, dot products) that every fast kernel is tested
//! against.
//!
//! - [`GgmlType`]: the type table.
//! - Block structs ([`BlockQ4K`], [`BlockQ8_0`], ...) implement [`QuantBlock`] (dequantize),
//!   [`QuantizeBlock`] (ggml's reference quantizer) and [`VecDotBlock`] (scalar dot product
//!   against the activation format ggml pairs them with).
//! - [`dequantize_blocks`], [`quantize_blocks`], [`vec_dot_blocks`]: typed row functions.
//! - [`dequantize_row`], [`quantize_row`], [`vec_dot`]: the same on raw bytes, keyed by
//!   [`GgmlType`].
//!
//! No `unsafe` here beyond `bytemuck` derives.

// The reference code transcribes ggml's C loops index for index, so it can be checked
// against ggml-quants.c line by line; iterator rewrites would obscure that.
#![allow(clippy::needless_range_loop)]

mod binary;
mod block;
mod dispatch;
mod error;
mod float;
mod iq4;
mod kquants;
mod legacy;
mod mxfp4;
pub mod scalar;
mod ternary;
mod types;

pub use binary::{BlockQ1_0, BlockQ2_0};
pub use block::{
    QuantBlock, QuantizeBlock, VecDotBlock, cast_blocks, cast_blocks_mut, dequantize_blocks,
    quantize_blocks, vec_dot_blocks,
};
pub use dispatch::{
    can_dequantize, can_quantize, dequantize_row, quantize_row, vec_dot, vec_dot_type,
};
pub use error::Error;
pub use iq4::{BlockIQ4NL, BlockIQ4XS, KVALUES_IQ4NL};
pub use kquants::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
pub use legacy::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};
pub use mxfp4::{BlockMXFP4, BlockNVFP4, KVALUES_MXFP4, e8m0_to_fp32_half, ue4m3_to_fp32_half};
pub use ternary::{BlockTQ1_0, BlockTQ2_0};
pub use types::{GgmlType, QK_K};
