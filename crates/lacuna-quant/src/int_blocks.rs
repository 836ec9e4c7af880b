//! Decoding of ggml's quantized block formats into integer weights, integer sub-block
//! scales and float super-scales: the form the CPU and CUDA backends repack into their own
//! layouts.
//!
//! Layouts follow ggml-common.h / ggml-quants.c (`dequantize_row_*`, `get_scale_min_k4`).
//! The value of weight `i` of a block is always
//! `d * sc[i / sub] * q[i] - dmin * min[i / 32] + aff[i / group]`: the min term only for
//! Q4_K/Q5_K, the float offset `aff` only for Q2_K (its mins per 16) and Q4_1/Q5_1 (`m`).

use crate::GgmlType;

mod kquants;
mod legacy;

/// The quantized weight formats the GEMM takes, with their integer decoding parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantKind {
    /// `Q2_K`.
    Q2K,
    /// `Q3_K`.
    Q3K,
    /// `Q4_K`.
    Q4K,
    /// `Q5_K`.
    Q5K,
    /// `Q6_K`.
    Q6K,
    /// `IQ4_XS`.
    IQ4XS,
    /// `Q8_0`.
    Q8_0,
    /// `Q4_0`.
    Q4_0,
    /// `Q4_1`.
    Q4_1,
    /// `Q5_0`.
    Q5_0,
    /// `Q5_1`.
    Q5_1,
    /// `IQ4_NL`.
    IQ4NL,
    /// `MXFP4`.
    MXFP4,
}

impl QuantKind {
    /// Every kind, for tests and tables.
    pub const ALL: [QuantKind; 13] = [
        QuantKind::Q2K,
        QuantKind::Q3K,
        QuantKind::Q4K,
        QuantKind::Q5K,
        QuantKind::Q6K,
        QuantKind::IQ4XS,
        QuantKind::Q8_0,
        QuantKind::Q4_0,
        QuantKind::Q4_1,
        QuantKind::Q5_0,
        QuantKind::Q5_1,
        QuantKind::IQ4NL,
        QuantKind::MXFP4,
    ];

    /// The kind of a ggml type, `None` for types the integer kernels do not take.
    pub fn of(ty: GgmlType) -> Option<QuantKind> {
        Some(match ty {
            GgmlType::Q2_K => QuantKind::Q2K,
            GgmlType::Q3_K => QuantKind::Q3K,
            GgmlType::Q4_K => QuantKind::Q4K,
            GgmlType::Q5_K => QuantKind::Q5K,
            GgmlType::Q6_K => QuantKind::Q6K,
            GgmlType::IQ4_XS => QuantKind::IQ4XS,
            GgmlType::Q8_0 => QuantKind::Q8_0,
            GgmlType::Q4_0 => QuantKind::Q4_0,
            GgmlType::Q4_1 => QuantKind::Q4_1,
            GgmlType::Q5_0 => QuantKind::Q5_0,
            GgmlType::Q5_1 => QuantKind::Q5_1,
            GgmlType::IQ4_NL => QuantKind::IQ4NL,
            GgmlType::MXFP4 => QuantKind::MXFP4,
            _ => return None,
        })
    }

    /// The ggml type.
    #[inline]
    pub fn ty(self) -> GgmlType {
        match self {
            QuantKind::Q2K => GgmlType::Q2_K,
            QuantKind::Q3K => GgmlType::Q3_K,
            QuantKind::Q4K => GgmlType::Q4_K,
            QuantKind::Q5K => GgmlType::Q5_K,
            QuantKind::Q6K => GgmlType::Q6_K,
            QuantKind::IQ4XS => GgmlType::IQ4_XS,
            QuantKind::Q8_0 => GgmlType::Q8_0,
            QuantKind::Q4_0 => GgmlType::Q4_0,
            QuantKind::Q4_1 => GgmlType::Q4_1,
            QuantKind::Q5_0 => GgmlType::Q5_0,
            QuantKind::Q5_1 => GgmlType::Q5_1,
            QuantKind::IQ4NL => GgmlType::IQ4_NL,
            QuantKind::MXFP4 => GgmlType::MXFP4,
        }
    }

    /// Elements per block (= per activation block: Q8_K for 256-blocks, Q8_0/Q8_1 for
    /// 32-blocks).
    #[inline]
    pub fn block(self) -> usize {
        self.ty().block_size()
    }

    /// Elements sharing one integer scale (the block itself for the 32-element formats).
    #[inline]
    pub fn sub(self) -> usize {
        match self {
            QuantKind::Q2K | QuantKind::Q3K | QuantKind::Q6K => 16,
            _ => 32,
        }
    }

    /// Whether the block has integer sub-scales (more than one sub-block per block).
    #[inline]
    pub fn has_scales(self) -> bool {
        self.sub() != self.block()
    }

    /// Whether the block carries `dmin` and 6-bit mins per 32 weights (the integer min
    /// term of the kernels).
    #[inline]
    pub fn has_mins(self) -> bool {
        matches!(self, QuantKind::Q4K | QuantKind::Q5K)
    }

    /// Elements per float offset (`aff` of [`Decoded`]), for the formats whose offset the
    /// kernels add as a second, float product (Q2_K's 4-bit mins per 16, Q4_1/Q5_1's `m`).
    pub fn affine_group(self) -> Option<usize> {
        match self {
            QuantKind::Q2K => Some(16),
            QuantKind::Q4_1 | QuantKind::Q5_1 => Some(32),
            _ => None,
        }
    }

    /// Whether some weight may exceed 32 in magnitude. The others ("narrow", |q| <= 32) let
    /// plain AVX2 add two biased-activation `vpmaddubsw` results in i16 without overflow
    /// (4 * 255 * 32 < 2^15); wide ones (up to 127) would saturate even one, so plain AVX2
    /// uses the sign trick for them.
    pub fn wide(self) -> bool {
        matches!(self, QuantKind::Q8_0 | QuantKind::IQ4NL | QuantKind::IQ4XS)
    }
}

/// One block decoded to integers.
pub struct Decoded {
    /// Signed integer weights (`block()` of them are valid).
    pub q: [i8; 256],
    /// Integer scale per sub-block (`block()/sub()` valid; 1 when the type has none).
    pub sc: [i32; 16],
    /// 6-bit mins per 32 weights (Q4_K/Q5_K; zero otherwise).
    pub mins: [i16; 8],
    /// Super-block scale.
    pub d: f32,
    /// Super-block min scale (Q4_K/Q5_K; zero otherwise).
    pub dmin: f32,
    /// Float offset per [`QuantKind::affine_group`] elements (zero when it has none):
    /// weight `i` is `d * sc * q + aff[i / group]`.
    pub aff: [f32; 16],
}

impl Decoded {
    fn new() -> Decoded {
        Decoded {
            q: [0; 256],
            sc: [1; 16],
            mins: [0; 8],
            d: 0.0,
            dmin: 0.0,
            aff: [0.0; 16],
        }
    }
}

/// The little-endian f16 at byte `at`, widened.
pub fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// Decodes one block of `kind` from exactly `kind.ty().type_size()` bytes.
pub fn decode(kind: QuantKind, b: &[u8]) -> Decoded {
    debug_assert_eq!(b.len(), kind.ty().type_size());
    let mut out = Decoded::new();
    match kind {
        QuantKind::Q8_0 => legacy::q8_0(b, &mut out),
        QuantKind::Q4_0 => legacy::q4_0(b, &mut out),
        QuantKind::Q4_1 => legacy::q4_1(b, &mut out),
        QuantKind::Q5_0 => legacy::q5(b, false, &mut out),
        QuantKind::Q5_1 => legacy::q5(b, true, &mut out),
        QuantKind::IQ4NL => legacy::iq4_nl(b, &mut out),
        QuantKind::MXFP4 => legacy::mxfp4(b, &mut out),
        QuantKind::Q2K => kquants::q2_k(b, &mut out),
        QuantKind::Q3K => kquants::q3_k(b, &mut out),
        QuantKind::Q4K => kquants::q45_k(b, false, &mut out),
        QuantKind::Q5K => kquants::q45_k(b, true, &mut out),
        QuantKind::Q6K => kquants::q6_k(b, &mut out),
        QuantKind::IQ4XS => kquants::iq4_xs(b, &mut out),
    }
    out
}
