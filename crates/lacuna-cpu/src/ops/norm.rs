//! RMSNorm and SwiGLU.

use crate::Error;
use crate::ops::exp::exp;
use crate::ops::{LANES, multiversion};

/// RMSNorm of each row of `x` (rows of `w.len()`), times `w`, into `out`, in ggml's
/// order: sum of squares in f64, `scale = 1 / sqrt(mean + eps)` in f32,
/// `out = (x * scale) * w`.
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) -> Result<(), Error> {
    let dim = w.len();
    if dim == 0 || !x.len().is_multiple_of(dim) {
        return Err(Error::BadLength {
            what: "rms_norm x (a whole number of rows of w.len())",
            expected: x.len().div_ceil(dim.max(1)) * dim,
            found: x.len(),
        });
    }
    if out.len() != x.len() {
        return Err(Error::BadLength {
            what: "rms_norm out",
            expected: x.len(),
            found: out.len(),
        });
    }
    rms_norm_rows(x, w, eps, out);
    Ok(())
}

multiversion! {
    fn rms_norm_rows(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
        let dim = w.len();
        for (xr, or) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
            let mut acc = [0.0f64; LANES];
            let chunks = xr.chunks_exact(LANES);
            for (l, v) in chunks.remainder().iter().enumerate() {
                acc[l] += f64::from(v * v);
            }
            for c in chunks {
                for l in 0..LANES {
                    acc[l] += f64::from(c[l] * c[l]);
                }
            }
            let sum: f64 = acc.iter().sum();
            let mean = (sum / dim as f64) as f32;
            let scale = 1.0 / (mean + eps).sqrt();
            for ((o, &v), &g) in or.iter_mut().zip(xr).zip(w) {
                *o = (v * scale) * g;
            }
        }
    }
}

/// `out = silu(gate) * up`, `silu(g) = g / (1 + e^-g)` (ggml's `swiglu`).
pub fn swiglu(gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<(), Error> {
    for (what, len) in [("swiglu up", up.len()), ("swiglu out", out.len())] {
        if len != gate.len() {
            return Err(Error::BadLength {
                what,
                expected: gate.len(),
                found: len,
            });
        }
    }
    swiglu_body(gate, up, out);
    Ok(())
}

multiversion! {
    fn swiglu_body(gate: &[f32], up: &[f32], out: &mut [f32]) {
        for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
            *o = g / (1.0 + exp(-g)) * u;
        }
    }
}
