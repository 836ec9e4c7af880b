//! Weight repacking, once per tensor at load time, into the layout the microkernels stream
//! without shuffles.
//!
//! Quantized weights: rows are interleaved in panels of 16 and every weight is decoded to a
//! signed int8, stored `[panel][k / 4][row 0..16][4]`: one 64-byte line holds 4 consecutive
//! weights of 16 rows, exactly one `vpdpbusd` zmm operand (two ymm operands). Integer
//! sub-block scales are pre-decoded to i32 `[panel][k / sub][16]`, Q4_K/Q5_K mins to i16
//! pairs `[panel][block][4][16][2]` (one `vpdpwssd` operand per pair), and the super-scales
//! to f32 `[panel][block][16]`. The cost is memory: about 8.6 bits per weight for every
//! quantized type (Q4_K is 4.5 in the file).
//!
//! The small form ([`QuantPacked::small`]) holds the integer scales and mins of every
//! K-quant without float offsets (Q3_K to Q6_K, IQ4_XS) as i8, widened when loaded, and
//! Q4_K's weights (0..=15) two to a byte: lines `2j` and `2j + 1` of the layout above share
//! one 64-byte line, the first in the low nibbles, and a kernel splits it with a mask and a
//! shift. Q4_K then takes about 4.9 bits per weight (1.08x the file) instead of 9.9, Q6_K
//! 8.75 instead of 10.25, and a pass streams that much less; the values, and so every
//! result, are the same. The AVX-512 VNNI, AMX and AVX2 kernels read this form (AVX-VNNI's
//! rebuilds each panel into bytes first), and packing picks it where one of them is the
//! active path ([`small_for`]); every other path runs such a matrix one panel at a time,
//! expanded into the byte layout.
//!
//! Where an x86 kernel is the active path ([`planar_for`]; AVX2 and AVX-VNNI rebuild such
//! a panel into bytes in L2 before their tiles, the others read it) the small
//! form also holds Q6_K's weights in 6 bits, Q5_K's in 5 and Q3_K's in 3 ([`QuantPacked::planar`]):
//! `u = q + bias` (32 for Q6_K, 0 for Q5_K, 4 for Q3_K) in bit planes ([`Planes`]). A group
//! of `G` lines (4 for Q6_K, 8 for Q5_K: one sub-block; 8 for Q3_K: two) is `G * lo / 8`
//! lines of low bits (4 bits: lines paired as for Q4_K; 2 bits: 4 lines a line) and one line
//! of the `G` lines' high bits. Q6_K then takes 6.75 bits per weight (1.03x the file)
//! instead of 8.75, Q5_K 5.9 (1.07x) instead of 8.9, Q3_K 3.75 (1.09x) instead of 8.75. And
//! the 4-bit formats whose weights are 16 levels (IQ4_XS, IQ4_NL, Q4_0, MXFP4;
//! [`QuantPacked::lut`]) hold each weight as its level's index, two to a byte as for Q4_K,
//! and the kernel looks the levels up (`vpshufb`): IQ4_XS 4.6 bits per weight (1.09x the
//! file) instead of 8.6, IQ4_NL, Q4_0 and MXFP4 6 instead of 10. And [`Form::Half`] keeps
//! the 32-weight formats' block constants in 16 bits: Q8_0 9 bits per weight (1.06x the
//! file) instead of 10, IQ4_NL and Q4_0 5 (1.11x) instead of 6, MXFP4 4.75 (1.12x: its
//! power-of-two scale as the file's E8M0 byte, [`QuantPacked::e8`]); and with them Q5_0's
//! weights in Q5_K's 5-bit planes, less a bias of 16 ([`BITS5_SIGNED`]): 6 bits per weight
//! (1.09x the file) instead of 9.
//!
//! Q2_K's mins (per 16 weights) and Q4_1/Q5_1's offsets (per 32) are kept as a small float
//! matrix `[n x k / group]` (1–2 bits per weight more), applied as a second, float GEMM
//! against the activations' scaled group sums. The planar forms hold them as the file does
//! and widen them two panels at a time where they are added: Q4_1/Q5_1's as f16 (beside
//! [`Form::Half`]'s 16-bit constants, Q4_1's weights two a byte and Q5_1's in Q5_K's planes:
//! 1.10x and 1.08x the file instead of 2.2x and 1.8x), Q2_K's as its 4-bit mins, two a byte,
//! and f16 `dmin` (beside its weights in 2-bit planes without a high line, i8 scales and,
//! with [`Form::Half`], 16-bit `corr` and `d`: 2.94 bits per weight, 1.12x the file, instead
//! of 12.25).

//! Float weights (F32, F16, BF16) are widened to f32 `[panel][k][16]`; in the small forms
//! (AVX-512 VNNI, AMX and AVX2: [`small_for`]) and on aarch64 (NEON) F16 and BF16 keep the
//! file's 16 bits in that layout ([`FloatPacked::w16`]) and the float kernels widen them as
//! they load them.

use lacuna_quant::GgmlType;
use rayon::prelude::*;

use crate::{Error, Path};

use crate::acts::{ActKind, FloatRound};
use crate::blocks::{QuantKind, decode};
use crate::compact::{Bytes, CompactQuant};

/// Rows per panel.
pub(crate) const PANEL: usize = 16;

/// A weight matrix `[n x k]` (ggml row order: `n` rows of `k`), repacked for [`crate::matmul`].
#[derive(Debug, Clone)]
pub struct PackedWeight {
    ty: GgmlType,
    n: usize,
    k: usize,
    pub(crate) inner: Inner,
}

// One per matrix, beside megabytes of weights: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(crate) enum Inner {
    Quant(QuantPacked),
    Float(FloatPacked),
    /// ggml's blocks as in the file (see [`crate::compact`]).
    Compact(CompactQuant),
}

/// Quantized weights decoded to int8 (see the module docs for the layout).
#[derive(Debug, Clone)]
pub(crate) struct QuantPacked {
    pub(crate) kind: QuantKind,
    pub(crate) k: usize,
    pub(crate) panels: usize,
    /// `[panel][k/4][16][4]` signed weights, or with [`QuantPacked::nib`]
    /// `[panel][k/8][16][4]` bytes of two weights each, or with [`QuantPacked::planar`]
    /// `[panel][k / 4G][G/2 + 1][64]` (see the module docs).
    pub(crate) qs: Vec<i8>,
    /// The small form (see the module docs): `scales8` and `mins8` stand for `scales` and
    /// `mins` (empty), narrowed to i8, and for Q4_K `qs` holds two weights a byte.
    pub(crate) small: bool,
    /// Q2_K/Q3_K/Q5_K/Q6_K in the small form with 2/3/5/6-bit weights in planes, or Q5_0
    /// and Q5_1 with 5-bit weights as Q5_K's (with [`QuantPacked::half`]; see the module
    /// docs).
    pub(crate) planar: bool,
    /// A 32-weight format in the small form: `corr16` and `d16` stand for `corr` and `d`
    /// (empty).
    pub(crate) half: bool,
    /// `qs` holds 4-bit indices into the [`levels`] of the kind, two a byte as
    /// [`QuantPacked::nib`] lays them out (IQ4_XS, IQ4_NL and Q4_0 in the planar form).
    pub(crate) lut: bool,
    /// `[panel][k/sub][16]` integer scales (empty when the type has none).
    pub(crate) scales: Vec<i32>,
    /// `[panel][block][16]`: `128 * sum_sub(sc * sum(q))`, the bias of `u8 = q + 128` acts.
    pub(crate) corr: Vec<i32>,
    /// `[panel][block][4][16][2]` mins (Q4_K/Q5_K only).
    pub(crate) mins: Vec<i16>,
    /// `scales` as i8, for the small form.
    pub(crate) scales8: Vec<i8>,
    /// `corr / 128` as i16, for [`QuantPacked::half`].
    pub(crate) corr16: Vec<i16>,
    /// `d` as f16 bits, for [`QuantPacked::half`] (not MXFP4).
    pub(crate) d16: Vec<u16>,
    /// MXFP4's `d` as the file's E8M0 byte (`d = e8m0_to_fp32_half(e)`: powers of two f16
    /// cannot hold), for [`QuantPacked::half`], instead of `d16`.
    pub(crate) e8: Vec<u8>,
    /// `mins` as i8, for the small form.
    pub(crate) mins8: Vec<i8>,
    /// `[panel][block][16]` super-scale `d`.
    pub(crate) d: Vec<f32>,
    /// `[panel][block][16]` super-scale `dmin` (Q4_K/Q5_K only).
    pub(crate) dmin: Vec<f32>,
    /// The float offsets `[n x k / group]` (see [`QuantKind::affine_group`]).
    pub(crate) affine: Option<FloatPacked>,
    /// [`QuantPacked::affine`]'s layout `[panel][k / group][16]` as f16 bits, for
    /// [`QuantPacked::half`] (Q4_1 and Q5_1, whose offsets are the file's f16 `m`): widened
    /// two panels at a time where they are added ([`QuantPacked::offsets_panels`]).
    pub(crate) affine16: Vec<u16>,
    /// Q2_K's float offsets `-(dmin * m)` in the planar form, as the file holds them: the
    /// 4-bit mins `m`, two sub-blocks a byte `[panel][k / 32][16]` (sub-block `2j` in the
    /// low nibble of pair `j`), and `dmin` as f16 bits `[panel][k / 256][16]`; widened two
    /// panels at a time where they are added ([`QuantPacked::offsets_panels`]).
    pub(crate) mins4: Vec<u8>,
    pub(crate) dmin16: Vec<u16>,
}

/// The weight forms of a [`FloatPacked`], as the float kernels name them in a const
/// parameter: f32 ([`FloatPacked::w`]), or f16 / bf16 bits ([`FloatPacked::w16`]).
pub(crate) mod wform {
    /// f32 weights.
    pub(crate) const F32: u8 = 0;
    /// f16 bits.
    pub(crate) const F16: u8 = 1;
    /// bf16 bits.
    pub(crate) const BF16: u8 = 2;
}

/// Float weights widened to f32, `[panel][k][16]`, or kept narrow.
#[derive(Debug, Clone)]
pub(crate) struct FloatPacked {
    pub(crate) k: usize,
    pub(crate) panels: usize,
    pub(crate) w: Vec<f32>,
    /// F16 or BF16 weights (`round` says which) as the file's bits, in `w`'s layout, instead
    /// of `w` (then empty): in the small forms, where the AVX-512 or AVX2 float kernel runs
    /// ([`small_for`]), which widens them as it loads them (exactly: the same f32 values,
    /// the same results); other paths widen them two panels at a time. Half the bytes of `w`.
    pub(crate) w16: Vec<u16>,
    pub(crate) round: FloatRound,
}

impl PackedWeight {
    /// Repacks `n` rows of `k` elements of type `ty` from ggml's row-major bytes.
    ///
    /// Supported types: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
    /// IQ4_NL, MXFP4, F16, BF16, F32. `k` must be a whole
    /// number of blocks and `bytes` exactly `n` rows long.
    pub fn new(ty: GgmlType, n: usize, k: usize, bytes: &[u8]) -> Result<PackedWeight, Error> {
        if !PackedWeight::supports(ty) {
            return Err(Error::UnsupportedType { ty });
        }
        let row_bytes = check_bytes(ty, n, k, bytes)?;
        let form = Form::active();
        PackedWeight::pack(
            ty,
            n,
            k,
            bytes,
            row_bytes,
            form,
            form.narrow_floats_active(),
        )
    }

    /// [`PackedWeight::new`] in the form `form`, whatever the active path (tests run every
    /// form on every path; types without integer scales ignore it).
    #[cfg(test)]
    pub(crate) fn new_with(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
        form: Form,
    ) -> Result<PackedWeight, Error> {
        if !PackedWeight::supports(ty) {
            return Err(Error::UnsupportedType { ty });
        }
        let row_bytes = check_bytes(ty, n, k, bytes)?;
        PackedWeight::pack(ty, n, k, bytes, row_bytes, form, form != Form::Bytes)
    }

    /// `narrow_floats`: F16 and BF16 keep the file's bits ([`FloatPacked::w16`]).
    fn pack(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
        row_bytes: usize,
        form: Form,
        narrow_floats: bool,
    ) -> Result<PackedWeight, Error> {
        let inner = match QuantKind::of(ty) {
            Some(kind) => Inner::Quant(pack_quant(kind, n, k, bytes, row_bytes, form)),
            None => Inner::Float(pack_float(ty, n, k, bytes, narrow_floats)),
        };
        Ok(PackedWeight { ty, n, k, inner })
    }

    /// The bytes [`PackedWeight::new`] would hold for `n` rows of `k` elements of type `ty`
    /// on the active path ([`PackedWeight::packed_bytes`] of the result), without packing
    /// anything: what a loader weighs against the memory available. `None` where `new`
    /// would refuse the type or the shape.
    pub fn repacked_bytes(ty: GgmlType, n: usize, k: usize) -> Option<usize> {
        let form = Form::active();
        PackedWeight::repacked_bytes_with(ty, n, k, form, form.narrow_floats_active())
    }

    /// [`PackedWeight::repacked_bytes`] in the form `form`, F16 and BF16 held narrow when
    /// `narrow_floats` (as [`PackedWeight::pack`] takes them).
    pub(crate) fn repacked_bytes_with(
        ty: GgmlType,
        n: usize,
        k: usize,
        form: Form,
        narrow_floats: bool,
    ) -> Option<usize> {
        if !PackedWeight::supports(ty) || n == 0 || k == 0 || !k.is_multiple_of(ty.block_size()) {
            return None;
        }
        let rows = n.div_ceil(PANEL).checked_mul(PANEL)?;
        let Some(kind) = QuantKind::of(ty) else {
            // F16 and BF16 as the file's bits ([`FloatPacked::w16`]).
            let narrow = narrow_floats && ty.type_size() == 2;
            return rows.checked_mul(k)?.checked_mul(if narrow { 2 } else { 4 });
        };
        // As `pack_quant` and `QuantPacked::zeroed` lay it out.
        let half = form == Form::Half && half_consts(kind);
        let planar = form.planar();
        let q2k = planar && kind == QuantKind::Q2K;
        let small =
            form != Form::Bytes && kind.has_scales() && kind.affine_group().is_none() || q2k;
        let blocks = rows.checked_mul(k / kind.block())?;
        let subs = blocks * (kind.block() / kind.sub());
        let qs = rows.checked_mul(match kind {
            QuantKind::Q4K if small => k / 2,
            _ if planar && lut_kind(kind) => k / 2,
            QuantKind::Q6K if small && planar => k / 4 * 3,
            QuantKind::Q5K if small && planar => k / 8 * 5,
            QuantKind::Q3K if small && planar => k / 8 * 3,
            QuantKind::Q2K if q2k => k / 4,
            QuantKind::Q5_0 | QuantKind::Q5_1 if half && planar => k / 8 * 5,
            QuantKind::Q4_1 if half => k / 2,
            _ => k,
        })?;
        let (scale, min) = if small { (1, 1) } else { (4, 2) };
        let scales = if kind.has_scales() { subs * scale } else { 0 };
        // 8 mins and an f32 `dmin` per block.
        let mins = if kind.has_mins() {
            blocks * (8 * min + 4)
        } else {
            0
        };
        // f32 offsets, or f16 with 16-bit constants, or Q2_K's 4-bit mins and f16 `dmin`.
        let affine = match kind.affine_group() {
            _ if q2k => rows * (k / 32) + 2 * blocks,
            Some(g) => rows * (k / g) * if half { 2 } else { 4 },
            None => 0,
        };
        // `corr` and `d`: 4 bytes each per block (2 in 16 bits; MXFP4's `d` its E8M0 byte).
        let consts = match kind {
            QuantKind::MXFP4 if half => 3 * blocks,
            _ if half => 4 * blocks,
            _ => 8 * blocks,
        };
        Some(qs + scales + consts + mins + affine)
    }

    /// Whether the weight is held in the small form (see the module docs): Q4_K two weights
    /// a byte, integer scales and mins as i8.
    pub fn is_small(&self) -> bool {
        matches!(&self.inner, Inner::Quant(q) if q.small)
    }

    /// Whether the weight is Q3_K, Q5_K or Q6_K held in 3, 5 or 6 bits (the small form where
    /// the AVX-512 VNNI kernel reads it; see the module docs).
    pub fn is_planar(&self) -> bool {
        matches!(&self.inner, Inner::Quant(q) if q.planar)
    }

    /// Keeps `n` rows of `k` quantized elements of type `ty` in ggml's block layout, the
    /// size they have in the file, instead of repacking them (see [`crate::compact`]): the
    /// same results as [`PackedWeight::new`], bit for bit, at about half the memory for
    /// 4-bit types, for matmuls over few tokens. Types with float offsets (Q2_K, Q4_1,
    /// Q5_1) and float types are [`Error::UnsupportedType`].
    pub fn compact(ty: GgmlType, n: usize, k: usize, bytes: &[u8]) -> Result<PackedWeight, Error> {
        // Checked before the copy, so a refused matrix costs none.
        let (kind, row_bytes) = Self::compact_check(ty, n, k, bytes)?;
        Ok(Self::compact_checked(
            ty,
            n,
            k,
            kind,
            row_bytes,
            Bytes::Owned(par_copy(bytes)),
        ))
    }

    /// [`PackedWeight::compact`] over bytes the caller no longer needs: they become the
    /// weight, without a copy (a matrix built at load, such as a transposed embedding, is
    /// then never held twice).
    pub fn compact_owned(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: Vec<u8>,
    ) -> Result<PackedWeight, Error> {
        let (kind, row_bytes) = Self::compact_check(ty, n, k, &bytes)?;
        Ok(Self::compact_checked(
            ty,
            n,
            k,
            kind,
            row_bytes,
            Bytes::Owned(bytes),
        ))
    }

    /// [`PackedWeight::compact`] over bytes held elsewhere for as long as the weight lives
    /// (a model file's memory map, through a handle on it): read in place, never copied, so
    /// loading costs nothing and the OS may drop and re-read the pages under memory
    /// pressure.
    pub fn compact_shared(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: std::sync::Arc<dyn AsRef<[u8]> + Send + Sync>,
    ) -> Result<PackedWeight, Error> {
        let (kind, row_bytes) = Self::compact_check(ty, n, k, (*bytes).as_ref())?;
        Ok(Self::compact_checked(
            ty,
            n,
            k,
            kind,
            row_bytes,
            Bytes::Shared(bytes),
        ))
    }

    fn compact_checked(
        ty: GgmlType,
        n: usize,
        k: usize,
        kind: QuantKind,
        row_bytes: usize,
        bytes: Bytes,
    ) -> PackedWeight {
        let inner = Inner::Compact(CompactQuant {
            kind,
            k,
            row_bytes,
            bytes,
        });
        PackedWeight { ty, n, k, inner }
    }

    fn compact_check(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<(QuantKind, usize), Error> {
        let kind = QuantKind::of(ty)
            .filter(|&k| CompactQuant::supports(k))
            .ok_or(Error::UnsupportedType { ty })?;
        Ok((kind, check_bytes(ty, n, k, bytes)?))
    }

    /// The weight's bytes when it is kept in the compact layout: the file's rows, byte for
    /// byte (so a tied embedding table can read its rows here instead of from the file).
    /// `None` for a repacked weight.
    pub fn file_bytes(&self) -> Option<&[u8]> {
        match &self.inner {
            Inner::Compact(c) => Some(&c.bytes),
            _ => None,
        }
    }

    /// Whether [`PackedWeight::compact`] takes weights of type `ty`.
    pub fn compact_supports(ty: GgmlType) -> bool {
        QuantKind::of(ty).is_some_and(CompactQuant::supports)
    }

    /// Whether [`PackedWeight::compact`] has a vectorised kernel for `ty` on the active path
    /// (elsewhere it runs a portable loop: exact but slow).
    pub fn compact_is_fast(ty: GgmlType) -> bool {
        match (QuantKind::of(ty), Path::active()) {
            (Some(kind), Ok(path)) => CompactQuant::fast_on(kind, path),
            _ => false,
        }
    }

    /// Whether the weight is kept in the compact layout.
    pub fn is_compact(&self) -> bool {
        matches!(self.inner, Inner::Compact(_))
    }

    /// Whether [`PackedWeight::new`] takes weights of type `ty`.
    pub fn supports(ty: GgmlType) -> bool {
        QuantKind::of(ty).is_some() || matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16)
    }

    /// The weight type as found in the file.
    pub fn ty(&self) -> GgmlType {
        self.ty
    }

    /// Output features (rows of the weight).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Input features (columns of the weight).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Bytes held by the repacked form.
    pub fn packed_bytes(&self) -> usize {
        match &self.inner {
            Inner::Quant(q) => {
                q.qs.len()
                    + q.scales8.len()
                    + q.mins8.len()
                    + 2 * (q.corr16.len() + q.d16.len())
                    + q.e8.len()
                    + 4 * (q.scales.len() + q.corr.len() + q.d.len() + q.dmin.len())
                    + 2 * q.mins.len()
                    + q.affine.as_ref().map_or(0, |f| 4 * f.w.len())
                    + 2 * q.affine16.len()
                    + q.mins4.len()
                    + 2 * q.dmin16.len()
            }
            Inner::Float(f) => 4 * f.w.len() + 2 * f.w16.len(),
            Inner::Compact(c) => c.bytes.len(),
        }
    }

    pub(crate) fn act_kind(&self) -> ActKind {
        match &self.inner {
            Inner::Quant(q) => match (q.kind.block(), q.kind.affine_group()) {
                (256, None) => ActKind::Q8K,
                (256, Some(_)) => ActKind::Q8KSums16,
                (_, None) => ActKind::Q8_0,
                (_, Some(_)) => ActKind::Q8_1,
            },
            Inner::Float(f) => ActKind::Float(f.round),
            Inner::Compact(c) => match c.kind.block() {
                256 => ActKind::Q8K,
                _ => ActKind::Q8_0,
            },
        }
    }
}

/// Checks that `bytes` hold `n` rows of `k` elements of `ty`; returns the bytes per row.
fn check_bytes(ty: GgmlType, n: usize, k: usize, bytes: &[u8]) -> Result<usize, Error> {
    if n == 0 || k == 0 {
        return Err(Error::BadShape {
            what: "weight",
            detail: "n and k must be non-zero",
        });
    }
    let block = ty.block_size();
    if !k.is_multiple_of(block) {
        return Err(Error::RaggedK { ty, k, block });
    }
    let row_bytes = k / block * ty.type_size();
    let expected = n.checked_mul(row_bytes).ok_or(Error::BadShape {
        what: "weight",
        detail: "n * row size overflows",
    })?;
    if bytes.len() != expected {
        return Err(Error::BadLength {
            what: "weight bytes",
            expected,
            found: bytes.len(),
        });
    }
    Ok(row_bytes)
}

/// Whether packing for `path` picks the small form: on the x86 paths, whose kernels read it,
/// unless [`Tuning::small_panels`](crate::Tuning) is off. (AMX builds its
/// tiles' planes from every small form of the K-quants, and rebuilds the 32-element
/// formats' level indices into its B tiles panel by panel; AVX2 rebuilds panels into bytes
/// but for Q4_K's nibbles, AVX-VNNI all of them.)
pub(crate) fn small_for(path: Path) -> bool {
    x86_kernel(path) && crate::tuning::get().small_panels
}

/// Whether packing for `path` holds Q3_K, Q5_K and Q6_K in bit planes and the level formats
/// as indices (within the small form): wherever it is picked ([`small_for`]; AVX-512 VNNI
/// and AMX read them, AVX2 and AVX-VNNI rebuild them panel by panel), unless
/// [`Tuning::planar_panels`](crate::Tuning) is off.
pub(crate) fn planar_for(path: Path) -> bool {
    small_for(path) && crate::tuning::get().planar_panels
}

/// Whether `path` runs small matrices without `gemm`'s per-matmul expansion (AMX
/// through the AVX-512 kernel; AVX2 rebuilds the planar forms, level indices and 16-bit block
/// constants panel by panel itself, AVX-VNNI every small form).
pub(crate) fn reads_small(path: Path) -> bool {
    x86_kernel(path)
}

/// The x86 paths, whose kernels read (or rebuild panel by panel) every small form.
fn x86_kernel(path: Path) -> bool {
    matches!(
        path,
        Path::Avx512Vnni | Path::Amx | Path::Avx2 | Path::AvxVnni
    )
}

/// The 4-bit formats held as indices into their 16 levels ([`levels`]): IQ4_XS, IQ4_NL and
/// Q4_0. The AVX-512 kernel looks the levels up in every token tile of a short canvas and
/// rebuilds the byte form once per pair of panels for a long one: a lookup per tile of a
/// 32-weight format ran 36-75% slower than bytes from 32 tokens on (1 thread, 4096x4096),
/// against 40-60% faster at one token.
fn lut_kind(kind: QuantKind) -> bool {
    matches!(
        kind,
        QuantKind::IQ4XS | QuantKind::IQ4NL | QuantKind::Q4_0 | QuantKind::MXFP4
    )
}

/// IQ4's 16 levels (`kvalues_iq4nl`), as the byte form holds them.
static IQ4_LEVELS: [i8; 16] = lacuna_quant::KVALUES_IQ4NL;
/// Q4_0's 16 levels (`q - 8`), as the byte form holds them.
static Q4_0_LEVELS: [i8; 16] = [-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7];
/// MXFP4's 16 levels (`kvalues_mxfp4`: 0 twice), as the byte form holds them.
static MXFP4_LEVELS: [i8; 16] = lacuna_quant::KVALUES_MXFP4;

/// The 16 levels of a [`lut_kind`], as the byte form holds them.
pub(crate) fn levels(kind: QuantKind) -> &'static [i8; 16] {
    match kind {
        QuantKind::Q4_0 => &Q4_0_LEVELS,
        QuantKind::MXFP4 => &MXFP4_LEVELS,
        _ => &IQ4_LEVELS,
    }
}

/// Each byte's index among the [`levels`] of `kind` (by its bits as u8; MXFP4's 0, twice a
/// level, the later index), -1 where it is none.
fn level_index(kind: QuantKind) -> [i8; 256] {
    let mut index = [-1i8; 256];
    for (i, &l) in levels(kind).iter().enumerate() {
        index[usize::from(l as u8)] = i as i8;
    }
    index
}

/// The formats whose block constants fit 16 bits: an f16 scale, no more than 32 x 127 for
/// the weight sum, and an f16 offset if any (Q4_1, Q5_1); Q2_K (f16 `d`, a scaled weight sum
/// of at most 256 x 15 x 3, beside its planes and mins); and MXFP4 (a weight sum of at most
/// 32 x 12, its scale as the file's E8M0 byte, [`QuantPacked::e8`]).
fn half_consts(kind: QuantKind) -> bool {
    matches!(
        kind,
        QuantKind::Q8_0
            | QuantKind::Q4_0
            | QuantKind::Q5_0
            | QuantKind::IQ4NL
            | QuantKind::Q4_1
            | QuantKind::Q5_1
            | QuantKind::Q2K
            | QuantKind::MXFP4
    )
}

/// How packing holds a quantized matrix (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Every weight a byte, i32/i16 scales and mins.
    Bytes,
    /// The small form: i8 scales and mins, Q4_K two weights a byte.
    Small,
    /// The small form with Q3_K, Q5_K and Q6_K in bit planes and the level formats as
    /// indices ([`QuantPacked::lut`]).
    Planar,
    /// [`Form::Planar`] with 16-bit block constants for the 32-weight formats with an f16
    /// scale ([`QuantPacked::half`]): what [`PackedWeight::new`] picks on the x86 paths.
    /// Against the byte form (1 thread, 4096x4096, Q8_0/Q4_0/IQ4_NL) 0.46-0.85x the time
    /// at 1-8 tokens and 0.89-1.02x from 32 on, in less memory; [`Tuning::wide_constants`](crate::Tuning)
    /// keeps [`Form::Planar`]'s 32-bit constants.
    Half,
}

impl Form {
    /// The form [`PackedWeight::new`] picks on the active path.
    fn active() -> Form {
        match Path::active() {
            Ok(path) if planar_for(path) => {
                if crate::tuning::get().wide_constants {
                    Form::Planar
                } else {
                    Form::Half
                }
            }
            Ok(path) if small_for(path) => Form::Small,
            _ => Form::Bytes,
        }
    }

    /// Whether [`PackedWeight::new`] holds F16 and BF16 weights narrow with this form (the
    /// active one): wherever the small forms are held, and on aarch64, whose NEON float
    /// kernel reads them narrow too (the scalar path there widens two panels at a time).
    fn narrow_floats_active(self) -> bool {
        self != Form::Bytes || cfg!(target_arch = "aarch64")
    }

    /// Whether this form holds planes and level indices ([`Form::Planar`], [`Form::Half`]).
    fn planar(self) -> bool {
        matches!(self, Form::Planar | Form::Half)
    }
}

fn pack_quant(
    kind: QuantKind,
    n: usize,
    k: usize,
    bytes: &[u8],
    row_bytes: usize,
    form: Form,
) -> QuantPacked {
    // The small form narrows integer scales (and, planar, 16-bit block constants); types
    // with float offsets keep the byte form.
    if form != Form::Bytes && kind.has_scales() && kind.affine_group().is_none()
        || form == Form::Half && half_consts(kind)
        || form.planar() && lut_kind(kind)
        || form.planar() && kind == QuantKind::Q2K
    {
        return pack_small(kind, n, k, bytes, row_bytes, form);
    }
    let panels = n.div_ceil(PANEL);
    let block = kind.block();
    let nblk = k / block;
    let nsub = block / kind.sub();
    let mut p = QuantPacked::zeroed(kind, k, panels, false, Form::Bytes);
    // Float offsets per `group` weights, `[panel][k / group][16]`: the float GEMM's layout,
    // filled in the same pass as the integer weights.
    let group = kind.affine_group();
    let kg = group.map_or(0, |g| k / g);
    let mut aff = vec![0.0f32; panels * PANEL * kg];
    let affs = chunks_or_empty(&mut aff, PANEL * kg, panels).into_par_iter();
    let qs = p.qs.par_chunks_mut(PANEL * k);
    let sc = chunks_or_empty(&mut p.scales, PANEL * nblk * nsub, panels).into_par_iter();
    let corr = p.corr.par_chunks_mut(PANEL * nblk);
    let mins = chunks_or_empty(&mut p.mins, PANEL * nblk * 8, panels).into_par_iter();
    let d = p.d.par_chunks_mut(PANEL * nblk);
    let dmin = chunks_or_empty(&mut p.dmin, PANEL * nblk, panels).into_par_iter();
    qs.zip(sc)
        .zip(corr)
        .zip(mins)
        .zip(d)
        .zip(dmin)
        .zip(affs)
        .enumerate()
        .for_each(|(pi, ((((((qs, sc), corr), mins), d), dmin), aff))| {
            let rows = PANEL.min(n - pi * PANEL);
            let src = &bytes[pi * PANEL * row_bytes..][..rows * row_bytes];
            let dst = PanelMut {
                qs,
                sc,
                corr,
                mins,
                d,
                dmin,
                aff,
            };
            fill_panel(kind, k, src, row_bytes, dst);
        });
    if group.is_some() {
        p.affine = Some(FloatPacked {
            k: kg,
            panels,
            w: aff,
            w16: Vec::new(),
            round: FloatRound::None,
        });
    }
    p
}

/// [`pack_quant`] in the small form: each panel decoded into a byte panel, then its
/// integer scales and mins narrowed to i8 and its weights paired into nibbles (Q4_K) or
/// held in bit planes (Q3_K, Q5_K and Q6_K when `form` is planar).
fn pack_small(
    kind: QuantKind,
    n: usize,
    k: usize,
    bytes: &[u8],
    row_bytes: usize,
    form: Form,
) -> QuantPacked {
    let panels = n.div_ceil(PANEL);
    let nblk = k / kind.block();
    let nsub = kind.block() / kind.sub();
    let kg = kind.affine_group().map_or(0, |g| k / g);
    let mut p = QuantPacked::zeroed(kind, k, panels, true, form);
    let (p_nib, p_lut, p_bits, panel_qs) = (p.nib(), p.lut, p.planar_bits(), p.panel_qs());
    let index = level_index(kind);
    // Arrays a kind lacks (scales, mins, `dmin`; `corr`/`d` or their 16-bit twins) are
    // empty: one empty slice per panel.
    let pb = PANEL * nblk;
    p.qs.par_chunks_mut(panel_qs)
        .zip(chunks_or_empty(&mut p.scales8, pb * nsub, panels))
        .zip(chunks_or_empty(&mut p.corr, pb, panels))
        .zip(chunks_or_empty(&mut p.mins8, pb * 8, panels))
        .zip(chunks_or_empty(&mut p.d, pb, panels))
        .zip(chunks_or_empty(&mut p.dmin, pb, panels))
        .zip(chunks_or_empty(&mut p.corr16, pb, panels))
        .zip(chunks_or_empty(&mut p.d16, pb, panels))
        .zip(chunks_or_empty(&mut p.affine16, PANEL * kg, panels))
        .zip(
            chunks_or_empty(&mut p.mins4, PANEL * k / 32, panels)
                .into_par_iter()
                .zip(chunks_or_empty(&mut p.dmin16, pb, panels))
                .zip(chunks_or_empty(&mut p.e8, pb, panels)),
        )
        .enumerate()
        .for_each_init(
            || (QuantPacked::one_panel(kind, k), vec![0f32; PANEL * kg]),
            |(one, aff),
             (
                pi,
                (((((((((qs, sc), corr), mins), d), dmin), corr16), d16), aff16), narrow_consts),
            )| {
                let rows = PANEL.min(n - pi * PANEL);
                // Rows past `rows` (the last panel) are computed, never stored: zeros.
                if rows < PANEL {
                    *one = QuantPacked::one_panel(kind, k);
                    aff.fill(0.0);
                }
                let src = &bytes[pi * PANEL * row_bytes..][..rows * row_bytes];
                fill_panel(kind, k, src, row_bytes, one.panel_mut(aff));
                // Q2_K's 4-bit mins and f16 `dmin` (its offsets), MXFP4's E8M0 bytes.
                let ((mins4, dmin16), e8) = narrow_consts;
                if !mins4.is_empty() {
                    q2k_offsets(src, row_bytes, mins4, dmin16);
                }
                if !e8.is_empty() {
                    mxfp4_exponents(src, row_bytes, e8);
                }
                for (o, &v) in aff16.iter_mut().zip(aff.iter()) {
                    let h = half::f16::from_f32(v);
                    debug_assert!(h.to_f32().to_bits() == v.to_bits(), "{v} is not an f16");
                    *o = h.to_bits();
                }
                if p_lut {
                    // Each level to its index; padding rows (zeros, never stored) to index 0
                    // (MXFP4's zero has an index; any level would do there).
                    for line in one.qs.chunks_exact_mut(4 * PANEL) {
                        for (r, four) in line.chunks_exact_mut(4).enumerate() {
                            for q in four {
                                let i = index[usize::from(*q as u8)];
                                debug_assert!(r >= rows || i >= 0, "{q}: not a level");
                                *q = i.max(0);
                            }
                        }
                    }
                    to_nibbles(&one.qs, qs);
                } else if p_nib {
                    to_nibbles(&one.qs, qs);
                } else if p_bits != 0 {
                    to_planes(p_bits, &one.qs, qs);
                } else {
                    qs.copy_from_slice(&one.qs);
                }
                for (o, &v) in sc.iter_mut().zip(&one.scales) {
                    *o = narrow(v);
                }
                for (o, &v) in mins.iter_mut().zip(&one.mins) {
                    *o = narrow(i32::from(v));
                }
                if corr16.is_empty() {
                    corr.copy_from_slice(&one.corr);
                    d.copy_from_slice(&one.d);
                } else {
                    for (o, &c) in corr16.iter_mut().zip(&one.corr) {
                        debug_assert!(c % 128 == 0 && i16::try_from(c / 128).is_ok());
                        *o = (c / 128) as i16;
                    }
                    // (MXFP4's `d` is in `e8`, from the file's bytes.)
                    for (o, &v) in d16.iter_mut().zip(&one.d) {
                        let h = half::f16::from_f32(v);
                        debug_assert!(h.to_f32().to_bits() == v.to_bits(), "{v} is not an f16");
                        *o = h.to_bits();
                    }
                }
                dmin.copy_from_slice(&one.dmin);
            },
        );
    p
}

/// MXFP4's E8M0 scale bytes of the rows in `src` (ggml's blocks, `row_bytes` a row) into one
/// panel's [`QuantPacked::e8`], `[block][16]` (rows past them stay zero).
fn mxfp4_exponents(src: &[u8], row_bytes: usize, e8: &mut [u8]) {
    const BLOCK: usize = size_of::<lacuna_quant::BlockMXFP4>();
    for (r, row) in src.chunks_exact(row_bytes).enumerate() {
        for (b, block) in row.chunks_exact(BLOCK).enumerate() {
            let blk: lacuna_quant::BlockMXFP4 = bytemuck::pod_read_unaligned(block);
            e8[b * PANEL + r] = blk.e;
        }
    }
}

/// Q2_K's mins and `dmin` of the rows in `src` (ggml's blocks, `row_bytes` a row) into one
/// panel's [`QuantPacked::mins4`] and [`QuantPacked::dmin16`] (rows past them stay zero).
fn q2k_offsets(src: &[u8], row_bytes: usize, mins4: &mut [u8], dmin16: &mut [u16]) {
    use lacuna_quant::BlockQ2K;
    for (r, row) in src.chunks_exact(row_bytes).enumerate() {
        for (b, raw) in row.chunks_exact(size_of::<BlockQ2K>()).enumerate() {
            let blk: BlockQ2K = bytemuck::pod_read_unaligned(raw);
            // `scales`: the scale in the low nibble, the min in the high one.
            for (j, &s) in blk.scales.iter().enumerate() {
                mins4[(b * 8 + j / 2) * PANEL + r] |= (s >> 4) << (4 * (j % 2));
            }
            dmin16[b * PANEL + r] = blk.dmin.to_bits();
        }
    }
}

/// An integer scale or min as the i8 the small form holds (every K-quant's fits: 4 to 8
/// bits).
fn narrow(v: i32) -> i8 {
    debug_assert!(i8::try_from(v).is_ok());
    v as i8
}

/// One byte panel `[k/4][16][4]` (values 0..=15) as two-to-a-byte lines: line `2j` in the
/// low nibbles of line `j` of `nib`, line `2j + 1` in the high ones.
fn to_nibbles(bytes: &[i8], nib: &mut [i8]) {
    let line = 4 * PANEL;
    for (out, pair) in nib.chunks_exact_mut(line).zip(bytes.chunks_exact(2 * line)) {
        let (lo, hi) = pair.split_at(line);
        for ((o, &l), &h) in out.iter_mut().zip(lo).zip(hi) {
            debug_assert!((0..16).contains(&l) && (0..16).contains(&h));
            *o = (l as u8 | (h as u8) << 4) as i8;
        }
    }
}

/// [`to_nibbles`] undone: one nibble panel back into its byte panel.
fn from_nibbles(nib: &[i8], bytes: &mut [i8]) {
    let line = 4 * PANEL;
    for (pair, src) in bytes.chunks_exact_mut(2 * line).zip(nib.chunks_exact(line)) {
        let (lo, hi) = pair.split_at_mut(line);
        for ((l, h), &v) in lo.iter_mut().zip(hi).zip(src) {
            *l = (v as u8 & 0xF) as i8;
            *h = (v as u8 >> 4) as i8;
        }
    }
}

/// A planar form's layout (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Planes {
    /// Lines per group.
    pub(crate) group: usize,
    /// Low bits per weight: 4 (Q5_K, Q6_K) or 2 (Q3_K), in `group * lo / 8` lines.
    pub(crate) lo: usize,
    /// High bits per weight, in one line after the low ones.
    pub(crate) hi: usize,
    /// What makes the weights unsigned (`u = q + bias`).
    pub(crate) bias: i8,
}

/// Q5_0's planar form ([`QuantPacked::planar_bits`], the kernels' `BITS`): Q5_K's planes of
/// 4 + 1 bits, less a bias of 16 (Q5_0's weights are -16..=15, Q5_K's 0..=31).
pub(crate) const BITS5_SIGNED: usize = 21;

/// The planar layout of the form `bits` (2: Q2_K, 3: Q3_K, 5: Q5_K and Q5_1, 6: Q6_K,
/// [`BITS5_SIGNED`]: Q5_0).
pub(crate) const fn planes(bits: usize) -> Planes {
    match bits {
        2 => Planes {
            group: 4,
            lo: 2,
            hi: 0,
            bias: 0,
        },
        BITS5_SIGNED => Planes {
            group: 8,
            lo: 4,
            hi: 1,
            bias: 16,
        },
        6 => Planes {
            group: 4,
            lo: 4,
            hi: 2,
            bias: 32,
        },
        3 => Planes {
            group: 8,
            lo: 2,
            hi: 1,
            bias: 4,
        },
        _ => Planes {
            group: 8,
            lo: 4,
            hi: 1,
            bias: 0,
        },
    }
}

impl Planes {
    /// Bits per weight.
    pub(crate) const fn bits(self) -> usize {
        self.lo + self.hi
    }

    /// Lines of low bits per group (`group * lo / 8`).
    pub(crate) const fn lo_lines(self) -> usize {
        self.group * self.lo / 8
    }

    /// Lines per group: the low ones, then one of high bits if there are high bits
    /// (Q2_K's 2 bits have none).
    pub(crate) const fn lines(self) -> usize {
        self.lo_lines() + if self.hi > 0 { 1 } else { 0 }
    }

    /// Where line `j` of a group keeps its high bits in the high line: `hi * j`, but for
    /// Q3_K (two sub-blocks of 4 lines a group) bit `2j + p` for line `j` of sub-block `p`,
    /// so that a kernel moves each line's bit in a direction fixed by `j`.
    pub(crate) const fn hi_at(self, line: usize) -> usize {
        if self.lo == 2 {
            2 * (line % 4) + line / 4
        } else {
            self.hi * line
        }
    }
}

/// One byte panel `[k/4][16][4]` in a planar form (see the module docs): per group of `G`
/// lines, `u = q + bias` as `G * lo / 8` lines of low bits (line `j` in low line
/// `j / (8 / lo)` at bits `lo * (j % (8 / lo))`; for 4 bits, the pairs of [`to_nibbles`]),
/// then one line of their high bits ([`Planes::hi_at`]).
fn to_planes(bits: usize, bytes: &[i8], out: &mut [i8]) {
    let line = 4 * PANEL;
    let pl = planes(bits);
    let per = 8 / pl.lo;
    let lo_lines = pl.group / per;
    let u = |q: i8| {
        let u = (q as u8).wrapping_add(pl.bias as u8);
        debug_assert!(u >> pl.bits() == 0, "{q} out of range");
        u
    };
    for (out, group) in out
        .chunks_exact_mut(pl.lines() * line)
        .zip(bytes.chunks_exact(pl.group * line))
    {
        out.fill(0);
        for j in 0..pl.group {
            for b in 0..line {
                let v = u(group[j * line + b]);
                out[j / per * line + b] |= ((v & ((1 << pl.lo) - 1)) << (pl.lo * (j % per))) as i8;
                if pl.hi > 0 {
                    out[lo_lines * line + b] |= ((v >> pl.lo) << pl.hi_at(j)) as i8;
                }
            }
        }
    }
}

/// [`to_planes`] undone: one planar panel back into its byte panel.
fn from_planes(bits: usize, planes_in: &[i8], bytes: &mut [i8]) {
    let line = 4 * PANEL;
    let pl = planes(bits);
    let per = 8 / pl.lo;
    let lo_lines = pl.group / per;
    for (group, src) in bytes
        .chunks_exact_mut(pl.group * line)
        .zip(planes_in.chunks_exact(pl.lines() * line))
    {
        for (j, dst) in group.chunks_exact_mut(line).enumerate() {
            for (b, d) in dst.iter_mut().enumerate() {
                let lo =
                    (src[j / per * line + b] as u8 >> (pl.lo * (j % per))) & ((1 << pl.lo) - 1);
                let hi = if pl.hi > 0 {
                    (src[lo_lines * line + b] as u8 >> pl.hi_at(j)) & ((1 << pl.hi) - 1)
                } else {
                    0
                };
                *d = ((lo | hi << pl.lo) as i8).wrapping_sub(pl.bias);
            }
        }
    }
}

/// `bytes.to_vec()` in parallel chunks: a compact matrix's bytes are usually a memory-mapped
/// file's, read from disk at this copy on a cold start, and one thread faulting them in
/// sequentially read the 30-layer DiffusionGemma file at a third of the speed of the
/// repacking (whose panels are decoded in parallel).
fn par_copy(bytes: &[u8]) -> Vec<u8> {
    const CHUNK: usize = 1 << 18;
    let mut v = vec![0u8; bytes.len()];
    v.par_chunks_mut(CHUNK)
        .zip(bytes.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
    v
}

/// One panel's slices of every [`QuantPacked`] array (`aff`: its float offsets).
pub(crate) struct PanelMut<'a> {
    pub(crate) qs: &'a mut [i8],
    pub(crate) sc: &'a mut [i32],
    pub(crate) corr: &'a mut [i32],
    pub(crate) mins: &'a mut [i16],
    pub(crate) d: &'a mut [f32],
    pub(crate) dmin: &'a mut [f32],
    pub(crate) aff: &'a mut [f32],
}

/// Decodes the rows in `src` (up to 16 of `row_bytes` each, `k` elements) into one panel.
/// Rows past those in `src` keep what the buffers hold.
fn fill_panel(kind: QuantKind, k: usize, src: &[u8], row_bytes: usize, mut p: PanelMut<'_>) {
    debug_assert!(src.len() <= PANEL * row_bytes && p.qs.len() == PANEL * k);
    // Whole groups of eight rows on the vectorised decoder where there is one (the same
    // values), the rest one element at a time.
    let mut done = 0;
    while done + 8 <= src.len() / row_bytes
        && crate::compact::fill_rows8(
            kind,
            k,
            &src[done * row_bytes..],
            row_bytes,
            done / 8,
            &mut p,
        )
    {
        done += 8;
    }
    fill_rows(kind, src, row_bytes, done, p);
}

/// [`fill_panel`]'s portable decoder, from row `first` of `src` on.
fn fill_rows(kind: QuantKind, src: &[u8], row_bytes: usize, first: usize, p: PanelMut<'_>) {
    let block = kind.block();
    let nsub = block / kind.sub();
    let bsize = kind.ty().type_size();
    let per_block = kind.affine_group().map_or(0, |g| block / g);
    for (r, row) in src.chunks_exact(row_bytes).enumerate().skip(first) {
        for (b, raw) in row.chunks_exact(bsize).enumerate() {
            let dec = decode(kind, raw);
            let mut bias = 0i32;
            // Weights kk..kk + 4 of row r are 4 adjacent bytes of line kk / 4.
            let lines = p.qs[b * block * PANEL..][..block * PANEL].chunks_exact_mut(4 * PANEL);
            for (line, four) in lines.zip(dec.q[..block].chunks_exact(4)) {
                line[4 * r..4 * r + 4].copy_from_slice(four);
            }
            for s in 0..nsub {
                let wsum: i32 = dec.q[s * kind.sub()..][..kind.sub()]
                    .iter()
                    .map(|&q| i32::from(q))
                    .sum();
                bias += dec.sc[s] * wsum;
                if kind.has_scales() {
                    p.sc[(b * nsub + s) * PANEL + r] = dec.sc[s];
                }
            }
            p.corr[b * PANEL + r] = 128 * bias;
            p.d[b * PANEL + r] = dec.d;
            if kind.has_mins() {
                for j in 0..8 {
                    p.mins[((b * 4 + j / 2) * PANEL + r) * 2 + j % 2] = dec.mins[j];
                }
                p.dmin[b * PANEL + r] = dec.dmin;
            }
            for j in 0..per_block {
                p.aff[(b * per_block + j) * PANEL + r] = dec.aff[j];
            }
        }
    }
}

impl QuantPacked {
    /// `panels` zeroed panels of `kind` weights of `k` columns (arrays the type lacks
    /// empty, no float offsets yet), in the small form when `small` (then planes, level
    /// indices and 16-bit constants as `form` and the kind have them).
    fn zeroed(kind: QuantKind, k: usize, panels: usize, small: bool, form: Form) -> QuantPacked {
        let half = small && form == Form::Half && half_consts(kind);
        let lut = small && form.planar() && lut_kind(kind);
        let planar = small
            && form.planar()
            && matches!(
                kind,
                QuantKind::Q2K | QuantKind::Q3K | QuantKind::Q5K | QuantKind::Q6K
            )
            || half && matches!(kind, QuantKind::Q5_0 | QuantKind::Q5_1);
        let nblk = k / kind.block();
        let nsub = kind.block() / kind.sub();
        let kg = kind.affine_group().map_or(0, |g| k / g);
        let blocks = panels * PANEL * nblk;
        // Q2_K's offsets as its 4-bit mins and f16 `dmin` (with its 2-bit planes).
        let q2k = planar && kind == QuantKind::Q2K;
        // MXFP4's scales as E8M0 bytes (with 16-bit `corr`).
        let e8 = half && kind == QuantKind::MXFP4;
        let if_has = |yes: bool, len: usize| if yes { len } else { 0 };
        let mut p = QuantPacked {
            kind,
            k,
            panels,
            qs: Vec::new(),
            small,
            planar,
            half,
            lut,
            scales: vec![0; if_has(kind.has_scales() && !small, blocks * nsub)],
            scales8: vec![0; if_has(kind.has_scales() && small, blocks * nsub)],
            corr: vec![0; if_has(!half, blocks)],
            corr16: vec![0; if_has(half, blocks)],
            mins: vec![0; if_has(kind.has_mins() && !small, blocks * 8)],
            mins8: vec![0; if_has(kind.has_mins() && small, blocks * 8)],
            d: vec![0.0; if_has(!half, blocks)],
            d16: vec![0; if_has(half && !e8, blocks)],
            e8: vec![0; if_has(e8, blocks)],
            dmin: vec![0.0; if_has(kind.has_mins(), blocks)],
            affine: None,
            affine16: vec![0; if_has(half && !q2k && kg > 0, panels * PANEL * kg)],
            mins4: vec![0; if_has(q2k, panels * PANEL * k / 32)],
            dmin16: vec![0; if_has(q2k, blocks)],
        };
        p.qs = vec![0; panels * p.panel_qs()];
        p
    }

    /// A one-panel buffer for `kind` weights of `k` columns, to be filled panel after
    /// panel by [`QuantPacked::refill`] or [`QuantPacked::expand_panel`]: the compact
    /// layout's scratch for matmuls over many tokens, and a small form's on paths that read
    /// bytes. It holds no float offsets (Q4_1/Q5_1's are added from the small matrix).
    pub(crate) fn one_panel(kind: QuantKind, k: usize) -> QuantPacked {
        QuantPacked::byte_panels(kind, k, 1)
    }

    /// [`QuantPacked::one_panel`] for `panels` panels.
    pub(crate) fn byte_panels(kind: QuantKind, k: usize, panels: usize) -> QuantPacked {
        QuantPacked::zeroed(kind, k, panels, false, Form::Bytes)
    }

    /// Makes this byte-form buffer ([`QuantPacked::byte_panels`]) one of `panels` panels of
    /// `kind` weights of `k` columns, keeping its allocations (a per-thread buffer serves
    /// matrices of every width): the arrays are sized as `byte_panels` sizes them, `qs`
    /// only when `weights` (else empty), their contents stale.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn reuse_as(&mut self, kind: QuantKind, k: usize, panels: usize, weights: bool) {
        debug_assert!(!self.small && !self.half && self.affine.is_none());
        let blocks = panels * PANEL * (k / kind.block());
        let nsub = kind.block() / kind.sub();
        let if_has = |yes: bool, len: usize| if yes { len } else { 0 };
        (self.kind, self.k, self.panels) = (kind, k, panels);
        self.qs.resize(if_has(weights, panels * PANEL * k), 0);
        self.scales
            .resize(if_has(kind.has_scales(), blocks * nsub), 0);
        self.corr.resize(blocks, 0);
        self.d.resize(blocks, 0.0);
        self.mins.resize(if_has(kind.has_mins(), blocks * 8), 0);
        self.dmin.resize(if_has(kind.has_mins(), blocks), 0.0);
    }

    /// Whether `qs` holds two weights a byte: Q4_K in the small form, Q4_1 with 16-bit
    /// constants ([`QuantPacked::half`]), or level indices ([`QuantPacked::lut`]).
    pub(crate) fn nib(&self) -> bool {
        self.small && self.kind == QuantKind::Q4K
            || self.lut
            || self.half && self.kind == QuantKind::Q4_1
    }

    /// A planar matrix's form, as [`planes`] names it (the kernels' `BITS` parameter): its
    /// bits per weight (2 for Q2_K, 3 for Q3_K, 5 for Q5_K and Q5_1, 6 for Q6_K) or
    /// [`BITS5_SIGNED`] (Q5_0); 0 for the others.
    pub(crate) fn planar_bits(&self) -> usize {
        match self.kind {
            QuantKind::Q2K if self.planar => 2,
            QuantKind::Q3K if self.planar => 3,
            QuantKind::Q5K if self.planar => 5,
            QuantKind::Q6K if self.planar => 6,
            QuantKind::Q5_0 if self.planar => BITS5_SIGNED,
            QuantKind::Q5_1 if self.planar => 5,
            _ => 0,
        }
    }

    /// Bytes of `qs` per panel.
    pub(crate) fn panel_qs(&self) -> usize {
        if self.nib() {
            PANEL * self.k / 2
        } else if self.planar {
            PANEL * self.k / 8 * planes(self.planar_bits()).bits()
        } else {
            PANEL * self.k
        }
    }

    /// Panel `p` of this small matrix into `into`, a [`QuantPacked::one_panel`] buffer of
    /// the same kind and `k`: what a path without a small-form kernel runs.
    pub(crate) fn expand_panel(&self, p: usize, into: &mut QuantPacked) {
        debug_assert!(self.small && !into.small && into.kind == self.kind && into.k == self.k);
        debug_assert!(self.affine.is_none());
        let qs = &self.qs[p * self.panel_qs()..][..self.panel_qs()];
        if self.nib() {
            from_nibbles(qs, &mut into.qs);
            if self.lut {
                let lv = levels(self.kind);
                for q in into.qs.iter_mut() {
                    *q = lv[*q as usize];
                }
            }
        } else if self.planar {
            from_planes(self.planar_bits(), qs, &mut into.qs);
        } else {
            into.qs.copy_from_slice(qs);
        }
        // Every other array is `panels` equal chunks, one per panel.
        fn chunk<T: Copy>(all: &[T], p: usize, dst: &mut [T]) {
            dst.copy_from_slice(&all[p * dst.len()..][..dst.len()]);
        }
        let (sc, mins) = (into.scales.len(), into.mins.len());
        for (o, &v) in into.scales.iter_mut().zip(&self.scales8[p * sc..][..sc]) {
            *o = i32::from(v);
        }
        for (o, &v) in into.mins.iter_mut().zip(&self.mins8[p * mins..][..mins]) {
            *o = i16::from(v);
        }
        if self.half {
            let n = into.corr.len();
            for (o, &c) in into.corr.iter_mut().zip(&self.corr16[p * n..][..n]) {
                *o = i32::from(c) * 128;
            }
            if self.e8.is_empty() {
                for (o, &h) in into.d.iter_mut().zip(&self.d16[p * n..][..n]) {
                    *o = half::f16::from_bits(h).to_f32();
                }
            } else {
                for (o, &e) in into.d.iter_mut().zip(&self.e8[p * n..][..n]) {
                    *o = lacuna_quant::e8m0_to_fp32_half(e);
                }
            }
        } else {
            chunk(&self.corr, p, &mut into.corr);
            chunk(&self.d, p, &mut into.d);
        }
        chunk(&self.dmin, p, &mut into.dmin);
    }

    /// Decodes up to 16 rows (`src`, ggml's bytes, `row_bytes` each) into this one-panel
    /// buffer; rows past them keep stale values, which the kernels compute but never store.
    pub(crate) fn refill(&mut self, src: &[u8], row_bytes: usize) {
        let (kind, k) = (self.kind, self.k);
        fill_panel(kind, k, src, row_bytes, self.panel_mut(&mut []));
    }

    /// [`QuantPacked::refill`] on the portable decoder only: the reference of the
    /// vectorised one.
    #[cfg(test)]
    pub(crate) fn refill_portable(&mut self, src: &[u8], row_bytes: usize) {
        let kind = self.kind;
        fill_rows(kind, src, row_bytes, 0, self.panel_mut(&mut []));
    }

    /// The arrays of a one-panel buffer, to be filled, and `aff` for its float offsets
    /// (`[k / group][16]`; empty where they are not wanted).
    fn panel_mut<'a>(&'a mut self, aff: &'a mut [f32]) -> PanelMut<'a> {
        PanelMut {
            qs: &mut self.qs,
            sc: &mut self.scales,
            corr: &mut self.corr,
            mins: &mut self.mins,
            d: &mut self.d,
            dmin: &mut self.dmin,
            aff,
        }
    }

    /// Panels `p..p + np`'s float offsets of a small matrix that holds them
    /// narrow (Q4_1 and Q5_1's f16 [`QuantPacked::affine16`], Q2_K's
    /// [`QuantPacked::mins4`] and `dmin16`), widened into `into` as panels `0..np` of the
    /// float GEMM's layout: the same f32 values as the byte form's [`QuantPacked::affine`].
    pub(crate) fn offsets_panels(&self, p: usize, np: usize, into: &mut FloatPacked) {
        use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
        let kg = self.kind.affine_group().map_or(0, |g| self.k / g);
        into.k = kg;
        into.panels = np;
        into.round = FloatRound::None;
        into.w.resize(np * PANEL * kg, 0.0);
        if !self.affine16.is_empty() {
            let src = &self.affine16[p * PANEL * kg..][..np * PANEL * kg];
            let src: &[half::f16] = src.reinterpret_cast();
            // F16C where the CPU has it.
            src.convert_to_f32_slice(&mut into.w);
            return;
        }
        // Q2_K: `-(dmin * m)`, as ggml's block decodes it; 16 offsets (sub-blocks) a block.
        let nblk = kg / 16;
        let mins4 = &self.mins4[p * PANEL * kg / 2..][..np * PANEL * kg / 2];
        let dmin16 = &self.dmin16[p * PANEL * nblk..][..np * PANEL * nblk];
        let mut dmin = [0f32; PANEL];
        for (i, w) in into.w.chunks_exact_mut(PANEL * kg).enumerate() {
            for (b, w) in w.chunks_exact_mut(16 * PANEL).enumerate() {
                let bits = &dmin16[(i * nblk + b) * PANEL..][..PANEL];
                let bits: &[half::f16] = bits.reinterpret_cast();
                bits.convert_to_f32_slice(&mut dmin);
                let m = &mins4[(i * nblk + b) * 8 * PANEL..][..8 * PANEL];
                for (pair, w) in m.chunks_exact(PANEL).zip(w.chunks_exact_mut(2 * PANEL)) {
                    let (w0, w1) = w.split_at_mut(PANEL);
                    for r in 0..PANEL {
                        w0[r] = -(dmin[r] * f32::from(pair[r] & 15));
                        w1[r] = -(dmin[r] * f32::from(pair[r] >> 4));
                    }
                }
            }
        }
    }
}

/// `panels` mutable chunks of `v`, or `panels` empty slices when `v` is empty.
fn chunks_or_empty<T: Send>(v: &mut [T], size: usize, panels: usize) -> Vec<&mut [T]> {
    if v.is_empty() {
        (0..panels).map(|_| <&mut [T]>::default()).collect()
    } else {
        v.chunks_mut(size).collect()
    }
}

impl FloatPacked {
    /// An empty packed matrix, to be filled by [`FloatPacked::fill_strided`].
    pub(crate) fn empty() -> FloatPacked {
        FloatPacked {
            k: 0,
            panels: 0,
            w: Vec::new(),
            w16: Vec::new(),
            round: FloatRound::None,
        }
    }

    /// Where panel `p` starts: in [`FloatPacked::w`], or in [`FloatPacked::w16`] when the
    /// matrix is held narrow; the other pointer is null.
    ///
    /// # Panics
    /// If panel `p` is not held.
    pub(crate) fn panel_ptrs(&self, p: usize) -> (*const f32, *const u16) {
        let at = p * PANEL * self.k;
        if self.w16.is_empty() {
            (self.w[at..].as_ptr(), std::ptr::null())
        } else {
            (std::ptr::null(), self.w16[at..].as_ptr())
        }
    }

    /// Panels `p0..p0 + np` of a matrix held narrow ([`FloatPacked::w16`]) widened to f32
    /// into `into`, as its panels `0..np`.
    pub(crate) fn widen_panels(&self, p0: usize, np: usize, into: &mut FloatPacked) {
        use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
        debug_assert!(!self.w16.is_empty() && p0 + np <= self.panels);
        let len = np * PANEL * self.k;
        (into.k, into.panels, into.round) = (self.k, np, self.round);
        into.w16.clear();
        into.w.resize(len, 0.0);
        let bits = &self.w16[p0 * PANEL * self.k..][..len];
        if self.round == FloatRound::Bf16 {
            let src: &[half::bf16] = bits.reinterpret_cast();
            src.convert_to_f32_slice(&mut into.w);
        } else {
            let src: &[half::f16] = bits.reinterpret_cast();
            src.convert_to_f32_slice(&mut into.w);
        }
    }

    /// Refills `self` with the `n x k` f32 matrix whose element `(r, c)` is
    /// `src[r * rs + c * cs]`, without rounding, reusing its buffer (attention packs keys
    /// and transposed values with it on every call).
    ///
    /// # Panics
    /// If an element lies outside `src`.
    pub(crate) fn fill_strided(&mut self, src: &[f32], n: usize, k: usize, rs: usize, cs: usize) {
        let panels = n.div_ceil(PANEL);
        self.w.clear();
        self.w.resize(panels * PANEL * k, 0.0);
        for (pi, out) in self.w.chunks_exact_mut(PANEL * k).enumerate() {
            let rows = PANEL.min(n - pi * PANEL);
            for (c, line) in out.chunks_exact_mut(PANEL).enumerate() {
                for (r, o) in line[..rows].iter_mut().enumerate() {
                    *o = src[(pi * PANEL + r) * rs + c * cs];
                }
            }
        }
        self.k = k;
        self.panels = panels;
        self.round = FloatRound::None;
    }
}

/// `narrow`: F16 and BF16 keep the file's bits ([`FloatPacked::w16`]).
fn pack_float(ty: GgmlType, n: usize, k: usize, bytes: &[u8], narrow: bool) -> FloatPacked {
    let panels = n.div_ceil(PANEL);
    let esize = ty.type_size();
    let round = match ty {
        GgmlType::F16 => FloatRound::F16,
        GgmlType::BF16 => FloatRound::Bf16,
        _ => FloatRound::None,
    };
    if narrow && esize == 2 {
        let mut w16 = vec![0u16; panels * PANEL * k];
        w16.par_chunks_mut(PANEL * k)
            .enumerate()
            .for_each(|(pi, out)| {
                for r in 0..PANEL.min(n - pi * PANEL) {
                    let row = &bytes[(pi * PANEL + r) * k * 2..][..k * 2];
                    for (kk, e) in row.chunks_exact(2).enumerate() {
                        out[kk * PANEL + r] = u16::from_le_bytes([e[0], e[1]]);
                    }
                }
            });
        return FloatPacked {
            k,
            panels,
            w: Vec::new(),
            w16,
            round,
        };
    }
    let mut w = vec![0.0f32; panels * PANEL * k];
    w.par_chunks_mut(PANEL * k)
        .enumerate()
        .for_each(|(pi, out)| {
            for r in 0..PANEL.min(n - pi * PANEL) {
                let row = &bytes[(pi * PANEL + r) * k * esize..][..k * esize];
                for (kk, e) in row.chunks_exact(esize).enumerate() {
                    out[kk * PANEL + r] = match ty {
                        GgmlType::F16 => half::f16::from_le_bytes([e[0], e[1]]).to_f32(),
                        GgmlType::BF16 => half::bf16::from_le_bytes([e[0], e[1]]).to_f32(),
                        _ => f32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                    };
                }
            }
        });
    FloatPacked {
        k,
        panels,
        w,
        w16: Vec::new(),
        round,
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod expand_x86;
#[cfg(test)]
mod tests;
