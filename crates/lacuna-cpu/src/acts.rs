//! Activation quantization, once per matmul, to the int8 format the weight type pairs with
//! in ggml: Q8_K for the 256-element formats, Q8_0 (Q8_1 for Q4_1/Q5_1) for the 32-element
//! ones, and f16/bf16 rounding for F16/BF16
//! weights (ggml's `vec_dot_type`). Parity with llama.cpp depends on these bits.
//!
//! Quantized activations are stored biased, `u8 = q + 128`, so that the VNNI microkernels
//! multiply unsigned activations by signed weights (`vpdpbusd`); the bias is removed with a
//! per-row correction computed at packing time.

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
mod q8_0_x86;
#[cfg(target_arch = "x86_64")]
mod q8k_x86;

/// ggml's `nearest_int`: round half to even (exact for |x| < 2^22, always true here).
fn nearest_int(x: f32) -> i32 {
    x.round_ties_even() as i32
}

/// ggml's `quantize_row_q8_K_ref` for one 256-element block: returns `d` and writes the
/// biased quants and the 8 sums over 32 elements.
pub(crate) fn quantize_q8k_block(x: &[f32], q: &mut [u8], sums32: &mut [i16]) -> f32 {
    let (mut max, mut amax) = (0.0f32, 0.0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        q.fill(128);
        sums32.fill(0);
        return 0.0;
    }
    let iscale = -127.0f32 / max;
    for (o, &v) in q.iter_mut().zip(x) {
        let i = nearest_int(iscale * v).min(127);
        *o = (i + 128) as u8;
    }
    for (s, c) in sums32.iter_mut().zip(q.chunks_exact(32)) {
        *s = c.iter().map(|&u| i16::from(u) - 128).sum();
    }
    1.0 / iscale
}

/// [`quantize_q8k_block`] with the fastest implementation this CPU has (all bit-identical).
fn quantize_q8k(x: &[f32], q: &mut [u8], sums32: &mut [i16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
    {
        // SAFETY: the features were just detected; the block sizes are the caller's
        // (asserted inside).
        return unsafe { q8k_x86::quantize_q8k_block(x, q, sums32) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: as above.
        return unsafe { q8k_x86::quantize_q8k_block_avx2(x, q, sums32) };
    }
    quantize_q8k_block(x, q, sums32)
}

/// ggml's x86 `quantize_row_q8_0` (the AVX2 variant llama.cpp runs on x86: `id = 127/amax`,
/// round half to even) for one 32-element block: returns `d` as the f16 ggml stores, widened.
pub(crate) fn quantize_q8_0_block(x: &[f32], q: &mut [u8]) -> f32 {
    quantize_q8_0_amax(x, q).0
}

/// [`quantize_q8_0_block`], also returning the block's `amax`, with the fastest
/// implementation this CPU has (all bit-identical).
fn quantize_q8_0_amax(x: &[f32], q: &mut [u8]) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
    {
        // SAFETY: the features were just detected; the block sizes are the caller's
        // (asserted inside).
        return unsafe { q8_0_x86::quantize_q8_0_block(x, q) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: as above.
        return unsafe { q8_0_x86::quantize_q8_0_block_avx2(x, q) };
    }
    quantize_q8_0_scalar(x, q)
}

/// A Q8_0 block's scale `d` (as the f16 ggml stores, widened) and the `127 / amax` its
/// quants are rounded from (0 for an all-zero block), given its `amax`: shared by the scalar
/// quantizer and its x86 twins.
fn q8_0_scales(amax: f32) -> (f32, f32) {
    let d = half::f16::from_f32(amax / 127.0).to_f32();
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    (d, id)
}

/// The portable [`quantize_q8_0_amax`]: the reference of its twins.
pub(crate) fn quantize_q8_0_scalar(x: &[f32], q: &mut [u8]) -> (f32, f32) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let (d, id) = q8_0_scales(amax);
    for (o, &v) in q.iter_mut().zip(x) {
        let i = nearest_int(v * id).clamp(-128, 127);
        *o = (i + 128) as u8;
    }
    (d, amax)
}

/// ggml's x86 `quantize_row_q8_1` for one 32-element block: [`quantize_q8_0_block`] plus
/// `s = f16(d * sum(q))` with the unrounded `d = amax / 127`; returns `(d, s)` widened.
pub(crate) fn quantize_q8_1_block(x: &[f32], q: &mut [u8]) -> (f32, f32) {
    let (d, amax) = quantize_q8_0_amax(x, q);
    let sum: i32 = q.iter().map(|&u| i32::from(u) - 128).sum();
    let s = half::f16::from_f32(amax / 127.0 * sum as f32).to_f32();
    (d, s)
}

/// How activations are prepared for a weight type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActKind {
    /// Q8_K: 256-element blocks with f32 scale and sums per 32.
    Q8K,
    /// Q8_K plus `g`: `d * sum(q)` per 16 elements (Q2_K's float mins).
    Q8KSums16,
    /// Q8_0: 32-element blocks with f16 scale.
    Q8_0,
    /// Q8_1: Q8_0 plus `g`: ggml's `s = f16(d * sum(q))` per block (Q4_1/Q5_1's offsets).
    Q8_1,
    /// Plain f32 activations, optionally rounded through f16 or bf16.
    Float(FloatRound),
}

/// Rounding applied to f32 activations before a float GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatRound {
    None,
    F16,
    Bf16,
}

/// Quantized or rounded activations for one matmul (reused between matmuls).
#[derive(Debug, Default)]
pub(crate) struct Acts {
    /// Biased quants, `[t][k]`.
    pub(crate) q: Vec<u8>,
    /// Scale per block, `[t][k / block]`.
    pub(crate) d: Vec<f32>,
    /// Sums of the (unbiased) quants per 32 elements, `[t][k / 32]` (Q8_K only).
    pub(crate) sums: Vec<i16>,
    /// Rounded float activations, `[t][k]` (float weights only).
    pub(crate) f: Vec<f32>,
    /// Scaled sums of the quants per group, `[t][k / group]`: the activations of the float
    /// offset GEMM (Q8_KSums16 / Q8_1 only).
    pub(crate) g: Vec<f32>,
    /// The quants again, laid out for AMX A tiles: `[k / width][tpad][width]`, biased (or
    /// signed for `tdpbssd`), rows from `t` to `tpad` zero. Filled by [`Acts::prepare_tiles`]
    /// only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) tiles: Vec<u8>,
    /// Token rows of `tiles` (a multiple of the AMX token step), 0 when not prepared.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) tpad: usize,
    /// The quants unbiased again, `[t][k]` two's-complement bytes (`u8 ^ 0x80`), for the
    /// kernels with signed activations (aarch64, compact). Filled by
    /// [`Acts::prepare_signed`] only.
    pub(crate) signed: Vec<u8>,
}

impl Acts {
    /// Fills `self` from `x` (`t` rows of `k`), growing buffers only when needed.
    pub(crate) fn prepare(&mut self, kind: ActKind, x: &[f32], t: usize, k: usize) {
        match kind {
            ActKind::Q8K | ActKind::Q8KSums16 => {
                resize(&mut self.q, t * k);
                resize(&mut self.d, t * k / 256);
                resize(&mut self.sums, t * k / 32);
                self.q[..t * k]
                    .par_chunks_mut(256)
                    .zip(self.d[..t * k / 256].par_iter_mut())
                    .zip(self.sums[..t * k / 32].par_chunks_mut(8))
                    .zip(x.par_chunks(256))
                    .with_min_len(64)
                    .for_each(|(((q, d), s), x)| *d = quantize_q8k(x, q, s));
                if kind == ActKind::Q8KSums16 {
                    resize(&mut self.g, t * k / 16);
                    self.g[..t * k / 16]
                        .par_chunks_mut(16)
                        .zip(self.q[..t * k].par_chunks(256))
                        .zip(self.d[..t * k / 256].par_iter())
                        .with_min_len(64)
                        .for_each(|((g, q), &d)| {
                            for (o, c) in g.iter_mut().zip(q.chunks_exact(16)) {
                                let sum: i32 = c.iter().map(|&u| i32::from(u) - 128).sum();
                                *o = d * sum as f32;
                            }
                        });
                }
            }
            ActKind::Q8_0 => {
                resize(&mut self.q, t * k);
                resize(&mut self.d, t * k / 32);
                self.q[..t * k]
                    .par_chunks_mut(32)
                    .zip(self.d[..t * k / 32].par_iter_mut())
                    .zip(x.par_chunks(32))
                    .with_min_len(256)
                    .for_each(|((q, d), x)| *d = quantize_q8_0_block(x, q));
            }
            ActKind::Q8_1 => {
                resize(&mut self.q, t * k);
                resize(&mut self.d, t * k / 32);
                resize(&mut self.g, t * k / 32);
                self.q[..t * k]
                    .par_chunks_mut(32)
                    .zip(self.d[..t * k / 32].par_iter_mut())
                    .zip(self.g[..t * k / 32].par_iter_mut())
                    .zip(x.par_chunks(32))
                    .with_min_len(256)
                    .for_each(|(((q, d), s), x)| (*d, *s) = quantize_q8_1_block(x, q));
            }
            ActKind::Float(round) => {
                resize(&mut self.f, t * k);
                let f = &mut self.f[..t * k];
                match round {
                    FloatRound::None => f.copy_from_slice(x),
                    FloatRound::F16 => {
                        for (o, &v) in f.iter_mut().zip(x) {
                            *o = half::f16::from_f32(v).to_f32();
                        }
                    }
                    FloatRound::Bf16 => {
                        for (o, &v) in f.iter_mut().zip(x) {
                            *o = half::bf16::from_f32(v).to_f32();
                        }
                    }
                }
            }
        }
    }
}

impl Acts {
    /// Lays `q` (prepared for `t` rows of `k`, `k` a multiple of `width`) out as AMX A tiles
    /// in `tiles`, `[k / width][tpad][width]`, padding the token rows to a multiple of
    /// `step`. A tile's rows are then `width` bytes apart: rows `k` bytes apart, as in `q`,
    /// fall into one L1 set when `k` is a multiple of 4 KiB and evict each other.
    ///
    /// `signed`: the quants unbiased again (two's complement, `u8 ^ 0x80`) for `tdpbssd`,
    /// padding rows 0; else biased, padding rows 128 (zero either way).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn prepare_tiles(
        &mut self,
        t: usize,
        k: usize,
        step: usize,
        width: usize,
        signed: bool,
    ) {
        let kb = width;
        let flip = if signed { 0x80 } else { 0 };
        let tpad = t.next_multiple_of(step);
        resize(&mut self.tiles, tpad * k);
        let q = &self.q[..t * k];
        self.tiles[..tpad * k]
            .par_chunks_mut(tpad * kb)
            .enumerate()
            .with_min_len((4096 / kb).max(1))
            .for_each(|(c, dst)| {
                for (row, d) in dst.chunks_exact_mut(kb).enumerate() {
                    if row < t {
                        for (o, &u) in d.iter_mut().zip(&q[row * k + c * kb..][..kb]) {
                            *o = u ^ flip;
                        }
                    } else {
                        d.fill(128 ^ flip);
                    }
                }
            });
        self.tpad = tpad;
    }
}

impl Acts {
    /// Pads `d` (prepared for `t` rows of `nblk` blocks) with zero scales to a multiple of
    /// `step` rows, for a kernel that folds whole token tiles (AMX, the 32-element formats).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn pad_scales(&mut self, t: usize, nblk: usize, step: usize) {
        let tpad = t.next_multiple_of(step);
        resize(&mut self.d, tpad * nblk);
        self.d[t * nblk..tpad * nblk].fill(0.0);
    }

    /// Fills `signed` from `q` (prepared for `t` rows of `k`).
    pub(crate) fn prepare_signed(&mut self, t: usize, k: usize) {
        resize(&mut self.signed, t * k);
        self.signed[..t * k]
            .par_chunks_mut(4096)
            .zip(self.q[..t * k].par_chunks(4096))
            .for_each(|(s, q)| {
                for (o, &u) in s.iter_mut().zip(q) {
                    *o = u ^ 0x80;
                }
            });
    }
}

fn resize<T: Default + Clone>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        v.resize(n, T::default());
    }
}

#[cfg(test)]
mod tests;
