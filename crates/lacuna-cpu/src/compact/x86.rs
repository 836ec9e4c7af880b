//! AVX2 kernels of the compact layout, eight weight rows at a time: a Q4_K or Q6_K block is
//! unpacked to unsigned bytes in registers, dotted with every token's signed Q8_K block by
//! `vpmaddubsw` and `vpmaddwd` against the sub-block scales, and the eight rows' exact
//! integer sums are folded into floats as one vector in the portable kernel's order, so both
//! give the same bits (tested). Also the helpers the AVX-512 kernels share.

use std::arch::x86_64::*;

use super::CompactQuant;
use crate::acts::Acts;

/// Horizontal sum of eight i32 lanes (exact: no overflow for these bounds).
#[inline]
#[target_feature(enable = "avx2")]
fn hsum(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// Eight f16 values at byte `at` of each of the blocks, widened (exact).
///
/// Always inlined into its kernels (once per block of eight rows): left to the inliner it
/// stayed a call, and every live vector register was spilled around it.
///
/// # Safety
/// The caller enables AVX2 and F16C.
#[inline(always)]
pub(crate) unsafe fn f16x8(bytes: &[u8], base: usize, stride: usize, at: usize) -> __m256 {
    let mut h = [0u16; 8];
    for (r, h) in h.iter_mut().enumerate() {
        let i = base + r * stride + at;
        *h = u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    }
    // SAFETY: an 8 x u16 load of an 8-element array; F16C by the contract.
    unsafe { _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().cast())) }
}

/// ggml's `utmp` unpacking of Q4_K's 12 scale bytes: the eight 6-bit scales and the eight
/// 6-bit mins, as bytes (the same values as `get_scale_min_k4`).
#[inline]
pub(crate) fn scales_mins_utmp(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    const K1: u32 = 0x3f3f_3f3f;
    const K2: u32 = 0x0f0f_0f0f;
    const K3: u32 = 0x0303_0303;
    let w = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
    let (u0, u1, u2) = (w(0), w(1), w(2));
    let sc_lo = u0 & K1;
    let sc_hi = (u2 & K2) | (((u0 >> 6) & K3) << 4);
    let m_lo = u1 & K1;
    let m_hi = ((u2 >> 4) & K2) | (((u1 >> 6) & K3) << 4);
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    sc[..4].copy_from_slice(&sc_lo.to_le_bytes());
    sc[4..].copy_from_slice(&sc_hi.to_le_bytes());
    m[..4].copy_from_slice(&m_lo.to_le_bytes());
    m[4..].copy_from_slice(&m_hi.to_le_bytes());
    (sc, m)
}

/// `sum_j mins[j] * sums[j]` over eight i16 pairs (the Q4_K min term, exact).
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn min_dot(mins: __m128i, sums: &[i16]) -> i32 {
    assert!(sums.len() >= 8);
    // SAFETY: an 8 x i16 load of a slice of at least 8 (asserted).
    let ms = _mm_madd_epi16(mins, unsafe { _mm_loadu_si128(sums.as_ptr().cast()) });
    let ms = _mm_add_epi32(ms, _mm_shuffle_epi32::<0b01_00_11_10>(ms));
    let ms = _mm_add_epi32(ms, _mm_shuffle_epi32::<0b10_11_00_01>(ms));
    _mm_cvtsi128_si32(ms)
}

/// Folds block `b`'s staged integer sums of eight rows (`ints[t * 16..]`: isums, then msums
/// when `dminv` is given) into `acc[t * 8..]` for every token: `acc + (d * d_x) * isum`, then
/// `- (dmin * d_x) * msum`, each lane in the portable kernel's order (no FMA).
///
/// # Safety
/// AVX2 available; `acc` holds 8 and `ints` 16 slots per token of `a`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn fold8(
    acc: &mut [f32],
    ints: &[i32],
    a: &Acts,
    nblk: usize,
    b: usize,
    dv: __m256,
    dminv: Option<__m256>,
) {
    for t in 0..acc.len() / 8 {
        let xd = _mm256_set1_ps(a.d[t * nblk + b]);
        let (i, slot) = (&ints[t * 16..t * 16 + 16], &mut acc[t * 8..t * 8 + 8]);
        // SAFETY: 8-lane loads and stores within the 16- and 8-element slices.
        unsafe {
            let isum = _mm256_cvtepi32_ps(_mm256_loadu_si256(i.as_ptr().cast()));
            let mut v = _mm256_loadu_ps(slot.as_ptr());
            v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_mul_ps(dv, xd), isum));
            if let Some(dminv) = dminv {
                let msum = _mm256_cvtepi32_ps(_mm256_loadu_si256(i.as_ptr().add(8).cast()));
                v = _mm256_sub_ps(v, _mm256_mul_ps(_mm256_mul_ps(dminv, xd), msum));
            }
            _mm256_storeu_ps(slot.as_mut_ptr(), v);
        }
    }
}

/// Eight consecutive Q4_K rows (from `row0`) against every token: `acc[t * 8 + r]`. Each
/// row's exact integer sums go to `ints` (`[t][isum 8 | msum 8]`), then the float folding runs
/// for the eight rows as one vector, each lane in the portable kernel's order (no FMA), so
/// the bits are the single-row kernel's.
///
/// # Safety
/// AVX2 and F16C available; rows `row0..row0 + 8` exist; `acc` holds 8 slots and `ints` 16
/// per token of `a`.
#[target_feature(enable = "avx2,f16c")]
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
    let low = _mm256_set1_epi8(0x0F);
    // Byte shuffles broadcasting the i16 scale of sub-block j (bytes 2j, 2j + 1).
    let mut pick = [_mm256_setzero_si256(); 8];
    for (j, p) in pick.iter_mut().enumerate() {
        let (lo, hi) = ((2 * j) as i8, (2 * j + 1) as i8);
        *p = _mm256_setr_epi8(
            lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi,
            lo, hi, lo, hi, lo, hi, lo, hi, lo, hi,
        );
    }
    for b in 0..nblk {
        // Block b of rows row0..row0 + 8.
        let base = row0 * rb + b * 144;
        let bytes = &w.bytes[base..base + 7 * rb + 144];
        // SAFETY: this function enables AVX2 and F16C.
        let (dv, dminv) = unsafe { (f16x8(bytes, 0, rb, 0), f16x8(bytes, 0, rb, 2)) };
        for r in 0..8 {
            let blk = &bytes[r * rb..r * rb + 144];
            let (sc, m) = scales_mins_utmp(&blk[4..16]);
            // SAFETY: 8-byte loads of 8-element arrays.
            let (sc16, m16) = unsafe {
                (
                    _mm_cvtepu8_epi16(_mm_loadl_epi64(sc.as_ptr().cast())),
                    _mm_cvtepu8_epi16(_mm_loadl_epi64(m.as_ptr().cast())),
                )
            };
            let sc2 = _mm256_broadcastsi128_si256(sc16);
            let mut scv = [_mm256_setzero_si256(); 8];
            for (v, p) in scv.iter_mut().zip(&pick) {
                *v = _mm256_shuffle_epi8(sc2, *p);
            }
            for t in 0..t_all {
                let x = &xs[t * k + b * 256..][..256];
                let mut s32 = _mm256_setzero_si256();
                for c in 0..4 {
                    // SAFETY: 32 bytes at 16 + 32c within the 144-byte block; 32 bytes at
                    // 64c and 64c + 32 within the token's 256.
                    let (raw, x0, x1) = unsafe {
                        (
                            _mm256_loadu_si256(blk.as_ptr().add(16 + 32 * c).cast()),
                            _mm256_loadu_si256(x.as_ptr().add(64 * c).cast()),
                            _mm256_loadu_si256(x.as_ptr().add(64 * c + 32).cast()),
                        )
                    };
                    let lo = _mm256_and_si256(raw, low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(raw), low);
                    let p0 = _mm256_maddubs_epi16(lo, x0);
                    let p1 = _mm256_maddubs_epi16(hi, x1);
                    s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(p0, scv[2 * c]));
                    s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(p1, scv[2 * c + 1]));
                }
                ints[t * 16 + r] = hsum(s32);
                ints[t * 16 + 8 + r] = min_dot(m16, &a.sums[(t * nblk + b) * 8..]);
            }
        }
        // SAFETY: AVX2 is available (this function's contract).
        unsafe { fold8(acc, ints, a, nblk, b, dv, Some(dminv)) };
    }
}

/// Eight consecutive Q6_K rows against every token (see [`q4k_rows8`]; `ints` holds the
/// isums in its first 8 slots per token).
///
/// # Safety
/// As [`q4k_rows8`].
#[target_feature(enable = "avx2,f16c")]
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
    let (m4, m3) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x03));
    let (m_c, m_30, m_c0) = (
        _mm256_set1_epi8(0x0C),
        _mm256_set1_epi8(0x30),
        _mm256_set1_epi8(0xC0u8 as i8),
    );
    // Shuffles of the 16 scale bytes: group i takes sub 2i in lanes 0-7, 2i + 1 in 8-15.
    let mut pick = [_mm_setzero_si128(); 8];
    for (i, p) in pick.iter_mut().enumerate() {
        let (lo, hi) = ((2 * i) as i8, (2 * i + 1) as i8);
        *p = _mm_setr_epi8(
            lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi,
        );
    }
    let c32 = _mm256_set1_epi8(32);
    for b in 0..nblk {
        let base = row0 * rb + b * 210;
        let bytes = &w.bytes[base..base + 7 * rb + 210];
        // SAFETY: this function enables AVX2 and F16C.
        let dv = unsafe { f16x8(bytes, 0, rb, 208) };
        for r in 0..8 {
            let blk = &bytes[r * rb..r * rb + 210];
            // SAFETY: 16 bytes at 192 within the 210-byte block.
            let raw = unsafe { _mm_loadu_si128(blk.as_ptr().add(192).cast()) };
            let mut scv = [_mm256_setzero_si256(); 8];
            for (v, p) in scv.iter_mut().zip(&pick) {
                *v = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(raw, *p));
            }
            for t in 0..t_all {
                let x = &xs[t * k + b * 256..][..256];
                let mut s32 = _mm256_setzero_si256();
                for n in 0..2 {
                    // SAFETY: ql at 64n (two loads of 32), qh at 128 + 32n, inside 210 bytes.
                    let (l0, l1, h) = unsafe {
                        (
                            _mm256_loadu_si256(blk.as_ptr().add(64 * n).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(64 * n + 32).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(128 + 32 * n).cast()),
                        )
                    };
                    let q = [
                        _mm256_or_si256(
                            _mm256_and_si256(l0, m4),
                            _mm256_slli_epi16::<4>(_mm256_and_si256(h, m3)),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(l1, m4),
                            _mm256_slli_epi16::<2>(_mm256_and_si256(h, m_c)),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16::<4>(l0), m4),
                            _mm256_and_si256(h, m_30),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16::<4>(l1), m4),
                            _mm256_srli_epi16::<2>(_mm256_and_si256(h, m_c0)),
                        ),
                    ];
                    for (g, &qg) in q.iter().enumerate() {
                        let i = 4 * n + g;
                        // SAFETY: 32 bytes at 32i within the token's 256.
                        let xi = unsafe { _mm256_loadu_si256(x.as_ptr().add(32 * i).cast()) };
                        // sum sc * (q6 - 32) * x = sum sc * q6 * x - sum sc * 32 * x, exact.
                        let p = _mm256_maddubs_epi16(qg, xi);
                        let o = _mm256_maddubs_epi16(c32, xi);
                        s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(p, scv[i]));
                        s32 = _mm256_sub_epi32(s32, _mm256_madd_epi16(o, scv[i]));
                    }
                }
                ints[t * 16 + r] = hsum(s32);
            }
        }
        // SAFETY: AVX2 is available (this function's contract).
        unsafe { fold8(acc, ints, a, nblk, b, dv, None) };
    }
}
