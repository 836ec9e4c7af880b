//! Eight rows of a compact matrix decoded into the repacked byte panel (see
//! [`crate::packed`]), with the kernels' transposes: the transposed registers are the
//! panel's lines already (lane `r` of register `j` is row `r`'s weights `4j..4j + 4`), so a
//! block is a few loads, shuffles and stores where the portable packer decodes element by
//! element. It serves the compact layout over long canvases (a panel decoded per use) and
//! packing at load. The values are the portable packer's (tested bit for bit).

use std::arch::x86_64::*;

use super::x86_b32::{Block32, Iq4Nl, Mxfp4, Q4_0, Q5_0, Q8_0, transposed};
use super::{x86_q4k, x86_q6k};
use crate::blocks::QuantKind;
use crate::packed::{PANEL, PanelMut};

/// Whether [`fill8`] decodes `kind`.
pub(crate) fn fills(kind: QuantKind) -> bool {
    matches!(
        kind,
        QuantKind::Q4K
            | QuantKind::Q6K
            | QuantKind::Q8_0
            | QuantKind::Q4_0
            | QuantKind::Q5_0
            | QuantKind::IQ4NL
            | QuantKind::MXFP4
    )
}

/// Rows `8 * half .. 8 * half + 8` of panel `p` from the eight rows at `rows` (`row_bytes`
/// apart, `k` weights each) of a kind [`fills`] takes.
///
/// # Safety
/// AVX2 and F16C available; `rows` holds eight rows; `p` is a byte-form panel of `kind`
/// with `k` columns; `half` is 0 or 1.
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn fill8(
    kind: QuantKind,
    k: usize,
    rows: &[u8],
    row_bytes: usize,
    half: usize,
    p: &mut PanelMut<'_>,
) {
    assert!(rows.len() >= 8 * row_bytes && half < 2 && p.qs.len() >= PANEL * k);
    // SAFETY: the features are this function's; the rows and the panel are as asserted.
    unsafe {
        match kind {
            QuantKind::Q4K => q4k(k, rows, row_bytes, half, p),
            QuantKind::Q6K => q6k(k, rows, row_bytes, half, p),
            QuantKind::Q8_0 => b32::<Q8_0>(k, rows, row_bytes, half, p),
            QuantKind::Q4_0 => b32::<Q4_0>(k, rows, row_bytes, half, p),
            QuantKind::Q5_0 => b32::<Q5_0>(k, rows, row_bytes, half, p),
            QuantKind::IQ4NL => b32::<Iq4Nl>(k, rows, row_bytes, half, p),
            QuantKind::MXFP4 => b32::<Mxfp4>(k, rows, row_bytes, half, p),
            _ => unreachable!("fill8 of {kind:?}"),
        }
    }
}

/// Stores eight i32 lanes at `v[at..at + 8]`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn put_i32(v: &mut [i32], at: usize, x: __m256i) {
    let v = &mut v[at..at + 8];
    // SAFETY: an 8-lane store into an 8-element slice; AVX2 by the contract.
    unsafe { _mm256_storeu_si256(v.as_mut_ptr().cast(), x) }
}

/// Stores eight f32 lanes at `v[at..at + 8]`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn put_f32(v: &mut [f32], at: usize, x: __m256) {
    let v = &mut v[at..at + 8];
    // SAFETY: an 8-lane store into an 8-element slice; AVX2 by the contract.
    unsafe { _mm256_storeu_ps(v.as_mut_ptr(), x) }
}

/// Stores the transposed lines `g` (4 weights of eight rows each) as lines `line..line + 8`
/// of the panel, in the half of each line that holds rows `8 * half..`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn put_lines(qs: &mut [i8], line: usize, half: usize, g: &[__m256i; 8]) {
    for (j, &gj) in g.iter().enumerate() {
        let at = (line + j) * 4 * PANEL + 32 * half;
        let dst = &mut qs[at..at + 32];
        // SAFETY: a 32-byte store into a 32-byte slice; AVX2 by the contract.
        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), gj) };
    }
}

/// `sum(w)` over the 32 weights of `g` for each of the eight rows (weights as signed bytes).
///
/// # Safety
/// AVX2 available.
#[inline(always)]
unsafe fn row_sums(g: &[__m256i; 8]) -> __m256i {
    // SAFETY: AVX2 by the contract.
    unsafe {
        let ones = _mm256_set1_epi8(1);
        let mut s = _mm256_setzero_si256();
        for &gj in g {
            // |w| <= 128: eight pair sums of at most 256 stay far inside i16.
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(ones, gj));
        }
        _mm256_madd_epi16(s, _mm256_set1_epi16(1))
    }
}

/// The 32-weight formats: one line group a block, `d`, and `corr = 128 * sum(w)`.
///
/// # Safety
/// As [`fill8`].
#[inline(always)]
unsafe fn b32<B: Block32>(k: usize, rows: &[u8], rb: usize, half: usize, p: &mut PanelMut<'_>) {
    // SAFETY: AVX2 and F16C by the contract; block b of the eight rows lies in `rows`.
    unsafe {
        for b in 0..k / 32 {
            let bytes = &rows[b * B::SIZE..7 * rb + (b + 1) * B::SIZE];
            let g = transposed::<B>(bytes, rb);
            put_lines(p.qs, b * 8, half, &g);
            put_i32(
                p.corr,
                b * PANEL + 8 * half,
                _mm256_slli_epi32::<7>(row_sums(&g)),
            );
            put_f32(p.d, b * PANEL + 8 * half, B::scales(bytes, rb));
        }
    }
}

/// Q4_K: the weights (0..=15), scales, mins as i16 pairs, `d`, `dmin`, and `corr = 128 *
/// sum(sc * sum(q))`.
///
/// # Safety
/// As [`fill8`].
#[inline(always)]
unsafe fn q4k(k: usize, rows: &[u8], rb: usize, half: usize, p: &mut PanelMut<'_>) {
    // SAFETY: AVX2 and F16C by the contract; block b of the eight rows lies in `rows`.
    unsafe {
        for b in 0..k / 256 {
            let bytes = &rows[b * 144..7 * rb + (b + 1) * 144];
            let (sc, mv) = x86_q4k::scales_mins(bytes, rb);
            let mut corr = _mm256_setzero_si256();
            for c in 0..4 {
                let raw = x86_q4k::chunk(bytes, rb, c);
                for h in 0..2 {
                    let s = 2 * c + h;
                    let g = x86_q4k::nibbles(&raw, h == 1);
                    put_lines(p.qs, (b * 8 + s) * 8, half, &g);
                    put_i32(p.sc, (b * 8 + s) * PANEL + 8 * half, sc[s]);
                    corr = _mm256_add_epi32(corr, _mm256_mullo_epi32(row_sums(&g), sc[s]));
                }
            }
            put_i32(p.corr, b * PANEL + 8 * half, _mm256_slli_epi32::<7>(corr));
            for (j, &m) in mv.iter().enumerate() {
                // i16 pairs [min 2j, min 2j + 1] per row: one i32 lane each.
                let at = ((b * 4 + j) * PANEL + 8 * half) * 2;
                let dst = &mut p.mins[at..at + 16];
                _mm256_storeu_si256(dst.as_mut_ptr().cast(), m);
            }
            put_f32(
                p.d,
                b * PANEL + 8 * half,
                super::x86::f16x8(bytes, 0, rb, 0),
            );
            put_f32(
                p.dmin,
                b * PANEL + 8 * half,
                super::x86::f16x8(bytes, 0, rb, 2),
            );
        }
    }
}

/// Q6_K: the weights (`q6 - 32`), the sixteen scales, `d`, and `corr = 128 * sum(sc *
/// sum(w))`.
///
/// # Safety
/// As [`fill8`].
#[inline(always)]
unsafe fn q6k(k: usize, rows: &[u8], rb: usize, half: usize, p: &mut PanelMut<'_>) {
    const SIZE: usize = x86_q6k::SIZE;
    // SAFETY: AVX2 and F16C by the contract; block b of the eight rows lies in `rows`.
    unsafe {
        for b in 0..k / 256 {
            let bytes = &rows[b * SIZE..7 * rb + (b + 1) * SIZE];
            let sc = x86_q6k::scales(bytes, rb);
            let mut corr = _mm256_setzero_si256();
            for (gi, &(lo, hi)) in sc.iter().enumerate() {
                let g = x86_q6k::group(bytes, rb, gi);
                put_lines(p.qs, (b * 8 + gi) * 8, half, &g);
                put_i32(p.sc, (b * 16 + 2 * gi) * PANEL + 8 * half, lo);
                put_i32(p.sc, (b * 16 + 2 * gi + 1) * PANEL + 8 * half, hi);
                corr = _mm256_add_epi32(corr, x86_q6k::weight_sums(&g, (lo, hi)));
            }
            put_i32(p.corr, b * PANEL + 8 * half, _mm256_slli_epi32::<7>(corr));
            put_f32(
                p.d,
                b * PANEL + 8 * half,
                super::x86::f16x8(bytes, 0, rb, 208),
            );
        }
    }
}
