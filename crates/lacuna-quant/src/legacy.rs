//! ggml's original 32-element block formats ("legacy quants"): one f16 scale (and for the
//! `_1` types an f16 min) per 32 weights.
//!
//! Every one of them packs element `j` (j < 16) in the low nibble of `qs[j]` and element
//! `j + 16` in the high nibble; the 5-bit types keep the fifth bit of element `i` in bit `i`
//! of the little-endian `u32` `qh`.

mod q4_0;
mod q4_1;
mod q5_0;
mod q5_1;
mod q8_0;
mod q8_1;

pub use q4_0::BlockQ4_0;
pub use q4_1::BlockQ4_1;
pub use q5_0::BlockQ5_0;
pub use q5_1::BlockQ5_1;
pub use q8_0::BlockQ8_0;
pub use q8_1::BlockQ8_1;

/// Elements per legacy block (`QK4_0`, `QK8_0`, ...).
pub(crate) const QK: usize = 32;

/// Absolute maximum of a block and the signed value that holds it (first one wins, NaN
/// never does), as ggml's `q4_0`/`q5_0` quantizers find it.
fn signed_absmax(x: &[f32]) -> (f32, f32) {
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    (amax, max)
}

/// Minimum and maximum as ggml's `q4_1`/`q5_1` quantizers find them (starting from
/// ±`FLT_MAX`, NaN never compares).
fn min_max(x: &[f32]) -> (f32, f32) {
    let mut min = f32::MAX;
    let mut max = -f32::MAX;
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}
