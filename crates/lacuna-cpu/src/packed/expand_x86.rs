//! [`QuantPacked::expand_panel`] with AVX2 and F16C: a small matrix's panel rebuilt into the
//! byte form, the same bytes and constants, fast enough to run once per panel inside the
//! AVX2 GEMM (`gemm::x86::avx2`), which reads the byte form only. The scalar rebuild
//! (bit planes a byte at a time, f16 constants in software) cost more than the GEMM it fed
//! at one token.

use std::arch::x86_64::*;

use super::{BITS5_SIGNED, PANEL, QuantPacked, levels, planes};

/// Panel `p` of the small matrix `w` into panel `r` of the byte-form buffer `into` (of
/// `w`'s kind and `k`, sized by [`QuantPacked::reuse_as`]): what
/// [`QuantPacked::expand_panel`] makes of it, but for weights held as bytes (Q8_0's), which
/// are not copied: a kernel reads them in place (`into` may be sized without weights).
///
/// # Safety
/// AVX2 and F16C.
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn expand_panel_into(
    w: &QuantPacked,
    p: usize,
    into: &mut QuantPacked,
    r: usize,
) {
    debug_assert!(w.small && !into.small && into.kind == w.kind && into.k == w.k);
    debug_assert!(w.affine.is_none() && r < into.panels && p < w.panels);
    if w.nib() || w.planar {
        let dst_len = PANEL * w.k;
        // SAFETY: AVX2 (this function's features).
        unsafe { expand_weights(w, p, &mut into.qs[r * dst_len..][..dst_len]) };
    }
    // Every array is `panels` equal chunks, one per panel; `into`'s hold `into.panels`.
    let per = |len: usize| len / into.panels;
    let n = per(into.scales.len());
    for (o, i) in into.scales[r * n..][..n]
        .chunks_exact_mut(8)
        .zip(w.scales8[p * n..][..n].chunks_exact(8))
    {
        // SAFETY: 8 bytes in, 8 i32 out (exact chunks); AVX2.
        unsafe {
            let v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(i.as_ptr().cast()));
            _mm256_storeu_si256(o.as_mut_ptr().cast(), v);
        }
    }
    let n = per(into.mins.len());
    for (o, &v) in into.mins[r * n..][..n]
        .iter_mut()
        .zip(&w.mins8[p * n..][..n])
    {
        *o = i16::from(v);
    }
    let n = per(into.corr.len());
    let (corr, d) = (&mut into.corr[r * n..][..n], &mut into.d[r * n..][..n]);
    if w.half {
        for (o, i) in corr
            .chunks_exact_mut(8)
            .zip(w.corr16[p * n..][..n].chunks_exact(8))
        {
            // SAFETY: 8 i16 in, 8 i32 out (exact chunks: `n` is a multiple of 16); AVX2.
            unsafe {
                let v = _mm256_cvtepi16_epi32(_mm_loadu_si128(i.as_ptr().cast()));
                _mm256_storeu_si256(o.as_mut_ptr().cast(), _mm256_slli_epi32::<7>(v));
            }
        }
        if w.e8.is_empty() {
            for (o, i) in d
                .chunks_exact_mut(8)
                .zip(w.d16[p * n..][..n].chunks_exact(8))
            {
                // SAFETY: 8 f16 in, 8 f32 out; F16C.
                unsafe {
                    _mm256_storeu_ps(
                        o.as_mut_ptr(),
                        _mm256_cvtph_ps(_mm_loadu_si128(
                            i.as_ptr().cast::<u16>().add(0).cast::<__m128i>().cast(),
                        )),
                    )
                };
            }
        } else {
            for (o, &e) in d.iter_mut().zip(&w.e8[p * n..][..n]) {
                *o = lacuna_quant::e8m0_to_fp32_half(e);
            }
        }
    } else {
        corr.copy_from_slice(&w.corr[p * n..][..n]);
        d.copy_from_slice(&w.d[p * n..][..n]);
    }
    let n = per(into.dmin.len());
    into.dmin[r * n..][..n].copy_from_slice(&w.dmin[p * n..][..n]);
}

/// Panel `p`'s weights of the small matrix `w`, two a byte (Q4_K, level indices) or in bit
/// planes, rebuilt into the byte form's `16 k` bytes at `dst`.
///
/// # Safety
/// AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn expand_weights(w: &QuantPacked, p: usize, dst: &mut [i8]) {
    debug_assert!(w.nib() || w.planar);
    let src_len = w.panel_qs();
    let src = &w.qs[p * src_len..][..src_len];
    // SAFETY: AVX2 (this function's features) for each decoder.
    unsafe {
        if w.nib() {
            nibbles(src, dst, w.lut.then(|| levels(w.kind)));
        } else {
            match w.planar_bits() {
                2 => from_planes::<2>(src, dst),
                3 => from_planes::<3>(src, dst),
                5 => from_planes::<5>(src, dst),
                6 => from_planes::<6>(src, dst),
                BITS5_SIGNED => from_planes::<BITS5_SIGNED>(src, dst),
                bits => unreachable!("no planar form of {bits} bits"),
            }
        }
    }
}

/// Two weights a byte (line `2j` in the low nibbles of line `j`, `2j + 1` in the high
/// ones) into bytes, looked up in `lut` when given (level indices).
///
/// # Safety
/// AVX2.
#[target_feature(enable = "avx2")]
unsafe fn nibbles(src: &[i8], dst: &mut [i8], lut: Option<&[i8; 16]>) {
    let line = 4 * PANEL;
    debug_assert_eq!(dst.len(), 2 * src.len());
    let low4 = _mm256_set1_epi8(15);
    // SAFETY: 16 bytes of a 16-byte array.
    let table =
        lut.map(|t| unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast())) });
    for (pair, s) in dst.chunks_exact_mut(2 * line).zip(src.chunks_exact(line)) {
        for h in 0..2 {
            // SAFETY: 32 bytes at `32 h` of a 64-byte source line; 32 at `32 h` of each of
            // the two 64-byte destination lines.
            unsafe {
                let v = _mm256_loadu_si256(s.as_ptr().add(32 * h).cast());
                let mut lo = _mm256_and_si256(v, low4);
                let mut hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low4);
                if let Some(t) = table {
                    lo = _mm256_shuffle_epi8(t, lo);
                    hi = _mm256_shuffle_epi8(t, hi);
                }
                _mm256_storeu_si256(pair.as_mut_ptr().add(32 * h).cast(), lo);
                _mm256_storeu_si256(pair.as_mut_ptr().add(line + 32 * h).cast(), hi);
            }
        }
    }
}

/// A planar panel (`BITS` as [`planes`] names it) into bytes: the scalar `from_planes`, 32
/// bytes at a time. 16-bit shifts move bits across bytes; the masks drop what crossed. The
/// layout is a constant of `BITS`, so the group's lines unroll with immediate shifts.
///
/// # Safety
/// AVX2.
#[target_feature(enable = "avx2")]
unsafe fn from_planes<const BITS: usize>(src: &[i8], dst: &mut [i8]) {
    let line = 4 * PANEL;
    let pl = const { planes(BITS) };
    let per = 8 / pl.lo;
    let lo_lines = pl.lo_lines();
    let lomask = _mm256_set1_epi8(((1u32 << pl.lo) - 1) as i8);
    let hmask = _mm256_set1_epi8((((1u32 << pl.hi) - 1) << pl.lo) as i8);
    let bias = _mm256_set1_epi8(pl.bias);
    for (group, s) in dst
        .chunks_exact_mut(pl.group * line)
        .zip(src.chunks_exact(pl.lines() * line))
    {
        for j in 0..pl.group {
            let down = _mm_cvtsi32_si128((pl.lo * (j % per)) as i32);
            let up = pl.lo as i32 - pl.hi_at(j) as i32;
            for h in 0..2 {
                // SAFETY: 32 bytes at `32 h` of source lines `j / per` and `lo_lines` (both
                // inside the group's `lines()` lines) and of destination line `j`.
                unsafe {
                    let raw = _mm256_loadu_si256(s.as_ptr().add(j / per * line + 32 * h).cast());
                    let lo = _mm256_and_si256(_mm256_srl_epi16(raw, down), lomask);
                    let u = if pl.hi == 0 {
                        lo
                    } else {
                        let top =
                            _mm256_loadu_si256(s.as_ptr().add(lo_lines * line + 32 * h).cast());
                        let hi = if up >= 0 {
                            _mm256_sll_epi16(top, _mm_cvtsi32_si128(up))
                        } else {
                            _mm256_srl_epi16(top, _mm_cvtsi32_si128(-up))
                        };
                        _mm256_or_si256(lo, _mm256_and_si256(hi, hmask))
                    };
                    let v = _mm256_sub_epi8(u, bias);
                    _mm256_storeu_si256(group.as_mut_ptr().add(j * line + 32 * h).cast(), v);
                }
            }
        }
    }
}
