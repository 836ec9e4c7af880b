//! The 32-element formats (`dequantize_row_q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl/mxfp4`): one
//! float scale per block, weights as signed integers, and for Q4_1/Q5_1 one float offset.

use crate::{KVALUES_IQ4NL, KVALUES_MXFP4, e8m0_to_fp32_half};

use super::{Decoded, f16_at};

/// `block_q8_0`: `d: f16, qs: [i8; 32]`.
pub(super) fn q8_0(b: &[u8], out: &mut Decoded) {
    out.d = f16_at(b, 0);
    for (q, &byte) in out.q.iter_mut().zip(&b[2..34]) {
        *q = byte as i8;
    }
}

/// Element `j` is the low nibble of `qs[j]`, element `j + 16` the high one.
fn nibbles(qs: &[u8], mut level: impl FnMut(u8) -> i8, q: &mut [i8]) {
    for j in 0..16 {
        q[j] = level(qs[j] & 0xF);
        q[j + 16] = level(qs[j] >> 4);
    }
}

/// `block_q4_0`: `d: f16, qs: [u8; 16]`, weight `d * (nibble - 8)`.
pub(super) fn q4_0(b: &[u8], out: &mut Decoded) {
    out.d = f16_at(b, 0);
    nibbles(&b[2..18], |v| v as i8 - 8, &mut out.q);
}

/// `block_q4_1`: `d: f16, m: f16, qs: [u8; 16]`, weight `d * nibble + m`.
pub(super) fn q4_1(b: &[u8], out: &mut Decoded) {
    out.d = f16_at(b, 0);
    out.aff[0] = f16_at(b, 2);
    nibbles(&b[4..20], |v| v as i8, &mut out.q);
}

/// `block_q5_0` (`d: f16, qh: u32, qs: [u8; 16]`, weight `d * (q5 - 16)`) and `block_q5_1`
/// (`d: f16, m: f16, qh: u32, qs: [u8; 16]`, weight `d * q5 + m`); bit `j` of `qh` is the
/// fifth bit of element `j`.
pub(super) fn q5(b: &[u8], with_min: bool, out: &mut Decoded) {
    out.d = f16_at(b, 0);
    let at = if with_min {
        out.aff[0] = f16_at(b, 2);
        4
    } else {
        2
    };
    let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let qs = &b[at + 4..at + 20];
    let bias = if with_min { 0 } else { 16 };
    for j in 0..16 {
        let h0 = (((qh >> j) << 4) & 0x10) as u8;
        let h1 = ((qh >> (j + 12)) & 0x10) as u8;
        out.q[j] = ((qs[j] & 0xF) | h0) as i8 - bias;
        out.q[j + 16] = ((qs[j] >> 4) | h1) as i8 - bias;
    }
}

/// `block_iq4_nl`: `d: f16, qs: [u8; 16]`, weight `d * kvalues_iq4nl[nibble]`.
pub(super) fn iq4_nl(b: &[u8], out: &mut Decoded) {
    out.d = f16_at(b, 0);
    nibbles(&b[2..18], |v| KVALUES_IQ4NL[usize::from(v)], &mut out.q);
}

/// `block_mxfp4`: `e: u8, qs: [u8; 16]`, weight `kvalues_mxfp4[nibble] * 2^(e - 128)`.
pub(super) fn mxfp4(b: &[u8], out: &mut Decoded) {
    out.d = e8m0_to_fp32_half(b[0]);
    nibbles(&b[1..17], |v| KVALUES_MXFP4[usize::from(v)], &mut out.q);
}
