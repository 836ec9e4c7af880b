//! RMSNorm and SwiGLU, split into parallel tasks (rows, or runs of elements) whose
//! arithmetic does not depend on the split.

use rayon::prelude::*;

use crate::Error;
use crate::ops::exp::exp;
use crate::ops::{LANES, multiversion};

/// Rows of [`rms_norm`] per parallel task.
const ROWS_PER_TASK: usize = 8;
/// Elements of [`swiglu`] per parallel task.
const SWIGLU_CHUNK: usize = 1 << 14;

/// RMSNorm of each row of `x` (rows of `w.len()`), times `w`, into `out`, in ggml's
/// order: sum of squares in f64, `scale = 1 / sqrt(mean + eps)` in f32,
/// `out = (x * scale) * w`. Groups of rows run as parallel tasks.
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
    let chunk = dim * ROWS_PER_TASK;
    out.par_chunks_mut(chunk)
        .zip(x.par_chunks(chunk))
        .for_each(|(o, x)| rms_norm_rows(x, w, eps, o));
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

/// `out = silu(gate) * up`, `silu(g) = g / (1 + e^-g)` (ggml's `swiglu`), in parallel
/// runs of elements.
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
    out.par_chunks_mut(SWIGLU_CHUNK)
        .zip(
            gate.par_chunks(SWIGLU_CHUNK)
                .zip(up.par_chunks(SWIGLU_CHUNK)),
        )
        .for_each(|(o, (g, u))| swiglu_body(g, u, o));
    Ok(())
}

multiversion! {
    fn swiglu_body(gate: &[f32], up: &[f32], out: &mut [f32]) {
        for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
            *o = g / (1.0 + exp(-g)) * u;
        }
    }
}
