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
//! The capabilities, as the type table in `types.rs` sets them (a test keeps this table equal):
//!
//! | types | dequantize | reference quantizer | scalar `vec_dot` (against) |
//! |---|---|---|---|
//! | F32, F16, BF16 | ✓ | ✓ | ✓ (same type, f64 sum) |
//! | Q4_0, Q5_0, Q8_0 | ✓ | ✓ | ✓ (Q8_0) |
//! | Q4_1, Q5_1 | ✓ | ✓ | ✓ (Q8_1) |
//! | Q8_1, Q8_K (activation formats) | ✓ | ✓ | — |
//! | Q2_K, Q3_K, Q4_K, Q5_K, Q6_K | ✓ | ✓ | ✓ (Q8_K) |
//! | IQ4_NL / IQ4_XS | ✓ | ✓ | ✓ (Q8_0 / Q8_K) |
//! | TQ1_0, TQ2_0 | ✓ | ✓ | ✓ (Q8_K) |
//! | MXFP4 | ✓ | ✓ | ✓ (Q8_0) |
//! | NVFP4, Q1_0, Q2_0 | ✓ | — | — |
//! | IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, I8, I16, I32, I64, F64 | — | — | — |
//!
//! Dequantization and the quantizers are bit-exact with ggml (`tests/vectors.rs` against
//! vectors from gguf-py and ggml's own C reference; see `tools/quant-vectors`).
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
pub mod int_blocks;
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
    can_dequantize, can_quantize, dequantize_row, quantize_row, quantize_row_chunk, vec_dot,
    vec_dot_type,
};
pub use error::Error;
pub use iq4::{BlockIQ4NL, BlockIQ4XS, KVALUES_IQ4NL};
pub use kquants::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
pub use legacy::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};
pub use mxfp4::{BlockMXFP4, BlockNVFP4, KVALUES_MXFP4, e8m0_to_fp32_half, ue4m3_to_fp32_half};
pub use ternary::{BlockTQ1_0, BlockTQ2_0};
pub use types::{GgmlType, QK_K};
