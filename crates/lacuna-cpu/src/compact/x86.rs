//! What the x86 kernels of the compact layout share: eight rows' f16 scales, the 8 x 8 dword
//! transpose that puts the rows in lanes, the broadcast of an activation dword, and the
//! float fold in the portable kernel's order.

use std::arch::x86_64::*;

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

/// The 8 x 8 dword transpose: lane `r` of register `j` of the result is dword `j` of `r[r]`.
///
/// # Safety
/// AVX2 available.
#[inline(always)]
pub(crate) unsafe fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    // SAFETY: AVX2 by the contract (register shuffles only).
    unsafe {
        let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
        let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
        let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        // Lanes 0-3 rows 0-3 (or 4-7) of dword j, lanes 4-7 of dword j + 4.
        let u = [
            (_mm256_unpacklo_epi64(t0, t2), _mm256_unpacklo_epi64(t4, t6)),
            (_mm256_unpackhi_epi64(t0, t2), _mm256_unpackhi_epi64(t4, t6)),
            (_mm256_unpacklo_epi64(t1, t3), _mm256_unpacklo_epi64(t5, t7)),
            (_mm256_unpackhi_epi64(t1, t3), _mm256_unpackhi_epi64(t5, t7)),
        ];
        let mut g = [_mm256_setzero_si256(); 8];
        for (j, &(a, b)) in u.iter().enumerate() {
            g[j] = _mm256_permute2x128_si256::<0x20>(a, b);
            g[j + 4] = _mm256_permute2x128_si256::<0x31>(a, b);
        }
        g
    }
}

/// `acc[t * 8..] += (d * d_x) * isum` for one token, then `-= (dmin * d_x) * msum` when
/// `mins` gives `(dmin, msum)`, as the portable kernel rounds them (no FMA).
///
/// # Safety
/// AVX2 available; `acc` holds eight slots at `slot`.
#[inline(always)]
pub(crate) unsafe fn fold(
    acc: &mut [f32],
    slot: usize,
    dv: __m256,
    xd: f32,
    isum: __m256i,
    mins: Option<(__m256, __m256i)>,
) {
    let acc = &mut acc[slot..slot + 8];
    // SAFETY: 8-lane load and store of an 8-element slice; AVX2 by the contract.
    unsafe {
        let xd = _mm256_set1_ps(xd);
        let mut v = _mm256_loadu_ps(acc.as_ptr());
        v = _mm256_add_ps(
            v,
            _mm256_mul_ps(_mm256_mul_ps(dv, xd), _mm256_cvtepi32_ps(isum)),
        );
        if let Some((dminv, msum)) = mins {
            v = _mm256_sub_ps(
                v,
                _mm256_mul_ps(_mm256_mul_ps(dminv, xd), _mm256_cvtepi32_ps(msum)),
            );
        }
        _mm256_storeu_ps(acc.as_mut_ptr(), v);
    }
}

/// Dword `j` of the 32 activation bytes at `x`, in every lane.
///
/// # Safety
/// AVX2 available; `x` holds at least `4j + 4` bytes.
#[inline(always)]
pub(crate) unsafe fn dword(x: &[u8], j: usize) -> __m256i {
    debug_assert!(x.len() >= 4 * j + 4);
    // SAFETY: four bytes at 4j inside `x`; AVX2 by the contract.
    unsafe { _mm256_set1_epi32(x.as_ptr().add(4 * j).cast::<i32>().read_unaligned()) }
}
