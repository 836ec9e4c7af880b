//! The block-format traits every ggml type implements, and the generic row functions over
//! them (one function per operation, not one `match` per call site).
//!
//! A block is one `#[repr(C)]` struct laid out exactly as ggml's `block_*` in
//! `ggml-common.h`; `QK` is its element count (`1` for the plain float types, whose
//! "block" is the element itself).

use bytemuck::Pod;

use crate::{Error, GgmlType};

/// One block of a ggml type: its layout and its dequantization.
pub trait QuantBlock<const QK: usize>: Pod {
    /// The ggml type this block belongs to.
    const TYPE: GgmlType;
    /// Decodes the block into `QK` f32 values, bit-exact with ggml's `dequantize_row_*`.
    fn dequantize(&self, out: &mut [f32; QK]);
}

/// A block type with a ggml reference quantizer (`quantize_row_*_ref`).
pub trait QuantizeBlock<const QK: usize>: QuantBlock<QK> {
    /// Encodes `QK` values exactly as ggml's reference quantizer does (no importance matrix).
    fn quantize(x: &[f32; QK]) -> Self;
}

/// A block type with ggml's scalar dot product against its activation format.
pub trait VecDotBlock<const QK: usize>: QuantBlock<QK> {
    /// The activation format ggml pairs with this type (`vec_dot_type`).
    type Rhs: QuantBlock<QK>;
    /// Dot product of one block pair.
    fn vec_dot_block(&self, rhs: &Self::Rhs) -> f32;
    /// Dot product of two equally long rows of blocks; the default sums the per-block
    /// results in f32, in order, as ggml's scalar kernels do.
    fn vec_dot_blocks(lhs: &[Self], rhs: &[Self::Rhs]) -> f32 {
        lhs.iter()
            .zip(rhs)
            .fold(0.0f32, |acc, (x, y)| acc + x.vec_dot_block(y))
    }
}

/// Dequantizes whole blocks into `out` (`out.len()` must be `blocks.len() * QK`).
pub fn dequantize_blocks<const QK: usize, B: QuantBlock<QK>>(
    blocks: &[B],
    out: &mut [f32],
) -> Result<(), Error> {
    check_len(
        B::TYPE,
        "destination",
        "elements",
        blocks.len() * QK,
        out.len(),
    )?;
    for (b, o) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        b.dequantize(as_array_mut(o)?);
    }
    Ok(())
}

/// Quantizes `x` into whole blocks (`x.len()` must be `out.len() * QK`).
pub fn quantize_blocks<const QK: usize, B: QuantizeBlock<QK>>(
    x: &[f32],
    out: &mut [B],
) -> Result<(), Error> {
    check_len(B::TYPE, "source", "elements", out.len() * QK, x.len())?;
    for (o, xs) in out.iter_mut().zip(x.chunks_exact(QK)) {
        *o = B::quantize(as_array(xs)?);
    }
    Ok(())
}

/// Scalar dot product of two rows of blocks of equal length.
pub fn vec_dot_blocks<const QK: usize, B: VecDotBlock<QK>>(
    lhs: &[B],
    rhs: &[B::Rhs],
) -> Result<f32, Error> {
    check_len(B::TYPE, "rhs", "blocks", lhs.len(), rhs.len())?;
    Ok(B::vec_dot_blocks(lhs, rhs))
}

/// Views bytes as blocks in place (zero copy). Fails, naming the type, when the bytes are
/// not a whole number of blocks or not aligned for the block struct.
pub fn cast_blocks<const QK: usize, B: QuantBlock<QK>>(bytes: &[u8]) -> Result<&[B], Error> {
    bytemuck::try_cast_slice(bytes).map_err(|e| Error::Cast {
        ty: B::TYPE,
        reason: cast_reason(e),
    })
}

/// Mutable form of [`cast_blocks`].
pub fn cast_blocks_mut<const QK: usize, B: QuantBlock<QK>>(
    bytes: &mut [u8],
) -> Result<&mut [B], Error> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| Error::Cast {
        ty: B::TYPE,
        reason: cast_reason(e),
    })
}

fn cast_reason(e: bytemuck::PodCastError) -> &'static str {
    match e {
        bytemuck::PodCastError::TargetAlignmentGreaterAndInputNotAligned => "misaligned",
        bytemuck::PodCastError::OutputSliceWouldHaveSlop => "not a whole number of blocks",
        bytemuck::PodCastError::SizeMismatch => "size mismatch",
        bytemuck::PodCastError::AlignmentMismatch => "alignment mismatch",
    }
}

pub(crate) fn check_len(
    ty: GgmlType,
    what: &'static str,
    unit: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            ty,
            what,
            unit,
            expected,
            found,
        })
    }
}

fn as_array_mut<const QK: usize>(s: &mut [f32]) -> Result<&mut [f32; QK], Error> {
    let n = s.len();
    s.try_into().map_err(|_| Error::LengthMismatch {
        ty: GgmlType::F32,
        what: "block chunk",
        unit: "elements",
        expected: QK,
        found: n,
    })
}

fn as_array<const QK: usize>(s: &[f32]) -> Result<&[f32; QK], Error> {
    s.try_into().map_err(|_| Error::LengthMismatch {
        ty: GgmlType::F32,
        what: "block chunk",
        unit: "elements",
        expected: QK,
        found: s.len(),
    })
}
