//! The compact weight layout: a quantized matrix kept as ggml's own blocks (4.5 bits per
//! weight for Q4_K, 6.56 for Q6_K), decoded in registers at every use instead of repacked to
//! int8 panels at load (about 8.6 bits per weight; 4.9 for Q4_K in the small form of
//! [`crate::packed`]). It costs decode work per use, so it pays
//! where a matmul reads each weight for few tokens and is bound by memory: the experts of a
//! mixture-of-experts layer, which see a handful of tokens each per step.
//!
//! The arithmetic is the one of [`crate::gemm`], operation for operation (exact integer
//! sums per block, then `acc + (d_w * d_x) * isum` and `acc - (dmin_w * d_x) * msum` in K
//! order), so a compact matrix gives the same bits as its repacked form on every path.
//!
//! Kernels: AVX2 and AVX-512 VNNI for Q4_K and Q6_K (the types of Q4_K_M/Q4_K_S experts)
//! and for the 32-weight formats without offsets (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4); the
//! portable loop (decode a block, then the integer dot) for every other type without float
//! offsets, and on Arm. This module holds the layout and the kernels over few tokens; choosing
//! between them and the repacked kernels is [`crate::gemm`]'s (long canvases decode each
//! panel into the repacked layout and run the path's GEMM kernel on it).

use rayon::prelude::*;

use crate::Path;
use crate::acts::Acts;
use crate::blocks::{QuantKind, decode};
use crate::out::Out;
use crate::packed::{PANEL, PanelMut};

#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_b32;
#[cfg(target_arch = "x86_64")]
mod x86_fill;
#[cfg(target_arch = "x86_64")]
mod x86_q4k;
#[cfg(target_arch = "x86_64")]
mod x86_q6k;

/// A quantized matrix in ggml's block layout (`n` rows of `k / block` blocks).
#[derive(Debug, Clone)]
pub(crate) struct CompactQuant {
    pub(crate) kind: QuantKind,
    pub(crate) k: usize,
    pub(crate) row_bytes: usize,
    pub(crate) bytes: Bytes,
}

/// A compact matrix's bytes: its own copy, or bytes held in place elsewhere (a model file's
/// memory map, kept alive by the handle), read the same way.
#[derive(Clone)]
pub(crate) enum Bytes {
    Owned(Vec<u8>),
    Shared(std::sync::Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Shared(s) => (**s).as_ref(),
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self {
            Bytes::Owned(_) => "owned",
            Bytes::Shared(_) => "shared",
        };
        write!(f, "Bytes({how}, {} bytes)", self.len())
    }
}

impl CompactQuant {
    /// Whether the compact layout takes `kind` (not the types with float offsets).
    pub(crate) fn supports(kind: QuantKind) -> bool {
        kind.affine_group().is_none()
    }

    /// Whether `path` has a vectorised kernel for `kind` (the others run the portable loop).
    pub(crate) fn fast_on(kind: QuantKind, path: Path) -> bool {
        rows8_kernel(kind, path).is_some()
    }
}

/// The eight-row kernel of `kind` on `path`, if it has one, and whether it reads the
/// activations' signed copy (the others read the biased quants).
fn rows8_kernel(kind: QuantKind, path: Path) -> Option<(Rows8Kernel, bool)> {
    #[cfg(target_arch = "x86_64")]
    if path != Path::Scalar && x86_f16c() {
        use x86_b32::{Iq4Nl, Mxfp4, Q4_0, Q5_0, Q8_0};
        let vnni = matches!(path, Path::Avx512Vnni | Path::Amx);
        let (b32, k32): (Rows8Kernel, Rows8Kernel) = match kind {
            QuantKind::Q4K if vnni => return Some((x86_q4k::q4k_rows8_vnni, true)),
            QuantKind::Q4K => return Some((x86_q4k::q4k_rows8_avx2, true)),
            QuantKind::Q6K if vnni => return Some((x86_q6k::q6k_rows8_vnni, false)),
            QuantKind::Q6K => return Some((x86_q6k::q6k_rows8_avx2, false)),
            QuantKind::Q8_0 => (x86_b32::rows8_vnni::<Q8_0>, x86_b32::rows8_avx2::<Q8_0>),
            QuantKind::Q4_0 => (x86_b32::rows8_vnni::<Q4_0>, x86_b32::rows8_avx2::<Q4_0>),
            QuantKind::Q5_0 => (x86_b32::rows8_vnni::<Q5_0>, x86_b32::rows8_avx2::<Q5_0>),
            QuantKind::IQ4NL => (x86_b32::rows8_vnni::<Iq4Nl>, x86_b32::rows8_avx2::<Iq4Nl>),
            QuantKind::MXFP4 => (x86_b32::rows8_vnni::<Mxfp4>, x86_b32::rows8_avx2::<Mxfp4>),
            _ => return None,
        };
        // The 32-weight formats' VNNI kernel multiplies the biased quants; AVX2's signs them.
        return Some(if vnni { (b32, false) } else { (k32, true) });
    }
    let _ = (kind, path);
    None
}

/// Decodes the eight rows at `rows` (`row_bytes` apart, `k` weights each) into rows
/// `8 * half..8 * half + 8` of the byte-form panel `p` with the vectorised decoder, if this
/// CPU has one for `kind` (the portable packer's values); false, with nothing written,
/// otherwise.
pub(crate) fn fill_rows8(
    kind: QuantKind,
    k: usize,
    rows: &[u8],
    row_bytes: usize,
    half: usize,
    p: &mut PanelMut<'_>,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if x86_fill::fills(kind) && std::arch::is_x86_feature_detected!("avx2") && x86_f16c() {
        // SAFETY: AVX2 and F16C were just detected; `fill8` asserts the sizes.
        unsafe { x86_fill::fill8(kind, k, rows, row_bytes, half, p) };
        return true;
    }
    let _ = (kind, k, rows, row_bytes, half, p);
    false
}

/// Whether the CPU converts f16 in hardware (every AVX2 CPU so far; checked anyway).
#[cfg(target_arch = "x86_64")]
fn x86_f16c() -> bool {
    std::arch::is_x86_feature_detected!("f16c")
}

/// Whether [`matmul`] reads the activations' signed copy ([`Acts::prepare_signed`]): the
/// eight-row kernels that [`rows8_kernel`] says do.
pub(crate) fn reads_signed(path: Path, w: &CompactQuant) -> bool {
    rows8_kernel(w.kind, path).is_some_and(|(_, signed)| signed)
}

/// `out = acts . w^T` for every token (few of them: `gemm` sends long canvases to the
/// repacked kernels), `acts` prepared for `w`'s activation kind, with the signed copy where
/// [`reads_signed`] says.
pub(crate) fn matmul(path: Path, w: &CompactQuant, acts: &Acts, n: usize, out: Out) {
    let (rows8, reads) = rows8_kernel(w.kind, path).map_or((None, false), |(k, s)| (Some(k), s));
    let panels = n.div_ceil(PANEL);
    let signed = &acts.signed[..if reads { out.t * w.k } else { 0 }];
    (0..panels).into_par_iter().for_each_init(
        || (vec![0.0f32; out.t * 8], vec![0i32; out.t * 16]),
        |(acc, ints), p| {
            // Whole groups of eight rows on the vectorised kernel, the rest (a ragged last
            // panel, or every row without one) on the portable loop: the same bits.
            let groups = if rows8.is_some() { out.valid(p) / 8 } else { 0 };
            if let Some(k8) = rows8 {
                for g in 0..groups {
                    // SAFETY: the path's features are available (the caller checked the
                    // path); rows p*16 + 8g .. +8 exist; `acc` holds 8 per token and `ints`
                    // 16.
                    unsafe { k8(w, p * PANEL + 8 * g, acts, signed, acc, ints) };
                    for t in 0..out.t {
                        // SAFETY: t < out.t, panel p is this task's, 8g + 8 <= valid(p).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                acc[t * 8..].as_ptr(),
                                out.at(t, p).add(8 * g),
                                8,
                            )
                        };
                    }
                }
            }
            for r in 8 * groups..out.valid(p) {
                let bytes = &w.bytes[(p * PANEL + r) * w.row_bytes..][..w.row_bytes];
                let acc = &mut acc[..out.t];
                portable_row(w, bytes, acts, acc);
                for (t, &v) in acc.iter().enumerate() {
                    // SAFETY: t < out.t, panel p is this task's, r < valid(p).
                    unsafe { *out.at(t, p).add(r) = v };
                }
            }
        },
    );
}

/// Computes eight consecutive weight rows from the given one against every token into
/// `acc` (`[t][8]`, overwritten), with the activations also given as signed bytes and
/// `[t][16]` integer scratch.
///
/// # Safety
/// The CPU must support the kernel's instructions and the eight rows must exist.
pub(crate) type Rows8Kernel = unsafe fn(&CompactQuant, usize, &Acts, &[u8], &mut [f32], &mut [i32]);

/// The portable kernel: one weight row against every token into `acc` (`[t]`,
/// overwritten), each block decoded once, then dotted with every token.
fn portable_row(w: &CompactQuant, row: &[u8], a: &Acts, acc: &mut [f32]) {
    let kind = w.kind;
    let (k, block, sub) = (w.k, kind.block(), kind.sub());
    let nblk = k / block;
    acc.fill(0.0);
    for (b, raw) in row.chunks_exact(kind.ty().type_size()).enumerate() {
        let dec = decode(kind, raw);
        for (t, acc) in acc.iter_mut().enumerate() {
            let xq = &a.q[t * k + b * block..][..block];
            let xd = a.d[t * nblk + b];
            let mut isum = 0i32;
            for s in 0..block / sub {
                let dot: i32 = (0..sub)
                    .map(|i| (i32::from(xq[s * sub + i]) - 128) * i32::from(dec.q[s * sub + i]))
                    .sum();
                isum += dec.sc[s] * dot;
            }
            *acc += (dec.d * xd) * isum as f32;
            if kind.has_mins() {
                let xs = &a.sums[(t * nblk + b) * 8..][..8];
                let msum: i32 = (0..8)
                    .map(|j| i32::from(dec.mins[j]) * i32::from(xs[j]))
                    .sum();
                *acc -= (dec.dmin * xd) * msum as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests;
