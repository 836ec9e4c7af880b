//! AVX-512 and AVX2 twins of [`super::quantize_q8_0_scalar`], bit-identical to it (tested),
//! including its behaviour on NaN, infinities and subnormal blocks. The scalar code rounds
//! with `round_ties_even`, which baseline x86-64 (no SSE4.1) compiles to a call of libm's
//! `rintf` per element: in a dual-cache step of a Q8_0 model on the AVX-512 VNNI path the
//! calls and the loop around them took about a tenth of the samples (`perf`).

use std::arch::x86_64::*;

/// Quantizes one 32-element block like [`super::quantize_q8_0_scalar`]: returns `(d, amax)`.
///
/// # Safety
/// Needs AVX-512 F/BW. `x` and `q` hold 32 elements.
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn quantize_q8_0_block(x: &[f32], q: &mut [u8]) -> (f32, f32) {
    assert!(x.len() == 32 && q.len() == 32);
    // SAFETY: 2 x 16 floats in bounds (asserted).
    let v: [__m512; 2] =
        std::array::from_fn(|i| unsafe { _mm512_loadu_ps(x.as_ptr().add(16 * i)) });
    // `max(|v|, m)` returns `m` when `|v|` is NaN: NaN never wins, as in the scalar `f32::max`.
    let m = _mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_setzero_ps());
    let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[1]), m));
    let (d, id) = super::q8_0_scales(amax);
    let vid = _mm512_set1_ps(id);
    let (lo, hi) = (_mm512_set1_ps(-128.0), _mm512_set1_ps(127.0));
    let bias = _mm512_set1_epi32(128);
    for (i, &e) in v.iter().enumerate() {
        let r = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(e, vid),
        );
        // NaN to 0 (the scalar `NaN as i32`), then the clamp (infinities included).
        let r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(r, r), r);
        let r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        let qi = _mm512_add_epi32(_mm512_cvtps_epi32(r), bias);
        // SAFETY: 16 bytes at 16 * i in bounds (asserted).
        unsafe { _mm_storeu_si128(q.as_mut_ptr().add(16 * i).cast(), _mm512_cvtepi32_epi8(qi)) };
    }
    (d, amax)
}

/// AVX2 twin of [`quantize_q8_0_block`] for the machines without AVX-512.
///
/// # Safety
/// Needs AVX2. `x` and `q` hold 32 elements.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn quantize_q8_0_block_avx2(x: &[f32], q: &mut [u8]) -> (f32, f32) {
    assert!(x.len() == 32 && q.len() == 32);
    // SAFETY: 4 x 8 floats in bounds (asserted).
    let v: [__m256; 4] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * i)) });
    // SAFETY: AVX2 (this function's features).
    let amax = unsafe { super::q8k_x86::abs_max_avx2(&v) };
    let (d, id) = super::q8_0_scales(amax);
    let vid = _mm256_set1_ps(id);
    let (lo, hi) = (_mm256_set1_ps(-128.0), _mm256_set1_ps(127.0));
    let bias = _mm256_set1_epi32(128);
    let b: [__m256i; 4] = std::array::from_fn(|i| {
        let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(v[i], vid),
        );
        let r = _mm256_and_ps(r, _mm256_cmp_ps::<_CMP_ORD_Q>(r, r));
        // (The lower clamp only spells out what the unsigned saturating pack below would
        // do to -inf's i32::MIN anyway.)
        let r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
        _mm256_add_epi32(_mm256_cvtps_epi32(r), bias)
    });
    // i32 -> u8 (values 0..=255, so the saturating packs are exact), back in order.
    let packed = _mm256_permutevar8x32_epi32(
        _mm256_packus_epi16(
            _mm256_packus_epi32(b[0], b[1]),
            _mm256_packus_epi32(b[2], b[3]),
        ),
        _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7),
    );
    // SAFETY: 32 bytes in bounds (asserted).
    unsafe { _mm256_storeu_si256(q.as_mut_ptr().cast(), packed) };
    (d, amax)
}
