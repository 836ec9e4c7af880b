//! CPU kernels for the diffusion-LM workload: quantized GEMM over a whole canvas,
//! bidirectional and block-causal attention over chosen query rows, RMSNorm, RoPE, SwiGLU,
//! the row gathers, scatters and sums between them, and the sampler's vocabulary-row math.
//!
//! The only crate with `#[target_feature]` code. The instruction path (AMX, AVX-512 VNNI,
//! AVX-VNNI, AVX2, scalar) is detected once at run time ([`Path::active`], overridable with
//! `LACUNA_CPU_PATH`); every fast path is tested against the scalar path and against ggml's
//! scalar reference arithmetic. Knows nothing of models.
//!
//! ```
//! use lacuna_cpu::{PackedWeight, Workspace, matmul};
//! use lacuna_quant::GgmlType;
//! let (n, k, t) = (3, 4, 2);
//! let w: Vec<u8> = (0..n * k).flat_map(|i| (i as f32).to_le_bytes()).collect();
//! let w = PackedWeight::new(GgmlType::F32, n, k, &w)?;
//! let x = vec![1.0f32; t * k];
//! let mut y = vec![0.0f32; t * n];
//! matmul(&x, t, &w, &mut y, &mut Workspace::new())?;
//! assert_eq!(y, [6.0, 22.0, 38.0, 6.0, 22.0, 38.0]);
//! # Ok::<(), lacuna_cpu::Error>(())
//! ```

// Kernels index several parallel arrays (registers, panels, tokens) with one loop index;
// iterator rewrites would obscure the register tiling.
#![allow(clippy::needless_range_loop)]

mod acts;
mod blocks;
mod compact;
mod error;
mod gemm;
mod ops;
mod out;
mod packed;
mod path;
#[cfg(feature = "peak")]
pub mod peak;
#[cfg(test)]
mod testing;
pub mod tuning;

pub use error::Error;
pub use gemm::{Workspace, matmul, matmul_on, matmul_rows, matmul_rows_on};
pub use ops::{
    AttnShape, Mask, RopeMode, RopeParams, add, add_bias, argmax, argmax_f64, attention,
    attention_rows, copy_rows, entropy_f32, entropy_f64, exp_f64, exp_in_place, exp_into, geglu,
    gelu_tanh, ln_f64, log_softmax, rms_norm, rope, rope_with_factors, scale, scatter_scaled,
    softcap, sum_exp_f32, sum_exp_f64, sum_p_ln_p, sum_slots, swiglu, top_k, top2,
};
pub use packed::PackedWeight;
pub use path::Path;
pub use tuning::{Tuning, TuningError};
