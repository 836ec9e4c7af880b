//! A vectorizable `exp` (Cephes `expf`: range reduction by ln 2 in two parts and a degree-6
//! polynomial), within 2 ulp of the true value over the f32 range; 0 below -87.3 and +inf
//! above 88.7, NaN for NaN.

const LOG2E: f32 = std::f32::consts::LOG2_E;
const C1: f32 = 0.693_359_4;
const C2: f32 = -2.121_944_4e-4;

/// `e^x`, branch-free so that loops over it vectorize.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let xc = x.clamp(-87.336_55, 88.722_83);
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * C1 - n * C2;
    let z = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * z + r + 1.0;
    // 2^n for n in [-126, 128]: split in two factors so n = 128 does not overflow the
    // exponent field.
    let n = n as i32;
    let h = n / 2;
    let s1 = f32::from_bits(((h + 127) as u32) << 23);
    let s2 = f32::from_bits(((n - h + 127) as u32) << 23);
    let v = y * s1 * s2;
    if x < -87.336_55 {
        0.0
    } else if x > 88.722_83 {
        f32::INFINITY
    } else if x.is_nan() {
        x
    } else {
        v
    }
}

#[cfg(test)]
mod tests;
