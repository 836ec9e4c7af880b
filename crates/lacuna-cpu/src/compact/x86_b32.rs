//! x86 kernels of the compact layout for the 32-weight formats (Q8_0, Q4_0, Q5_0, IQ4_NL,
//! MXFP4), eight weight rows at a time.
//!
//! Each row's block is unpacked to 32 signed weight bytes in element order (one ymm), and
//! the eight rows are transposed in registers to the repacked layout's order: register `j`
//! holds weights `4j..4j + 4` of the eight rows, so a broadcast dword of activations against
//! it gives the eight rows' partial sums in eight lanes, with no horizontal sum. The cost of
//! the transpose (24 shuffles a block) is paid once for every token of the call.
//!
//! AVX-512 VNNI multiplies the biased activations (`u8 = q + 128`) by the signed weights
//! (`vpdpbusd`) and takes away `128 * sum(w)`, itself one `vpdpbusd` a group per block;
//! AVX2 uses the sign trick (`|w|` times `sign(x, w)`, `vpmaddubsw`), exact because the
//! activations' quantizer never writes -128. The block's exact integer sum is folded as
//! `acc + (d_w * d_x) * isum`, the portable kernel's order, so every path gives the same bits.

use std::arch::x86_64::*;

use lacuna_quant::{KVALUES_IQ4NL, KVALUES_MXFP4, e8m0_to_fp32_half};

use super::CompactQuant;
use super::x86::{dword, f16x8, fold, transpose8};
use crate::acts::Acts;

/// How a 32-weight format's block is read.
pub(crate) trait Block32 {
    /// Bytes per block.
    const SIZE: usize;

    /// The block's 32 weights at `blk` as signed bytes, in element order.
    ///
    /// # Safety
    /// AVX2 available; `blk` points at a whole block.
    unsafe fn weights(blk: *const u8) -> __m256i;

    /// The scales of the blocks at `bytes[r * stride]`, `r` in `0..8`.
    ///
    /// # Safety
    /// AVX2 and F16C available.
    #[inline(always)]
    unsafe fn scales(bytes: &[u8], stride: usize) -> __m256 {
        // SAFETY: the caller's features.
        unsafe { f16x8(bytes, 0, stride, 0) }
    }
}

/// The 16 bytes of nibbles at `qs` as 32 values 0..=15: element `j` the low nibble of byte
/// `j`, element `j + 16` its high nibble (ggml's order for every 4-bit 32-weight format).
///
/// # Safety
/// AVX2 available; 16 bytes readable at `qs`.
#[inline(always)]
unsafe fn nibbles(qs: *const u8) -> __m256i {
    // SAFETY: a 16-byte load the caller vouches for.
    let q = unsafe { _mm_loadu_si128(qs.cast()) };
    // SAFETY: AVX2 by the contract.
    unsafe {
        let m = _mm_set1_epi8(0x0F);
        _mm256_set_m128i(
            _mm_and_si128(_mm_srli_epi16::<4>(q), m),
            _mm_and_si128(q, m),
        )
    }
}

/// A 16-entry table of signed levels in both 128-bit lanes, for `vpshufb`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn levels(table: &[i8; 16]) -> __m256i {
    // SAFETY: a 16-byte load of a 16-element array; AVX2 by the contract.
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast())) }
}

/// `block_q8_0`: `d: f16, qs: [i8; 32]`.
pub(crate) struct Q8_0;
impl Block32 for Q8_0 {
    const SIZE: usize = 34;
    #[inline(always)]
    unsafe fn weights(blk: *const u8) -> __m256i {
        // SAFETY: 32 bytes at 2 inside the 34-byte block.
        unsafe { _mm256_loadu_si256(blk.add(2).cast()) }
    }
}

/// `block_q4_0`: `d: f16, qs: [u8; 16]`, weights `nibble - 8`.
pub(crate) struct Q4_0;
impl Block32 for Q4_0 {
    const SIZE: usize = 18;
    #[inline(always)]
    unsafe fn weights(blk: *const u8) -> __m256i {
        // SAFETY: AVX2 by the contract; the 16 nibble bytes at 2 inside the 18-byte block.
        unsafe { _mm256_sub_epi8(nibbles(blk.add(2)), _mm256_set1_epi8(8)) }
    }
}

/// `block_q5_0`: `d: f16, qh: u32, qs: [u8; 16]`, weights `(nibble | bit << 4) - 16`, bit
/// `j` of `qh` the fifth bit of element `j`.
pub(crate) struct Q5_0;
impl Block32 for Q5_0 {
    const SIZE: usize = 22;
    #[inline(always)]
    unsafe fn weights(blk: *const u8) -> __m256i {
        // SAFETY: AVX2 by the contract; qh at 2 (4 bytes) and qs at 6 (16) inside the
        // 22-byte block.
        unsafe {
            let (qh, lo) = (
                blk.add(2).cast::<i32>().read_unaligned(),
                nibbles(blk.add(6)),
            );
            // Byte i gets byte i / 8 of qh, then keeps bit i % 8 of it.
            let spread = _mm256_shuffle_epi8(
                _mm256_set1_epi32(qh),
                _mm256_setr_epi64x(
                    0,
                    0x0101_0101_0101_0101,
                    0x0202_0202_0202_0202,
                    0x0303_0303_0303_0303,
                ),
            );
            let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
            let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
            let hi = _mm256_and_si256(set, _mm256_set1_epi8(0x10));
            _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(16))
        }
    }
}

/// `block_iq4_nl`: `d: f16, qs: [u8; 16]`, weights `kvalues_iq4nl[nibble]`.
pub(crate) struct Iq4Nl;
impl Block32 for Iq4Nl {
    const SIZE: usize = 18;
    #[inline(always)]
    unsafe fn weights(blk: *const u8) -> __m256i {
        // SAFETY: AVX2 by the contract; the 16 nibble bytes at 2 inside the 18-byte block.
        unsafe { _mm256_shuffle_epi8(levels(&KVALUES_IQ4NL), nibbles(blk.add(2))) }
    }
}

/// `block_mxfp4`: `e: u8, qs: [u8; 16]`, weights `kvalues_mxfp4[nibble]`, scale
/// `2^(e - 128)` as ggml widens it.
pub(crate) struct Mxfp4;
impl Block32 for Mxfp4 {
    const SIZE: usize = 17;
    #[inline(always)]
    unsafe fn weights(blk: *const u8) -> __m256i {
        // SAFETY: AVX2 by the contract; the 16 nibble bytes at 1 inside the 17-byte block.
        unsafe { _mm256_shuffle_epi8(levels(&KVALUES_MXFP4), nibbles(blk.add(1))) }
    }
    #[inline(always)]
    unsafe fn scales(bytes: &[u8], stride: usize) -> __m256 {
        let d: [f32; 8] = std::array::from_fn(|r| e8m0_to_fp32_half(bytes[r * stride]));
        // SAFETY: an 8-lane load of an 8-element array.
        unsafe { _mm256_loadu_ps(d.as_ptr()) }
    }
}

/// The eight rows' blocks (at `bytes[r * stride]`) transposed: lane `r` of register `j` holds
/// weights `4j..4j + 4` of row `r`.
///
/// # Safety
/// AVX2 available; eight whole blocks at those offsets.
#[inline(always)]
pub(super) unsafe fn transposed<B: Block32>(bytes: &[u8], stride: usize) -> [__m256i; 8] {
    debug_assert!(bytes.len() >= 7 * stride + B::SIZE);
    // SAFETY: AVX2 by the contract.
    let mut r = [unsafe { _mm256_setzero_si256() }; 8];
    for (i, r) in r.iter_mut().enumerate() {
        // SAFETY: row i's block lies at i * stride, inside `bytes` (the caller's and
        // asserted); AVX2 by the contract.
        *r = unsafe { B::weights(bytes.as_ptr().add(i * stride)) };
    }
    // SAFETY: AVX2 by the contract.
    unsafe { transpose8(r) }
}

/// The kernels' body: `VNNI` multiplies the biased activations (`a.q`) and takes away
/// `128 * sum(w)`; without, AVX2's sign trick on the signed ones (`xs`).
///
/// # Safety
/// AVX2 and F16C available, and AVX-512 VL/VNNI with `VNNI`; rows `row0..row0 + 8` exist;
/// `acc` holds 8 slots per token of `a`; `xs` holds the signed activations without `VNNI`.
#[inline(always)]
unsafe fn body<B: Block32, const VNNI: bool>(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
) {
    let (k, rb) = (w.k, w.row_bytes);
    let nblk = k / 32;
    let t_all = acc.len() / 8;
    acc.fill(0.0);
    // SAFETY: the features are the contract's; every block read is one of the eight rows'
    // (`bytes` spans them); the activations hold 32 bytes a block per token.
    unsafe {
        let (bias, ones) = (_mm256_set1_epi8(-128), _mm256_set1_epi16(1));
        for b in 0..nblk {
            let base = row0 * rb + b * B::SIZE;
            let bytes = &w.bytes[base..base + 7 * rb + B::SIZE];
            let (dv, g) = (B::scales(bytes, rb), transposed::<B>(bytes, rb));
            // VNNI: 128 * sum(w) per row, what the activations' bias adds. AVX2: |w|.
            let mut corr = _mm256_setzero_si256();
            let mut mag = g;
            for (m, &gj) in mag.iter_mut().zip(&g) {
                if VNNI {
                    corr = _mm256_dpbusd_epi32(corr, bias, gj);
                } else {
                    *m = _mm256_abs_epi8(gj);
                }
            }
            for t in 0..t_all {
                let isum = if VNNI {
                    let x = &a.q[t * k + b * 32..][..32];
                    // Two chains, so that the dot products of one token overlap.
                    let (mut s0, mut s1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                    for j in (0..8).step_by(2) {
                        s0 = _mm256_dpbusd_epi32(s0, dword(x, j), g[j]);
                        s1 = _mm256_dpbusd_epi32(s1, dword(x, j + 1), g[j + 1]);
                    }
                    _mm256_sub_epi32(_mm256_add_epi32(s0, s1), corr)
                } else {
                    let x = &xs[t * k + b * 32..][..32];
                    let mut s = _mm256_setzero_si256();
                    for j in 0..8 {
                        // |w| <= 128 times |x| <= 127, two a lane: below 2^15, no saturation.
                        let p = _mm256_maddubs_epi16(mag[j], _mm256_sign_epi8(dword(x, j), g[j]));
                        s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
                    }
                    s
                };
                fold(acc, t * 8, dv, a.d[t * nblk + b], isum, None);
            }
        }
    }
}

/// Eight consecutive rows of format `B` against every token, AVX-512 VNNI on ymm registers:
/// `acc[t * 8 + r]`, from the biased activations (`a.q`).
///
/// # Safety
/// AVX-512 F/BW/VL/VNNI and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots
/// per token of `a`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")]
pub(crate) unsafe fn rows8_vnni<B: Block32>(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    _ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, with VNNI.
    unsafe { body::<B, true>(w, row0, a, xs, acc) }
}

/// [`rows8_vnni`] on AVX2, from the signed activations `xs` (the sign trick).
///
/// # Safety
/// AVX2 and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots per token of
/// `a`; `xs` holds the signed activations.
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn rows8_avx2<B: Block32>(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    _ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, without VNNI.
    unsafe { body::<B, false>(w, row0, a, xs, acc) }
}
