//! Rotary position embeddings as ggml computes them (`ggml_rope_ext` without YaRN:
//! `ext_factor = 0`, `attn_factor = 1`): the angle of pair `i` at position `p` is
//! `(p * theta_scale^i) * freq_scale`, the powers built by repeated f32 multiplication as
//! ggml's rope cache builds them, with `theta_scale = freq_base^(-2 / n_rot)`.

use rayon::prelude::*;

use crate::Error;

/// Which elements of a head rotate together (ggml's rope modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeMode {
    /// Adjacent pairs `(x[2i], x[2i + 1])` (ggml's normal mode, GPT-J style).
    Normal,
    /// Pairs `(x[i], x[i + n_rot / 2])` (ggml's NeoX mode).
    Neox,
}

/// The parameters of one [`rope`] call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeParams {
    /// Which elements pair up.
    pub mode: RopeMode,
    /// Leading elements of each head that rotate (even, at most the head width); the rest
    /// of the head passes through unchanged.
    pub n_rot: usize,
    /// Base frequency.
    pub freq_base: f32,
    /// Frequency scale (1 = none; linear scaling is `1 / factor`).
    pub freq_scale: f32,
}

/// RoPE in place: `x` is `t` rows of whole `head_dim`-wide heads, row `r` at position
/// `pos0 + r`; the first `n_rot` elements of every head rotate. Rows run as parallel tasks;
/// the result does not depend on how they are split.
pub fn rope(
    x: &mut [f32],
    t: usize,
    pos0: usize,
    head_dim: usize,
    params: RopeParams,
) -> Result<(), Error> {
    rope_impl(x, t, pos0, head_dim, params, None)
}

/// [`rope`] with ggml's frequency factors (`rope_freqs`): the angle of pair `i` is divided by
/// `factors[i]` before the frequency scale (`n_rot / 2` factors). An infinite factor leaves
/// the pair unrotated, which is how Gemma 4's "proportional" RoPE rotates only a leading
/// part of a head's pairs while spacing their frequencies over the whole head.
pub fn rope_with_factors(
    x: &mut [f32],
    t: usize,
    pos0: usize,
    head_dim: usize,
    params: RopeParams,
    factors: &[f32],
) -> Result<(), Error> {
    if factors.len() != params.n_rot / 2 {
        return Err(Error::BadLength {
            what: "rope frequency factors (n_rot / 2)",
            expected: params.n_rot / 2,
            found: factors.len(),
        });
    }
    rope_impl(x, t, pos0, head_dim, params, Some(factors))
}

fn rope_impl(
    x: &mut [f32],
    t: usize,
    pos0: usize,
    head_dim: usize,
    params: RopeParams,
    factors: Option<&[f32]>,
) -> Result<(), Error> {
    let n_rot = params.n_rot;
    if head_dim == 0 || !n_rot.is_multiple_of(2) || n_rot > head_dim {
        return Err(Error::BadShape {
            what: "rope",
            detail: "need 0 < head_dim, n_rot even and n_rot <= head_dim",
        });
    }
    let width = x.len().checked_div(t).unwrap_or(0);
    if x.len() != t * width || !width.is_multiple_of(head_dim) {
        return Err(Error::BadLength {
            what: "rope x (t rows of whole heads)",
            expected: t * (width / head_dim).max(1) * head_dim,
            found: x.len(),
        });
    }
    if x.is_empty() {
        return Ok(());
    }
    let half = n_rot / 2;
    let theta_scale = params.freq_base.powf(-2.0 / n_rot as f32);
    x.par_chunks_mut(width).enumerate().for_each_init(
        || vec![0.0f32; n_rot],
        |cache, (p, row)| {
            let mut theta = (pos0 + p) as f32;
            for i in 0..half {
                let th = match factors {
                    Some(f) => theta / f[i] * params.freq_scale,
                    None => theta * params.freq_scale,
                };
                cache[2 * i] = th.cos();
                cache[2 * i + 1] = th.sin();
                theta *= theta_scale;
            }
            for head in row.chunks_exact_mut(head_dim) {
                for i in 0..half {
                    let (c, s) = (cache[2 * i], cache[2 * i + 1]);
                    let (a, b) = match params.mode {
                        RopeMode::Normal => (2 * i, 2 * i + 1),
                        RopeMode::Neox => (i, i + half),
                    };
                    let (x0, x1) = (head[a], head[b]);
                    head[a] = x0 * c - x1 * s;
                    head[b] = x0 * s + x1 * c;
                }
            }
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests;
