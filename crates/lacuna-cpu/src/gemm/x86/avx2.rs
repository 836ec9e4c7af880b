//! 256-bit microkernels for AVX2 (`vpmaddubsw` + `vpmaddwd`) and AVX-VNNI (`vpdpbusd` ymm).
//! A 16-row panel is two ymm halves; a tile is one panel x 3-4 tokens, sized so that its
//! hot loop fits the 16 ymm registers. Wide weights (Q8_0, IQ4_NL, IQ4_XS) on plain AVX2
//! use ggml's sign trick (`|w| * sign(x, w)`) because biased activations times 8-bit
//! weights would saturate `vpmaddubsw`; every integer sum is exact on every variant, so
//! results stay bit-identical.

use std::arch::x86_64::*;

use super::prefetch::Prefetch;
use crate::acts::{Acts, FloatRound};
use crate::blocks::QuantKind;
use crate::out::Out;
use crate::packed::expand_x86::{expand_panel_into, expand_weights};
use crate::packed::wform::{BF16, F16, F32};
use crate::packed::{FloatPacked, PANEL, QuantPacked};

/// Whether [`quant_panels`] reads `w` as it is held: the byte form, and the small form but
/// for its bit planes, level indices and 16-bit block constants, which [`expanded`] rebuilds
/// panel by panel.
pub(crate) fn reads_held(w: &QuantPacked) -> bool {
    !(w.small && (w.planar || w.lut || w.half))
}

thread_local! {
    /// One panel of a small matrix rebuilt into the byte form ([`expanded`]).
    static EXPANDED: std::cell::RefCell<Option<QuantPacked>> = const { std::cell::RefCell::new(None) };
}

/// [`quant_panels`] over a small matrix it does not read as held: each panel rebuilt into a
/// per-thread byte-form panel ([`expand_panel_into`], in L2: 16 k bytes), then the byte
/// kernel over it for every token. The matrix stays held at about the file's size; the
/// rebuild is paid once per panel and step, whatever the tokens. The K-quants in bit planes
/// rebuild only their weights ([`expand_weights`]): the tiles read their small-form
/// constants as held.
///
/// A CPU without F16C (none with AVX2 is known) takes the portable rebuild.
///
/// `VNNI`: [`quant_panels_vnni`]'s, whose tiles read only the byte form (Q4_K's nibbles and
/// the i8 scales rebuilt too).
///
/// # Safety
/// As [`quant_panels`] (and [`quant_panels_vnni`] when `VNNI`).
#[target_feature(enable = "avx2,fma")]
unsafe fn expanded<const VNNI: bool>(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    let f16c = std::arch::is_x86_feature_detected!("f16c");
    // Weights held as bytes (Q8_0's, with 16-bit constants) are read where they are.
    let in_place = f16c && !w.nib() && !w.planar;
    // The K-quants in bit planes keep constants the AVX2 tiles read as held (i8 scales and
    // mins): only their weights are rebuilt.
    let weights_only = !VNNI && w.planar && !w.half;
    EXPANDED.with_borrow_mut(|buf| {
        let panel = buf.get_or_insert_with(|| QuantPacked::byte_panels(w.kind, w.k, 0));
        panel.reuse_as(w.kind, w.k, 1, !in_place);
        for p in p0..p0 + np {
            if weights_only {
                let qs = &mut panel.qs[..PANEL * w.k];
                // SAFETY: AVX2 (the contract); panel p exists; `qs` holds its 16 k bytes,
                // read by the tiles with `w`'s own constants of panel p.
                unsafe {
                    expand_weights(w, p, qs);
                    panels_at(w, a, p, 1, out, Some(qs.as_ptr()), (w, p));
                }
                continue;
            }
            let at = if f16c {
                // SAFETY: AVX2 (the contract) and F16C (detected); panel p exists.
                unsafe { expand_panel_into(w, p, panel, 0) };
                in_place.then(|| w.qs[p * PANEL * w.k..][..PANEL * w.k].as_ptr())
            } else {
                w.expand_panel(p, panel);
                None
            };
            // SAFETY: the contract; `panel` is a one-panel byte-form buffer of `w`'s kind and
            // k (its weights at `at` when given: panel p's bytes), read as panel 0 of a view
            // starting at p's columns, which this task owns.
            unsafe {
                if VNNI {
                    vnni_at(panel, a, 0, 1, out.panel(p), at)
                } else {
                    panels_at(panel, a, 0, 1, out.panel(p), at, (w, p))
                }
            };
        }
    })
}

/// Tokens per plain-AVX2 quantized tile: 2 x 4 block accumulators, 2 scale vectors and
/// the weight and activation operands fit the 16 ymm registers.
const TT: usize = 3;
/// Tokens per plain-AVX2 tile of narrow weights, which add two products in i16 before
/// widening (two more weight and activation operands live at once).
const TT_PAIR: usize = 3;
/// Tokens per AVX-VNNI quantized tile (two sets of 2 x 3 sub-block accumulators).
const TT_VNNI: usize = 3;
/// Tokens per float tile.
const TF: usize = 4;

/// AVX2 quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AVX2 + FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    if !reads_held(w) {
        // SAFETY: the contract.
        return unsafe { expanded::<false>(w, a, p0, np, out) };
    }
    // SAFETY: the contract.
    unsafe { panels_at(w, a, p0, np, out, None, (w, p0)) }
}

/// [`quant_panels`] over a matrix it reads as held, the byte form's weights of panel
/// `p0 + r` read at `at + r * 16k` instead of `w`'s panels when `at` is given (so also over
/// a matrix in bit planes without 16-bit constants, its weights rebuilt at `at`). `ahead`:
/// the matrix as held and the index there of panel `p0` (`w` may be a rebuilt copy): the
/// tiles of each panel prefetch the held panel after it ([`Prefetch`]).
///
/// # Safety
/// As [`quant_panels`]; `reads_held(w)`, or `w` planar without `half` and `at` given; `at`,
/// when given, holds `np` byte-form panels of `w`'s `k`, and `w` is not two weights a byte.
#[target_feature(enable = "avx2,fma")]
unsafe fn panels_at(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    np: usize,
    out: Out,
    at: Option<*const i8>,
    ahead: (&QuantPacked, usize),
) {
    debug_assert!(
        (reads_held(w) || at.is_some() && w.planar && !w.half) && (at.is_none() || !w.nib())
    );
    macro_rules! go {
        ($p:expr, $tt:expr, $sub:literal, $sc:literal, $mins:literal, $sign:literal) => {
            if w.small {
                go!($p, $tt, $sub, $sc, $mins, $sign, false, true)
            } else {
                go!($p, $tt, $sub, $sc, $mins, $sign, false, false)
            }
        };
        ($p:expr, $tt:expr, $sub:literal, $sc:literal, $mins:literal, $sign:literal, $nib:literal, $small:literal) => {{
            // SAFETY: `at` holds panel p - p0 when given (the contract).
            let src = unsafe { weights_at(w, $p, p0, at) };
            let steps = out.t.div_ceil($tt) * (w.k / $sub);
            let mut pf = Prefetch::panels(ahead.0, ahead.1 + ($p - p0) + 1, 1, steps);
            let mut t0 = 0;
            while t0 < out.t {
                let tt = (out.t - t0).min($tt);
                // SAFETY: the caller's contract; tile bounds checked here.
                unsafe {
                    match tt {
                        4 => tile_madd::<4, $sub, $sc, $mins, $sign, $nib, $small>(
                            w, a, $p, t0, out, src, &mut pf,
                        ),
                        3 => tile_madd::<3, $sub, $sc, $mins, $sign, $nib, $small>(
                            w, a, $p, t0, out, src, &mut pf,
                        ),
                        2 => tile_madd::<2, $sub, $sc, $mins, $sign, $nib, $small>(
                            w, a, $p, t0, out, src, &mut pf,
                        ),
                        _ => tile_madd::<1, $sub, $sc, $mins, $sign, $nib, $small>(
                            w, a, $p, t0, out, src, &mut pf,
                        ),
                    }
                }
                t0 += tt;
            }
        }};
    }
    for p in p0..p0 + np {
        match w.kind {
            QuantKind::Q4K if w.nib() => go!(p, TT_PAIR, 32, true, true, false, true, true),
            QuantKind::Q4K | QuantKind::Q5K => go!(p, TT_PAIR, 32, true, true, false),
            QuantKind::Q2K | QuantKind::Q3K | QuantKind::Q6K => {
                go!(p, TT_PAIR, 16, true, false, false)
            }
            QuantKind::IQ4XS => go!(p, TT, 32, true, false, true),
            kind if kind.wide() => go!(p, TT, 32, false, false, true),
            _ => go!(p, TT_PAIR, 32, false, false, false),
        }
    }
}

/// Where panel `p`'s weights are: `w`'s own, or panel `p - p0` of the byte-form panels at
/// `at` ([`panels_at`], [`vnni_at`]).
///
/// # Safety
/// `at`, when given, holds byte-form panels of `w`'s `k` up to panel `p - p0`.
unsafe fn weights_at(w: &QuantPacked, p: usize, p0: usize, at: Option<*const i8>) -> *const i8 {
    match at {
        // SAFETY: the contract.
        Some(at) => unsafe { at.add((p - p0) * PANEL * w.k) },
        None => w.qs[p * w.panel_qs()..].as_ptr(),
    }
}

/// AVX-VNNI quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AVX2 + FMA + AVX-VNNI.
#[target_feature(enable = "avx2,fma,avxvnni")]
pub(crate) unsafe fn quant_panels_vnni(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    if w.small {
        // SAFETY: the contract.
        return unsafe { expanded::<true>(w, a, p0, np, out) };
    }
    // SAFETY: the contract.
    unsafe { vnni_at(w, a, p0, np, out, None) }
}

/// [`quant_panels_vnni`] over a matrix in the byte form, its weights read at `at` as
/// [`panels_at`] reads them.
///
/// # Safety
/// As [`quant_panels_vnni`]; `!w.small`; `at`, when given, holds `np` byte-form panels of
/// `w`'s `k`.
#[target_feature(enable = "avx2,fma,avxvnni")]
unsafe fn vnni_at(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    np: usize,
    out: Out,
    at: Option<*const i8>,
) {
    debug_assert!(!w.small);
    macro_rules! go {
        ($p:expr, $sub:literal, $sc:literal, $mins:literal) => {{
            // SAFETY: `at` holds panel p - p0 when given (the contract).
            let src = unsafe { weights_at(w, $p, p0, at) };
            let mut t0 = 0;
            while t0 < out.t {
                let tt = (out.t - t0).min(TT_VNNI);
                // SAFETY: the caller's contract; tile bounds checked here.
                unsafe {
                    match tt {
                        3 => tile_vnni::<3, $sub, $sc, $mins>(w, a, $p, t0, out, src),
                        2 => tile_vnni::<2, $sub, $sc, $mins>(w, a, $p, t0, out, src),
                        _ => tile_vnni::<1, $sub, $sc, $mins>(w, a, $p, t0, out, src),
                    }
                }
                t0 += tt;
            }
        }};
    }
    for p in p0..p0 + np {
        match w.kind {
            QuantKind::Q4K | QuantKind::Q5K => go!(p, 32, true, true),
            QuantKind::Q2K | QuantKind::Q3K | QuantKind::Q6K => go!(p, 16, true, false),
            QuantKind::IQ4XS => go!(p, 32, true, false),
            _ => go!(p, 32, false, false),
        }
    }
}

/// One plain-AVX2 tile: panel `p`, tokens `t0..t0 + T`, all of K. The sub-block scale is
/// applied by the widening `vpmaddwd` itself (scale pairs instead of ones), so products go
/// straight into one i32 accumulator per block; narrow weights first add two `vpmaddubsw`
/// results (8 weights per row) in i16. `SIGN`: the sign trick for wide weights, no bias.
/// `NIB`: Q4_K's small form, the two lines of those 8 weights in one line of nibbles; the
/// small form's i8 scales (any type) are widened when loaded. Each sub-block issues a step
/// of `pf`.
///
/// # Safety
/// AVX2; `p < w.panels`, `t0 + T <= out.t`, `a` prepared for `w`; `src` holds panel `p`'s
/// weights in `w`'s form (`NIB` or bytes).
#[inline(always)]
unsafe fn tile_madd<
    const T: usize,
    const SUB: usize,
    const SCALES: bool,
    const MINS: bool,
    const SIGN: bool,
    const NIB: bool,
    const SMALL: bool,
>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    t0: usize,
    out: Out,
    qs: *const i8,
    pf: &mut Prefetch,
) {
    let k = w.k;
    let block = w.kind.block();
    let nblk = k / block;
    let nsub = block / SUB;
    debug_assert!(p < w.panels && t0 + T <= out.t);
    debug_assert!(a.q.len() >= (t0 + T) * k && a.d.len() >= (t0 + T) * nblk);
    debug_assert!(NIB == w.nib() && SMALL == w.small && !(NIB && SIGN));
    let xq: [*const u8; T] = std::array::from_fn(|t| a.q[(t0 + t) * k..].as_ptr());
    // SAFETY: AVX2 is enabled in every caller of this inlined body (function contract).
    unsafe {
        let low4 = _mm256_set1_epi8(0x0F);
        let ones = _mm256_set1_epi16(1);
        let flip = _mm256_set1_epi8(-128);
        let mut facc = [[_mm256_setzero_ps(); T]; 2];
        for b in 0..nblk {
            let mut bacc = [[_mm256_setzero_si256(); T]; 2];
            for s in 0..nsub {
                pf.step();
                // Each row's scale as an i16 pair, the multiplier of `vpmaddwd`.
                let sc16: [__m256i; 2] = if SCALES {
                    let at = ((p * nblk + b) * nsub + s) * PANEL;
                    // Plain loops: closures here are not inlined into this AVX2 code.
                    let mut sc = [ones; 2];
                    if SMALL {
                        let sp = w.scales8[at..at + PANEL].as_ptr();
                        for (h, v) in sc.iter_mut().enumerate() {
                            *v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(sp.add(8 * h).cast()));
                        }
                    } else {
                        let sp = w.scales[at..at + PANEL].as_ptr();
                        for (h, v) in sc.iter_mut().enumerate() {
                            *v = _mm256_loadu_si256(sp.add(8 * h).cast());
                        }
                    }
                    for v in sc.iter_mut() {
                        *v = _mm256_blend_epi16::<0xAA>(*v, _mm256_slli_epi32::<16>(*v));
                    }
                    sc
                } else {
                    [ones; 2]
                };
                let k0 = b * block + s * SUB;
                if SIGN {
                    for g in 0..SUB / 4 {
                        let kk = k0 + 4 * g;
                        // kk + 4 <= k: the 64-byte line kk/4 of the panel and 4 bytes of
                        // each token row are in bounds.
                        let wv: [__m256i; 2] = std::array::from_fn(|h| {
                            _mm256_loadu_si256(qs.add(kk * PANEL + 32 * h).cast())
                        });
                        let wabs = wv.map(|v| _mm256_abs_epi8(v));
                        for t in 0..T {
                            let xb =
                                _mm256_set1_epi32(xq[t].add(kk).cast::<i32>().read_unaligned());
                            let xs = _mm256_xor_si256(xb, flip);
                            for h in 0..2 {
                                let p16 =
                                    _mm256_maddubs_epi16(wabs[h], _mm256_sign_epi8(xs, wv[h]));
                                bacc[h][t] =
                                    _mm256_add_epi32(bacc[h][t], _mm256_madd_epi16(p16, sc16[h]));
                            }
                        }
                    }
                } else {
                    for g in (0..SUB / 4).step_by(2) {
                        let kk = k0 + 4 * g;
                        // kk + 8 <= k (SUB is a multiple of 8): lines kk/4 and kk/4 + 1 (with
                        // NIB the low and high nibbles of line kk/8 of the half-size panel).
                        let (mut wa, mut wb) = ([ones; 2], [ones; 2]);
                        for h in 0..2 {
                            if NIB {
                                let v = _mm256_loadu_si256(qs.add(kk * PANEL / 2 + 32 * h).cast());
                                wa[h] = _mm256_and_si256(v, low4);
                                wb[h] = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low4);
                            } else {
                                wa[h] = _mm256_loadu_si256(qs.add(kk * PANEL + 32 * h).cast());
                                wb[h] =
                                    _mm256_loadu_si256(qs.add((kk + 4) * PANEL + 32 * h).cast());
                            }
                        }
                        for t in 0..T {
                            let xa =
                                _mm256_set1_epi32(xq[t].add(kk).cast::<i32>().read_unaligned());
                            let xb =
                                _mm256_set1_epi32(xq[t].add(kk + 4).cast::<i32>().read_unaligned());
                            for h in 0..2 {
                                // |each| <= 2 * 255 * 32: the i16 sum cannot overflow.
                                let p16 = _mm256_add_epi16(
                                    _mm256_maddubs_epi16(xa, wa[h]),
                                    _mm256_maddubs_epi16(xb, wb[h]),
                                );
                                bacc[h][t] =
                                    _mm256_add_epi32(bacc[h][t], _mm256_madd_epi16(p16, sc16[h]));
                            }
                        }
                    }
                }
            }
            fold_block::<T, MINS>(w, a, p, b, t0, !SIGN, &bacc, &mut facc);
        }
        store_panel(out, t0, p, &facc);
    }
}

/// One AVX-VNNI tile: panel `p`, tokens `t0..t0 + T`, all of K; `vpdpbusd` sums per
/// sub-block, scaled by a 32-bit multiply into the block accumulator.
///
/// # Safety
/// AVX2 + AVX-VNNI; `p < w.panels`, `t0 + T <= out.t`, `a` prepared for `w`.
#[inline(always)]
unsafe fn tile_vnni<const T: usize, const SUB: usize, const SCALES: bool, const MINS: bool>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    t0: usize,
    out: Out,
    qs: *const i8,
) {
    let k = w.k;
    let block = w.kind.block();
    let nblk = k / block;
    let nsub = block / SUB;
    debug_assert!(p < w.panels && t0 + T <= out.t);
    debug_assert!(a.q.len() >= (t0 + T) * k && a.d.len() >= (t0 + T) * nblk);
    let xq: [*const u8; T] = std::array::from_fn(|t| a.q[(t0 + t) * k..].as_ptr());
    // SAFETY: AVX2 + AVX-VNNI are enabled in every caller of this inlined body.
    unsafe {
        let mut facc = [[_mm256_setzero_ps(); T]; 2];
        for b in 0..nblk {
            let mut bacc = [[_mm256_setzero_si256(); T]; 2];
            for s in 0..nsub {
                // Two accumulator sets, even and odd groups: 4T chains hide the latency of
                // `vpdpbusd` (about 5 cycles on 2 ports).
                let mut dacc = [[[_mm256_setzero_si256(); T]; 2]; 2];
                let k0 = b * block + s * SUB;
                for g in 0..SUB / 4 {
                    let kk = k0 + 4 * g;
                    let set = &mut dacc[g % 2];
                    // kk + 4 <= k: as in `tile_madd`.
                    let wv: [__m256i; 2] = std::array::from_fn(|h| {
                        _mm256_loadu_si256(qs.add(kk * PANEL + 32 * h).cast())
                    });
                    for t in 0..T {
                        let xb = _mm256_set1_epi32(xq[t].add(kk).cast::<i32>().read_unaligned());
                        for h in 0..2 {
                            set[h][t] = _mm256_dpbusd_avx_epi32(set[h][t], xb, wv[h]);
                        }
                    }
                }
                let [even, odd] = dacc;
                let dacc: [[__m256i; T]; 2] = std::array::from_fn(|h| {
                    std::array::from_fn(|t| _mm256_add_epi32(even[h][t], odd[h][t]))
                });
                if SCALES {
                    let at = ((p * nblk + b) * nsub + s) * PANEL;
                    let sp = w.scales[at..at + PANEL].as_ptr();
                    for h in 0..2 {
                        let sc = _mm256_loadu_si256(sp.add(8 * h).cast());
                        for t in 0..T {
                            bacc[h][t] =
                                _mm256_add_epi32(bacc[h][t], _mm256_mullo_epi32(dacc[h][t], sc));
                        }
                    }
                } else {
                    bacc = dacc;
                }
            }
            fold_block::<T, MINS>(w, a, p, b, t0, true, &bacc, &mut facc);
        }
        store_panel(out, t0, p, &facc);
    }
}

/// Folds block `b`'s integer sums into the float accumulators, as [`crate::gemm`] orders
/// it: `acc + (d_w * d_x) * (isum - corr)`, then `acc - (dmin_w * d_x) * msum`. `biased`:
/// the sums came from biased activations and carry the packing-time correction.
///
/// # Safety
/// AVX2; the tile bounds of the callers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fold_block<const T: usize, const MINS: bool>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    b: usize,
    t0: usize,
    biased: bool,
    bacc: &[[__m256i; T]; 2],
    facc: &mut [[__m256; T]; 2],
) {
    let nblk = w.k / w.kind.block();
    let pb = (p * nblk + b) * PANEL;
    // SAFETY: AVX2 is enabled in every caller; the indices are within the panel's blocks
    // and the tile's token rows.
    unsafe {
        for h in 0..2 {
            let corr = if biased {
                _mm256_loadu_si256(w.corr[pb..pb + PANEL].as_ptr().add(8 * h).cast())
            } else {
                _mm256_setzero_si256()
            };
            let dv = _mm256_loadu_ps(w.d[pb..pb + PANEL].as_ptr().add(8 * h));
            for t in 0..T {
                let xd = _mm256_set1_ps(a.d[(t0 + t) * nblk + b]);
                let isum = _mm256_sub_epi32(bacc[h][t], corr);
                let dd = _mm256_mul_ps(dv, xd);
                facc[h][t] = _mm256_add_ps(facc[h][t], _mm256_mul_ps(dd, _mm256_cvtepi32_ps(isum)));
            }
            if MINS {
                let dmv = _mm256_loadu_ps(w.dmin[pb..pb + PANEL].as_ptr().add(8 * h));
                // The small form's mins are i8, in the same order.
                let m: [__m256i; 4] = if w.small {
                    let mp = w.mins8[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
                    std::array::from_fn(|q| {
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(mp.add(q * 2 * PANEL + 16 * h).cast()))
                    })
                } else {
                    let mp = w.mins[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
                    std::array::from_fn(|q| {
                        _mm256_loadu_si256(mp.add(q * 2 * PANEL + 16 * h).cast())
                    })
                };
                for t in 0..T {
                    let xs = a.sums[((t0 + t) * nblk + b) * 8..][..8]
                        .as_ptr()
                        .cast::<i32>();
                    let mut msum = _mm256_setzero_si256();
                    for (q, mq) in m.iter().enumerate() {
                        let pair = _mm256_set1_epi32(xs.add(q).read_unaligned());
                        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(*mq, pair));
                    }
                    let xd = _mm256_set1_ps(a.d[(t0 + t) * nblk + b]);
                    let dm = _mm256_mul_ps(dmv, xd);
                    facc[h][t] =
                        _mm256_sub_ps(facc[h][t], _mm256_mul_ps(dm, _mm256_cvtepi32_ps(msum)));
                }
            }
        }
    }
}

/// # Safety
/// AVX; `t0 + T <= out.t`; panel `p` belongs to the calling task.
#[inline(always)]
unsafe fn store_panel<const T: usize>(out: Out, t0: usize, p: usize, rows: &[[__m256; T]; 2]) {
    let valid = out.valid(p);
    for t in 0..T {
        // SAFETY: row t0 + t exists and panel p is ours; at most `valid` columns written.
        unsafe {
            let dst = out.at(t0 + t, p);
            if valid == PANEL {
                _mm256_storeu_ps(dst, rows[0][t]);
                _mm256_storeu_ps(dst.add(8), rows[1][t]);
            } else {
                let mut tmp = [0.0f32; PANEL];
                _mm256_storeu_ps(tmp.as_mut_ptr(), rows[0][t]);
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8), rows[1][t]);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, valid);
            }
        }
    }
}

/// The valid columns of panel `p` for rows `t0..t0 + T` (zero in the others).
///
/// # Safety
/// AVX; `t0 + T <= out.t`; panel `p` belongs to the calling task.
#[inline(always)]
unsafe fn load_panel<const T: usize>(out: Out, t0: usize, p: usize, rows: &mut [[__m256; T]; 2]) {
    let valid = out.valid(p);
    for t in 0..T {
        let mut tmp = [0.0f32; PANEL];
        // SAFETY: row t0 + t exists and panel p is ours; at most `valid` columns read.
        unsafe {
            std::ptr::copy_nonoverlapping(out.at(t0 + t, p), tmp.as_mut_ptr(), valid);
            rows[0][t] = _mm256_loadu_ps(tmp.as_ptr());
            rows[1][t] = _mm256_loadu_ps(tmp.as_ptr().add(8));
        }
    }
}

/// AVX2 + FMA float GEMM over panels `p0..p0 + np` (added to `out` when `ACC`).
///
/// # Safety
/// See [`crate::gemm::FloatKernel`]; needs AVX2 + FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn float_panels<const ACC: bool>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    if !w.w16.is_empty() {
        // SAFETY: the caller's contract, and F16C with it: narrow weights reach this kernel
        // only where it is present (`crate::gemm`).
        return unsafe { float_panels_narrow::<ACC>(w, x, p0, np, out) };
    }
    // SAFETY: the caller's contract (AVX2 + FMA enabled here).
    unsafe { float_tiles::<ACC, F32>(w, x, p0, np, out) }
}

/// The token tiles of panels `p0..p0 + np` over weights of the form `W`.
///
/// # Safety
/// As [`ftile`], inlined into callers with its features.
#[inline(always)]
unsafe fn float_tiles<const ACC: bool, const W: u8>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    for p in p0..p0 + np {
        let mut t0 = 0;
        while t0 < out.t {
            let tt = (out.t - t0).min(TF);
            // SAFETY: the caller's contract; tile bounds checked here.
            unsafe {
                match tt {
                    4 => ftile::<4, ACC, W>(w, x, p, t0, out),
                    3 => ftile::<3, ACC, W>(w, x, p, t0, out),
                    2 => ftile::<2, ACC, W>(w, x, p, t0, out),
                    _ => ftile::<1, ACC, W>(w, x, p, t0, out),
                }
            }
            t0 += tt;
        }
    }
}

/// [`float_panels`] over F16 or BF16 weights held as 16 bits ([`FloatPacked::w16`]), each
/// line widened as it is loaded (exactly: the f32 form's values and results).
///
/// # Safety
/// As [`float_panels`], and F16C; `w.w16` holds the weights.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn float_panels_narrow<const ACC: bool>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    // SAFETY: the caller's contract (AVX2 + FMA + F16C enabled here).
    unsafe {
        if w.round == FloatRound::Bf16 {
            float_tiles::<ACC, BF16>(w, x, p0, np, out)
        } else {
            float_tiles::<ACC, F16>(w, x, p0, np, out)
        }
    }
}

/// # Safety
/// AVX2 + FMA, and F16C for `W = F16`; `p < w.panels`, `t0 + T <= out.t`, `x` is
/// `out.t x w.k`; `W` is `w`'s form.
#[inline(always)]
unsafe fn ftile<const T: usize, const ACC: bool, const W: u8>(
    w: &FloatPacked,
    x: &[f32],
    p: usize,
    t0: usize,
    out: Out,
) {
    let k = w.k;
    debug_assert!(p < w.panels && x.len() >= (t0 + T) * k);
    debug_assert!((W == F32) == w.w16.is_empty());
    let (wp, wh) = w.panel_ptrs(p);
    let xp: [*const f32; T] = std::array::from_fn(|t| x[(t0 + t) * k..].as_ptr());
    // SAFETY: AVX2 is enabled in every caller of this inlined body (the contract).
    let mut acc = [[unsafe { _mm256_setzero_ps() }; T]; 2];
    if ACC {
        // SAFETY: as for the store below.
        unsafe { load_panel(out, t0, p, &mut acc) };
    }
    for kk in 0..k {
        // SAFETY: kk < k: one 16-float line of the panel and one float per token row; the
        // features of the callers (AVX2 + FMA, F16C where `W` is F16).
        unsafe {
            let wv: [__m256; 2] = std::array::from_fn(|h| match W {
                F32 => _mm256_loadu_ps(wp.add(kk * PANEL + 8 * h)),
                F16 => _mm256_cvtph_ps(_mm_loadu_si128(wh.add(kk * PANEL + 8 * h).cast())),
                _ => _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(
                    _mm_loadu_si128(wh.add(kk * PANEL + 8 * h).cast()),
                ))),
            });
            for t in 0..T {
                let xb = _mm256_set1_ps(*xp[t].add(kk));
                for h in 0..2 {
                    acc[h][t] = _mm256_fmadd_ps(wv[h], xb, acc[h][t]);
                }
            }
        }
    }
    // SAFETY: as in `tile`.
    unsafe { store_panel(out, t0, p, &acc) };
}
