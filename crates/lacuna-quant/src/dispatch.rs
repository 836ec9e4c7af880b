//! Byte-level entry points keyed by [`GgmlType`], for callers that hold raw tensor bytes
//! (the GGUF reader, the CLI, tests of the fast kernels). Blocks are read with unaligned
//! loads, so any byte slice works; lengths are checked and reported as [`Error`]s.

use half::{bf16, f16};

use crate::binary::{BlockQ1_0, BlockQ2_0};
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock, check_len};
use crate::iq4::{BlockIQ4NL, BlockIQ4XS};
use crate::kquants::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
use crate::legacy::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};
use crate::mxfp4::{BlockMXFP4, BlockNVFP4};
use crate::ternary::{BlockTQ1_0, BlockTQ2_0};
use crate::types::{flag, ggml_type_table};
use crate::{Error, GgmlType, QK_K};

/// `match $ty` over every row of the type table: the rows whose column `$cap`
/// (`dequantize`, `quantize` or `dot`) holds evaluate `$mac!(QK, Block)`, the others `$none`.
macro_rules! dispatch {
    ([$ty:expr, $cap:ident, $mac:ident, $none:expr]
     $( $v:ident = $id:literal, $name:literal, $qk:tt, $bytes:literal,
        $b:tt, $deq:ident, $quant:ident, $dot:tt; )*) => {
        match $ty {
            $(GgmlType::$v => if_cap!($cap; $deq, $quant, $dot; { $mac!($qk, $b) }; { $none }),)*
        }
    };
}

/// `$then` where the row has capability `$cap`, else `$else`.
macro_rules! if_cap {
    (dequantize; yes, $q:tt, $d:tt; $then:tt; $else:tt) => {
        $then
    };
    (quantize; $x:tt, yes, $d:tt; $then:tt; $else:tt) => {
        $then
    };
    (dot; $x:tt, $q:tt, $d:ident; $then:tt; $else:tt) => {
        $then
    };
    ($cap:ident; $x:tt, $q:tt, $d:tt; $then:tt; $else:tt) => {
        $else
    };
}

/// `Some(GgmlType::T)` for a `vec_dot` column naming `T`, `None` for `-`.
macro_rules! partner {
    (-) => {
        None
    };
    ($t:ident) => {
        Some(GgmlType::$t)
    };
}

macro_rules! capabilities {
    ([] $( $v:ident = $id:literal, $name:literal, $qk:tt, $bytes:literal,
           $b:tt, $deq:ident, $quant:ident, $dot:tt; )*) => {
        /// The activation format ggml multiplies `ty` weights with (`vec_dot_type` in ggml's
        /// CPU type traits), for the types that have a scalar [`vec_dot`] here.
        pub const fn vec_dot_type(ty: GgmlType) -> Option<GgmlType> {
            match ty { $(GgmlType::$v => partner!($dot),)* }
        }

        /// Whether [`dequantize_row`] supports `ty`.
        pub const fn can_dequantize(ty: GgmlType) -> bool {
            match ty { $(GgmlType::$v => flag!($deq),)* }
        }

        /// Whether [`quantize_row`] supports `ty`.
        pub const fn can_quantize(ty: GgmlType) -> bool {
            match ty { $(GgmlType::$v => flag!($quant),)* }
        }
    };
}

ggml_type_table!(capabilities);

/// Number of blocks in `n` elements of `ty`, or [`Error::PartialBlock`].
fn blocks_of(ty: GgmlType, n: usize) -> Result<usize, Error> {
    let block = ty.block_size();
    if n % block == 0 {
        Ok(n / block)
    } else {
        Err(Error::PartialBlock { ty, n, block })
    }
}

fn read_block<B: bytemuck::Pod>(ty: GgmlType, chunk: &[u8]) -> Result<B, Error> {
    bytemuck::try_pod_read_unaligned(chunk).map_err(|_| Error::LengthMismatch {
        ty,
        what: "block",
        unit: "bytes",
        expected: size_of::<B>(),
        found: chunk.len(),
    })
}

/// Dequantizes one row: `src` holds `dst.len()` elements of type `ty` (ggml's
/// `to_float`). Bit-exact with ggml's `dequantize_row_*`.
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), Error> {
    let nb = blocks_of(ty, dst.len())?;
    check_len(ty, "source", "bytes", nb * ty.type_size(), src.len())?;
    macro_rules! run {
        ($qk:tt, $b:ty) => {{
            for (chunk, out) in src
                .chunks_exact(ty.type_size())
                .zip(dst.chunks_exact_mut($qk))
            {
                let b: $b = read_block(ty, chunk)?;
                let out: &mut [f32; $qk] = out.try_into().map_err(|_| Error::PartialBlock {
                    ty,
                    n: nb * $qk,
                    block: $qk,
                })?;
                QuantBlock::<$qk>::dequantize(&b, out);
            }
            Ok(())
        }};
    }
    ggml_type_table!(
        dispatch,
        ty,
        dequantize,
        run,
        Err(Error::Unsupported {
            ty,
            op: "dequantize"
        })
    )
}

/// Quantizes one row of `src.len()` floats into `dst` with ggml's reference quantizer
/// (`quantize_row_*_ref`, no importance matrix), bit-exact.
pub fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<(), Error> {
    let nb = blocks_of(ty, src.len())?;
    check_len(ty, "destination", "bytes", nb * ty.type_size(), dst.len())?;
    macro_rules! run {
        ($qk:tt, $b:ty) => {
            quantize_into::<$qk, $b>(src, dst)
        };
    }
    ggml_type_table!(
        dispatch,
        ty,
        quantize,
        run,
        Err(Error::Unsupported { ty, op: "quantize" })
    )
}

/// Quantizes one row as `ggml_quantize_chunk` does without an importance matrix — what
/// llama-quantize writes into files. The same bytes as [`quantize_row`] for every type but
/// IQ4_NL, whose chunk quantizer (`quantize_iq4_nl`) searches 15 scales where
/// `quantize_row_iq4_nl_ref` tries one.
pub fn quantize_row_chunk(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<(), Error> {
    if ty != GgmlType::IQ4_NL {
        return quantize_row(ty, src, dst);
    }
    let nb = blocks_of(ty, src.len())?;
    check_len(ty, "destination", "bytes", nb * ty.type_size(), dst.len())?;
    for (x, out) in src
        .chunks_exact(32)
        .zip(dst.chunks_exact_mut(ty.type_size()))
    {
        let x: &[f32; 32] = x.try_into().expect("chunks of 32");
        out.copy_from_slice(bytemuck::bytes_of(&BlockIQ4NL::quantize_chunk(x)));
    }
    Ok(())
}

/// Scalar dot product of `n` elements: `x` of type `ty`, `y` of type
/// [`vec_dot_type`]`(ty)` (ggml's `vec_dot`).
///
/// Integer products are summed exactly per block, then scaled in f32 as ggml's scalar
/// kernels do (block results summed in f32; the float types sum in f64). It is not
/// bit-exact with any particular ggml build (ggml's SIMD paths sum in other orders); its
/// contract, tested in `tests/vec_dot.rs`, is against the f64 dot product of the
/// dequantized operands: with `ε = 2⁻²³`, `nb` blocks, `x0` the weights dequantized with
/// their quants zeroed (the min/offset term) and `S = Σ|y_i|·(|x_i| + |x0_i|)`,
/// `|vec_dot − ref| ≤ (16 + nb)·ε·S`, plus `2⁻¹⁰·Σ|x0_i·y_i|` for the Q8_1 partners
/// (Q4_1, Q5_1), whose stored `s = d·Σq` is rounded to f16.
pub fn vec_dot(ty: GgmlType, n: usize, x: &[u8], y: &[u8]) -> Result<f32, Error> {
    let Some(yt) = vec_dot_type(ty) else {
        return Err(Error::Unsupported { ty, op: "vec_dot" });
    };
    let nb = blocks_of(ty, n)?;
    check_len(ty, "lhs", "bytes", nb * ty.type_size(), x.len())?;
    check_len(yt, "rhs", "bytes", nb * yt.type_size(), y.len())?;
    macro_rules! run {
        ($qk:tt, $b:ty) => {
            dot_bytes::<$qk, $b>(ty, yt, x, y)
        };
    }
    ggml_type_table!(
        dispatch,
        ty,
        dot,
        run,
        Err(Error::Unsupported { ty, op: "vec_dot" })
    )
}

fn quantize_into<const QK: usize, B: QuantizeBlock<QK>>(
    src: &[f32],
    dst: &mut [u8],
) -> Result<(), Error> {
    for (xs, chunk) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(size_of::<B>()))
    {
        let xs: &[f32; QK] = xs.try_into().map_err(|_| Error::PartialBlock {
            ty: B::TYPE,
            n: src.len(),
            block: QK,
        })?;
        chunk.copy_from_slice(bytemuck::bytes_of(&B::quantize(xs)));
    }
    Ok(())
}

fn dot_bytes<const QK: usize, B: VecDotBlock<QK>>(
    ty: GgmlType,
    yt: GgmlType,
    x: &[u8],
    y: &[u8],
) -> Result<f32, Error> {
    let xs = x
        .chunks_exact(size_of::<B>())
        .map(|c| read_block::<B>(ty, c))
        .collect::<Result<Vec<_>, _>>()?;
    let ys = y
        .chunks_exact(size_of::<B::Rhs>())
        .map(|c| read_block::<B::Rhs>(yt, c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(B::vec_dot_blocks(&xs, &ys))
}
