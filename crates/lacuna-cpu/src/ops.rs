//! Element-wise and row operations of a transformer forward pass (attention, RMSNorm,
//! SwiGLU, RoPE, row gathers, scatters and sums) and of the sampler's confidence math. The
//! arithmetic ones are plain Rust written for auto-vectorization (explicit 16-lane
//! accumulators, no reductions the compiler may not reorder), compiled three times:
//! AVX-512, AVX2+FMA and portable, chosen from [`crate::Path::active`]. The arithmetic is
//! the same in all three (no FMA contraction), so results are bit-identical across paths.
//! They check their arguments' lengths and shapes and return [`crate::Error`], never panic.

mod attention;
mod exp;
mod exp64;
mod gelu;
mod ln64;
mod norm;
mod rope;
mod rows;
mod softmax;
mod tanh;

pub(crate) use attention::AttnBuffers;
pub use attention::{AttnShape, Mask, attention, attention_rows};
pub use exp64::{
    entropy_f32, entropy_f64, exp_f64, exp_in_place, exp_into, sum_exp_f32, sum_exp_f64,
};
pub use gelu::{geglu, gelu_tanh, scale};
pub use ln64::{ln_f64, sum_p_ln_p};
pub use norm::{rms_norm, swiglu};
pub use rope::{RopeMode, RopeParams, rope, rope_with_factors};
pub use rows::{add, add_bias, copy_rows, scatter_scaled, sum_slots};
pub(crate) use softmax::softmax;
pub use softmax::{argmax, argmax_f64, log_softmax, top_k, top2};
pub use tanh::softcap;

/// Vector width the op bodies are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Portable,
    #[cfg(target_arch = "x86_64")]
    V256,
    #[cfg(target_arch = "x86_64")]
    V512,
}

pub(crate) fn level() -> Level {
    #[cfg(test)]
    if let Some(l) = tests::FORCED.with(|f| f.get()) {
        return l;
    }
    level_for(crate::Path::active().unwrap_or(crate::Path::Scalar))
}

pub(crate) fn level_for(path: crate::Path) -> Level {
    #[cfg(target_arch = "x86_64")]
    use crate::Path;
    match path {
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 | Path::AvxVnni => Level::V256,
        #[cfg(target_arch = "x86_64")]
        Path::Avx512Vnni | Path::Amx => Level::V512,
        // Scalar, and the aarch64 paths: their baseline target already has NEON, which the
        // portable bodies auto-vectorize to.
        _ => Level::Portable,
    }
}

/// Defines `fn $name(args) -> ret` whose body is compiled for AVX-512, AVX2+FMA and
/// portable code, dispatched on [`level`].
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident : $t:ty),* $(,)?) $(-> $r:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($a: $t),*) $(-> $r)? {
            #[inline(always)]
            fn body($($a: $t),*) $(-> $r)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
            fn v512($($a: $t),*) $(-> $r)? { body($($a),*) }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn v256($($a: $t),*) $(-> $r)? { body($($a),*) }
            match $crate::ops::level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `level` returns V512 only when the AVX-512 path is available.
                $crate::ops::Level::V512 => unsafe { v512($($a),*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `level` returns V256 only when the AVX2+FMA path is available.
                $crate::ops::Level::V256 => unsafe { v256($($a),*) },
                $crate::ops::Level::Portable => body($($a),*),
            }
        }
    };
}
pub(crate) use multiversion;

/// Lanes of the explicit accumulators (one zmm of f32).
pub(crate) const LANES: usize = 16;

#[cfg(test)]
pub(crate) mod tests;
