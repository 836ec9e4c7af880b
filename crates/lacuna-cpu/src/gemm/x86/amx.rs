//! AMX-INT8 microkernel for the 256-element formats (Q2_K..Q6_K, IQ4_XS).
//!
//! The obstacle on AMX is the integer sub-block scale: `isum = sum_s sc_s * dot_s` needs a
//! separate 32- (or 16-) wide dot per sub-block, and scaling those per tile on the vector
//! units costs more than the tile multiply itself. So the scale is folded into the weights
//! instead: `v = sc * q` is exact in i16 (|v| <= 4096 for every K-quant) and splits into two
//! int8 planes (|v| <= 4096 also for IQ4_XS: 32 * 127), `v = 64 * hi + lo` with `lo = v & 63` and `hi = v >> 6`. Then
//! `isum = 64 * (x . hi) + (x . lo)` over the whole 256-element block: two `tdpbusd` chains
//! of full 64-byte depth and one vector epilogue per block instead of one per sub-block.
//! The integers are the same as on every other path, and so is the f32 fold
//! ([`crate::gemm`]), so results stay bit-identical.
//!
//! The planes are made on the fly, per panel and block, into an 8 KiB per-thread buffer
//! (about 12 vector ops per 64 bytes, 2 for Q4_K: see [`planes_lines`]; shared by every
//! token), so the repacked weights keep their layout and size: the byte form, or the small
//! form ([`QuantPacked::small`]: i8 scales and mins, Q4_K two weights a byte, split with a
//! mask and a shift before the multiply; Q3_K, Q5_K and Q6_K in bit planes and IQ4_XS as
//! level indices, each line rebuilt first), which packing picks on this path. Loop order per task of
//! [`TASK_PANELS`] panels: chunks of K (about 512 KiB of activations, kept in L2), then panels,
//! then blocks, then steps of two 16-token tiles (a block's step is a *unit*). Tiles: tmm0..3 =
//! C (tokens 0-15 / 16-31 x hi / lo), tmm4/5 = A (the two token tiles, from [`Acts::tiles`]),
//! tmm6/7 = B (hi / lo plane: a panel's `[k/4][16][4]` lines are exactly AMX's VNNI B
//! layout). The 32-element formats (one float scale per 32 weights, no integer sub-scales)
//! run [`super::amx32`] from its own threshold on, and canvases under [`MIN_TOKENS`] rows
//! the AVX-512 kernel.
//!
//! The tile unit's work per unit (16 `tileloadd`, 16 `tdpbusd`, 4 `tilestored`) bounds it;
//! its rate moves with the data and the host's load, and two vCPUs can share one tile unit
//! (probe and figures: `bench-results/xeon-2c-amx/kernels/2026-12-05-amx-tile-probe.json`).
//! The vector work (planes, fold) is pipelined against the tile unit over units: while unit `u` multiplies, unit
//! `u - 1` is folded and a slice of the next block's planes is built, issued between the
//! four K steps of `u`.

use std::arch::asm;
use std::arch::x86_64::*;

use crate::acts::Acts;
use crate::blocks::QuantKind;
use crate::out::Out;
use crate::packed::{PANEL, QuantPacked, levels, planes};

use super::avx512::BlockFold;

/// Fewer tokens than this: the plane construction is not repaid; use AVX-512. AMX wins a
/// dual-cache step's 32-token windows and loses 16-token ones, which it pads to 32
/// (measured on `xeon-2c-amx`, LLaDA-8B shape Q4_K_M: `bench-results/xeon-2c-amx/ab/`).
pub(crate) const MIN_TOKENS: usize = 32;
/// Panels per task (the other paths take 2): K-chunking reuses activations across them.
pub(crate) const TASK_PANELS: usize = 8;
/// Tokens per step: two 16-row A tiles.
pub(crate) const TOKEN_STEP: usize = 32;
/// Bytes of K per A-tile row (one `tdpbusd` depth).
pub(crate) const K_STEP: usize = 64;
/// `v = (hi << SHIFT) + lo`.
const SHIFT: u32 = 6;
/// Q4_K's planes: `v = (hi << Q4_SHIFT) + lo` (see [`planes_lines`]).
const Q4_SHIFT: u32 = 3;
/// 64-byte weight lines per block of 256 (4 weights of 16 rows each).
const LINES: usize = 64;

/// Where [`planes_lines`] reads a line's weights besides the byte form and Q4_K's nibbles
/// (as a `u8` const parameter): the small form's bit planes of 2, 3, 5 or 6 bits
/// ([`QuantPacked::planar`]) or level indices ([`QuantPacked::lut`]).
#[derive(Clone, Copy)]
#[repr(u8)]
enum Src {
    Bytes = 0,
    Bits2 = 2,
    Bits3 = 3,
    Bits5 = 5,
    Bits6 = 6,
    Levels = 16,
}

/// Whether the AMX kernel takes this matmul (and so wants [`Acts::tiles`] prepared): a
/// 256-element format over at least [`MIN_TOKENS`] tokens, in any form (bytes; the small
/// form's i8 scales and mins, Q4_K two weights a byte; its bit planes for Q3_K, Q5_K and
/// Q6_K, [`QuantPacked::planar`]; IQ4_XS as level indices, [`QuantPacked::lut`]): the kind
/// decides, whatever the form (a compact matrix's panels decoded to bytes too).
pub(crate) fn takes(kind: QuantKind, t: usize) -> bool {
    kind.block() == 256 && t >= MIN_TOKENS
}

/// The 64-byte tile configuration (`ldtilecfg` operand), palette 1.
#[repr(C, align(64))]
pub(super) struct TileConfig(pub(super) [u8; 64]);

impl TileConfig {
    /// This kernel's: all 8 tiles 16 x 64 B.
    fn new() -> TileConfig {
        TileConfig::with_shapes(&[(16, 64); 8])
    }

    /// Tiles `tmm0..` shaped `(rows, bytes per row)`, the rest unused.
    pub(super) fn with_shapes(shapes: &[(u8, u16)]) -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1;
        for (t, &(rows, colsb)) in shapes.iter().enumerate().take(8) {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&colsb.to_le_bytes());
            c[48 + t] = rows;
        }
        TileConfig(c)
    }
}

/// The hi/lo planes of one panel-block: `[k step 0..4][line 0..16][64]` each.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Planes {
    hi: [[u8; 1024]; 4],
    lo: [[u8; 1024]; 4],
}

/// The 4 C tiles of one token step, stored: `[token tile * 2 + (0 = hi, 1 = lo)][row][16]`.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct CTiles([[[i32; PANEL]; 16]; 4]);

/// Per-thread buffers, double-buffered so that the vector units build the next block's
/// planes and fold the previous token step while the tile unit works on the current one.
struct Scratch {
    planes: [Planes; 2],
    c: [CTiles; 2],
    /// `[panel of the task][token][16]` f32 accumulators.
    facc: Vec<f32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Box<Scratch>> = std::cell::RefCell::new(Box::new(Scratch {
        planes: [Planes { hi: [[0; 1024]; 4], lo: [[0; 1024]; 4] }; 2],
        c: [CTiles([[[0; PANEL]; 16]; 4]); 2],
        facc: Vec::new(),
    }));
}

/// AMX quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AMX-INT8 with tile-data permission granted, and
/// AVX-512 F/BW/VNNI. When [`takes`] (or [`super::amx32::takes`]) holds, `a.tiles` must
/// have been prepared as it says.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    if super::amx32::takes(w.kind, out.t) {
        // SAFETY: same contract; the caller padded the activations (`crate::gemm`).
        return unsafe { super::amx32::quant_panels(w, a, p0, np, out) };
    }
    if !takes(w.kind, out.t) {
        // SAFETY: same contract; AVX-512 F/BW/VNNI is part of this path.
        return unsafe { super::avx512::quant_panels(w, a, p0, np, out) };
    }
    assert!(
        a.tpad >= out.t.next_multiple_of(TOKEN_STEP) && a.tiles.len() >= a.tpad * w.k,
        "AMX activation tiles not prepared"
    );
    let cfg = TileConfig::new();
    // SAFETY: AMX is permitted (contract); the configuration is a valid palette-1 config.
    unsafe { asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly)) };
    let nblk = w.k / 256;
    let chunk = chunk_blocks(out.t).min(nblk);
    SCRATCH.with_borrow_mut(|s| {
        let len = np * out.t * PANEL;
        if s.facc.len() < len {
            s.facc.resize(len, 0.0);
        }
        s.facc[..len].fill(0.0);
        // K outer, panels inner: one chunk of activations serves every panel of the task
        // from L2 before the next chunk is touched.
        for b0 in (0..nblk).step_by(chunk) {
            let blocks = b0..(b0 + chunk).min(nblk);
            for (i, p) in (p0..p0 + np).enumerate() {
                let Scratch { planes, c, facc } = &mut **s;
                let facc = &mut facc[i * out.t * PANEL..][..out.t * PANEL];
                // SAFETY: tiles configured above; the caller owns panel p; `facc` holds
                // out.t rows.
                unsafe {
                    let bl = blocks.clone();
                    macro_rules! go {
                        ($sub:literal, $mins:literal, $q4:literal) => {
                            if w.small {
                                go!($sub, $mins, $q4, true, Src::Bytes)
                            } else {
                                go!($sub, $mins, $q4, false, Src::Bytes)
                            }
                        };
                        ($sub:literal, $mins:literal, $q4:literal, $small:literal, $src:expr) => {
                            panel::<$sub, $mins, $q4, $small, { $src as u8 }>(
                                w, a, p, bl, out.t, planes, c, facc,
                            )
                        };
                    }
                    match (w.kind.sub(), w.kind.has_mins()) {
                        _ if w.planar_bits() == 6 => go!(16, false, false, true, Src::Bits6),
                        _ if w.planar_bits() == 3 => go!(16, false, false, true, Src::Bits3),
                        _ if w.planar_bits() == 2 => go!(16, false, false, true, Src::Bits2),
                        _ if w.planar_bits() == 5 => go!(32, true, false, true, Src::Bits5),
                        _ if w.lut => go!(32, false, false, true, Src::Levels),
                        (16, _) => go!(16, false, false),
                        _ if w.kind == QuantKind::Q4K => go!(32, true, true),
                        (_, true) => go!(32, true, false),
                        _ => go!(32, false, false),
                    }
                }
            }
        }
        let valid_all = |p: usize| {
            let valid = out.valid(p);
            if valid == PANEL {
                !0
            } else {
                (1u16 << valid) - 1
            }
        };
        for (i, p) in (p0..p0 + np).enumerate() {
            let mask: __mmask16 = valid_all(p);
            let facc = &s.facc[i * out.t * PANEL..][..out.t * PANEL];
            for t in 0..out.t {
                // SAFETY: row t exists and panel p is the caller's; masked to the valid
                // columns.
                unsafe {
                    let v = _mm512_loadu_ps(facc.as_ptr().add(t * PANEL));
                    _mm512_mask_storeu_ps(out.at(t, p), mask, v);
                }
            }
        }
    });
    // SAFETY: releases the tile state this function configured.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// Blocks of K per chunk: about 512 KiB of activation tiles, which stay in L2 while every
/// panel of a task passes over them.
fn chunk_blocks(t: usize) -> usize {
    ((512 << 10) / (t.next_multiple_of(TOKEN_STEP) * 256)).max(1)
}

/// Blocks `blocks` of one panel over all `t` tokens, accumulated into `facc`,
/// software-pipelined over units (a block's token step): while the tile unit multiplies
/// unit `u`, the vector units fold unit `u - 1` (its C tiles, stored one unit earlier) and
/// build a slice of the next block's planes. The vector work is issued in four slices
/// between the four K steps of the tile work, so the out-of-order window holds both kinds
/// at once: issued after the whole multiply, it waited behind the C stores and the tile
/// unit idled meanwhile.
///
/// # Safety
/// Tiles configured by [`quant_panels`]; AVX-512 F/BW/VNNI; panel `p` and the blocks exist
/// and the panel belongs to the caller; `a.tiles` prepared for `t` tokens (checked by the
/// caller); `facc` holds `t * 16`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn panel<
    const SUB: usize,
    const MINS: bool,
    const Q4: bool,
    const SMALL: bool,
    const SRC: u8,
>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    blocks: std::ops::Range<usize>,
    t: usize,
    planes: &mut [Planes; 2],
    c: &mut [CTiles; 2],
    facc: &mut [f32],
) {
    let steps = t.div_ceil(TOKEN_STEP);
    let lines_per_step = LINES.div_ceil(steps);
    let first = blocks.start;
    // SAFETY: AVX-512 BW (contract); panel p and the first block exist.
    unsafe { planes_lines::<SUB, Q4, SMALL, SRC>(w, p, first, 0..LINES, &mut planes[first % 2]) };
    // The unit folded next: its block's constants and first token.
    let mut prev: Option<(Fold<MINS, Q4>, usize)> = None;
    let mut u = 0usize;
    for b in blocks.clone() {
        let (cur, next) = if b % 2 == 0 {
            let [x, y] = planes;
            (&*x, y)
        } else {
            let [x, y] = planes;
            (&*y, x)
        };
        // SAFETY: panel p and block b exist.
        let fold = unsafe { Fold::<MINS, Q4>::new::<SMALL>(w, p, b) };
        for i in 0..steps {
            let t0 = i * TOKEN_STEP;
            let (c_cur, c_prev) = if u.is_multiple_of(2) {
                let [x, y] = &mut *c;
                (x, &*y)
            } else {
                let [x, y] = &mut *c;
                (y, &*x)
            };
            let l0 = (i * lines_per_step).min(LINES);
            let l1 = ((i + 1) * lines_per_step).min(LINES);
            let lq = (l1 - l0).div_ceil(4);
            // SAFETY: tiles configured (contract).
            unsafe { tiles_zero() };
            for j in 0..4 {
                // SAFETY: tiles configured; `a.tiles` covers rows t0..t0 + 32 of block b.
                unsafe { multiply_step(a, b, t0, j, cur) };
                if let Some((pf, pt0)) = &prev {
                    let rows = j * 8..(j + 1) * 8;
                    // SAFETY: `facc` holds t rows; the unit's rows are < t; its C tiles
                    // were stored one unit ago into `c_prev`.
                    unsafe { pf.apply(a, *pt0, t, rows, c_prev, facc) };
                }
                if b + 1 < blocks.end {
                    let s0 = (l0 + j * lq).min(l1);
                    let s1 = (l0 + (j + 1) * lq).min(l1);
                    // SAFETY: AVX-512 BW; panel p and block b + 1 exist.
                    unsafe { planes_lines::<SUB, Q4, SMALL, SRC>(w, p, b + 1, s0..s1, next) };
                }
            }
            // SAFETY: tiles configured; `c_cur` is 4 KiB.
            unsafe { tiles_store(c_cur) };
            prev = Some((fold, t0));
            u += 1;
        }
    }
    if let Some((pf, pt0)) = prev {
        // SAFETY: as above; the last unit's tiles are in `c[(u - 1) % 2]`.
        unsafe { pf.apply(a, pt0, t, 0..TOKEN_STEP, &c[(u - 1) % 2], facc) };
    }
}

/// Zeroes the four C tiles of a unit.
///
/// # Safety
/// Tiles configured by [`quant_panels`].
#[inline]
unsafe fn tiles_zero() {
    // SAFETY: register-only tile operations (the contract).
    unsafe {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem)
        )
    };
}

/// K step `j` (bytes `64 j..64 j + 64` of the block) of token step `t0..t0 + 32` of block
/// `b` on the tile unit: `C += A . hi` and `C += A . lo` for both token tiles.
///
/// # Safety
/// Tiles configured by [`quant_panels`]; rows `t0..t0 + 32 <= a.tpad` of block `b` exist in
/// `a.tiles` (`[k / 256][tpad][256]`); `j < 4`.
#[inline]
unsafe fn multiply_step(a: &Acts, b: usize, t0: usize, j: usize, pl: &Planes) {
    debug_assert!(j < 4);
    // SAFETY: the A rows are in bounds (contract); the planes are 4 x 1 KiB each.
    unsafe {
        let a0 = a.tiles.as_ptr().add((b * a.tpad + t0) * 256 + j * K_STEP);
        asm!(
            "tileloadd tmm4, [{a0} + {sa}]",
            "tileloadd tmm5, [{a1} + {sa}]",
            "tileloadd tmm6, [{bh} + {st}]",
            "tileloadd tmm7, [{bl} + {st}]",
            "tdpbusd tmm0, tmm4, tmm6",
            "tdpbusd tmm1, tmm4, tmm7",
            "tdpbusd tmm2, tmm5, tmm6",
            "tdpbusd tmm3, tmm5, tmm7",
            a0 = in(reg) a0,
            a1 = in(reg) a0.add(16 * 256),
            bh = in(reg) pl.hi[j].as_ptr(),
            bl = in(reg) pl.lo[j].as_ptr(),
            st = in(reg) K_STEP,
            sa = in(reg) 256usize,
            options(nostack, readonly),
        );
    }
}

/// Stores the four C tiles of a unit to `c`.
///
/// # Safety
/// Tiles configured by [`quant_panels`].
#[inline]
unsafe fn tiles_store(c: &mut CTiles) {
    // SAFETY: the stores write the 4 KiB of `c`.
    unsafe {
        asm!(
            "tilestored [{c} + {st}], tmm0",
            "tilestored [{c} + {st} + 1024], tmm1",
            "tilestored [{c} + {st} + 2048], tmm2",
            "tilestored [{c} + {st} + 3072], tmm3",
            c = in(reg) c.0.as_mut_ptr(),
            st = in(reg) K_STEP,
            options(nostack),
        );
    }
}

/// The fold of one panel-block's C tiles: the shared [`BlockFold`] plus where it is.
#[derive(Clone, Copy)]
struct Fold<const MINS: bool, const Q4: bool> {
    consts: BlockFold<MINS>,
    /// Blocks per row, and the block folded.
    nblk: usize,
    b: usize,
}

impl<const MINS: bool, const Q4: bool> Fold<MINS, Q4> {
    /// # Safety
    /// AVX-512 F/BW; panel `p` and block `b` of `w` exist; `SMALL` is `w.small`.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn new<const SMALL: bool>(w: &QuantPacked, p: usize, b: usize) -> Self {
        Fold {
            // SAFETY: the caller's contract (`new_small` for the small form's i8 mins).
            consts: unsafe {
                if SMALL {
                    BlockFold::new_small(w, w.k / 256, p, b)
                } else {
                    BlockFold::new(w, w.k / 256, p, b)
                }
            },
            nblk: w.k / 256,
            b,
        }
    }

    /// Folds rows `rows` (of `0..32`) of the C tiles of token step `t0` of the block into
    /// `facc` (rows below `t`): `isum = 64 * hi + lo` (`8 * hi + lo` for Q4_K), then
    /// [`BlockFold::apply`].
    ///
    /// # Safety
    /// AVX-512 F/VNNI; `facc` holds `t` rows of 16; `a` prepared for this matmul.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn apply(
        &self,
        a: &Acts,
        t0: usize,
        t: usize,
        rows: std::ops::Range<usize>,
        c: &CTiles,
        facc: &mut [f32],
    ) {
        assert!(facc.len() >= t * PANEL);
        let (nblk, b) = (self.nblk, self.b);
        // A quarter of the step after next's activations (8 KiB, contiguous) into L1 per
        // quarter of the rows, ahead of their tile loads.
        let next = a
            .tiles
            .as_ptr()
            .wrapping_add((b * a.tpad + t0 + 2 * TOKEN_STEP) * 256);
        for line in rows.start * 4..rows.end * 4 {
            _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(line * 64).cast());
        }
        for i in rows.start..rows.end.min(t.saturating_sub(t0)) {
            let tt = t0 + i;
            let (tile, row) = (i / 16, i % 16);
            let tb = tt * nblk + b;
            let xs = if MINS {
                &a.sums[tb * 8..][..8]
            } else {
                &[][..]
            };
            // SAFETY: C rows are 16 i32; `facc` row tt is 16 f32 (tt < t, asserted size);
            // `xs` holds 8 sums when MINS.
            unsafe {
                let hi = _mm512_loadu_si512(c.0[2 * tile][row].as_ptr().cast());
                let lo = _mm512_loadu_si512(c.0[2 * tile + 1][row].as_ptr().cast());
                let hi = if Q4 {
                    _mm512_slli_epi32::<Q4_SHIFT>(hi)
                } else {
                    _mm512_slli_epi32::<SHIFT>(hi)
                };
                let isum = _mm512_add_epi32(hi, lo);
                let fp = facc.as_mut_ptr().add(tt * PANEL);
                let f = self.consts.apply(_mm512_loadu_ps(fp), isum, a.d[tb], xs);
                _mm512_storeu_ps(fp, f);
            }
        }
    }
}

/// Lines `range` of the hi/lo planes of panel `p`, block `b`: for each weight
/// `v = sc * q`, `hi = v >> 6` and `lo = v & 63` as bytes, in the packed `[line][16 rows][4]`
/// order.
///
/// Each 64-byte line is split into its even and odd bytes as i16 (sign-extended), both
/// multiplied by one vector of row scales (i16 lane `m` holds bytes `2m, 2m + 1`, both of
/// row `m / 2`), and the two products are recombined bytewise.
///
/// Q4_K (`Q4`) splits the scale instead, `sc = 8 * (sc >> 3) + (sc & 7)`, and takes
/// `hi = (sc >> 3) * q`, `lo = (sc & 7) * q`: with `q <= 15` and `sc <= 63` each product is
/// at most 105, so one 16-bit multiply of the raw line gives both bytes of a lane at once (the
/// even byte's product cannot carry into the odd one) and a line costs two multiplies
/// instead of about a dozen operations.
///
/// `SMALL`: `w` in the small form, its scales i8 and (Q4_K) line `2j` in the low nibbles
/// of line `j`, `2j + 1` in the high ones. `SRC` ([`Src`]): where the small form keeps a
/// line's weights otherwise: Q3_K, Q5_K and Q6_K's bit planes (a line rebuilt from its
/// group's line of low bits and line of high bits, less the bias), IQ4_XS's level indices
/// (nibbles as Q4_K's, looked up with `vpshufb`).
///
/// # Safety
/// AVX-512 F/BW; panel `p` and block `b` of `w` exist and `w` is a K-quant with scales
/// (Q4_K when `Q4`) in the byte form, or the small form when `SMALL`, in planes of `SRC`
/// bits or level indices as `SRC` says; `range` within `0..64`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn planes_lines<const SUB: usize, const Q4: bool, const SMALL: bool, const SRC: u8>(
    w: &QuantPacked,
    p: usize,
    b: usize,
    range: std::ops::Range<usize>,
    out: &mut Planes,
) {
    let k = w.k;
    let nblk = k / 256;
    let nsub = 256 / SUB;
    let lines_per_sub = SUB / 4;
    // i16 lane m <- the low half of i32 lane m / 2.
    let idx = _mm512_set_epi16(
        30, 30, 28, 28, 26, 26, 24, 24, 22, 22, 20, 20, 18, 18, 16, 16, 14, 14, 12, 12, 10, 10, 8,
        8, 6, 6, 4, 4, 2, 2, 0, 0,
    );
    let odd: __mmask64 = 0xAAAA_AAAA_AAAA_AAAA;
    let low6 = _mm512_set1_epi8(63);
    // Q4_K's small form and the level indices hold lines 2j and 2j + 1 in the low and high
    // nibbles of line j.
    let lut = SRC == Src::Levels as u8;
    let nib = Q4 && SMALL || lut;
    let bits = if lut { 0 } else { usize::from(SRC) };
    let pl = planes(bits);
    let (per, lo_lines) = (8 / pl.lo, pl.lo_lines());
    let block_bytes = w.panel_qs() / nblk;
    let src = w.qs[p * w.panel_qs() + b * block_bytes..][..block_bytes].as_ptr();
    let sc_at = (p * nblk + b) * nsub * PANEL;
    let low4 = _mm512_set1_epi8(15);
    let lomask = _mm512_set1_epi8(((1 << pl.lo) - 1) as i8);
    let hmask = _mm512_set1_epi8((((1 << pl.hi) - 1) << pl.lo) as i8);
    let bias = _mm512_set1_epi8(pl.bias);
    let table = if lut {
        // SAFETY: 16 bytes of a 16-byte array.
        _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(levels(w.kind).as_ptr().cast()) })
    } else {
        _mm512_setzero_si512()
    };
    let mut scv = _mm512_setzero_si512();
    let (mut s_hi, mut s_lo) = (scv, scv);
    let first = range.start;
    for l in range {
        if l == first || l % lines_per_sub == 0 {
            let at = sc_at + (l / lines_per_sub) * PANEL;
            // SAFETY: 16 scales in bounds (i8 in the small form, else i32).
            let sc = unsafe {
                if SMALL {
                    _mm512_cvtepi8_epi32(_mm_loadu_si128(w.scales8[at..at + PANEL].as_ptr().cast()))
                } else {
                    _mm512_loadu_si512(w.scales[at..at + PANEL].as_ptr().cast())
                }
            };
            scv = _mm512_permutexvar_epi16(idx, sc);
            if Q4 {
                s_hi = _mm512_srli_epi16::<3>(scv);
                s_lo = _mm512_and_si512(scv, _mm512_set1_epi16(7));
            }
        }
        let line = if bits != 0 {
            // Group l / G: its low lines (line j of the group in low line j / per, at bits
            // lo * (j % per)), then one line of the group's high bits (`Planes::hi_at`).
            let (g, j) = (l / pl.group, l % pl.group);
            let at = g * pl.lines() * 64;
            // SAFETY: the group's lines are inside `src` (`block_bytes`).
            let raw = unsafe { _mm512_loadu_si512(src.add(at + j / per * 64).cast()) };
            let lo = _mm512_srl_epi16(raw, _mm_set_epi64x(0, (pl.lo * (j % per)) as i64));
            if pl.hi == 0 {
                // Q2_K: the low bits are the weight (no bias).
                _mm512_and_si512(lo, lomask)
            } else {
                // SAFETY: as above; the high line follows the low ones.
                let top = unsafe { _mm512_loadu_si512(src.add(at + lo_lines * 64).cast()) };
                // The high bits to bit `lo` and up (16-bit shifts: what crosses a byte is
                // masked off).
                let up = pl.lo as i64 - pl.hi_at(j) as i64;
                let hi = if up > 0 {
                    _mm512_sll_epi16(top, _mm_set_epi64x(0, up))
                } else {
                    _mm512_srl_epi16(top, _mm_set_epi64x(0, -up))
                };
                // (lo & lomask) | (hi & hmask), less the bias.
                let lo = _mm512_and_si512(lo, lomask);
                let u = _mm512_ternarylogic_epi32::<0xF8>(lo, hi, hmask);
                _mm512_sub_epi8(u, bias)
            }
        } else {
            let at = if nib { l / 2 * 64 } else { l * 64 };
            // SAFETY: the line (or nibble line) is 64 bytes inside `src` (`block_bytes`).
            let raw = unsafe { _mm512_loadu_si512(src.add(at).cast()) };
            let line = if !nib {
                raw
            } else if l % 2 == 0 {
                _mm512_and_si512(raw, low4)
            } else {
                _mm512_and_si512(_mm512_srli_epi16::<4>(raw), low4)
            };
            if lut {
                _mm512_shuffle_epi8(table, line)
            } else {
                line
            }
        };
        // The next block of this panel is the next 4 KiB page (less in the small form's
        // nibbles and planes), where the hardware prefetcher does not follow: fetch it now,
        // a whole block ahead of its use, a line's share of it per line. (A prefetch never
        // faults, so running past the last block is harmless.)
        _mm_prefetch::<_MM_HINT_T0>(
            src.wrapping_add(block_bytes + l * block_bytes / LINES)
                .cast(),
        );
        let (j, r) = (l / 16, l % 16);
        if Q4 {
            // SAFETY: each plane is 4 x 1024 bytes; line r of step j is 64 bytes inside.
            unsafe {
                let h = _mm512_mullo_epi16(line, s_hi);
                let lo = _mm512_mullo_epi16(line, s_lo);
                _mm512_storeu_si512(out.hi[j][r * 64..].as_mut_ptr().cast(), h);
                _mm512_storeu_si512(out.lo[j][r * 64..].as_mut_ptr().cast(), lo);
            }
            continue;
        }
        let ve = _mm512_srai_epi16::<8>(_mm512_slli_epi16::<8>(line));
        let vo = _mm512_srai_epi16::<8>(line);
        let pe = _mm512_mullo_epi16(ve, scv);
        let po = _mm512_mullo_epi16(vo, scv);
        let both = _mm512_mask_blend_epi8(odd, pe, _mm512_slli_epi16::<8>(po));
        let l6 = _mm512_and_si512(both, low6);
        let he = _mm512_srai_epi16::<{ SHIFT }>(pe);
        let ho = _mm512_slli_epi16::<8>(_mm512_srai_epi16::<{ SHIFT }>(po));
        let h6 = _mm512_mask_blend_epi8(odd, he, ho);
        // SAFETY: each plane is 4 x 1024 bytes; line r of step j is 64 bytes inside.
        unsafe {
            _mm512_storeu_si512(out.hi[j][r * 64..].as_mut_ptr().cast(), h6);
            _mm512_storeu_si512(out.lo[j][r * 64..].as_mut_ptr().cast(), l6);
        }
    }
}
