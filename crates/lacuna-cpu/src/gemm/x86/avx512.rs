//! AVX-512 VNNI microkernels: 512-bit `vpdpbusd` (biased u8 activations x signed int8
//! weights), register-blocked over 2 panels (32 weight rows) x 6 tokens, `vpdpwssd` for the
//! Q4_K/Q5_K min terms; the f32 fold of [`crate::gemm`] per block.

use std::arch::x86_64::*;

use super::prefetch::Prefetch;
use crate::acts::Acts;
use crate::acts::FloatRound;
use crate::blocks::QuantKind;
use crate::out::Out;
use crate::packed::wform::{BF16, F16, F32};
use crate::packed::{BITS5_SIGNED, FloatPacked, PANEL, QuantPacked, levels, planes};

/// Tokens per register tile (at most 6: the tiles the kernel instantiates). 2 panels x 6
/// tokens are 12 independent `vpdpbusd` chains, but the tile keeps three sets of
/// accumulators (sub-block, block and f32: 36 zmm at 2 x 6), so 6 tokens spill in the hot
/// loop; on AMD Zen 4, 2 x 4 (8 chains, no spill) is faster
/// (`bench-results/epyc-2c-avx512/ab/2026-12-06-tile-tokens-prefetch.json`). Other CPUs
/// keep 6 until measured.
const TT_AMD: usize = 4;
const TT: usize = 6;

/// [`TT_AMD`] on AMD CPUs, else [`TT`]; [`Tuning::tile_tokens`](crate::Tuning) sets
/// another (1 to 6).
fn tile_tokens() -> usize {
    static AT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AT.get_or_init(|| {
        crate::tuning::get()
            .tile_tokens
            .filter(|n| (1..=TT.max(TT_AMD)).contains(n))
            .unwrap_or(if crate::path::is_amd() { TT_AMD } else { TT })
    })
}
/// Tokens per register tile of the float kernel.
const TF: usize = 6;

/// The tokens of the next register tile when `left` remain: as many tiles as tiles of
/// `max` would need, of sizes differing by at most one (32 tokens run as 6+6+5+5+5+5, not
/// 6x5+2: a 2-token tile has too few independent chains to hide the dot latency).
#[inline(always)]
fn balanced(left: usize, max: usize) -> usize {
    left.div_ceil(left.div_ceil(max))
}

/// Canvases of at least this many tokens run a small matrix of planes, nibbles or level
/// indices ([`QuantPacked::planar`], [`QuantPacked::nib`], [`QuantPacked::lut`]) by rebuilding each pair of panels once
/// into the byte form ([`expand`]), then the byte kernel over every token tile: below it,
/// each tile rebuilds its lines itself (cheaper for a few tiles, no buffer written).
/// [`Tuning::expand_tokens`](crate::Tuning) sets another threshold.
const EXPAND_TOKENS: usize = 24;

/// [`EXPAND_TOKENS`], or the tuning's.
fn expand_tokens() -> usize {
    crate::tuning::get().expand_tokens.unwrap_or(EXPAND_TOKENS)
}

/// Canvases of at least this many tokens run Q8_0 in the half form through [`widened`]
/// (the others from [`expand_tokens`], where their weights are rebuilt too).
const WIDEN_TOKENS_Q8_0: usize = 8;

/// The token count from which a matrix of `kind` in the half form runs [`widened`]
/// ([`Tuning::widen_tokens_q8_0`](crate::Tuning) sets Q8_0's).
fn widen_tokens(kind: QuantKind) -> usize {
    if kind != QuantKind::Q8_0 {
        return expand_tokens();
    }
    crate::tuning::get()
        .widen_tokens_q8_0
        .unwrap_or(WIDEN_TOKENS_Q8_0)
}

thread_local! {
    /// Per-thread byte-form lines of the panels [`expand`] rebuilt: 64-byte aligned.
    static EXPANDED: std::cell::RefCell<Vec<__m512i>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread byte-form panels of a matrix in the half form ([`widened`]).
    static WIDENED: std::cell::RefCell<Option<QuantPacked>> = const { std::cell::RefCell::new(None) };
}

/// A matrix in the half form ([`QuantPacked::half`]) over [`widen_tokens`] or more tokens:
/// panels `p0..p0 + np` rebuilt into a per-thread byte-form buffer, weights (Q8_0's are
/// read in place) and constants (16-bit `corr` and `d`, or MXFP4's E8M0 bytes, and i8
/// scales widened), then the byte kernel over every token tile. Widening the 16-bit
/// constants in each tile's block fold needs registers the 2 x 6 accumulators hold, and
/// whether they spill depends on the register allocation of each build; where they did, the
/// widened route was faster, in the kernel bench and in a whole dual-cache step
/// (`bench-results/xeon-2c-amx/ab/2026-12-06-e8m0-widened-q8-0-acts.json`).
///
/// # Safety
/// As [`quant_panels`]; `w.half`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn widened(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    debug_assert!(w.half && p0 + np <= w.panels);
    WIDENED.with_borrow_mut(|buf| {
        // Empty until `reuse_as` sizes it (Q8_0's never holds weights).
        let wide = buf.get_or_insert_with(|| QuantPacked::byte_panels(w.kind, w.k, 0));
        // Q8_0's weights are read in place (below): no copy of them.
        wide.reuse_as(w.kind, w.k, np, w.kind != QuantKind::Q8_0);
        let stride = wide.panel_qs();
        let dst = wide.qs.as_mut_ptr();
        let mut at = None;
        // SAFETY: `wide` holds `np` byte panels of `stride = k * 16` bytes for every kind
        // but Q8_0 (which `expand` does not write); AVX-512 F/BW (this function's features);
        // the form is the matrix's.
        unsafe {
            match w.kind {
                QuantKind::Q2K => expand::<16, false, 2, false>(w, p0, np, dst, stride),
                QuantKind::Q5_0 => expand::<32, false, BITS5_SIGNED, false>(w, p0, np, dst, stride),
                QuantKind::Q5_1 => expand::<32, false, 5, false>(w, p0, np, dst, stride),
                QuantKind::Q4_1 => expand::<32, true, 0, false>(w, p0, np, dst, stride),
                _ if w.lut => expand::<32, true, 0, true>(w, p0, np, dst, stride),
                // Q8_0's weights are bytes already: read where they are.
                _ => at = Some(w.qs[p0 * stride..(p0 + np) * stride].as_ptr()),
            }
            widen_consts(w, p0, np, wide);
        }
        // SAFETY: the contract; `wide` holds the constants of panels p0.. of `w` as panels
        // 0.., in the byte form, and their weights (or `at` does); the view starts at column
        // p0 * 16 of `out`.
        unsafe { panels_at(wide, a, 0, np, out.panels_from(p0), at, (w, p0)) }
    })
}

/// The block constants (and sub-block scales) of panels `p0..p0 + np` of `w`, in the half
/// form, widened into panels `0..np` of the byte-form buffer `wide`: what
/// [`QuantPacked::expand_panel`] makes of them, 16 at a time.
///
/// # Safety
/// AVX-512 F/BW; `w.half`; `wide` is a byte-form buffer of `w`'s kind and `k` with at
/// least `np` panels.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen_consts(w: &QuantPacked, p0: usize, np: usize, wide: &mut QuantPacked) {
    debug_assert!(w.half && !wide.small && wide.panels >= np);
    let nblk = w.k / w.kind.block();
    let n = np * nblk * PANEL;
    let from = p0 * nblk * PANEL;
    for i in (0..n).step_by(PANEL) {
        // SAFETY: 16 values at `from + i` of each half array and at `i` of each byte-form
        // array (bounds-checked slices); AVX-512 F/BW (this function's features).
        unsafe {
            let c16 = _mm256_loadu_si256(w.corr16[from + i..][..PANEL].as_ptr().cast());
            let corr = _mm512_slli_epi32::<7>(_mm512_cvtepi16_epi32(c16));
            _mm512_storeu_si512(wide.corr[i..i + PANEL].as_mut_ptr().cast(), corr);
            _mm512_storeu_ps(wide.d[i..i + PANEL].as_mut_ptr(), half_scales(w, from + i));
        }
    }
    let ns = wide.scales.len().min(n * (w.kind.block() / w.kind.sub()));
    let sfrom = from * (w.kind.block() / w.kind.sub());
    for i in (0..ns).step_by(PANEL) {
        // SAFETY: as above, for the i8 scales and their i32 widening.
        unsafe {
            let s8 = _mm_loadu_si128(w.scales8[sfrom + i..][..PANEL].as_ptr().cast());
            let sc = _mm512_cvtepi8_epi32(s8);
            _mm512_storeu_si512(wide.scales[i..i + PANEL].as_mut_ptr().cast(), sc);
        }
    }
}

/// AVX-512 VNNI quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AVX-512 F/BW/VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    if w.half && out.t >= widen_tokens(w.kind) {
        // SAFETY: the contract; `w.half`.
        return unsafe { widened(w, a, p0, np, out) };
    }
    // SAFETY: the contract.
    unsafe { panels_at(w, a, p0, np, out, None, (w, p0)) }
}

/// [`quant_panels`], the byte form's weights of panel `p0 + r` read at `at + r * 16k`
/// instead of `w`'s panels when `at` is given. `ahead`: the matrix as held and the index
/// there of panel `p0` (`w` may be a widened copy): the tiles prefetch the `np` held panels
/// after these ([`Prefetch`]).
///
/// # Safety
/// As [`quant_panels`]; `at`, when given, holds `np` byte-form panels of `w`'s `k`, and `w`
/// is in the byte form.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn panels_at(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    np: usize,
    out: Out,
    at: Option<*const i8>,
    ahead: (&QuantPacked, usize),
) {
    // Token tiles over panels whose weights start at `src`, `stride` bytes a panel.
    macro_rules! run {
        ($sub:literal, $sc:literal, $mins:literal, $nib:literal, $small:literal, $bits:expr, $lut:literal, $src:expr, $stride:expr) => {{
            let (src, stride): (*const i8, usize) = ($src, $stride);
            // The next panels (of this thread, mostly) fetched over this pair's tiles.
            let tiles = out.t.div_ceil(tile_tokens());
            let mut pf = Prefetch::panels(ahead.0, ahead.1 + np, np, tiles * (w.k / $sub));
            let mut t0 = 0;
            while t0 < out.t {
                let tt = balanced(out.t - t0, tile_tokens());
                // SAFETY: same contract as this function; tile bounds checked here; `src`
                // holds `np` panels of `stride` bytes in the form the parameters name.
                unsafe {
                    match (np, tt) {
                        (2, 6) => tile::<2, 6, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (2, 5) => tile::<2, 5, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (2, 4) => tile::<2, 4, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (2, 3) => tile::<2, 3, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (2, 2) => tile::<2, 2, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (2, _) => tile::<2, 1, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, 6) => tile::<1, 6, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, 5) => tile::<1, 5, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, 4) => tile::<1, 4, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, 3) => tile::<1, 3, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, 2) => tile::<1, 2, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                        (_, _) => tile::<1, 1, $sub, $sc, $mins, $nib, $small, { $bits }, $lut>(
                            w, a, p0, t0, out, src, stride, &mut pf,
                        ),
                    }
                }
                t0 += tt;
            }
        }};
    }
    // The matrix's own panels.
    macro_rules! go {
        ($sub:literal, $sc:literal, $mins:literal) => {
            go!($sub, $sc, $mins, false, false, 0, false)
        };
        ($sub:literal, $sc:literal, $mins:literal, $nib:literal, $small:literal, $bits:expr, $lut:literal) => {{
            let stride = w.panel_qs();
            run!(
                $sub,
                $sc,
                $mins,
                $nib,
                $small,
                $bits,
                $lut,
                at.unwrap_or_else(|| w.qs[p0 * stride..].as_ptr()),
                stride
            )
        }};
    }
    // A matrix of planes, nibbles or level indices: over many tokens, its panels rebuilt once
    // into the byte form (the small form's constants stay where they are), else `go!`.
    macro_rules! rebuilt {
        ($sub:literal, $sc:literal, $mins:literal, $nib:literal, $bits:expr, $lut:literal) => {
            rebuilt!($sub, $sc, $mins, $nib, true, $bits, $lut)
        };
        ($sub:literal, $sc:literal, $mins:literal, $nib:literal, $small:literal, $bits:expr, $lut:literal) => {{
            if out.t >= expand_tokens() {
                EXPANDED.with_borrow_mut(|buf| {
                    let stride = w.k * PANEL;
                    buf.resize(np * stride / 64, _mm512_setzero_si512());
                    let dst = buf.as_mut_ptr().cast::<i8>();
                    // SAFETY: `buf` holds `np` panels of `stride` bytes; AVX-512 F/BW (this
                    // function's features); the form is the matrix's.
                    unsafe { expand::<$sub, $nib, { $bits }, $lut>(w, p0, np, dst, stride) };
                    run!(
                        $sub,
                        $sc,
                        $mins,
                        false,
                        $small,
                        0,
                        false,
                        dst.cast_const(),
                        stride
                    )
                })
            } else {
                go!($sub, $sc, $mins, $nib, $small, $bits, $lut)
            }
        }};
    }
    match w.kind {
        QuantKind::IQ4XS if w.lut => rebuilt!(32, true, false, true, 0, true),
        QuantKind::Q4K if w.small => rebuilt!(32, true, true, true, 0, false),
        QuantKind::Q5K if w.planar => rebuilt!(32, true, true, false, 5, false),
        QuantKind::Q5K if w.small => go!(32, true, true, false, true, 0, false),
        QuantKind::Q4K | QuantKind::Q5K => go!(32, true, true),
        QuantKind::Q6K if w.planar => rebuilt!(16, true, false, false, 6, false),
        QuantKind::Q3K if w.planar => rebuilt!(16, true, false, false, 3, false),
        // Q2_K's float offsets: `crate::gemm`.
        QuantKind::Q2K if w.planar => rebuilt!(16, true, false, false, 2, false),
        QuantKind::Q3K | QuantKind::Q6K if w.small => go!(16, true, false, false, true, 0, false),
        QuantKind::Q2K | QuantKind::Q3K | QuantKind::Q6K => go!(16, true, false),
        QuantKind::IQ4XS if w.small => go!(32, true, false, false, true, 0, false),
        QuantKind::IQ4XS => go!(32, true, false),
        // Level indices with 32-bit block constants (under `LACUNA_PLANAR_PANELS=1`, for
        // A/B): these fold from `corr` and `d` as the byte form does.
        QuantKind::Q4_0 | QuantKind::IQ4NL | QuantKind::MXFP4 if w.lut && !w.half => {
            rebuilt!(32, false, false, true, false, 0, true)
        }
        QuantKind::Q4_0 | QuantKind::IQ4NL | QuantKind::MXFP4 if w.lut => {
            rebuilt!(32, false, false, true, 0, true)
        }
        // Q5_0 in Q5_K's planes, less its bias ([`BITS5_SIGNED`]), with 16-bit constants.
        QuantKind::Q5_0 if w.planar => rebuilt!(32, false, false, false, BITS5_SIGNED, false),
        // Q5_1 in Q5_K's planes, Q4_1 two weights a byte (its float offsets: `crate::gemm`).
        QuantKind::Q5_1 if w.planar => rebuilt!(32, false, false, false, 5, false),
        QuantKind::Q4_1 if w.half => rebuilt!(32, false, false, true, 0, false),
        QuantKind::Q8_0 | QuantKind::Q4_0 | QuantKind::Q5_0 | QuantKind::IQ4NL if w.half => {
            go!(32, false, false, false, true, 0, false)
        }
        QuantKind::Q8_0
        | QuantKind::Q4_0
        | QuantKind::Q4_1
        | QuantKind::Q5_0
        | QuantKind::Q5_1
        | QuantKind::IQ4NL
        | QuantKind::MXFP4 => go!(32, false, false),
    }
}

/// Panels `p..p + np` of Q2_K's narrow float offsets ([`QuantPacked::mins4`] and
/// `dmin16`) widened into `into`, as [`QuantPacked::offsets_panels`] widens them (the same
/// bits: `(-dmin) * m` is `-(dmin * m)`), 32 at a time.
///
/// # Safety
/// AVX-512 F/BW; `w` is Q2_K in the planar form and holds panels `p..p + np`.
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn q2k_offsets(w: &QuantPacked, p: usize, np: usize, into: &mut FloatPacked) {
    let (kg, nblk) = (w.k / 16, w.k / 256);
    into.k = kg;
    into.panels = np;
    into.round = FloatRound::None;
    into.w.resize(np * PANEL * kg, 0.0);
    let mins4 = &w.mins4[p * PANEL * kg / 2..][..np * PANEL * kg / 2];
    let dmin16 = &w.dmin16[p * PANEL * nblk..][..np * PANEL * nblk];
    let low4 = _mm512_set1_epi32(15);
    let sign = _mm512_set1_epi32(i32::MIN);
    // Panel-blocks in order: 16 offsets (sub-blocks) of 16 rows each, from 8 pairs of mins.
    for (ib, (dm, w)) in dmin16
        .chunks_exact(PANEL)
        .zip(into.w.chunks_exact_mut(16 * PANEL))
        .enumerate()
    {
        // SAFETY: 16 u16 and 8 x 16 mins of this panel-block in bounds (sliced above);
        // 16 x 16 floats written into `w`; AVX-512 F/BW (this function's features).
        unsafe {
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(dm.as_ptr().cast()));
            let nd = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(d), sign));
            for j in 0..8 {
                let m = mins4[(ib * 8 + j) * PANEL..][..PANEL].as_ptr();
                let v = _mm512_cvtepu8_epi32(_mm_loadu_si128(m.cast()));
                let lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, low4));
                let hi = _mm512_cvtepi32_ps(_mm512_srli_epi32::<4>(v));
                let o = w.as_mut_ptr().add(2 * j * PANEL);
                _mm512_storeu_ps(o, _mm512_mul_ps(nd, lo));
                _mm512_storeu_ps(o.add(PANEL), _mm512_mul_ps(nd, hi));
            }
        }
    }
}

/// The constants that rebuild lines of 64 weights (4 columns of a panel's 16 rows) from a
/// small panel's bytes: `NIB`, `BITS` and `LUT` as for [`tile`].
pub(super) struct Lines<const NIB: bool, const BITS: usize, const LUT: bool> {
    /// The 16 levels in each 128-bit lane, for `vpshufb` (LUT only).
    table: __m512i,
    lomask: __m512i,
    hmask: __m512i,
    bias: __m512i,
    low4: __m512i,
}

// Inlined into the kernels (which enable AVX-512), as `BlockFold`.
impl<const NIB: bool, const BITS: usize, const LUT: bool> Lines<NIB, BITS, LUT> {
    /// `levels`: the matrix's 16 levels (read when LUT).
    ///
    /// # Safety
    /// AVX-512 F in the caller.
    #[inline(always)]
    pub(super) unsafe fn new(levels: &[i8; 16]) -> Self {
        let pl = planes(BITS);
        // SAFETY: register-only AVX-512 F operations, and 16 bytes read from a 16-byte
        // array (the caller's contract).
        unsafe {
            Lines {
                table: if LUT {
                    _mm512_broadcast_i32x4(_mm_loadu_si128(levels.as_ptr().cast()))
                } else {
                    _mm512_setzero_si512()
                },
                lomask: _mm512_set1_epi8(((1 << pl.lo) - 1) as i8),
                hmask: _mm512_set1_epi8((((1 << pl.hi) - 1) << pl.lo) as i8),
                bias: _mm512_set1_epi8(pl.bias),
                low4: _mm512_set1_epi8(0x0F),
            }
        }
    }

    /// Line `k0 / 4 + g` of the panel at `q` (its weights at columns `k0 + 4g..k0 + 4g + 4`,
    /// `k0` the first column of a sub-block of `SUB`), as the byte form holds it. Lines are
    /// asked in order from `g = 0` within each sub-block: `high` and `top` carry what one
    /// load serves to the next lines.
    ///
    /// # Safety
    /// AVX-512 F/BW in the caller; the panel at `q` is in this form and holds column
    /// `k0 + 4g + 3`.
    #[inline(always)]
    pub(super) unsafe fn line<const SUB: usize>(
        &self,
        q: *const i8,
        k0: usize,
        g: usize,
        high: &mut __m512i,
        top: &mut __m512i,
    ) -> __m512i {
        let kk = k0 + 4 * g;
        // A planar group of G lines is one sub-block (Q3_K: two), so line g of a sub is line
        // g of a group (Q3_K: line g + 4 * (which sub)).
        let pl = planes(BITS);
        let lo_lines = pl.lo_lines();
        let group_k = 4 * pl.group;
        // Q3_K's groups are two sub-blocks; Q2_K's (no high bits) one.
        debug_assert!(BITS == 0 || group_k == SUB * if pl.lo == 2 && pl.hi > 0 { 2 } else { 1 });
        // SAFETY: the 64-byte line kk/4 of the panel (with NIB, line kk/8 of its half-size
        // panel, kk a multiple of 8 there; with BITS, the bytes of group k0 / group_k) is
        // in bounds by the contract; AVX-512 F/BW by the contract.
        unsafe {
            if BITS != 0 {
                // Group k0 / group_k: its low lines (4 bits: g/2 holds lines g and g + 1;
                // 2 bits: line `sub` holds the 4 lines of this sub), then the high bits of
                // its lines (`Planes::hi_at`).
                let at = q.add(k0 / group_k * pl.lines() * 64);
                let sub = k0 % group_k / SUB;
                let lo = if pl.lo == 2 {
                    if g == 0 {
                        *high = _mm512_loadu_si512(at.add(sub * 64).cast());
                    }
                    let v = _mm512_srl_epi16(*high, _mm_set_epi64x(0, 2 * g as i64));
                    _mm512_and_si512(v, self.lomask)
                } else if g.is_multiple_of(2) {
                    let v = _mm512_loadu_si512(at.add(g / 2 * 64).cast());
                    *high = _mm512_and_si512(_mm512_srli_epi16::<4>(v), self.low4);
                    _mm512_and_si512(v, self.low4)
                } else {
                    *high
                };
                if pl.hi == 0 {
                    // Q2_K: the low bits are the weight.
                    return lo;
                }
                if g == 0 {
                    *top = _mm512_loadu_si512(at.add(lo_lines * 64).cast());
                }
                // The high bits of this line to bit `lo` and up (16-bit shifts: what
                // crosses a byte is masked off; by constants once unrolled but for Q3_K's
                // `sub`, whose direction is fixed by g).
                let pos = if pl.lo == 2 { 2 * g + sub } else { pl.hi * g };
                let up = pl.lo as i64 - pos as i64;
                let hi = if up > 0 {
                    _mm512_sll_epi16(*top, _mm_set_epi64x(0, up))
                } else {
                    _mm512_srl_epi16(*top, _mm_set_epi64x(0, -up))
                };
                // lo | (hi & hmask), less the bias.
                let u = _mm512_ternarylogic_epi32::<0xF8>(lo, hi, self.hmask);
                if pl.bias != 0 {
                    _mm512_sub_epi8(u, self.bias)
                } else {
                    u
                }
            } else if !NIB {
                _mm512_loadu_si512(q.add(kk * PANEL).cast())
            } else if g.is_multiple_of(2) {
                // Lines kk/4 (low nibbles) and kk/4 + 1 (high) at byte kk * 8.
                let v = _mm512_loadu_si512(q.add(kk * PANEL / 2).cast());
                let lo = _mm512_and_si512(v, self.low4);
                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(v), self.low4);
                if LUT {
                    *high = _mm512_shuffle_epi8(self.table, hi);
                    _mm512_shuffle_epi8(self.table, lo)
                } else {
                    *high = hi;
                    lo
                }
            } else {
                *high
            }
        }
    }
}

/// Panels `p0..p0 + np` of the small matrix `w` (planar or level indices: `NIB`, `BITS`,
/// `LUT` as for [`tile`]), rebuilt into the byte form's lines at `dst`, `stride` bytes a
/// panel: the bytes [`tile`] reads without those parameters.
///
/// # Safety
/// AVX-512 F/BW; the panels exist; `dst` holds `np * stride` writable bytes, `stride >=
/// w.k * PANEL`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn expand<const SUB: usize, const NIB: bool, const BITS: usize, const LUT: bool>(
    w: &QuantPacked,
    p0: usize,
    np: usize,
    dst: *mut i8,
    stride: usize,
) {
    debug_assert!(NIB == w.nib() && BITS == w.planar_bits() && LUT == w.lut);
    debug_assert!(p0 + np <= w.panels && stride >= w.k * PANEL);
    // SAFETY: AVX-512 F (this function's features).
    let lines = unsafe { Lines::<NIB, BITS, LUT>::new(levels(w.kind)) };
    let panel_bytes = w.panel_qs();
    for r in 0..np {
        let q = w.qs[(p0 + r) * panel_bytes..].as_ptr();
        // SAFETY: row r of `dst` holds `stride` bytes (the contract).
        let d = unsafe { dst.add(r * stride) };
        let (mut high, mut top) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for k0 in (0..w.k).step_by(SUB) {
            for g in 0..SUB / 4 {
                // SAFETY: panel p0 + r is in this form and holds column k0 + SUB - 1; line
                // (k0 + 4g) / 4 of `d` is within its `stride >= k * PANEL` bytes.
                unsafe {
                    let v = lines.line::<SUB>(q, k0, g, &mut high, &mut top);
                    _mm512_storeu_si512(d.add((k0 + 4 * g) * PANEL).cast(), v);
                }
            }
        }
    }
}

/// One register tile: panels `p0..p0+R`, tokens `t0..t0+T`, all of K, the weights of panel
/// `p0 + r` at `src + r * stride`. `SMALL`: the small form (`w.small`: i8 scales and mins,
/// widened when loaded); `NIB`: its Q4_K weights two to a byte, split into the two lines
/// they hold when loaded; `BITS` (3, 5 or 6, [`BITS5_SIGNED`], else 0): its Q3_K, Q5_K,
/// Q6_K or Q5_0 weights in bit planes (`w.planar`, [`QuantPacked::planar_bits`]), each line
/// rebuilt from a line of low bits and a line of high bits, less the form's bias;
/// `LUT` (with `NIB`): the nibbles are indices into the kind's 16 levels (`w.lut`), looked
/// up with `vpshufb`. A small matrix's weights rebuilt into bytes ([`expand`]) run with
/// `SMALL` alone. Each sub-block issues a step of `pf` (the panels after this pair, see
/// [`Prefetch`]), so the lines a rebuild reads are in L2 when it runs
/// (`bench-results/epyc-2c-avx512/ab/2026-12-06-tile-tokens-prefetch.json`).
///
/// # Safety
/// AVX-512 F/BW/VNNI; `p0 + R <= w.panels`, `t0 + T <= out.t`, `a` prepared for `w`; `src`
/// holds `R` panels `stride` bytes apart in the form the parameters name.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<
    const R: usize,
    const T: usize,
    const SUB: usize,
    const SCALES: bool,
    const MINS: bool,
    const NIB: bool,
    const SMALL: bool,
    const BITS: usize,
    const LUT: bool,
>(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    t0: usize,
    out: Out,
    src: *const i8,
    stride: usize,
    pf: &mut Prefetch,
) {
    let k = w.k;
    let block = w.kind.block();
    let nblk = k / block;
    let nsub = block / SUB;
    debug_assert!(p0 + R <= w.panels && t0 + T <= out.t);
    debug_assert!(a.q.len() >= (t0 + T) * k && a.d.len() >= (t0 + T) * nblk);
    debug_assert!((SMALL == w.small || !SCALES && !w.half) && (!LUT || (w.lut && NIB)));
    // 16-bit constants: the 32-weight formats' small form, and Q2_K's.
    debug_assert!(w.half == (SMALL && (!SCALES || w.half && w.kind == QuantKind::Q2K)));
    debug_assert!(
        (NIB == w.nib() && BITS == w.planar_bits()) || (!NIB && BITS == 0 && stride >= k * PANEL)
    );
    // SAFETY: AVX-512 F (this function's features).
    let lines = unsafe { Lines::<NIB, BITS, LUT>::new(levels(w.kind)) };
    // Plain loops, not `array::from_fn`: its closures are not inlined into this
    // AVX-512 function.
    let mut qs = [std::ptr::null::<i8>(); R];
    for (r, q) in qs.iter_mut().enumerate() {
        // SAFETY: panel r of the R at `src` (the contract).
        *q = unsafe { src.add(r * stride) };
    }
    let mut high = [_mm512_setzero_si512(); R];
    let mut top = [_mm512_setzero_si512(); R];
    let mut xq = [std::ptr::null::<u8>(); T];
    for (t, x) in xq.iter_mut().enumerate() {
        *x = a.q[(t0 + t) * k..].as_ptr();
    }
    let mut facc = [[_mm512_setzero_ps(); T]; R];
    for b in 0..nblk {
        let mut bacc = [[_mm512_setzero_si512(); T]; R];
        for s in 0..nsub {
            let mut dacc = [[_mm512_setzero_si512(); T]; R];
            pf.step();
            let k0 = b * block + s * SUB;
            for g in 0..SUB / 4 {
                let kk = k0 + 4 * g;
                // SAFETY: kk + 4 <= k: line kk/4 of each panel (its form's bytes, the
                // contract) and 4 bytes of each token row are in bounds.
                unsafe {
                    let mut wv = [_mm512_setzero_si512(); R];
                    for r in 0..R {
                        wv[r] = lines.line::<SUB>(qs[r], k0, g, &mut high[r], &mut top[r]);
                    }
                    for t in 0..T {
                        let xb = _mm512_set1_epi32(xq[t].add(kk).cast::<i32>().read_unaligned());
                        for r in 0..R {
                            dacc[r][t] = _mm512_dpbusd_epi32(dacc[r][t], xb, wv[r]);
                        }
                    }
                }
            }
            if SCALES {
                for r in 0..R {
                    let at = (((p0 + r) * nblk + b) * nsub + s) * PANEL;
                    // SAFETY: `scales` (`scales8` when SMALL) is [panel][k/sub][16]; `at + 16`
                    // is in bounds.
                    let sc = unsafe {
                        if SMALL {
                            let s8 = w.scales8[at..at + PANEL].as_ptr();
                            _mm512_cvtepi8_epi32(_mm_loadu_si128(s8.cast()))
                        } else {
                            _mm512_loadu_si512(w.scales[at..at + PANEL].as_ptr().cast())
                        }
                    };
                    for t in 0..T {
                        bacc[r][t] =
                            _mm512_add_epi32(bacc[r][t], _mm512_mullo_epi32(dacc[r][t], sc));
                    }
                }
            } else {
                bacc = dacc;
            }
        }
        for r in 0..R {
            // SAFETY: panel p0 + r and block b exist.
            // The half form is the small form without sub-block scales (the 32-weight
            // formats): chosen at compile time, so the block loop holds no branch on it.
            let fold = unsafe {
                if SMALL && !SCALES {
                    BlockFold::<MINS>::new_half(w, nblk, p0 + r, b)
                } else if SMALL {
                    BlockFold::<MINS>::new_small(w, nblk, p0 + r, b)
                } else {
                    BlockFold::<MINS>::new(w, nblk, p0 + r, b)
                }
            };
            for t in 0..T {
                let tb = (t0 + t) * nblk + b;
                let xs = if MINS {
                    &a.sums[tb * 8..][..8]
                } else {
                    &[][..]
                };
                // SAFETY: AVX-512 F/VNNI (this function's features); `xs` holds 8 sums
                // when MINS.
                facc[r][t] = unsafe { fold.apply(facc[r][t], bacc[r][t], a.d[tb], xs) };
            }
        }
    }
    for r in 0..R {
        // SAFETY: t0 + t < out.t and panel p0 + r belongs to this task.
        unsafe { store_panel(out, t0, p0 + r, &facc[r]) };
    }
}

/// One panel's weight constants of one block for the f32 fold of [`crate::gemm`]: shared by
/// this kernel and the AMX kernel, so the two fold identically.
#[derive(Clone, Copy)]
pub(super) struct BlockFold<const MINS: bool> {
    corr: __m512i,
    d: __m512,
    dmin: __m512,
    mins: [__m512i; 4],
}

/// The 16 scales `d` at `at` of a matrix in the half form ([`QuantPacked::half`]): its f16
/// `d16` widened, or MXFP4's E8M0 bytes `e8` as ggml's `GGML_E8M0_TO_FP32_HALF`,
/// `2^(e - 128)` (f32 bits `(e - 1) << 23`, subnormal `0x200000 << e` below e = 2).
///
/// # Safety
/// AVX-512 F/BW in the caller; `w.half`; 16 values at `at` (bounds-checked).
#[inline(always)]
pub(super) unsafe fn half_scales(w: &QuantPacked, at: usize) -> __m512 {
    // SAFETY: the slices are bounds-checked; AVX-512 F/BW by the contract.
    unsafe {
        if w.e8.is_empty() {
            _mm512_cvtph_ps(_mm256_loadu_si256(w.d16[at..at + PANEL].as_ptr().cast()))
        } else {
            let e = _mm512_cvtepu8_epi32(_mm_loadu_si128(w.e8[at..at + PANEL].as_ptr().cast()));
            let normal = _mm512_slli_epi32::<23>(_mm512_sub_epi32(e, _mm512_set1_epi32(1)));
            let tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x0020_0000), e);
            let below2 = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
            _mm512_castsi512_ps(_mm512_mask_blend_epi32(below2, normal, tiny))
        }
    }
}

// These helpers run inside the kernels' block loops: they are always inlined into the
// kernel (which enables AVX-512), never called. A call there costs more than the fold: every
// live zmm accumulator is caller-saved and spilled around it.
impl<const MINS: bool> BlockFold<MINS> {
    /// # Safety
    /// AVX-512 F in the caller; `nblk` is `w`'s blocks per row; panel `p` and block `b` of
    /// `w` exist.
    #[inline(always)]
    pub(super) unsafe fn new(w: &QuantPacked, nblk: usize, p: usize, b: usize) -> Self {
        let pb = (p * nblk + b) * PANEL;
        // SAFETY: AVX-512 F by the contract.
        let mut mins = [unsafe { _mm512_setzero_si512() }; 4];
        if MINS {
            let mp = w.mins[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
            for (q, mq) in mins.iter_mut().enumerate() {
                // SAFETY: `mins` is [panel][block][4][16][2]; pair q of this panel-block is
                // in bounds (sliced above); AVX-512 F by the contract.
                *mq = unsafe { _mm512_loadu_si512(mp.add(q * 2 * PANEL).cast()) };
            }
        }
        // SAFETY: the caller's contract.
        unsafe { Self::with_mins(w, pb, mins) }
    }

    /// [`BlockFold::new`] for a small matrix, whose mins are i8 (`mins8`, same order), or
    /// whose constants are 16-bit (Q2_K with [`QuantPacked::half`]: no mins).
    ///
    /// # Safety
    /// As [`BlockFold::new`], with AVX-512 BW too; `w.small`.
    #[inline(always)]
    pub(super) unsafe fn new_small(w: &QuantPacked, nblk: usize, p: usize, b: usize) -> Self {
        if !MINS && w.half {
            // SAFETY: the caller's contract; `w.half`.
            return unsafe { Self::new_half(w, nblk, p, b) };
        }
        let pb = (p * nblk + b) * PANEL;
        // SAFETY: AVX-512 F by the contract.
        let mut mins = [unsafe { _mm512_setzero_si512() }; 4];
        if MINS {
            let mp = w.mins8[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
            for (q, mq) in mins.iter_mut().enumerate() {
                // SAFETY: as in `new`, i8 instead of i16; AVX-512 F/BW by the contract.
                *mq = unsafe {
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256(mp.add(q * 2 * PANEL).cast()))
                };
            }
        }
        // SAFETY: the caller's contract.
        unsafe { Self::with_mins(w, pb, mins) }
    }

    /// [`BlockFold::new`] for a small matrix in the half form (`w.half`: the 32-weight
    /// formats and Q2_K, no mins), whose `corr` and `d` are 16-bit (`corr16`, `d16`).
    ///
    /// # Safety
    /// As [`BlockFold::new`]; `w.half`.
    #[inline(always)]
    pub(super) unsafe fn new_half(w: &QuantPacked, nblk: usize, p: usize, b: usize) -> Self {
        debug_assert!(w.half && !MINS);
        let pb = (p * nblk + b) * PANEL;
        // SAFETY: 16 values at `pb` of each (bounds-checked); AVX-512 F by the contract.
        unsafe {
            let c16 = _mm256_loadu_si256(w.corr16[pb..pb + PANEL].as_ptr().cast());
            BlockFold {
                corr: _mm512_slli_epi32::<7>(_mm512_cvtepi16_epi32(c16)),
                d: half_scales(w, pb),
                dmin: _mm512_setzero_ps(),
                mins: [_mm512_setzero_si512(); 4],
            }
        }
    }

    /// The block's other constants (at `pb`, its first of 16 rows) beside `mins`.
    ///
    /// # Safety
    /// AVX-512 F in the caller; `corr`, `d` (and `dmin` when MINS) hold `pb + 16` values.
    #[inline(always)]
    unsafe fn with_mins(w: &QuantPacked, pb: usize, mins: [__m512i; 4]) -> Self {
        // SAFETY: the slices are bounds-checked; AVX-512 F by the contract.
        unsafe {
            BlockFold {
                corr: _mm512_loadu_si512(w.corr[pb..pb + PANEL].as_ptr().cast()),
                d: _mm512_loadu_ps(w.d[pb..pb + PANEL].as_ptr()),
                dmin: if MINS {
                    _mm512_loadu_ps(w.dmin[pb..pb + PANEL].as_ptr())
                } else {
                    _mm512_setzero_ps()
                },
                mins,
            }
        }
    }

    /// One token's fold of this block into `acc`, in [`crate::gemm`]'s order:
    /// [`BlockFold::add_isum`], then (MINS) [`BlockFold::sub_mins`].
    ///
    /// # Safety
    /// AVX-512 F/VNNI in the caller; `xs` holds 8 values when MINS.
    #[inline(always)]
    pub(super) unsafe fn apply(&self, acc: __m512, isum: __m512i, xd: f32, xs: &[i16]) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe {
            let f = self.add_isum(acc, isum, xd);
            if MINS { self.sub_mins(f, xd, xs) } else { f }
        }
    }

    /// `acc + (d * xd) * (isum - corr)`.
    ///
    /// # Safety
    /// AVX-512 F in the caller.
    #[inline(always)]
    pub(super) unsafe fn add_isum(&self, acc: __m512, isum: __m512i, xd: f32) -> __m512 {
        // SAFETY: register-only AVX-512 F operations (the caller's contract).
        unsafe {
            let xd = _mm512_set1_ps(xd);
            let isum = _mm512_sub_epi32(isum, self.corr);
            _mm512_add_ps(
                acc,
                _mm512_mul_ps(_mm512_mul_ps(self.d, xd), _mm512_cvtepi32_ps(isum)),
            )
        }
    }

    /// `acc - (dmin * xd) * msum`, `msum` = the mins times the token's 8 sums `xs`.
    ///
    /// # Safety
    /// AVX-512 F/VNNI in the caller.
    #[inline(always)]
    pub(super) unsafe fn sub_mins(&self, acc: __m512, xd: f32, xs: &[i16]) -> __m512 {
        let xs = xs[..8].as_ptr().cast::<i32>();
        // SAFETY: pair q of the 8 sums (length checked by the slice above); AVX-512
        // F/VNNI by the contract.
        unsafe {
            let mut msum = _mm512_setzero_si512();
            for (q, mq) in self.mins.iter().enumerate() {
                let pair = _mm512_set1_epi32(xs.add(q).read_unaligned());
                msum = _mm512_dpwssd_epi32(msum, *mq, pair);
            }
            let xd = _mm512_set1_ps(xd);
            _mm512_sub_ps(
                acc,
                _mm512_mul_ps(_mm512_mul_ps(self.dmin, xd), _mm512_cvtepi32_ps(msum)),
            )
        }
    }
}

/// # Safety
/// AVX-512 F; `t0 + rows.len() <= out.t`; panel `p` belongs to the calling task.
#[target_feature(enable = "avx512f")]
unsafe fn store_panel(out: Out, t0: usize, p: usize, rows: &[__m512]) {
    let valid = out.valid(p);
    let mask: __mmask16 = if valid == PANEL {
        !0
    } else {
        (1u16 << valid) - 1
    };
    for (t, v) in rows.iter().enumerate() {
        // SAFETY: row t0 + t exists; the mask limits the write to the valid columns.
        unsafe { _mm512_mask_storeu_ps(out.at(t0 + t, p), mask, *v) };
    }
}

/// The valid columns of panel `p` for rows `t0..t0 + rows.len()` (zero in the others).
///
/// # Safety
/// AVX-512 F; the rows exist and panel `p` belongs to the calling task.
#[inline(always)]
unsafe fn load_panel(out: Out, t0: usize, p: usize, rows: &mut [__m512]) {
    let valid = out.valid(p);
    let mask: __mmask16 = if valid == PANEL {
        !0
    } else {
        (1u16 << valid) - 1
    };
    for (t, v) in rows.iter_mut().enumerate() {
        // SAFETY: row t0 + t exists; the mask limits the read to the valid columns.
        *v = unsafe { _mm512_maskz_loadu_ps(mask, out.at(t0 + t, p)) };
    }
}

/// AVX-512 float GEMM over panels `p0..p0 + np` (added to `out` when `ACC`).
///
/// # Safety
/// See [`crate::gemm::FloatKernel`]; needs AVX-512 F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn float_panels<const ACC: bool>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    // SAFETY: the contract, passed on.
    unsafe {
        match (w.w16.is_empty(), w.round) {
            (true, _) => float_tiles::<ACC, F32>(w, x, p0, np, out),
            (false, FloatRound::Bf16) => float_tiles::<ACC, BF16>(w, x, p0, np, out),
            (false, _) => float_tiles::<ACC, F16>(w, x, p0, np, out),
        }
    }
}

/// [`float_panels`] over weights of the form `W` ([`F32`], [`F16`], [`BF16`]).
///
/// # Safety
/// As [`float_panels`]; `W` is `w`'s form.
#[target_feature(enable = "avx512f")]
unsafe fn float_tiles<const ACC: bool, const W: u8>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    let mut t0 = 0;
    while t0 < out.t {
        let tt = balanced(out.t - t0, TF);
        // SAFETY: same contract as this function; tile bounds checked here.
        unsafe {
            match (np, tt) {
                (2, 6) => ftile::<2, 6, ACC, W>(w, x, p0, t0, out),
                (2, 5) => ftile::<2, 5, ACC, W>(w, x, p0, t0, out),
                (2, 4) => ftile::<2, 4, ACC, W>(w, x, p0, t0, out),
                (2, 3) => ftile::<2, 3, ACC, W>(w, x, p0, t0, out),
                (2, 2) => ftile::<2, 2, ACC, W>(w, x, p0, t0, out),
                (2, _) => ftile::<2, 1, ACC, W>(w, x, p0, t0, out),
                (_, 6) => ftile::<1, 6, ACC, W>(w, x, p0, t0, out),
                (_, 5) => ftile::<1, 5, ACC, W>(w, x, p0, t0, out),
                (_, 4) => ftile::<1, 4, ACC, W>(w, x, p0, t0, out),
                (_, 3) => ftile::<1, 3, ACC, W>(w, x, p0, t0, out),
                (_, 2) => ftile::<1, 2, ACC, W>(w, x, p0, t0, out),
                (_, _) => ftile::<1, 1, ACC, W>(w, x, p0, t0, out),
            }
        }
        t0 += tt;
    }
}

/// # Safety
/// AVX-512 F; `p0 + R <= w.panels`, `t0 + T <= out.t`, `x` is `out.t x w.k`; `W` is `w`'s
/// form.
#[target_feature(enable = "avx512f")]
unsafe fn ftile<const R: usize, const T: usize, const ACC: bool, const W: u8>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    t0: usize,
    out: Out,
) {
    let k = w.k;
    debug_assert!(p0 + R <= w.panels && x.len() >= (t0 + T) * k);
    debug_assert!((W == F32) == w.w16.is_empty());
    let wp: [*const f32; R] = std::array::from_fn(|r| w.panel_ptrs(p0 + r).0);
    let wh: [*const u16; R] = std::array::from_fn(|r| w.panel_ptrs(p0 + r).1);
    let xp: [*const f32; T] = std::array::from_fn(|t| x[(t0 + t) * k..].as_ptr());
    let mut acc = [[_mm512_setzero_ps(); T]; R];
    if ACC {
        for (r, rows) in acc.iter_mut().enumerate() {
            // SAFETY: as for the store below.
            unsafe { load_panel(out, t0, p0 + r, rows) };
        }
    }
    for kk in 0..k {
        // SAFETY: kk < k: one 16-float line per panel and one float per token row.
        unsafe {
            // The narrow forms widen exactly (f16 by `vcvtph2ps`, bf16 by a shift).
            let wv: [__m512; R] = std::array::from_fn(|r| match W {
                F32 => _mm512_loadu_ps(wp[r].add(kk * PANEL)),
                F16 => _mm512_cvtph_ps(_mm256_loadu_si256(wh[r].add(kk * PANEL).cast())),
                _ => _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(
                    _mm256_loadu_si256(wh[r].add(kk * PANEL).cast()),
                ))),
            });
            for t in 0..T {
                let xb = _mm512_set1_ps(*xp[t].add(kk));
                for r in 0..R {
                    acc[r][t] = _mm512_fmadd_ps(wv[r], xb, acc[r][t]);
                }
            }
        }
    }
    for r in 0..R {
        // SAFETY: as in `tile`.
        unsafe { store_panel(out, t0, p0 + r, &acc[r]) };
    }
}
