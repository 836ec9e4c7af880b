//! Row dequantization for the few places the graph reads weights as f32 rather than
//! through a matmul: embedding rows (`get_rows`), norm weights and biases.
//!
//! A small private helper: `lacuna-quant` is to own ggml's scalar references; until its
//! row API is settled this module decodes the types the fixtures and common files use
//! (F32, F16, BF16, Q8_0, Q4_K, Q6_K), following `dequantize_row_*` in ggml-quants.c.

use half::{bf16, f16};
use lacuna_quant::GgmlType;

/// The types [`dequantize_row`] decodes.
pub(crate) const SUPPORTED: &str = "f32, f16, bf16, q8_0, q4_K, q6_K";

/// Whether [`dequantize_row`] decodes `ty`.
pub(crate) fn supports(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::F32
            | GgmlType::F16
            | GgmlType::BF16
            | GgmlType::Q8_0
            | GgmlType::Q4_K
            | GgmlType::Q6_K
    )
}

fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// Decodes one row of `out.len()` elements of type `ty` from `bytes` (exactly one row).
/// The caller has checked `supports(ty)` and the row length; other types leave `out` zero.
pub(crate) fn dequantize_row(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    match ty {
        GgmlType::F32 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
            }
        }
        GgmlType::Q8_0 => {
            for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(34)) {
                let d = f16_at(b, 0);
                for (y, &q) in o.iter_mut().zip(&b[2..34]) {
                    *y = d * f32::from(q as i8);
                }
            }
        }
        GgmlType::Q4_K => {
            for (o, b) in out.chunks_exact_mut(256).zip(bytes.chunks_exact(144)) {
                q4k_block(b, o);
            }
        }
        GgmlType::Q6_K => {
            for (o, b) in out.chunks_exact_mut(256).zip(bytes.chunks_exact(210)) {
                q6k_block(b, o);
            }
        }
        _ => out.fill(0.0),
    }
}

/// ggml's `get_scale_min_k4`.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// `block_q4_K`: `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]`.
fn q4k_block(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let min = f16_at(b, 2);
    let scales = &b[4..16];
    let qs = &b[16..144];
    for (j, (q, yy)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
        let (sc1, m1) = scale_min_k4(2 * j, scales);
        let (sc2, m2) = scale_min_k4(2 * j + 1, scales);
        let (d1, m1) = (d * f32::from(sc1), min * f32::from(m1));
        let (d2, m2) = (d * f32::from(sc2), min * f32::from(m2));
        for l in 0..32 {
            yy[l] = d1 * f32::from(q[l] & 0xF) - m1;
            yy[l + 32] = d2 * f32::from(q[l] >> 4) - m2;
        }
    }
}

/// `block_q6_K`: `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`.
fn q6k_block(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for half in 0..2 {
        let ql = &b[64 * half..64 * half + 64];
        let qh = &b[128 + 32 * half..128 + 32 * half + 32];
        let sc = &b[192 + 8 * half..192 + 8 * half + 8];
        let yy = &mut y[128 * half..128 * half + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = i32::from((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
            let q2 = i32::from((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            let q3 = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            let q4 = i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            let s = |i: usize| d * f32::from(sc[i] as i8);
            yy[l] = s(is) * q1 as f32;
            yy[l + 32] = s(is + 2) * q2 as f32;
            yy[l + 64] = s(is + 4) * q3 as f32;
            yy[l + 96] = s(is + 6) * q4 as f32;
        }
    }
}
