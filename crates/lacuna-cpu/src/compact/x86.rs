//! AVX2 row kernels of the compact layout: a Q4_K or Q6_K block is unpacked to unsigned
//! bytes in registers once, then dotted with every token's Q8_K block by `vpmaddubsw`
//! (unsigned weights times signed activations) and `vpmaddwd` against the sub-block scales.
//! Every integer sum is exact, and the float folding is the portable kernel's, so both give
//! the same bits (tested).

use std::arch::x86_64::*;

use super::CompactQuant;
use crate::acts::Acts;
use crate::blocks::f16_at;

/// Horizontal sum of eight i32 lanes (exact: no overflow for these bounds).
#[inline]
#[target_feature(enable = "avx2")]
fn hsum(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// Token `t`'s biased Q8_K quants of block `b`, flipped to signed bytes: eight vectors of 32.
///
/// # Safety
/// AVX2; `a.q` holds block `b` of token `t` (`k` per token).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn signed_acts(a: &Acts, t: usize, k: usize, b: usize) -> [__m256i; 8] {
    let x = &a.q[t * k + b * 256..][..256];
    let flip = _mm256_set1_epi8(-128);
    // SAFETY: 8 x 32 bytes in bounds of the 256-byte slice.
    std::array::from_fn(|i| unsafe {
        _mm256_xor_si256(
            _mm256_loadu_si256(x.as_ptr().add(32 * i).cast()),
            flip,
        )
    })
}

/// ggml's `get_scale_min_k4` for all eight sub-blocks.
fn scales_mins_k4(s: &[u8]) -> ([i16; 8], [i32; 8]) {
    let (mut sc, mut m) = ([0i16; 8], [0i32; 8]);
    for j in 0..8 {
        let (a, b) = if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            (
                (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
                (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
            )
        };
        sc[j] = i16::from(a);
        m[j] = i32::from(b);
    }
    (sc, m)
}

/// One Q4_K row against every token.
///
/// # Safety
/// AVX2 available; `row` holds `w.k / 256` Q4_K blocks and `acc` one slot per token of `a`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn q4k_row(w: &CompactQuant, row: &[u8], a: &Acts, acc: &mut [f32]) {
    let k = w.k;
    let nblk = k / 256;
    acc.fill(0.0);
    let low = _mm256_set1_epi8(0x0F);
    for (b, blk) in row.chunks_exact(144).enumerate() {
        let (d, dmin) = (f16_at(blk, 0), f16_at(blk, 2));
        let (sc, mins) = scales_mins_k4(&blk[4..16]);
        let scv: [__m256i; 8] = std::array::from_fn(|j| _mm256_set1_epi16(sc[j]));
        // Sub-block 2c: low nibbles of qs[32c..32c+32]; 2c+1: their high nibbles.
        let mut wq = [_mm256_setzero_si256(); 8];
        for c in 0..4 {
            // SAFETY: 32 bytes at 16 + 32c within the 144-byte block.
            let raw = unsafe { _mm256_loadu_si256(blk.as_ptr().add(16 + 32 * c).cast()) };
            wq[2 * c] = _mm256_and_si256(raw, low);
            wq[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(raw), low);
        }
        for (t, acc) in acc.iter_mut().enumerate() {
            // SAFETY: block b of token t exists (acts were prepared for this matmul).
            let x = unsafe { signed_acts(a, t, k, b) };
            let mut s32 = _mm256_setzero_si256();
            for j in 0..8 {
                // |15 * 128 * 2| fits i16; times a 6-bit scale, pairs, fits i32.
                let p = _mm256_maddubs_epi16(wq[j], x[j]);
                s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(p, scv[j]));
            }
            let isum = hsum(s32);
            let xd = a.d[t * nblk + b];
            *acc += (d * xd) * isum as f32;
            let xs = &a.sums[(t * nblk + b) * 8..][..8];
            let msum: i32 = (0..8).map(|j| mins[j] * i32::from(xs[j])).sum();
            *acc -= (dmin * xd) * msum as f32;
        }
    }
}

/// One Q6_K row against every token.
///
/// # Safety
/// AVX2 available; `row` holds `w.k / 256` Q6_K blocks and `acc` one slot per token of `a`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn q6k_row(w: &CompactQuant, row: &[u8], a: &Acts, acc: &mut [f32]) {
    let k = w.k;
    let nblk = k / 256;
    acc.fill(0.0);
    let (m4, m3) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x03));
    let (m_c, m_30, m_c0) = (
        _mm256_set1_epi8(0x0C),
        _mm256_set1_epi8(0x30),
        _mm256_set1_epi8(0xC0u8 as i8),
    );
    let c32 = _mm256_set1_epi8(32);
    for (b, blk) in row.chunks_exact(210).enumerate() {
        let d = f16_at(blk, 208);
        let sc = &blk[192..208];
        // Group g of half n holds elements 128n + 32g .. +32 (sub-blocks 8n + 2g, +1).
        let mut wq = [_mm256_setzero_si256(); 8];
        let mut scv = [_mm256_setzero_si256(); 8];
        for n in 0..2 {
            // SAFETY: ql at 64n (two 32-byte loads), qh at 128 + 32n, inside 210 bytes.
            let (l0, l1, h) = unsafe {
                (
                    _mm256_loadu_si256(blk.as_ptr().add(64 * n).cast()),
                    _mm256_loadu_si256(blk.as_ptr().add(64 * n + 32).cast()),
                    _mm256_loadu_si256(blk.as_ptr().add(128 + 32 * n).cast()),
                )
            };
            let hi = [
                _mm256_slli_epi16::<4>(_mm256_and_si256(h, m3)),
                _mm256_slli_epi16::<2>(_mm256_and_si256(h, m_c)),
                _mm256_and_si256(h, m_30),
                _mm256_srli_epi16::<2>(_mm256_and_si256(h, m_c0)),
            ];
            let lo = [
                _mm256_and_si256(l0, m4),
                _mm256_and_si256(l1, m4),
                _mm256_and_si256(_mm256_srli_epi16::<4>(l0), m4),
                _mm256_and_si256(_mm256_srli_epi16::<4>(l1), m4),
            ];
            for g in 0..4 {
                wq[4 * n + g] = _mm256_or_si256(lo[g], hi[g]);
                let s = 8 * n + 2 * g;
                let (s0, s1) = (i16::from(sc[s] as i8), i16::from(sc[s + 1] as i8));
                scv[4 * n + g] =
                    _mm256_setr_epi16(s0, s0, s0, s0, s0, s0, s0, s0, s1, s1, s1, s1, s1, s1, s1, s1);
            }
        }
        for (t, acc) in acc.iter_mut().enumerate() {
            // SAFETY: block b of token t exists (acts were prepared for this matmul).
            let x = unsafe { signed_acts(a, t, k, b) };
            let mut s32 = _mm256_setzero_si256();
            for j in 0..8 {
                // sum sc * (q6 - 32) * x = sum sc * q6 * x - sum sc * 32 * x, each exact:
                // |63 * 128 * 2| and |32 * 128 * 2| fit i16, times an i8 scale fits i32.
                let p = _mm256_maddubs_epi16(wq[j], x[j]);
                let o = _mm256_maddubs_epi16(c32, x[j]);
                s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(p, scv[j]));
                s32 = _mm256_sub_epi32(s32, _mm256_madd_epi16(o, scv[j]));
            }
            let isum = hsum(s32);
            *acc += (d * a.d[t * nblk + b]) * isum as f32;
        }
    }
}
