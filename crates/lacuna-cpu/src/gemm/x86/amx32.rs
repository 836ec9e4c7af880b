//! AMX-INT8 kernel for the 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
//! MXFP4): one float scale per 32 weights of a row and no integer sub-scales.
//!
//! No planes are needed: a block's 32 weights of a panel's 16 rows are 8 of the byte form's
//! 64-byte lines (`[k / 4][16][4]`), 512 contiguous bytes, which is exactly an AMX B tile of
//! 8 rows; the A tile is 16 token rows of the block's 32 activation bytes, unbiased
//! (two's complement) and laid out `[k / 32][tpad][32]` by [`Acts::prepare_tiles`] so that
//! a tile is 512 contiguous bytes too (rows `k` bytes apart, as in [`Acts::q`], fall into
//! one L1 set when `k` is a multiple of 4 KiB). One `tdpbssd` of depth 32 gives the block's
//! exact integer sums `isum - corr` of the other kernels (signed activations: no bias to
//! correct) for 16 tokens x 16 rows, and the vector units fold them as
//! `acc + (d * xd) * isum`, separate multiply and add, so results are bit-identical.
//!
//! The small form packing picks on this path ([`QuantPacked::half`]: the scale as f16, for
//! Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1; [`QuantPacked::lut`]: Q4_0 and IQ4_NL as level
//! indices, two a byte; [`QuantPacked::planar`]: Q5_0 and Q5_1 in 5-bit planes; Q4_1 two
//! weights a byte, [`QuantPacked::nib`]) is read as well: f16 scales widen exactly to the
//! byte form's f32, and a panel of indices, nibbles or planes is rebuilt into the byte
//! form's lines (the AVX-512 kernel's [`Lines`]: `vpshufb` for the levels) on the first
//! token tile, a block ahead of its multiply, into a per-thread buffer the later token tiles
//! read from L2. (Q4_1/Q5_1's float offsets are added after this kernel, `crate::gemm`.) The
//! small form halves the bytes streamed from memory, which is what bounds the LM head
//! (measured: `bench-results/xeon-2c-amx/ab/2026-12-05-amx-planar.json`).
//!
//! The AVX-512 kernel spends 8 `vpdpbusd` and a broadcast per token and panel-block before
//! the same fold; here the tile unit takes the products and the vector units only fold
//! (4 operations per token row). Loop order per task: panels, then 16-token tiles, then all
//! blocks of K with the 16 accumulators in registers; the panel (16 rows x `k` bytes)
//! streams from memory on the first token tile, prefetched a page ahead, and from L2 on the
//! others. The tile unit runs two blocks ahead of the fold: block `b` is multiplied while
//! block `b - 1`'s C tile is stored and block `b - 2`'s is folded (a C tile read back at
//! once waits on its store). C tiles tmm0/tmm1, A tiles tmm2/tmm3 and B tiles tmm4/tmm5
//! alternate between blocks.
//!
//! It is faster than the AVX-512 kernel from 16 tokens on; the fold and the tile loads
//! bound it about equally (measured: `bench-results/xeon-2c-amx/ab/2026-12-05-amx32.json`,
//! `kernels/2026-12-05-amx32-unit-probe.json`).

use std::arch::asm;
use std::arch::x86_64::*;

use crate::acts::Acts;
use crate::blocks::QuantKind;
use crate::out::Out;
use crate::packed::{BITS5_SIGNED, PANEL, QuantPacked, levels};

use super::amx::TileConfig;
use super::avx512::Lines;

/// Fewer tokens than this: the AVX-512 kernel (a partly empty token tile costs the tile
/// unit and the fold as much as a full one): from 8 tokens on it wins, at 4 it loses where
/// the read does not bind (measured on `xeon-2c-amx`, see `bench-results/xeon-2c-amx/ab/`).
pub(crate) const MIN_TOKENS: usize = 8;
/// Token rows per A tile; the activations are padded to a multiple of it.
pub(crate) const TOKEN_TILE: usize = 16;
/// Elements per block.
const BLOCK: usize = 32;

/// Whether this kernel takes the matmul: a 32-element format (the byte form, or the small
/// form's 16-bit constants, [`QuantPacked::half`], and level indices,
/// [`QuantPacked::lut`]) over at least [`MIN_TOKENS`] tokens; it then wants the activations
/// laid out by [`Acts::prepare_tiles`], signed, [`TOKEN_TILE`] rows a step, 32 bytes wide,
/// and the scales padded by [`Acts::pad_scales`].
pub(crate) fn takes(kind: QuantKind, t: usize) -> bool {
    kind.block() == BLOCK && t >= MIN_TOKENS
}

/// The tile shapes `(rows, bytes per row)`: tmm0/1 C (16 x 16 i32), tmm2/3 A (16 tokens x
/// 32 bytes), tmm4/5 B (8 rows of 4 K x 16 columns x 4 bytes).
const SHAPES: [(u8, u16); 6] = [(16, 64), (16, 64), (16, 32), (16, 32), (8, 64), (8, 64)];

/// Three blocks' C tiles, stored for the fold: `[block % 3][token row][16]`.
#[repr(C, align(64))]
struct CTiles([[[i32; PANEL]; TOKEN_TILE]; 3]);

/// One 64-byte line of a panel rebuilt from level indices or planes.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([i8; 64]);

thread_local! {
    /// A panel of level indices or planes rebuilt into the byte form (`k / 4` lines), on
    /// the first token tile, for the B tiles of every token tile.
    static REBUILT: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// AMX GEMM of a 32-element-format matrix over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AMX-INT8 with tile-data permission granted and
/// AVX-512 F/BW/VNNI; [`takes`] holds and `a` is prepared as it says
/// (checked).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    debug_assert!(w.kind.block() == BLOCK);
    let (k, t) = (w.k, out.t);
    let nblk = k / BLOCK;
    let tpad = t.next_multiple_of(TOKEN_TILE);
    assert!(
        a.tpad == tpad
            && a.tiles.len() >= tpad * k
            && a.d.len() >= tpad * nblk
            && w.qs.len() >= (p0 + np) * w.panel_qs()
            && (!w.half || w.d16.len().max(w.e8.len()) >= (p0 + np) * PANEL * nblk),
        "AMX activation tiles not prepared"
    );
    let cfg = TileConfig::with_shapes(&SHAPES);
    let mut c = CTiles([[[0; PANEL]; TOKEN_TILE]; 3]);
    // SAFETY: AMX is permitted (contract); the configuration is a valid palette-1 config.
    unsafe { asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly)) };
    REBUILT.with_borrow_mut(|rebuilt| {
        if (w.nib() || w.planar) && rebuilt.len() < k / 4 {
            rebuilt.resize(k / 4, Line([0; 64]));
        }
        // SAFETY: as this function's (the buffer holds a panel's `k / 4` lines when the
        // panel is rebuilt: nibbles, level indices or planes).
        unsafe { panels(w, a, p0, np, out, rebuilt.as_mut_ptr().cast(), &mut c) }
    });
    // SAFETY: releases the tile state this function configured.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// Panels `p0..p0 + np` of [`quant_panels`]; `rebuilt` a panel's `16 * k` bytes when
/// `w.nib()` or `w.planar`.
///
/// # Safety
/// As [`quant_panels`], whose checks have passed and which configured the tiles.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn panels(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    np: usize,
    out: Out,
    rebuilt: *mut i8,
    c: &mut CTiles,
) {
    let t = out.t;
    for p in p0..p0 + np {
        let panel = w.qs[p * w.panel_qs()..][..w.panel_qs()].as_ptr();
        let mask: __mmask16 = if out.valid(p) == PANEL {
            !0
        } else {
            (1u16 << out.valid(p)) - 1
        };
        for t0 in (0..t).step_by(TOKEN_TILE) {
            // SAFETY: rows t0..t0 + 16 of `a` exist (asserted); panel p is the caller's and
            // its bytes exist (asserted); tiles configured; `rebuilt` as the contract says.
            let acc = unsafe {
                match (w.half, w.nib(), w.planar_bits(), w.lut) {
                    (true, false, BITS5_SIGNED, false) => {
                        token_tile::<true, false, BITS5_SIGNED, false>(
                            w, a, p, panel, rebuilt, t0, c,
                        )
                    }
                    (true, false, 5, false) => {
                        token_tile::<true, false, 5, false>(w, a, p, panel, rebuilt, t0, c)
                    }
                    (true, true, 0, false) => {
                        token_tile::<true, true, 0, false>(w, a, p, panel, rebuilt, t0, c)
                    }
                    (false, _, _, false) => {
                        token_tile::<false, false, 0, false>(w, a, p, panel, rebuilt, t0, c)
                    }
                    (true, _, _, false) => {
                        token_tile::<true, false, 0, false>(w, a, p, panel, rebuilt, t0, c)
                    }
                    (false, _, _, true) => {
                        token_tile::<false, true, 0, true>(w, a, p, panel, rebuilt, t0, c)
                    }
                    (true, _, _, true) => {
                        token_tile::<true, true, 0, true>(w, a, p, panel, rebuilt, t0, c)
                    }
                }
            };
            for (i, v) in acc.iter().enumerate().take(t - t0) {
                // SAFETY: row t0 + i < t exists; masked to the valid columns of panel p.
                unsafe { _mm512_mask_storeu_ps(out.at(t0 + i, p), mask, *v) };
            }
        }
    }
}

/// One panel over token rows `t0..t0 + 16`, every block of K: the 16 rows' f32
/// accumulators (padding rows included; the caller stores only real ones). `HALF`: the
/// scales are f16 (`w.d16`); `NIB`, `BITS` and `LUT` as for the AVX-512 kernel's lines
/// ([`Lines`]): the panel holds level indices, two a byte (`NIB` and `LUT`), Q4_1's
/// weights two a byte (`NIB`) or Q5_0/Q5_1's planes (`BITS`), rebuilt into `rebuilt` on the first token tile (a block ahead of its
/// multiply) and read from there by every token tile.
///
/// # Safety
/// Tiles configured by [`quant_panels`]; `panel` is panel `p`'s bytes (`w.panel_qs()`);
/// rows `t0..t0 + 16` of `a.tiles` and of `a.d` exist; `HALF`, `NIB`, `BITS` and `LUT` are
/// `w.half`, `w.nib()`, `w.planar_bits()` and `w.lut`, and when the panel is rebuilt
/// `rebuilt` holds `16 * k` bytes, written by the call of `t0 = 0` for this panel before any
/// other.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn token_tile<const HALF: bool, const NIB: bool, const BITS: usize, const LUT: bool>(
    w: &QuantPacked,
    a: &Acts,
    p: usize,
    panel: *const i8,
    rebuilt: *mut i8,
    t0: usize,
    c: &mut CTiles,
) -> [__m512; TOKEN_TILE] {
    let k = w.k;
    let nblk = k / BLOCK;
    debug_assert!(HALF == w.half && NIB == w.nib() && BITS == w.planar_bits() && LUT == w.lut);
    // Whether the panel is rebuilt into the byte form before its multiply.
    let rebuilds = NIB || BITS != 0;
    let mut acc = [_mm512_setzero_ps(); TOKEN_TILE];
    let x0 = a.tiles[t0 * BLOCK..].as_ptr();
    let xd = &a.d[t0 * nblk..][..TOKEN_TILE * nblk];
    // Block b's A tile (16 rows of 32 bytes) starts at x0 + 32 tpad b, its B tile at
    // 512 b of the panel (of `rebuilt` for level indices and planes, from `src_block * b` in
    // the panel: 256 and 320 bytes a block).
    let src_block = w.panel_qs() / nblk;
    let bsrc = |b: usize| {
        if rebuilds {
            rebuilt.cast_const().wrapping_add(b * BLOCK * PANEL)
        } else {
            panel.wrapping_add(b * BLOCK * PANEL)
        }
    };
    let asrc = |b: usize| x0.wrapping_add(b * BLOCK * a.tpad);
    // SAFETY: AVX-512 F (this function's features).
    let lines = unsafe { Lines::<NIB, BITS, LUT>::new(levels(w.kind)) };
    // Block b's 8 byte lines, as the AVX-512 kernel rebuilds them.
    let rebuild = |b: usize| {
        let (mut high, mut top) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for g in 0..BLOCK / 4 {
            // SAFETY: block b < nblk of the panel (in its form, by the contract) and of
            // `rebuilt` (512 bytes); lines asked in order within the block; AVX-512 F/BW.
            unsafe {
                let v = lines.line::<BLOCK>(panel, b * BLOCK, g, &mut high, &mut top);
                _mm512_storeu_si512(rebuilt.add((b * BLOCK + 4 * g) * PANEL).cast(), v);
            }
        }
    };
    // A block is rebuilt one block ahead of its multiply (a tile load right behind the
    // stores of its bytes waited on them).
    if rebuilds && t0 == 0 {
        rebuild(0);
        if nblk > 1 {
            rebuild(1);
        }
    }
    // SAFETY: block 0 exists (k >= 32); tiles configured (contract).
    unsafe { multiply::<0>(asrc(0), bsrc(0)) };
    for b in 1..nblk + 2 {
        // The panel streams from memory on the first token tile: fetch 8 blocks ahead (the
        // next page of bytes, where the hardware prefetcher stops).
        if t0 == 0 {
            for l in 0..src_block / 64 {
                _mm_prefetch::<_MM_HINT_T0>(
                    panel.wrapping_add((b + 8) * src_block + 64 * l).cast(),
                );
            }
        }
        if b < nblk {
            if rebuilds && t0 == 0 && b + 1 < nblk {
                rebuild(b + 1);
            }
            // SAFETY: block b exists; its tiles alternate with block b - 1's.
            unsafe {
                if b % 2 == 0 {
                    multiply::<0>(asrc(b), bsrc(b));
                } else {
                    multiply::<1>(asrc(b), bsrc(b));
                }
            }
        }
        // Block b - 1's C tile (multiplied one block ago) stored now, and folded one block
        // later still: read back at once, the loads waited on the tile store.
        if b <= nblk {
            let sb = b - 1;
            // SAFETY: tiles configured; the buffer is 1 KiB of 16 rows of 64 bytes.
            unsafe {
                if sb % 2 == 0 {
                    store::<0>(&mut c.0[sb % 3]);
                } else {
                    store::<1>(&mut c.0[sb % 3]);
                }
            }
        }
        if b < 2 {
            continue;
        }
        let pb = b - 2;
        let buf = &c.0[pb % 3];
        // The products of signed activations: `isum - corr` already (`BlockFold::add_isum`).
        let at = (p * nblk + pb) * PANEL;
        // SAFETY: panel p and block pb exist (f16 or E8M0 scales: exact in f32, the byte
        // form's `d`); AVX-512 F/BW (this function's features).
        let d = unsafe {
            if HALF {
                super::avx512::half_scales(w, at)
            } else {
                _mm512_loadu_ps(w.d[at..at + PANEL].as_ptr())
            }
        };
        for (i, v) in acc.iter_mut().enumerate() {
            // SAFETY: the row is 16 i32; AVX-512 F.
            unsafe {
                let isum = _mm512_cvtepi32_ps(_mm512_load_si512(buf[i].as_ptr().cast()));
                let s = _mm512_mul_ps(d, _mm512_set1_ps(xd[i * nblk + pb]));
                *v = _mm512_add_ps(*v, _mm512_mul_ps(s, isum));
            }
        }
    }
    acc
}

/// `C_X = A_X . B_X` for one block: C tile `X` zeroed, A tile `2 + X` loaded from `x`
/// (16 rows of 32 bytes), B tile `4 + X` from `wb` (8 rows of 64 bytes), one `tdpbssd`.
///
/// # Safety
/// Tiles configured by [`quant_panels`]; 512 bytes at `x` and at `wb` are readable.
#[inline(always)]
unsafe fn multiply<const X: usize>(x: *const u8, wb: *const i8) {
    // SAFETY: the contract; tile-register operations and reads of the named memory only.
    unsafe {
        if X == 0 {
            asm!(
                "tilezero tmm0",
                "tileloadd tmm2, [{x} + {k}]",
                "tileloadd tmm4, [{w} + {s}]",
                "tdpbssd tmm0, tmm2, tmm4",
                x = in(reg) x, k = in(reg) BLOCK, w = in(reg) wb, s = in(reg) 64usize,
                options(nostack, readonly),
            );
        } else {
            asm!(
                "tilezero tmm1",
                "tileloadd tmm3, [{x} + {k}]",
                "tileloadd tmm5, [{w} + {s}]",
                "tdpbssd tmm1, tmm3, tmm5",
                x = in(reg) x, k = in(reg) BLOCK, w = in(reg) wb, s = in(reg) 64usize,
                options(nostack, readonly),
            );
        }
    }
}

/// Stores C tile `X` (16 rows of 16 i32) to `buf`.
///
/// # Safety
/// Tiles configured by [`quant_panels`].
#[inline(always)]
unsafe fn store<const X: usize>(buf: &mut [[i32; PANEL]; TOKEN_TILE]) {
    // SAFETY: the store writes the 1 KiB of `buf`.
    unsafe {
        if X == 0 {
            asm!(
                "tilestored [{c} + {s}], tmm0",
                c = in(reg) buf.as_mut_ptr(), s = in(reg) 64usize,
                options(nostack),
            );
        } else {
            asm!(
                "tilestored [{c} + {s}], tmm1",
                c = in(reg) buf.as_mut_ptr(), s = in(reg) 64usize,
                options(nostack),
            );
        }
    }
}
