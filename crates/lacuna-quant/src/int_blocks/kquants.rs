//! The 256-element formats (`dequantize_row_q2_K/q3_K/q4_K/q5_K/q6_K/iq4_xs`): a float
//! super-scale, integer sub-block scales, and mins for Q2_K/Q4_K/Q5_K.

use crate::KVALUES_IQ4NL;

use super::{Decoded, f16_at};

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0..8).
fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// `block_q2_K`: `scales: [u8; 16]` (scale low nibble, min high nibble, per 16),
/// `qs: [u8; 64]`, `d: f16`, `dmin: f16`; weight `d * sc * q - dmin * m`. The min becomes
/// the float offset `-(dmin * m)` (exact in f32: an f16 times a 4-bit integer).
pub(super) fn q2_k(b: &[u8], out: &mut Decoded) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    out.d = f16_at(b, 80);
    let dmin = f16_at(b, 82);
    for (j, &s) in scales.iter().enumerate() {
        out.sc[j] = i32::from(s & 0xF);
        out.aff[j] = -(dmin * f32::from(s >> 4));
    }
    // Element order: per 128, four shifts, each 16 of q[0..16] then 16 of q[16..32].
    for n in 0..2 {
        let q = &qs[32 * n..32 * n + 32];
        for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
            let y = &mut out.q[128 * n + 32 * j..][..32];
            for l in 0..32 {
                y[l] = ((q[l] >> shift) & 3) as i8;
            }
        }
    }
}

/// `block_q3_K`: `hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: f16`; weight
/// `d * (sc6 - 32) * (q2 - (high bit clear ? 4 : 0))`.
pub(super) fn q3_k(b: &[u8], out: &mut Decoded) {
    let (hmask, qs, sraw) = (&b[0..32], &b[32..96], &b[96..108]);
    out.d = f16_at(b, 108);
    // ggml's kmask unpacking of the 12 bytes into 16 six-bit scales.
    let word = |i: usize| {
        u32::from_le_bytes([
            sraw[4 * i],
            sraw[4 * i + 1],
            sraw[4 * i + 2],
            sraw[4 * i + 3],
        ])
    };
    let (a0, a1, tmp) = (word(0), word(1), word(2));
    let (k1, k2) = (0x0303_0303u32, 0x0f0f_0f0fu32);
    let aux = [
        (a0 & k2) | ((tmp & k1) << 4),
        (a1 & k2) | (((tmp >> 2) & k1) << 4),
        ((a0 >> 4) & k2) | (((tmp >> 4) & k1) << 4),
        ((a1 >> 4) & k2) | (((tmp >> 6) & k1) << 4),
    ];
    for (j, sc) in out.sc.iter_mut().enumerate() {
        *sc = i32::from(aux[j / 4].to_le_bytes()[j % 4] as i8) - 32;
    }
    let mut m = 1u8;
    for n in 0..2 {
        let q = &qs[32 * n..32 * n + 32];
        for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
            let y = &mut out.q[128 * n + 32 * j..][..32];
            for l in 0..32 {
                let low = ((q[l] >> shift) & 3) as i8;
                y[l] = low - if hmask[l] & m != 0 { 0 } else { 4 };
            }
            m <<= 1;
        }
    }
}

/// `block_q4_K` / `block_q5_K`: `d: f16, dmin: f16, scales: [u8; 12]`, then for Q5_K
/// `qh: [u8; 32]`, then `qs: [u8; 128]`; weight `d * sc * q - dmin * m` per 32.
pub(super) fn q45_k(b: &[u8], five: bool, out: &mut Decoded) {
    out.d = f16_at(b, 0);
    out.dmin = f16_at(b, 2);
    let scales = &b[4..16];
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, scales);
        out.sc[j] = i32::from(sc);
        out.mins[j] = i16::from(m);
    }
    let (qh, qs) = if five {
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

/// `block_q6_K`: `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`.
pub(super) fn q6_k(b: &[u8], out: &mut Decoded) {
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

/// `block_iq4_xs`: `d: f16, scales_h: u16, scales_l: [u8; 4], qs: [u8; 128]`; weight
/// `d * (ls - 32) * kvalues_iq4nl[nibble]` per 32.
pub(super) fn iq4_xs(b: &[u8], out: &mut Decoded) {
    out.d = f16_at(b, 0);
    let h = u16::from_le_bytes([b[2], b[3]]);
    let (sl, qs) = (&b[4..8], &b[8..136]);
    for ib in 0..8 {
        let lo = (sl[ib / 2] >> (4 * (ib % 2))) & 0xF;
        let hi = ((h >> (2 * ib)) & 3) as u8;
        out.sc[ib] = i32::from(lo | (hi << 4)) - 32;
        let q = &qs[16 * ib..16 * ib + 16];
        for j in 0..16 {
            out.q[32 * ib + j] = KVALUES_IQ4NL[usize::from(q[j] & 0xF)];
            out.q[32 * ib + j + 16] = KVALUES_IQ4NL[usize::from(q[j] >> 4)];
        }
    }
}
