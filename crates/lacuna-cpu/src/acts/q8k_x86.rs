//! AVX-512 and AVX2 twins of [`super::quantize_q8k_block`], bit-identical to it (tested),
//! including its behaviour on NaN, infinities and subnormal blocks: the activation
//! quantization runs once per matmul over the whole canvas and in scalar code cost about a
//! fifth of an AMX GEMM's time.

use std::arch::x86_64::*;

/// The scalar code's `-127 / max`, `max` the first element of largest magnitude (strict
/// `>`), given that magnitude `amax` (non-zero).
fn iscale(x: &[f32], amax: f32) -> f32 {
    let first = x
        .iter()
        .position(|e| e.abs() == amax)
        .expect("the maximum is one of the elements");
    -127.0f32 / x[first]
}

/// Quantizes one 256-element block like [`super::quantize_q8k_block`].
///
/// # Safety
/// Needs AVX-512 F/BW. `x` and `q` hold 256 elements, `sums32` holds 8.
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn quantize_q8k_block(x: &[f32], q: &mut [u8], sums32: &mut [i16]) -> f32 {
    assert!(x.len() == 256 && q.len() == 256 && sums32.len() == 8);
    // SAFETY: 16 x 16 floats in bounds (asserted).
    let v: [__m512; 16] =
        std::array::from_fn(|i| unsafe { _mm512_loadu_ps(x.as_ptr().add(16 * i)) });
    // `max(|v|, m)` returns `m` when `|v|` is NaN: NaN never wins, as in the scalar `>`.
    let amax = _mm512_reduce_max_ps(v.iter().fold(_mm512_setzero_ps(), |m, &e| {
        _mm512_max_ps(_mm512_abs_ps(e), m)
    }));
    if amax == 0.0 {
        q.fill(128);
        sums32.fill(0);
        return 0.0;
    }
    let iscale = iscale(x, amax);
    let vs = _mm512_set1_ps(iscale);
    let c127 = _mm512_set1_ps(127.0);
    let bias = _mm512_set1_epi32(128);
    let byte = _mm512_set1_epi32(0xff);
    for (i, &e) in v.iter().enumerate() {
        let r = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(vs, e),
        );
        // `min(127, r)` keeps NaN (second operand); NaN and -inf convert to i32::MIN, whose
        // biased low byte (128) is what the scalar `NaN as i32 = 0`, `-inf -> i32::MIN` give.
        let qi = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_min_ps(c127, r)), bias);
        // SAFETY: 16 bytes at 16 * i in bounds (asserted).
        unsafe { _mm_storeu_si128(q.as_mut_ptr().add(16 * i).cast(), _mm512_cvtepi32_epi8(qi)) };
        let unbiased = _mm512_sub_epi32(_mm512_and_si512(qi, byte), bias);
        let part = _mm512_reduce_add_epi32(unbiased);
        if i % 2 == 0 {
            sums32[i / 2] = part as i16;
        } else {
            sums32[i / 2] = sums32[i / 2].wrapping_add(part as i16);
        }
    }
    1.0 / iscale
}

/// The largest `|e|` of the lanes of `v`, NaN lanes ignored (0 if all are NaN or zero): the
/// `amax` of the scalar quantizers (`>` in [`super::quantize_q8k_block`], `f32::max` in
/// [`super::quantize_q8_0_scalar`], neither of which a NaN wins).
///
/// # Safety
/// Needs AVX2.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn abs_max_avx2(v: &[__m256]) -> f32 {
    let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    // `max(|e|, m)` returns `m` when `|e|` is NaN.
    let m = v.iter().fold(_mm256_setzero_ps(), |m, &e| {
        _mm256_max_ps(_mm256_and_ps(e, abs), m)
    });
    let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
    let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps::<0b01>(m, m)))
}

/// AVX2 twin of [`super::quantize_q8k_block`] for the machines without AVX-512 (bit-identical,
/// tested like the AVX-512 one).
///
/// # Safety
/// Needs AVX2. `x` and `q` hold 256 elements, `sums32` holds 8.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn quantize_q8k_block_avx2(x: &[f32], q: &mut [u8], sums32: &mut [i16]) -> f32 {
    assert!(x.len() == 256 && q.len() == 256 && sums32.len() == 8);
    // SAFETY: 32 x 8 floats in bounds (asserted).
    let v: [__m256; 32] =
        std::array::from_fn(|i| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * i)) });
    // SAFETY: AVX2 (this function's features).
    let amax = unsafe { abs_max_avx2(&v) };
    if amax == 0.0 {
        q.fill(128);
        sums32.fill(0);
        return 0.0;
    }
    let iscale = iscale(x, amax);
    let vs = _mm256_set1_ps(iscale);
    let c127 = _mm256_set1_ps(127.0);
    let bias = _mm256_set1_epi32(128);
    let byte = _mm256_set1_epi32(0xff);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (j, group) in v.chunks_exact(4).enumerate() {
        // Biased bytes as i32 lanes; NaN and -inf convert to i32::MIN, whose low byte
        // biased is 128, as in the scalar code (see the AVX-512 twin).
        let b: [__m256i; 4] = std::array::from_fn(|i| {
            let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
                _mm256_mul_ps(vs, group[i]),
            );
            let qi = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(c127, r)), bias);
            _mm256_and_si256(qi, byte)
        });
        // i32 -> u8 (values 0..=255, so the saturating packs are exact), back in order.
        let packed = _mm256_permutevar8x32_epi32(
            _mm256_packus_epi16(
                _mm256_packus_epi32(b[0], b[1]),
                _mm256_packus_epi32(b[2], b[3]),
            ),
            order,
        );
        // SAFETY: 32 bytes at 32 * j in bounds (asserted).
        unsafe { _mm256_storeu_si256(q.as_mut_ptr().add(32 * j).cast(), packed) };
        let s = b.iter().fold(_mm256_setzero_si256(), |s, &e| {
            _mm256_add_epi32(s, _mm256_sub_epi32(e, bias))
        });
        let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        // |sum| <= 32 * 128: exact in i16, as the scalar sum.
        sums32[j] = _mm_cvtsi128_si32(s) as i16;
    }
    1.0 / iscale
}
