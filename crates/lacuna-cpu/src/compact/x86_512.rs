//! AVX-512 VNNI row kernels of the compact layout: `vpdpbusd` does the byte products and
//! their four-way sums in one instruction. Each i32 lane of its result sums four products of
//! one sub-block and stays below 2^15 in magnitude, so `vpmaddwd` against `[scale, 0]` pairs
//! multiplies it by its sub-block scale exactly; the float folding is the AVX2 kernels'. Same
//! bits as every other path (tested).

use std::arch::x86_64::*;

use super::CompactQuant;
use super::x86::{f16x8, fold8, min_dot, scales_mins_utmp};
use crate::acts::Acts;

/// Eight consecutive Q4_K rows against every token (see `x86::q4k_rows8`).
///
/// # Safety
/// AVX-512 F/BW/VNNI and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots
/// and `ints` 16 per token of `a`; `xs` holds the signed activations.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,f16c")]
pub(crate) unsafe fn q4k_rows8(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    let (k, rb) = (w.k, w.row_bytes);
    let nblk = k / 256;
    let t_all = acc.len() / 8;
    acc.fill(0.0);
    let low = _mm512_set1_epi8(0x0F);
    // Shift the upper 256 bits (the high nibbles) by 4, the lower by 0.
    let shifts = _mm512_setr_epi64(
        0,
        0,
        0,
        0,
        0x0004_0004_0004_0004,
        0x0004_0004_0004_0004,
        0x0004_0004_0004_0004,
        0x0004_0004_0004_0004,
    );
    for b in 0..nblk {
        let base = row0 * rb + b * 144;
        let bytes = &w.bytes[base..base + 7 * rb + 144];
        // SAFETY: this function enables AVX2 and F16C.
        let (dv, dminv) = unsafe { (f16x8(bytes, 0, rb, 0), f16x8(bytes, 0, rb, 2)) };
        for r in 0..8 {
            let blk = &bytes[r * rb..r * rb + 144];
            let (sc, m) = scales_mins_utmp(&blk[4..16]);
            // Per 64-weight chunk c: lanes 0-7 scale sc[2c], lanes 8-15 sc[2c + 1], as
            // [scale, 0] i16 pairs.
            let mut scv = [_mm512_setzero_si512(); 4];
            for (c, v) in scv.iter_mut().enumerate() {
                let (s0, s1) = (i32::from(sc[2 * c]), i32::from(sc[2 * c + 1]));
                *v = _mm512_setr_epi32(
                    s0, s0, s0, s0, s0, s0, s0, s0, s1, s1, s1, s1, s1, s1, s1, s1,
                );
            }
            // SAFETY: an 8-byte load of an 8-element array.
            let m16 = unsafe { _mm_cvtepu8_epi16(_mm_loadl_epi64(m.as_ptr().cast())) };
            // The weights of the four chunks, unpacked once per row and block.
            let mut wq = [_mm512_setzero_si512(); 4];
            for (c, v) in wq.iter_mut().enumerate() {
                // SAFETY: 32 bytes at 16 + 32c within the 144-byte block.
                let raw = unsafe {
                    _mm512_broadcast_i64x4(_mm256_loadu_si256(blk.as_ptr().add(16 + 32 * c).cast()))
                };
                *v = _mm512_and_si512(_mm512_srlv_epi16(raw, shifts), low);
            }
            for t in 0..t_all {
                let x = &xs[t * k + b * 256..][..256];
                let mut s32 = _mm512_setzero_si512();
                for c in 0..4 {
                    // SAFETY: 64 bytes at 64c within the token's 256.
                    let xc = unsafe { _mm512_loadu_si512(x.as_ptr().add(64 * c).cast()) };
                    let d4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[c], xc);
                    s32 = _mm512_add_epi32(s32, _mm512_madd_epi16(d4, scv[c]));
                }
                ints[t * 16 + r] = _mm512_reduce_add_epi32(s32);
                ints[t * 16 + 8 + r] = min_dot(m16, &a.sums[(t * nblk + b) * 8..]);
            }
        } // SAFETY: AVX2 is available (implied by AVX-512) (this function's contract).
        unsafe { fold8(acc, ints, a, nblk, b, dv, Some(dminv)) };
    }
}

/// Eight consecutive Q6_K rows against every token (see `x86::q6k_rows8`).
///
/// # Safety
/// As [`q4k_rows8`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,f16c")]
pub(crate) unsafe fn q6k_rows8(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    let (k, rb) = (w.k, w.row_bytes);
    let nblk = k / 256;
    let t_all = acc.len() / 8;
    acc.fill(0.0);
    let (m4, m3) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x03));
    let c32 = _mm512_set1_epi8(32);
    // qh shifted by 0 (lower 256 bits) and 2 (upper) for groups 0|1, by 4 and 6 for 2|3.
    let sh01 = _mm512_setr_epi64(
        0,
        0,
        0,
        0,
        0x0002_0002_0002_0002,
        0x0002_0002_0002_0002,
        0x0002_0002_0002_0002,
        0x0002_0002_0002_0002,
    );
    let sh23 = _mm512_add_epi16(sh01, _mm512_set1_epi16(4));
    for b in 0..nblk {
        let base = row0 * rb + b * 210;
        let bytes = &w.bytes[base..base + 7 * rb + 210];
        // SAFETY: this function enables AVX2 and F16C.
        let dv = unsafe { f16x8(bytes, 0, rb, 208) };
        for r in 0..8 {
            let blk = &bytes[r * rb..r * rb + 210];
            // SAFETY: 16 bytes at 192 within the 210-byte block.
            let sc = unsafe { _mm_loadu_si128(blk.as_ptr().add(192).cast()) };
            // Per 64-element chunk j (sub-blocks 4j..4j + 4): each scale for four lanes, as
            // zero-extended i16 (the `[scale, 0]` pairs of the exact multiply).
            let mut scv = [_mm512_setzero_si512(); 4];
            for (j, v) in scv.iter_mut().enumerate() {
                let s = (4 * j) as i8;
                let pick = _mm_setr_epi8(
                    s,
                    s,
                    s,
                    s,
                    s + 1,
                    s + 1,
                    s + 1,
                    s + 1,
                    s + 2,
                    s + 2,
                    s + 2,
                    s + 2,
                    s + 3,
                    s + 3,
                    s + 3,
                    s + 3,
                );
                let s16 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, pick));
                *v = _mm512_cvtepu16_epi32(s16);
            }
            // The weights of the four chunks, unpacked once per row and block.
            let mut wq = [_mm512_setzero_si512(); 4];
            for n in 0..2 {
                // SAFETY: ql at 64n (64 bytes), qh at 128 + 32n (32 bytes), inside 210.
                let (ql, qh) = unsafe {
                    (
                        _mm512_loadu_si512(blk.as_ptr().add(64 * n).cast()),
                        _mm512_broadcast_i64x4(_mm256_loadu_si256(
                            blk.as_ptr().add(128 + 32 * n).cast(),
                        )),
                    )
                };
                let h01 = _mm512_slli_epi16::<4>(_mm512_and_si512(_mm512_srlv_epi16(qh, sh01), m3));
                let h23 = _mm512_slli_epi16::<4>(_mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m3));
                wq[2 * n] = _mm512_or_si512(_mm512_and_si512(ql, m4), h01);
                wq[2 * n + 1] =
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16::<4>(ql), m4), h23);
            }
            for t in 0..t_all {
                let x = &xs[t * k + b * 256..][..256];
                let mut s32 = _mm512_setzero_si512();
                for j in 0..4 {
                    // SAFETY: 64 bytes at 64j within the token's 256.
                    let xj = unsafe { _mm512_loadu_si512(x.as_ptr().add(64 * j).cast()) };
                    // sum sc * (q6 - 32) * x: four-product lane sums below 2^15, exact.
                    let p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[j], xj);
                    let o = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c32, xj);
                    s32 = _mm512_add_epi32(s32, _mm512_madd_epi16(p, scv[j]));
                    s32 = _mm512_sub_epi32(s32, _mm512_madd_epi16(o, scv[j]));
                }
                ints[t * 16 + r] = _mm512_reduce_add_epi32(s32);
            }
        }
        // SAFETY: AVX2 is available (implied by AVX-512).
        unsafe { fold8(acc, ints, a, nblk, b, dv, None) };
    }
}
