//! x86 kernels of the compact layout for Q4_K, eight weight rows at a time, rows in lanes.
//!
//! For each 32-weight sub-block the eight rows' nibbles are unpacked (one ymm a row) and
//! transposed in registers ([`transpose8`]) so that a broadcast dword of a token's signed
//! Q8_K activations against register `j` gives the eight rows' partial sums in eight lanes:
//! no horizontal sums, and the unpacking is paid once for every token of the call.
//!
//! The sub-block's dot is exact in each lane. AVX-512 VNNI takes it with `vpdpbusd` (the
//! weights, 0..=15, are the unsigned operand) and multiplies it by the rows' scales
//! (`vpmulld`); AVX2 adds the eight `vpmaddubsw` results in i16 (each lane sums 16 products
//! of at most 15 * 128: below 2^15) and multiplies by the scales with `vpmaddwd`. The mins
//! term is one `vpmaddwd` per two sub-blocks against the activations' sums. The block's
//! integer sums are folded as `acc + (d * d_x) * isum - (dmin * d_x) * msum`, the portable
//! kernel's order, so every path gives the same bits.

use std::arch::x86_64::*;

use super::CompactQuant;
use super::x86::{dword, f16x8, fold, transpose8};
use crate::acts::Acts;

/// Block b's integer scales of the eight rows (`bytes[r * stride]` each a 144-byte block),
/// one register a sub-block with the rows in lanes, and their mins as i16 pairs, one register
/// per two sub-blocks (`min[2p]` low, `min[2p + 1]` high): ggml's `utmp` unpacking done for
/// the eight rows at once.
///
/// # Safety
/// AVX2 available; eight whole blocks at those offsets.
#[inline(always)]
pub(super) unsafe fn scales_mins(bytes: &[u8], stride: usize) -> ([__m256i; 8], [__m256i; 4]) {
    debug_assert!(bytes.len() >= 7 * stride + 144);
    // SAFETY: AVX2 by the contract; 16-byte loads at the start of each row's block.
    unsafe {
        let mut r = [_mm256_setzero_si256(); 8];
        for (i, r) in r.iter_mut().enumerate() {
            *r = _mm256_castsi128_si256(_mm_loadu_si128(bytes.as_ptr().add(i * stride).cast()));
        }
        // Dwords 1-3 of each block (the 12 scale bytes), rows in lanes; the transposed
        // registers 0-3 read only the loaded low halves.
        let g = transpose8(r);
        let (u0, u1, u2) = (g[1], g[2], g[3]);
        let k1 = _mm256_set1_epi32(0x3f3f_3f3f);
        let k2 = _mm256_set1_epi32(0x0f0f_0f0f);
        let k3 = _mm256_set1_epi32(0x0303_0303);
        let hi =
            |u: __m256i| _mm256_slli_epi32::<4>(_mm256_and_si256(_mm256_srli_epi32::<6>(u), k3));
        let sc_lo = _mm256_and_si256(u0, k1);
        let sc_hi = _mm256_or_si256(_mm256_and_si256(u2, k2), hi(u0));
        let m_lo = _mm256_and_si256(u1, k1);
        let m_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32::<4>(u2), k2), hi(u1));
        let byte = _mm256_set1_epi32(0xFF);
        let sc = [
            _mm256_and_si256(sc_lo, byte),
            _mm256_and_si256(_mm256_srli_epi32::<8>(sc_lo), byte),
            _mm256_and_si256(_mm256_srli_epi32::<16>(sc_lo), byte),
            _mm256_srli_epi32::<24>(sc_lo),
            _mm256_and_si256(sc_hi, byte),
            _mm256_and_si256(_mm256_srli_epi32::<8>(sc_hi), byte),
            _mm256_and_si256(_mm256_srli_epi32::<16>(sc_hi), byte),
            _mm256_srli_epi32::<24>(sc_hi),
        ];
        // Bytes 0, 1 of each lane to i16 lanes 0, 1; bytes 2, 3 likewise.
        let (b0, b2) = (
            _mm256_set1_epi32(0x0000_00FF),
            _mm256_set1_epi32(0x00FF_0000),
        );
        let even = |m: __m256i| {
            _mm256_or_si256(
                _mm256_and_si256(m, b0),
                _mm256_and_si256(_mm256_slli_epi32::<8>(m), b2),
            )
        };
        let odd = |m: __m256i| {
            _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi32::<16>(m), b0),
                _mm256_and_si256(_mm256_srli_epi32::<8>(m), b2),
            )
        };
        (sc, [even(m_lo), odd(m_lo), even(m_hi), odd(m_hi)])
    }
}

/// The eight rows' 32-byte chunk `c` of weights (`bytes[r * stride]` each a 144-byte block)
/// transposed by [`transpose8`]: sub-block `2c` in the low nibbles, `2c + 1` in the high.
///
/// # Safety
/// AVX2 available; eight whole blocks at those offsets.
#[inline(always)]
pub(super) unsafe fn chunk(bytes: &[u8], stride: usize, c: usize) -> [__m256i; 8] {
    debug_assert!(bytes.len() >= 7 * stride + 144 && c < 4);
    // SAFETY: AVX2 by the contract; 32 bytes at 16 + 32c <= 112 in each row's block.
    unsafe {
        let mut r = [_mm256_setzero_si256(); 8];
        for (i, r) in r.iter_mut().enumerate() {
            *r = _mm256_loadu_si256(bytes.as_ptr().add(i * stride + 16 + 32 * c).cast());
        }
        transpose8(r)
    }
}

/// One nibble of every byte of `g`: the low ones for `high == false`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
pub(super) unsafe fn nibbles(g: &[__m256i; 8], high: bool) -> [__m256i; 8] {
    // SAFETY: AVX2 by the contract.
    unsafe {
        let low = _mm256_set1_epi8(0x0F);
        let mut out = *g;
        for v in &mut out {
            if high {
                *v = _mm256_srli_epi16::<4>(*v);
            }
            *v = _mm256_and_si256(*v, low);
        }
        out
    }
}

/// Block b's mins term and fold for every token: `acc + (d * d_x) * isum - (dmin * d_x) *
/// msum`, with `isum` staged in `ints[t * 16..]`.
///
/// # Safety
/// AVX2 available; `acc` holds 8 and `ints` 16 slots per token of `a`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn mins_and_fold(
    acc: &mut [f32],
    ints: &[i32],
    a: &Acts,
    nblk: usize,
    b: usize,
    (dv, dminv): (__m256, __m256),
    mv: &[__m256i; 4],
) {
    // SAFETY: AVX2 by the contract; 8-lane loads of the 8 slots per token of `ints` and
    // `acc` (their lengths are the contract's).
    unsafe {
        for t in 0..acc.len() / 8 {
            let xs = &a.sums[(t * nblk + b) * 8..][..8];
            let mut msum = _mm256_setzero_si256();
            for (p, &m) in mv.iter().enumerate() {
                let pair = xs.as_ptr().add(2 * p).cast::<i32>().read_unaligned();
                msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, _mm256_set1_epi32(pair)));
            }
            let isum = _mm256_loadu_si256(ints.as_ptr().add(t * 16).cast());
            fold(acc, t * 8, dv, a.d[t * nblk + b], isum, Some((dminv, msum)));
        }
    }
}

/// Adds (or, for the first sub-block, writes) `v` to the staged `isum` of token `t`.
///
/// # Safety
/// AVX2 available; `ints` holds 16 slots per token up to `t`.
#[inline(always)]
unsafe fn stage(ints: &mut [i32], t: usize, first: bool, v: __m256i) {
    let slot = &mut ints[t * 16..t * 16 + 8];
    // SAFETY: 8-lane load and store of an 8-element slice; AVX2 by the contract.
    unsafe {
        let v = if first {
            v
        } else {
            _mm256_add_epi32(v, _mm256_loadu_si256(slot.as_ptr().cast()))
        };
        _mm256_storeu_si256(slot.as_mut_ptr().cast(), v);
    }
}

/// The kernels' body: `VNNI` picks the per-token dot product.
///
/// # Safety
/// AVX2 and F16C available, and AVX-512 VL/VNNI with `VNNI`; rows `row0..row0 + 8` exist;
/// `acc` holds 8 slots and `ints` 16 per token of `a`; `xs` holds the signed activations.
#[inline(always)]
unsafe fn body<const VNNI: bool>(
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
    // SAFETY: the features are the contract's; every block read is one of the eight rows'
    // (`bytes` spans them); `ints` holds 16 slots a token.
    unsafe {
        let mut raw = [_mm256_setzero_si256(); 8];
        for b in 0..nblk {
            let base = row0 * rb + b * 144;
            let bytes = &w.bytes[base..base + 7 * rb + 144];
            let dm = (f16x8(bytes, 0, rb, 0), f16x8(bytes, 0, rb, 2));
            let (sc, mv) = scales_mins(bytes, rb);
            for (s, &scale) in sc.iter().enumerate() {
                // AVX2: each scale as an i16 pair `[sc, sc]`, `vpmaddwd` scaling both halves.
                let scv = if VNNI {
                    scale
                } else {
                    _mm256_or_si256(scale, _mm256_slli_epi32::<16>(scale))
                };
                if s % 2 == 0 {
                    raw = chunk(bytes, rb, s / 2);
                }
                let g = nibbles(&raw, s % 2 == 1);
                for t in 0..t_all {
                    let x = &xs[t * k + b * 256 + s * 32..][..32];
                    let v = if VNNI {
                        let (mut s0, mut s1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                        for j in (0..8).step_by(2) {
                            s0 = _mm256_dpbusd_epi32(s0, g[j], dword(x, j));
                            s1 = _mm256_dpbusd_epi32(s1, g[j + 1], dword(x, j + 1));
                        }
                        _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), scv)
                    } else {
                        let mut p16 = _mm256_setzero_si256();
                        for (j, &gj) in g.iter().enumerate() {
                            p16 = _mm256_add_epi16(p16, _mm256_maddubs_epi16(gj, dword(x, j)));
                        }
                        _mm256_madd_epi16(p16, scv)
                    };
                    stage(ints, t, s == 0, v);
                }
            }
            mins_and_fold(acc, ints, a, nblk, b, dm, &mv);
        }
    }
}

/// Eight consecutive Q4_K rows (from `row0`) against every token, AVX-512 VNNI on ymm
/// registers: `acc[t * 8 + r]`, from the signed activations `xs`.
///
/// # Safety
/// AVX-512 F/BW/VL/VNNI and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots
/// and `ints` 16 per token of `a`; `xs` holds the signed activations.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")]
pub(crate) unsafe fn q4k_rows8_vnni(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, with VNNI.
    unsafe { body::<true>(w, row0, a, xs, acc, ints) }
}

/// [`q4k_rows8_vnni`] on AVX2.
///
/// # Safety
/// AVX2 and F16C available; otherwise as [`q4k_rows8_vnni`].
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn q4k_rows8_avx2(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, without VNNI.
    unsafe { body::<false>(w, row0, a, xs, acc, ints) }
}
