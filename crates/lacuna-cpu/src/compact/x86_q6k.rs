//! x86 kernels of the compact layout for Q6_K, eight weight rows at a time, rows in lanes.
//!
//! Each 32-weight group (two 16-weight sub-blocks) of the eight rows is decoded to signed
//! weights `q6 - 32` (one ymm a row) and transposed in registers ([`transpose8`]), so that a
//! broadcast dword of a token's biased Q8_K activations (`u8 = x + 128`) against register
//! `j` gives the eight rows' partial sums in eight lanes. The bias adds `128 * sum(sc * w)`
//! per row and block, taken away once a block.
//!
//! AVX-512 VNNI sums each sub-block with `vpdpbusd` and scales it with `vpmulld`; AVX2 adds
//! two `vpmaddubsw` results in i16 (|w| <= 32: each lane stays below 2 * 2 * 255 * 32 <
//! 2^15) and scales them with `vpmaddwd`. The block's exact integer sum is folded as
//! `acc + (d * d_x) * isum`, the portable kernel's order, so every path gives the same bits.

use std::arch::x86_64::*;

use super::CompactQuant;
use super::x86::{dword, f16x8, fold, transpose8};
use crate::acts::Acts;

/// Block bytes.
pub(super) const SIZE: usize = 210;

/// The eight rows' scales (`bytes[r * stride]` each a block), per group `G` the scale of
/// sub-block `2G` and of `2G + 1`, sign-extended, rows in lanes.
///
/// # Safety
/// AVX2 available; eight whole blocks at those offsets.
#[inline(always)]
pub(super) unsafe fn scales(bytes: &[u8], stride: usize) -> [(__m256i, __m256i); 8] {
    debug_assert!(bytes.len() >= 7 * stride + SIZE);
    // SAFETY: AVX2 by the contract; 16 bytes at 192 in each row's block.
    unsafe {
        let mut r = [_mm256_setzero_si256(); 8];
        for (i, r) in r.iter_mut().enumerate() {
            *r = _mm256_castsi128_si256(_mm_loadu_si128(
                bytes.as_ptr().add(i * stride + 192).cast(),
            ));
        }
        // Transposed registers 0-3 read only the loaded low halves: scales 4q..4q + 4.
        let s = transpose8(r);
        let byte = |v: __m256i, b: i32| {
            _mm256_srai_epi32::<24>(_mm256_sllv_epi32(v, _mm256_set1_epi32(24 - 8 * b)))
        };
        let mut out = [(_mm256_setzero_si256(), _mm256_setzero_si256()); 8];
        for (g, o) in out.iter_mut().enumerate() {
            let (q, b) = (s[g / 2], 2 * (g % 2) as i32);
            *o = (byte(q, b), byte(q, b + 1));
        }
        out
    }
}

/// Group `g` (`4n + i`: weights `128n + 32i ..`) of the eight rows as signed weights
/// `q6 - 32`, transposed by [`transpose8`].
///
/// # Safety
/// AVX2 available; eight whole blocks at those offsets.
#[inline(always)]
pub(super) unsafe fn group(bytes: &[u8], stride: usize, g: usize) -> [__m256i; 8] {
    debug_assert!(bytes.len() >= 7 * stride + SIZE && g < 8);
    let (n, i) = (g / 4, g % 4);
    let (ql_at, qh_at) = (64 * n + 32 * (i & 1), 128 + 32 * n);
    // SAFETY: AVX2 by the contract; 32 bytes at ql_at <= 96 and at qh_at <= 160 in each
    // row's 210-byte block.
    unsafe {
        let (m4, m3) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x03));
        let (nib_shift, h_shift) = (
            _mm_cvtsi32_si128(4 * (i as i32 >> 1)),
            _mm_cvtsi32_si128(2 * i as i32),
        );
        let mut r = [_mm256_setzero_si256(); 8];
        for (row, r) in r.iter_mut().enumerate() {
            let p = bytes.as_ptr().add(row * stride);
            let ql = _mm256_loadu_si256(p.add(ql_at).cast());
            let qh = _mm256_loadu_si256(p.add(qh_at).cast());
            let lo = _mm256_and_si256(_mm256_srl_epi16(ql, nib_shift), m4);
            let hi = _mm256_and_si256(_mm256_srl_epi16(qh, h_shift), m3);
            let u = _mm256_or_si256(lo, _mm256_slli_epi16::<4>(hi));
            *r = _mm256_sub_epi8(u, _mm256_set1_epi8(32));
        }
        transpose8(r)
    }
}

/// `sum(sc * w)` of the group's two sub-blocks, rows in lanes (the activations' bias is 128
/// times it).
///
/// # Safety
/// AVX2 available.
#[inline(always)]
pub(super) unsafe fn weight_sums(g: &[__m256i; 8], (lo, hi): (__m256i, __m256i)) -> __m256i {
    // SAFETY: AVX2 by the contract.
    unsafe {
        let ones = _mm256_set1_epi8(1);
        let half = |j: usize| {
            let s = _mm256_add_epi16(
                _mm256_maddubs_epi16(ones, g[j]),
                _mm256_maddubs_epi16(ones, g[j + 1]),
            );
            _mm256_add_epi16(
                s,
                _mm256_add_epi16(
                    _mm256_maddubs_epi16(ones, g[j + 2]),
                    _mm256_maddubs_epi16(ones, g[j + 3]),
                ),
            )
        };
        _mm256_add_epi32(
            _mm256_madd_epi16(half(0), pairs(lo)),
            _mm256_madd_epi16(half(4), pairs(hi)),
        )
    }
}

/// Each i32 lane `s` (a small signed scale) as the i16 pair `[s, s]`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn pairs(s: __m256i) -> __m256i {
    // SAFETY: AVX2 by the contract.
    unsafe {
        _mm256_or_si256(
            _mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)),
            _mm256_slli_epi32::<16>(s),
        )
    }
}

/// The kernels' body: `VNNI` picks the per-token dot product.
///
/// # Safety
/// AVX2 and F16C available, and AVX-512 VL/VNNI with `VNNI`; rows `row0..row0 + 8` exist;
/// `acc` holds 8 slots and `ints` 16 per token of `a`.
#[inline(always)]
unsafe fn body<const VNNI: bool>(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
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
        for b in 0..nblk {
            let base = row0 * rb + b * SIZE;
            let bytes = &w.bytes[base..base + 7 * rb + SIZE];
            let dv = f16x8(bytes, 0, rb, 208);
            let sc = scales(bytes, rb);
            let mut corr = _mm256_setzero_si256();
            for (gi, &(lo, hi)) in sc.iter().enumerate() {
                let g = group(bytes, rb, gi);
                corr = _mm256_add_epi32(corr, weight_sums(&g, (lo, hi)));
                let (plo, phi) = (pairs(lo), pairs(hi));
                for t in 0..t_all {
                    let x = &a.q[t * k + b * 256 + gi * 32..][..32];
                    let v = if VNNI {
                        let (mut s0, mut s1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                        for j in 0..4 {
                            s0 = _mm256_dpbusd_epi32(s0, dword(x, j), g[j]);
                            s1 = _mm256_dpbusd_epi32(s1, dword(x, j + 4), g[j + 4]);
                        }
                        _mm256_add_epi32(_mm256_mullo_epi32(s0, lo), _mm256_mullo_epi32(s1, hi))
                    } else {
                        let p = |j: usize| {
                            _mm256_add_epi16(
                                _mm256_maddubs_epi16(dword(x, j), g[j]),
                                _mm256_maddubs_epi16(dword(x, j + 1), g[j + 1]),
                            )
                        };
                        let l = _mm256_add_epi32(
                            _mm256_madd_epi16(p(0), plo),
                            _mm256_madd_epi16(p(2), plo),
                        );
                        let h = _mm256_add_epi32(
                            _mm256_madd_epi16(p(4), phi),
                            _mm256_madd_epi16(p(6), phi),
                        );
                        _mm256_add_epi32(l, h)
                    };
                    let slot = ints.as_mut_ptr().add(t * 16).cast::<__m256i>();
                    let v = if gi == 0 {
                        v
                    } else {
                        _mm256_add_epi32(v, _mm256_loadu_si256(slot))
                    };
                    _mm256_storeu_si256(slot, v);
                }
            }
            let bias = _mm256_slli_epi32::<7>(corr);
            for t in 0..t_all {
                let staged = _mm256_loadu_si256(ints.as_ptr().add(t * 16).cast());
                fold(
                    acc,
                    t * 8,
                    dv,
                    a.d[t * nblk + b],
                    _mm256_sub_epi32(staged, bias),
                    None,
                );
            }
        }
    }
}

/// Eight consecutive Q6_K rows (from `row0`) against every token, AVX-512 VNNI on ymm
/// registers: `acc[t * 8 + r]`, from the biased activations.
///
/// # Safety
/// AVX-512 F/BW/VL/VNNI and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots
/// and `ints` 16 per token of `a`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")]
pub(crate) unsafe fn q6k_rows8_vnni(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    _xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, with VNNI.
    unsafe { body::<true>(w, row0, a, acc, ints) }
}

/// [`q6k_rows8_vnni`] on AVX2.
///
/// # Safety
/// AVX2 and F16C available; otherwise as [`q6k_rows8_vnni`].
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn q6k_rows8_avx2(
    w: &CompactQuant,
    row0: usize,
    a: &Acts,
    _xs: &[u8],
    acc: &mut [f32],
    ints: &mut [i32],
) {
    // SAFETY: the contract is the body's, without VNNI.
    unsafe { body::<false>(w, row0, a, acc, ints) }
}
