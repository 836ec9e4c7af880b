//! Decoding of ggml's quantized block formats into integer weights, integer sub-block
//! scales and float super-scales: the form [`crate::PackedWeight`] repacks.
//!
//! Layouts follow ggml-common.h / ggml-quants.c (`dequantize_row_*`, `get_scale_min_k4`).
//! The value of weight `i` of a block is always `d * sc[i / sub] * q[i] - dmin * min[i / 32]`
//! (the min term only for Q4_K/Q5_K).

use lacuna_quant::GgmlType;

/// The quantized weight formats the GEMM takes, with their integer decoding parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuantKind {
    Q4K,
    Q5K,
    Q6K,
    Q8_0,
    Q4_0,
}

impl QuantKind {
    pub(crate) fn of(ty: GgmlType) -> Option<QuantKind> {
        match ty {
            GgmlType::Q4_K => Some(QuantKind::Q4K),
            GgmlType::Q5_K => Some(QuantKind::Q5K),
            GgmlType::Q6_K => Some(QuantKind::Q6K),
            GgmlType::Q8_0 => Some(QuantKind::Q8_0),
            GgmlType::Q4_0 => Some(QuantKind::Q4_0),
            _ => None,
        }
    }

    pub(crate) fn ty(self) -> GgmlType {
        match self {
            QuantKind::Q4K => GgmlType::Q4_K,
            QuantKind::Q5K => GgmlType::Q5_K,
            QuantKind::Q6K => GgmlType::Q6_K,
            QuantKind::Q8_0 => GgmlType::Q8_0,
            QuantKind::Q4_0 => GgmlType::Q4_0,
        }
    }

    /// Elements per block (= per activation block: Q8_K for K-quants, Q8_0 otherwise).
    pub(crate) fn block(self) -> usize {
        self.ty().block_size()
    }

    /// Elements sharing one integer scale (the block itself for Q8_0/Q4_0).
    pub(crate) fn sub(self) -> usize {
        match self {
            QuantKind::Q4K | QuantKind::Q5K => 32,
            QuantKind::Q6K => 16,
            QuantKind::Q8_0 | QuantKind::Q4_0 => 32,
        }
    }

    /// Whether the block has integer sub-scales (more than one sub-block per block).
    pub(crate) fn has_scales(self) -> bool {
        self.sub() != self.block()
    }

    /// Whether the block carries `dmin` and 6-bit mins per 32 weights.
    pub(crate) fn has_mins(self) -> bool {
        matches!(self, QuantKind::Q4K | QuantKind::Q5K)
    }
}

/// One block decoded to integers.
pub(crate) struct Decoded {
    /// Signed integer weights (`block()` of them are valid).
    pub(crate) q: [i8; 256],
    /// Integer scale per sub-block (`block()/sub()` valid; 1 when the type has none).
    pub(crate) sc: [i32; 16],
    /// 6-bit mins per 32 weights (Q4_K/Q5_K; zero otherwise).
    pub(crate) mins: [i16; 8],
    /// Super-block scale.
    pub(crate) d: f32,
    /// Super-block min scale (Q4_K/Q5_K; zero otherwise).
    pub(crate) dmin: f32,
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0..8).
pub(crate) fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// Decodes one block of `kind` from exactly `kind.ty().type_size()` bytes.
pub(crate) fn decode(kind: QuantKind, b: &[u8]) -> Decoded {
    debug_assert_eq!(b.len(), kind.ty().type_size());
    let mut out = Decoded {
        q: [0; 256],
        sc: [1; 16],
        mins: [0; 8],
        d: 0.0,
        dmin: 0.0,
    };
    match kind {
        QuantKind::Q8_0 => {
            out.d = f16_at(b, 0);
            for (q, &byte) in out.q.iter_mut().zip(&b[2..34]) {
                *q = byte as i8;
            }
        }
        QuantKind::Q4_0 => {
            out.d = f16_at(b, 0);
            let qs = &b[2..18];
            for j in 0..16 {
                out.q[j] = (qs[j] & 0xF) as i8 - 8;
                out.q[j + 16] = (qs[j] >> 4) as i8 - 8;
            }
        }
        QuantKind::Q4K | QuantKind::Q5K => {
            out.d = f16_at(b, 0);
            out.dmin = f16_at(b, 2);
            let scales = &b[4..16];
            for j in 0..8 {
                let (sc, m) = scale_min_k4(j, scales);
                out.sc[j] = i32::from(sc);
                out.mins[j] = i16::from(m);
            }
            let (qh, qs) = if kind == QuantKind::Q5K {
                (Some(&b[16..48]), &b[48..176])
            } else {
                (None, &b[16..144])
            };
            for c in 0..4 {
                for l in 0..32 {
                    let byte = qs[c * 32 + l];
                    let (mut lo, mut hi) = (byte & 0xF, byte >> 4);
                    if let Some(qh) = qh {
                        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
                        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
                    }
                    out.q[c * 64 + l] = lo as i8;
                    out.q[c * 64 + 32 + l] = hi as i8;
                }
            }
        }
        QuantKind::Q6K => {
            let (ql, qh, sc) = (&b[0..128], &b[128..192], &b[192..208]);
            out.d = f16_at(b, 208);
            for (o, &s) in out.sc.iter_mut().zip(sc) {
                *o = i32::from(s as i8);
            }
            for n in 0..2 {
                let (ql, qh) = (&ql[n * 64..], &qh[n * 32..]);
                let y = &mut out.q[n * 128..];
                for l in 0..32 {
                    y[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
                    y[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                    y[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                    y[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
