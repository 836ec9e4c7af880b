//! aarch64 microkernels over the same packed panels as every other path: plain NEON
//! (`smull` + `sadalp`), FEAT_DotProd (`sdot`) and FEAT_I8MM (`smmla`). They multiply
//! signed weights by the signed activation copy ([`Acts::signed`]), so their integer sums
//! need no bias correction; every sum is exact and the float folding is the one of
//! [`crate::gemm`] (multiply, then add, no fusing), so results are bit-identical to the
//! scalar path. `sdot` and `smmla` are emitted with inline assembly: their intrinsics are
//! not stable Rust yet.
//!
//! A tile is one 16-row panel x T tokens. Each engine computes a sub-block's dot products
//! as `[token][row quad]` i32 vectors; the scale, block and float steps are shared.

use std::arch::aarch64::*;
use std::arch::asm;

use crate::acts::{Acts, FloatRound};
use crate::blocks::QuantKind;
use crate::out::Out;
use crate::packed::wform::{BF16, F16, F32};
use crate::packed::{FloatPacked, PANEL, QuantPacked};

/// Tokens per float tile (16 accumulators of the 32 vector registers).
const TF: usize = 4;

/// Plain-NEON quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs NEON; `a.signed` prepared.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn quant_panels_neon(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    // SAFETY: NEON enabled here; the rest is this function's contract.
    unsafe { drive::<Smull, 2>(w, a, p0, np, out) }
}

/// FEAT_DotProd quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs NEON + DotProd; `a.signed` prepared.
#[target_feature(enable = "neon,dotprod")]
pub(crate) unsafe fn quant_panels_dot(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    // SAFETY: NEON + DotProd enabled here; the rest is this function's contract.
    unsafe { drive::<Sdot, 3>(w, a, p0, np, out) }
}

/// FEAT_I8MM quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs NEON + DotProd + I8MM; `a.signed` prepared.
#[target_feature(enable = "neon,dotprod,i8mm")]
pub(crate) unsafe fn quant_panels_i8mm(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    // SAFETY: NEON + I8MM enabled here; the rest is this function's contract.
    unsafe { drive::<Smmla, 2>(w, a, p0, np, out) }
}

/// # Safety
/// Inlined only into the entry points above, whose target features `E` needs.
#[inline(always)]
unsafe fn drive<E: Engine, const TT: usize>(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    np: usize,
    out: Out,
) {
    macro_rules! go {
        ($p:expr, $sub:literal, $sc:literal, $mins:literal) => {{
            let mut t0 = 0;
            while t0 < out.t {
                let tt = (out.t - t0).min(TT);
                // SAFETY: the caller's contract; tile bounds checked here.
                unsafe {
                    match tt {
                        3 => tile::<E, 3, $sub, $sc, $mins>(w, a, $p, t0, out),
                        2 => tile::<E, 2, $sub, $sc, $mins>(w, a, $p, t0, out),
                        _ => tile::<E, 1, $sub, $sc, $mins>(w, a, $p, t0, out),
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

/// How one path forms a sub-block's dot products.
trait Engine {
    /// `out[t][i]` = for rows `4i..4i + 4` of the panel at `qs`, the dot of weights
    /// `k0..k0 + SUB` with token `t`'s signed activations at `x[t]`.
    ///
    /// # Safety
    /// The engine's target features; `qs` is a panel and `x[t]` token rows holding
    /// `k0 + SUB` elements.
    unsafe fn sub_dot<const T: usize, const SUB: usize>(
        qs: *const i8,
        x: &[*const i8; T],
        k0: usize,
    ) -> [[int32x4_t; 4]; T];
}

/// Four signed activations broadcast to every 32-bit lane.
///
/// # Safety
/// NEON; `p` points at 4 readable bytes.
#[inline(always)]
unsafe fn bcast4(p: *const i8) -> int8x16_t {
    // SAFETY: the caller's contract.
    unsafe { vreinterpretq_s8_s32(vdupq_n_s32(p.cast::<i32>().read_unaligned())) }
}

/// Row quads `0..4` of the packed line holding weights `kk..kk + 4`.
///
/// # Safety
/// NEON; the line is inside the panel.
#[inline(always)]
unsafe fn line(qs: *const i8, kk: usize) -> [int8x16_t; 4] {
    // SAFETY: the caller's contract: 64 bytes from `kk * PANEL`.
    std::array::from_fn(|i| unsafe { vld1q_s8(qs.add(kk * PANEL + 16 * i)) })
}

/// `smull` + `sadalp`: i16 products (|w x| <= 128 * 128 fits), pairwise-added into i32.
struct Smull;

impl Engine for Smull {
    #[inline(always)]
    unsafe fn sub_dot<const T: usize, const SUB: usize>(
        qs: *const i8,
        x: &[*const i8; T],
        k0: usize,
    ) -> [[int32x4_t; 4]; T] {
        // SAFETY: NEON (the caller's contract), reads inside the panel and the rows.
        unsafe {
            // [t][i][half]: lanes (row, pair of k) for rows 4i, 4i+1 (half 0) or 4i+2, 4i+3.
            let mut part = [[[vdupq_n_s32(0); 2]; 4]; T];
            for g in 0..SUB / 4 {
                let kk = k0 + 4 * g;
                let wq = line(qs, kk);
                for t in 0..T {
                    let xb = bcast4(x[t].add(kk));
                    for i in 0..4 {
                        let lo = vmull_s8(vget_low_s8(wq[i]), vget_low_s8(xb));
                        let hi = vmull_high_s8(wq[i], xb);
                        part[t][i][0] = vpadalq_s16(part[t][i][0], lo);
                        part[t][i][1] = vpadalq_s16(part[t][i][1], hi);
                    }
                }
            }
            part.map(|quads| quads.map(|[lo, hi]| vpaddq_s32(lo, hi)))
        }
    }
}

/// `sdot`: four products per 32-bit lane.
struct Sdot;

/// `acc + sdot(w, x)` lane by lane.
///
/// # Safety
/// FEAT_DotProd.
#[inline(always)]
unsafe fn sdot(mut acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: `sdot` only reads and writes these registers; the caller has DotProd.
    unsafe {
        asm!("sdot {acc:v}.4s, {w:v}.16b, {x:v}.16b",
             acc = inout(vreg) acc, w = in(vreg) w, x = in(vreg) x,
             options(pure, nomem, nostack, preserves_flags));
    }
    acc
}

impl Engine for Sdot {
    #[inline(always)]
    unsafe fn sub_dot<const T: usize, const SUB: usize>(
        qs: *const i8,
        x: &[*const i8; T],
        k0: usize,
    ) -> [[int32x4_t; 4]; T] {
        // SAFETY: NEON + DotProd (the caller's contract), reads inside the panel and rows.
        unsafe {
            let mut acc = [[vdupq_n_s32(0); 4]; T];
            for g in 0..SUB / 4 {
                let kk = k0 + 4 * g;
                let wq = line(qs, kk);
                for t in 0..T {
                    let xb = bcast4(x[t].add(kk));
                    for i in 0..4 {
                        acc[t][i] = sdot(acc[t][i], wq[i], xb);
                    }
                }
            }
            acc
        }
    }
}

/// `smmla`: a 2x8 by 8x2 product (two tokens x two rows) per instruction.
struct Smmla;

/// `acc + a . b^T` for `a` two rows of 8 activations, `b` two rows of 8 weights: lanes
/// `[a0.b0, a0.b1, a1.b0, a1.b1]`.
///
/// # Safety
/// FEAT_I8MM.
#[inline(always)]
unsafe fn smmla(mut acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // SAFETY: `smmla` only reads and writes these registers; the caller has I8MM.
    unsafe {
        asm!("smmla {acc:v}.4s, {a:v}.16b, {b:v}.16b",
             acc = inout(vreg) acc, a = in(vreg) a, b = in(vreg) b,
             options(pure, nomem, nostack, preserves_flags));
    }
    acc
}

impl Engine for Smmla {
    #[inline(always)]
    unsafe fn sub_dot<const T: usize, const SUB: usize>(
        qs: *const i8,
        x: &[*const i8; T],
        k0: usize,
    ) -> [[int32x4_t; 4]; T] {
        // SAFETY: NEON + I8MM (the caller's contract), reads inside the panel and rows.
        unsafe {
            // Tokens in pairs (a lone last token is paired with itself); per pair, [j] holds
            // rows 2j, 2j + 1 for both tokens.
            let pairs = T.div_ceil(2);
            let mut acc = [[vdupq_n_s32(0); 8]; 2];
            for g in 0..SUB / 8 {
                let kk = k0 + 8 * g;
                let (l0, l1) = (line(qs, kk), line(qs, kk + 4));
                // Rows (2j, 2j + 1), 8 weights each: row r of line kk then of line kk + 4.
                let b: [int8x16_t; 8] = std::array::from_fn(|j| {
                    let (q0, q1) = (
                        vreinterpretq_s32_s8(l0[j / 2]),
                        vreinterpretq_s32_s8(l1[j / 2]),
                    );
                    vreinterpretq_s8_s32(if j % 2 == 0 {
                        vzip1q_s32(q0, q1)
                    } else {
                        vzip2q_s32(q0, q1)
                    })
                });
                for (pi, pacc) in acc.iter_mut().enumerate().take(pairs) {
                    let (t0, t1) = (2 * pi, (2 * pi + 1).min(T - 1));
                    let av = vcombine_s8(vld1_s8(x[t0].add(kk)), vld1_s8(x[t1].add(kk)));
                    for j in 0..8 {
                        pacc[j] = smmla(pacc[j], av, b[j]);
                    }
                }
            }
            // Back to [token][row quad]: quad i is rows 4i..4i + 4 = pair entries 2i, 2i + 1.
            std::array::from_fn(|t| {
                std::array::from_fn(|i| {
                    let (e0, e1) = (
                        vreinterpretq_s64_s32(acc[t / 2][2 * i]),
                        vreinterpretq_s64_s32(acc[t / 2][2 * i + 1]),
                    );
                    vreinterpretq_s32_s64(if t % 2 == 0 {
                        vzip1q_s64(e0, e1)
                    } else {
                        vzip2q_s64(e0, e1)
                    })
                })
            })
        }
    }
}

/// One tile: panel `p`, tokens `t0..t0 + T`, all of K.
///
/// # Safety
/// The target features of `E`; `p < w.panels`, `t0 + T <= out.t`, `a` prepared for `w`
/// with its signed copy.
#[inline(always)]
unsafe fn tile<
    E: Engine,
    const T: usize,
    const SUB: usize,
    const SCALES: bool,
    const MINS: bool,
>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    t0: usize,
    out: Out,
) {
    let k = w.k;
    let block = w.kind.block();
    let nblk = k / block;
    let nsub = block / SUB;
    debug_assert!(p < w.panels && t0 + T <= out.t);
    debug_assert!(a.signed.len() >= (t0 + T) * k && a.d.len() >= (t0 + T) * nblk);
    let qs = w.qs[p * PANEL * k..].as_ptr();
    let x: [*const i8; T] = std::array::from_fn(|t| a.signed[(t0 + t) * k..].as_ptr().cast::<i8>());
    // SAFETY: NEON and the engine's features are enabled in every caller of this inlined
    // body; every index below is inside the panel's blocks and the tile's token rows.
    unsafe {
        let mut facc = [[vdupq_n_f32(0.0); 4]; T];
        for b in 0..nblk {
            let mut bacc = [[vdupq_n_s32(0); 4]; T];
            for s in 0..nsub {
                let dacc = E::sub_dot::<T, SUB>(qs, &x, b * block + s * SUB);
                if SCALES {
                    let at = ((p * nblk + b) * nsub + s) * PANEL;
                    let sp = w.scales[at..at + PANEL].as_ptr();
                    for i in 0..4 {
                        let sc = vld1q_s32(sp.add(4 * i));
                        for t in 0..T {
                            bacc[t][i] = vmlaq_s32(bacc[t][i], dacc[t][i], sc);
                        }
                    }
                } else {
                    bacc = dacc;
                }
            }
            let pb = (p * nblk + b) * PANEL;
            for i in 0..4 {
                let dv = vld1q_f32(w.d[pb..pb + PANEL].as_ptr().add(4 * i));
                for t in 0..T {
                    let xd = vdupq_n_f32(a.d[(t0 + t) * nblk + b]);
                    let dd = vmulq_f32(dv, xd);
                    let isum = vcvtq_f32_s32(bacc[t][i]);
                    facc[t][i] = vaddq_f32(facc[t][i], vmulq_f32(dd, isum));
                }
            }
            if MINS {
                let mp = w.mins[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
                for i in 0..4 {
                    let dmv = vld1q_f32(w.dmin[pb..pb + PANEL].as_ptr().add(4 * i));
                    // Pair q: [row][2] mins for rows 4i..4i + 4.
                    let m: [int16x8_t; 4] =
                        std::array::from_fn(|q| vld1q_s16(mp.add(q * 2 * PANEL + 8 * i)));
                    for t in 0..T {
                        let xs = a.sums[((t0 + t) * nblk + b) * 8..][..8]
                            .as_ptr()
                            .cast::<i32>();
                        let mut msum = vdupq_n_s32(0);
                        for (q, mq) in m.iter().enumerate() {
                            let pair =
                                vreinterpretq_s16_s32(vdupq_n_s32(xs.add(q).read_unaligned()));
                            let lo = vmull_s16(vget_low_s16(*mq), vget_low_s16(pair));
                            let hi = vmull_high_s16(*mq, pair);
                            msum = vaddq_s32(msum, vpaddq_s32(lo, hi));
                        }
                        let xd = vdupq_n_f32(a.d[(t0 + t) * nblk + b]);
                        let dm = vmulq_f32(dmv, xd);
                        facc[t][i] = vsubq_f32(facc[t][i], vmulq_f32(dm, vcvtq_f32_s32(msum)));
                    }
                }
            }
        }
        store_panel(out, t0, p, &facc);
    }
}

/// # Safety
/// NEON; `t0 + T <= out.t`; panel `p` belongs to the calling task.
#[inline(always)]
unsafe fn store_panel<const T: usize>(out: Out, t0: usize, p: usize, rows: &[[float32x4_t; 4]; T]) {
    let valid = out.valid(p);
    for (t, row) in rows.iter().enumerate() {
        let mut tmp = [0.0f32; PANEL];
        // SAFETY: row t0 + t exists and panel p is ours; at most `valid` columns written.
        unsafe {
            for (i, v) in row.iter().enumerate() {
                vst1q_f32(tmp.as_mut_ptr().add(4 * i), *v);
            }
            std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.at(t0 + t, p), valid);
        }
    }
}

/// NEON float GEMM over panels `p0..p0 + np` (added to `out` when `ACC`): `fmla`, the
/// fused multiply-add of the scalar path's `mul_add`. F16 and BF16 weights held as 16 bits
/// ([`FloatPacked::w16`]) are widened line by line as they are loaded (exactly: the f32
/// form's values, so its results), so they stay the file's size in memory.
///
/// # Safety
/// See [`crate::gemm::FloatKernel`]; needs NEON.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn float_panels<const ACC: bool>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    // SAFETY: the caller's contract; `W` names the form `w` holds.
    unsafe {
        if w.w16.is_empty() {
            float_tiles::<ACC, F32>(w, x, p0, np, out)
        } else if w.round == FloatRound::Bf16 {
            float_tiles::<ACC, BF16>(w, x, p0, np, out)
        } else {
            float_tiles::<ACC, F16>(w, x, p0, np, out)
        }
    }
}

/// The token tiles of panels `p0..p0 + np` over weights of the form `W`.
///
/// # Safety
/// As [`ftile`].
#[target_feature(enable = "neon")]
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

/// Four f16 values (bits at `p`) widened to f32 with `fcvtl` (base AdvSIMD; exact).
///
/// # Safety
/// NEON; 4 readable `u16` at `p`.
#[inline(always)]
unsafe fn f16x4(p: *const u16) -> float32x4_t {
    let wide: float32x4_t;
    // SAFETY: 8 readable bytes at `p` (the contract); `fcvtl` only reads and writes these
    // registers. Its intrinsic (`vcvt_f32_f16`) needs the unstable f16 vector types.
    unsafe {
        let h = vld1_u16(p);
        asm!("fcvtl {o:v}.4s, {i:v}.4h", o = lateout(vreg) wide, i = in(vreg) h,
             options(pure, nomem, nostack, preserves_flags));
    }
    wide
}

/// # Safety
/// NEON; `p < w.panels`, `t0 + T <= out.t`, `x` is `out.t x w.k`; `W` is `w`'s form.
#[target_feature(enable = "neon")]
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
    let valid = out.valid(p);
    let mut acc = [[vdupq_n_f32(0.0); 4]; T];
    if ACC {
        for (t, row) in acc.iter_mut().enumerate() {
            let mut tmp = [0.0f32; PANEL];
            // SAFETY: row t0 + t exists and panel p is ours; `valid` columns read.
            unsafe {
                std::ptr::copy_nonoverlapping(out.at(t0 + t, p), tmp.as_mut_ptr(), valid);
                for (i, v) in row.iter_mut().enumerate() {
                    *v = vld1q_f32(tmp.as_ptr().add(4 * i));
                }
            }
        }
    }
    for kk in 0..k {
        // SAFETY: kk < k: one 16-weight line of the panel (f32 or 16-bit, as `W` says) and
        // one float per token row.
        unsafe {
            let mut wv = [vdupq_n_f32(0.0); 4];
            for (i, v) in wv.iter_mut().enumerate() {
                *v = match W {
                    F32 => vld1q_f32(wp.add(kk * PANEL + 4 * i)),
                    F16 => f16x4(wh.add(kk * PANEL + 4 * i)),
                    // bf16 is the top half of an f32.
                    _ => vreinterpretq_f32_u32(vshll_n_u16::<16>(vld1_u16(
                        wh.add(kk * PANEL + 4 * i),
                    ))),
                };
            }
            for t in 0..T {
                let xb = vdupq_n_f32(*xp[t].add(kk));
                for i in 0..4 {
                    acc[t][i] = vfmaq_f32(acc[t][i], wv[i], xb);
                }
            }
        }
    }
    // SAFETY: as in `tile`.
    unsafe { store_panel(out, t0, p, &acc) };
}
