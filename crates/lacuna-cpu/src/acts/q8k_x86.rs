//! AVX-512 twin of [`super::quantize_q8k_block`], bit-identical to it (tested), including
//! its behaviour on NaN, infinities and subnormal blocks: the activation quantization runs
//! once per matmul over the whole canvas and in scalar code cost about a fifth of an AMX
//! GEMM's time.

use std::arch::x86_64::*;

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
    // The scalar code keeps the first element of largest magnitude (strict `>`).
    let first = x
        .iter()
        .position(|e| e.abs() == amax)
        .expect("the maximum is one of the elements");
    let iscale = -127.0f32 / x[first];
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
