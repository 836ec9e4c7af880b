//! AMX-INT8 microkernel: `tdpbusd` tiles (16 tokens x 16 weight rows x one sub-block of K)
//! through inline `asm!`, with the AVX-512 epilogue of [`super::avx512`] (integer sub-scales,
//! bias correction, the f32 fold), so results are bit-identical to every other path.
//!
//! Tiles: tmm0/tmm1 = C (i32, one per panel), tmm2 = A (biased u8 activations, `rows =
//! tokens`, `colsb = sub`), tmm3/tmm4 = B (the packed weights: a panel's `[k/4][16][4]`
//! layout is exactly AMX's VNNI B layout, 64-byte rows). The kernel asked Linux for tile-data
//! permission before this path could be selected ([`crate::Path::is_available`]).

use std::arch::asm;
use std::arch::x86_64::*;

use crate::acts::Acts;
use crate::blocks::QuantKind;
use crate::gemm::Out;
use crate::packed::{PANEL, QuantPacked};

/// Tokens per tile (AMX tiles have at most 16 rows).
const TT: usize = 16;

/// The 64-byte tile configuration (`ldtilecfg` operand), palette 1.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn new(tokens: usize, sub: usize) -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1;
        // (tile, rows, bytes per row)
        let tiles = [
            (0, tokens, 64),
            (1, tokens, 64),
            (2, tokens, sub),
            (3, sub / 4, 64),
            (4, sub / 4, 64),
        ];
        for (t, rows, colsb) in tiles {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(colsb as u16).to_le_bytes());
            c[48 + t] = rows as u8;
        }
        TileConfig(c)
    }
}

thread_local! {
    /// Per-thread repacked activations of the current token tile (grows, never shrinks).
    static XBUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// 64-byte aligned i32 scratch for one C tile.
#[repr(C, align(64))]
struct CBuf([[i32; PANEL]; TT]);

/// AMX quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`]; needs AMX-INT8 with tile-data permission granted, and
/// AVX-512 F/BW/VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    let sub = w.kind.sub();
    let mut t0 = 0;
    while t0 < out.t {
        let tt = (out.t - t0).min(TT);
        let cfg = TileConfig::new(tt, sub);
        // SAFETY: AMX is permitted (contract); the configuration is a valid palette-1 config.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly)) };
        // SAFETY: the caller's contract; tile bounds checked here.
        unsafe {
            match (w.kind, np) {
                (QuantKind::Q4K | QuantKind::Q5K, 2) => {
                    tile::<2, 32, true, true>(w, a, p0, t0, tt, out)
                }
                (QuantKind::Q4K | QuantKind::Q5K, _) => {
                    tile::<1, 32, true, true>(w, a, p0, t0, tt, out)
                }
                (QuantKind::Q6K, 2) => tile::<2, 16, true, false>(w, a, p0, t0, tt, out),
                (QuantKind::Q6K, _) => tile::<1, 16, true, false>(w, a, p0, t0, tt, out),
                (_, 2) => tile::<2, 32, false, false>(w, a, p0, t0, tt, out),
                (_, _) => tile::<1, 32, false, false>(w, a, p0, t0, tt, out),
            }
        }
        t0 += tt;
    }
    // SAFETY: releases the tile state this function configured.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// Panels `p0..p0+R` x tokens `t0..t0+tt` over all of K, with tiles configured for `tt`
/// rows and `SUB`-byte sub-blocks.
///
/// # Safety
/// AMX configured as above, AVX-512 F/BW/VNNI; `p0 + R <= w.panels`, `t0 + tt <= out.t`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile<const R: usize, const SUB: usize, const SCALES: bool, const MINS: bool>(
    w: &QuantPacked,
    a: &Acts,
    p0: usize,
    t0: usize,
    tt: usize,
    out: Out,
) {
    let k = w.k;
    let block = w.kind.block();
    let nblk = k / block;
    let nsub = block / SUB;
    debug_assert!(p0 + R <= w.panels && t0 + tt <= out.t && tt <= TT);
    assert!(
        a.q.len() >= (t0 + tt) * k,
        "activations shorter than the tile"
    );
    let qs: [*const i8; R] = std::array::from_fn(|r| w.qs[(p0 + r) * PANEL * k..].as_ptr());
    // The tile's activations, repacked to [k / SUB][16 tokens][SUB bytes] so each A tile is
    // one contiguous load (rows `k` bytes apart would alias in L1 and thrash the TLB).
    XBUF.with_borrow_mut(|buf| {
        if buf.len() < TT * k {
            buf.resize(TT * k, 0);
        }
        for t in 0..tt {
            let row = &a.q[(t0 + t) * k..][..k];
            for (s, chunk) in row.chunks_exact(SUB).enumerate() {
                buf[(s * TT + t) * SUB..][..SUB].copy_from_slice(chunk);
            }
        }
    });
    let xq = XBUF.with_borrow(|buf| buf.as_ptr());
    let mut cbuf: [CBuf; R] = std::array::from_fn(|_| CBuf([[0; PANEL]; TT]));
    let mut bacc = [[_mm512_setzero_si512(); TT]; R];
    let mut facc = [[_mm512_setzero_ps(); TT]; R];
    for b in 0..nblk {
        for r in 0..R {
            bacc[r][..tt].fill(_mm512_setzero_si512());
        }
        for s in 0..nsub {
            let k0 = b * block + s * SUB;
            // SAFETY: A reads tt rows of SUB bytes of this thread's XBUF sub-block k0/SUB
            // (TT * k bytes, filled above, not resized until this tile is done), B reads
            // SUB/4 rows of 64 bytes at the panel's line k0/4: in bounds (k0 + SUB <= k). C
            // tiles are stored to 64-byte aligned buffers of 16 x 64 bytes.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tileloadd tmm2, [{x} + {xs}]",
                    "tileloadd tmm3, [{w0} + {ws}]",
                    "tdpbusd tmm0, tmm2, tmm3",
                    "tilestored [{c0} + {ws}], tmm0",
                    x = in(reg) xq.add((k0 / SUB) * TT * SUB),
                    xs = in(reg) SUB,
                    w0 = in(reg) qs[0].add(k0 * PANEL),
                    ws = in(reg) 64usize,
                    c0 = in(reg) cbuf[0].0.as_mut_ptr(),
                    options(nostack),
                );
                if R == 2 {
                    asm!(
                        "tilezero tmm1",
                        "tileloadd tmm4, [{w1} + {ws}]",
                        "tdpbusd tmm1, tmm2, tmm4",
                        "tilestored [{c1} + {ws}], tmm1",
                        w1 = in(reg) qs[R - 1].add(k0 * PANEL),
                        ws = in(reg) 64usize,
                        c1 = in(reg) cbuf[R - 1].0.as_mut_ptr(),
                        options(nostack),
                    );
                }
            }
            for r in 0..R {
                let sc = if SCALES {
                    let at = (((p0 + r) * nblk + b) * nsub + s) * PANEL;
                    // SAFETY: `scales` is [panel][k/sub][16]; `at + 16` is in bounds.
                    unsafe { _mm512_loadu_si512(w.scales[at..at + PANEL].as_ptr().cast()) }
                } else {
                    _mm512_set1_epi32(1)
                };
                for t in 0..tt {
                    // SAFETY: row t of the C buffer is 16 i32.
                    let d = unsafe { _mm512_loadu_si512(cbuf[r].0[t].as_ptr().cast()) };
                    bacc[r][t] = if SCALES {
                        _mm512_add_epi32(bacc[r][t], _mm512_mullo_epi32(d, sc))
                    } else {
                        d
                    };
                }
            }
        }
        for r in 0..R {
            let pb = ((p0 + r) * nblk + b) * PANEL;
            // SAFETY: `corr`, `d` (and `dmin`, `mins` when MINS) are [panel][block][16...].
            unsafe {
                let corr = _mm512_loadu_si512(w.corr[pb..pb + PANEL].as_ptr().cast());
                let dv = _mm512_loadu_ps(w.d[pb..pb + PANEL].as_ptr());
                for t in 0..tt {
                    let xd = _mm512_set1_ps(a.d[(t0 + t) * nblk + b]);
                    let isum = _mm512_sub_epi32(bacc[r][t], corr);
                    let dd = _mm512_mul_ps(dv, xd);
                    facc[r][t] =
                        _mm512_add_ps(facc[r][t], _mm512_mul_ps(dd, _mm512_cvtepi32_ps(isum)));
                }
                if MINS {
                    let dmv = _mm512_loadu_ps(w.dmin[pb..pb + PANEL].as_ptr());
                    let mp = w.mins[pb * 8..pb * 8 + 8 * PANEL].as_ptr();
                    let m: [__m512i; 4] =
                        std::array::from_fn(|q| _mm512_loadu_si512(mp.add(q * 2 * PANEL).cast()));
                    for t in 0..tt {
                        let xs = a.sums[((t0 + t) * nblk + b) * 8..][..8]
                            .as_ptr()
                            .cast::<i32>();
                        let mut msum = _mm512_setzero_si512();
                        for (q, mq) in m.iter().enumerate() {
                            let pair = _mm512_set1_epi32(xs.add(q).read_unaligned());
                            msum = _mm512_dpwssd_epi32(msum, *mq, pair);
                        }
                        let xd = _mm512_set1_ps(a.d[(t0 + t) * nblk + b]);
                        let dm = _mm512_mul_ps(dmv, xd);
                        facc[r][t] =
                            _mm512_sub_ps(facc[r][t], _mm512_mul_ps(dm, _mm512_cvtepi32_ps(msum)));
                    }
                }
            }
        }
    }
    for r in 0..R {
        let valid = out.valid(p0 + r);
        let mask: __mmask16 = if valid == PANEL {
            !0
        } else {
            (1u16 << valid) - 1
        };
        for t in 0..tt {
            // SAFETY: row t0 + t exists and panel p0 + r is this task's; masked to `valid`.
            unsafe { _mm512_mask_storeu_ps(out.at(t0 + t, p0 + r), mask, facc[r][t]) };
        }
    }
}
