//! The scale searches of ggml's reference K-quant quantizers, transcribed operation for
//! operation from `ggml-quants.c` (same float evaluation order, same `nearest_int`) so the
//! quantizers built on them are bit-exact with ggml.

use crate::scalar::nearest_int;

/// ggml's `GROUP_MAX_EPS`: a group whose largest magnitude is below this is all zero.
pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

/// `make_qx_quants` for `rmse_type == 1` without importance weights (weights `x²`), as
/// `quantize_row_q6_K_ref` calls it: symmetric quants `L ∈ [0, 2·nmax)` (offset by `nmax`),
/// returns the scale.
pub(crate) fn make_qx_quants_rmse1(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let mut iscale = -nmaxf / max;
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for (i, &xi) in x.iter().enumerate() {
        let l = clamp(nearest_int(iscale * xi));
        l_out[i] = (l + nmax) as i8;
        let w = xi * xi;
        sumlx += w * xi * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9i32..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmaxf + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &xi in x {
            let l = clamp(nearest_int(iscale * xi));
            let w = xi * xi;
            sumlx += w * xi * l as f32;
            suml2 += w * l as f32 * l as f32;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (i, &xi) in x.iter().enumerate() {
                let l = nearest_int(iscale * xi);
                l_out[i] = (nmax + clamp(l)) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// `make_q3_quants(n, nmax, x, L, do_rmse = true)` as `quantize_row_q3_K_ref` calls it.
pub(crate) fn make_q3_quants_rmse(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let iscale = -(nmax as f32) / max;
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for (i, &xi) in x.iter().enumerate() {
        let l = clamp(nearest_int(iscale * xi));
        l_out[i] = l as i8;
        let w = xi * xi;
        sumlx += w * xi * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _itry in 0..5 {
        let mut n_changed = 0;
        for (i, &xi) in x.iter().enumerate() {
            let w = xi * xi;
            let li = f32::from(l_out[i]);
            let mut slx = sumlx - w * xi * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = clamp(nearest_int(xi * sl2 / slx));
                if new_l != i32::from(l_out[i]) {
                    slx += w * xi * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l_out[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    for l in l_out.iter_mut() {
        *l = (i32::from(*l) + nmax) as i8;
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// Parameters of one `make_qkx2_quants` call.
pub(crate) struct Qkx2 {
    /// Largest quant (`15` for 4-bit, `31` for 5-bit, `3` for 2-bit).
    pub(crate) nmax: i32,
    /// First scale perturbation.
    pub(crate) rmin: f32,
    /// Perturbation step.
    pub(crate) rdelta: f32,
    /// Number of steps.
    pub(crate) nstep: i32,
    /// Minimise absolute (not squared) error.
    pub(crate) use_mad: bool,
}

/// `make_qkx2_quants`: asymmetric quants `L ∈ [0, nmax]` with a scale and a min fitted by
/// weighted least squares over `nstep + 1` trial scales. Returns `(scale, -min)`.
pub(crate) fn make_qkx2_quants(
    p: &Qkx2,
    x: &[f32],
    weights: &[f32],
    l_out: &mut [u8],
) -> (f32, f32) {
    let n = x.len();
    let nmaxf = p.nmax as f32;
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l_out.iter_mut().for_each(|l| *l = 0);
        return (0.0, -min);
    }
    let err = |diff: f32| if p.use_mad { diff.abs() } else { diff * diff };
    let mut iscale = nmaxf / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min));
        l_out[i] = l.clamp(0, p.nmax) as u8;
        let diff = scale * f32::from(l_out[i]) + min - x[i];
        best_error += weights[i] * err(diff);
    }
    if p.nstep < 1 {
        return (scale, -min);
    }
    let mut laux = [0u8; 32];
    for is in 0..=p.nstep {
        iscale = (p.rmin + p.rdelta * is as f32 + nmaxf) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, p.nmax);
            laux[i] = l as u8;
            let w = weights[i];
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..n {
                let diff = this_scale * f32::from(laux[i]) + this_min - x[i];
                cur_error += weights[i] * err(diff);
            }
            if cur_error < best_error {
                l_out[..n].copy_from_slice(&laux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0..8) from the
/// 12 packed bytes of a Q4_K/Q5_K block.
pub(crate) fn get_scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Packs 8 six-bit scales and mins into Q4_K/Q5_K's 12 bytes (inverse of
/// [`get_scale_min_k4`]), as the reference quantizers write them.
pub(crate) fn pack_scale_min_k4(ls: &[u8; 8], lm: &[u8; 8]) -> [u8; 12] {
    let mut s = [0u8; 12];
    for j in 0..8 {
        if j < 4 {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (ls[j] & 0xF) | ((lm[j] & 0xF) << 4);
            s[j - 4] |= (ls[j] >> 4) << 6;
            s[j] |= (lm[j] >> 4) << 6;
        }
    }
    s
}
