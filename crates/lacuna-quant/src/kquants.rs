//! ggml's K-quants: 256-weight super-blocks split into 16 or 32-weight sub-blocks whose
//! scales (and mins) are themselves quantized against one or two f16 super-block scales.
//! `Q8_K` is the activation format all of them (and IQ4_XS) are multiplied with.
//!
//! Each block type's doc comment draws its layout. The shared bit-level facts:
//! - 2-bit quants (Q2_K, Q3_K low bits) in `qs[64]`: element `128·n + 32·j + l`
//!   (n < 2, j < 4, l < 32) is bits `2j..2j+2` of `qs[32·n + l]`.
//! - 4-bit quants (Q4_K, Q5_K low bits) in `qs[128]`: element `64·c + l` is the low nibble
//!   of `qs[32·c + l]` for l < 32 and the high nibble of `qs[32·c + l - 32]` for l ≥ 32.

mod q2_k;
mod q3_k;
mod q4_k;
mod q5_k;
mod q6_k;
mod q8_k;
mod solvers;

pub use q2_k::BlockQ2K;
pub use q3_k::BlockQ3K;
pub use q4_k::BlockQ4K;
pub use q5_k::BlockQ5K;
pub use q6_k::BlockQ6K;
pub use q8_k::BlockQ8K;
pub(crate) use solvers::GROUP_MAX_EPS;
