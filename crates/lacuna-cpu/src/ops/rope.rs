//! Rotary position embeddings as ggml computes them (`ggml_rope_ext` without YaRN
//! scaling: `ext_factor = 0`, `freq_scale = 1`, `attn_factor = 1`): the angle of pair `i`
//! is `pos * theta_scale^i` built by repeated f32 multiplication, with
//! `theta_scale = freq_base^(-2 / n_rot)`.

use crate::Error;

/// Normal (GPT-J style) RoPE, in place: rotates adjacent pairs `(x[2i], x[2i+1])` of the
/// first `n_rot` dimensions of every head. `x` is `[T][n_head][head_dim]` with
/// `T = positions.len()`.
pub fn rope_normal(
    x: &mut [f32],
    positions: &[i32],
    head_dim: usize,
    n_rot: usize,
    freq_base: f32,
) -> Result<(), Error> {
    rope(x, positions, head_dim, n_rot, freq_base, false)
}

/// NeoX RoPE, in place: rotates pairs `(x[i], x[i + n_rot/2])` (LLaMA/LLaDA in ggml).
/// Same layout as [`rope_normal`].
pub fn rope_neox(
    x: &mut [f32],
    positions: &[i32],
    head_dim: usize,
    n_rot: usize,
    freq_base: f32,
) -> Result<(), Error> {
    rope(x, positions, head_dim, n_rot, freq_base, true)
}

fn rope(
    x: &mut [f32],
    positions: &[i32],
    head_dim: usize,
    n_rot: usize,
    freq_base: f32,
    neox: bool,
) -> Result<(), Error> {
    if head_dim == 0 || !n_rot.is_multiple_of(2) || n_rot > head_dim {
        return Err(Error::BadShape {
            what: "rope",
            detail: "need 0 < head_dim, n_rot even and n_rot <= head_dim",
        });
    }
    let t = positions.len();
    if t == 0 || !x.len().is_multiple_of(t * head_dim) {
        return Err(Error::BadLength {
            what: "rope x ([T][n_head][head_dim])",
            expected: t * head_dim * (x.len() / (t * head_dim).max(1)).max(1),
            found: x.len(),
        });
    }
    let row = x.len() / t;
    let theta_scale = freq_base.powf(-2.0 / n_rot as f32);
    let mut cache = vec![(0.0f32, 0.0f32); n_rot / 2];
    for (xr, &pos) in x.chunks_exact_mut(row).zip(positions) {
        let mut theta = pos as f32;
        for c in cache.iter_mut() {
            *c = (theta.cos(), theta.sin());
            theta *= theta_scale;
        }
        for head in xr.chunks_exact_mut(head_dim) {
            for (i, &(cos, sin)) in cache.iter().enumerate() {
                let (a, b) = if neox {
                    (i, i + n_rot / 2)
                } else {
                    (2 * i, 2 * i + 1)
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * cos - x1 * sin;
                head[b] = x0 * sin + x1 * cos;
            }
        }
    }
    Ok(())
}
