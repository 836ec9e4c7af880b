//! The portable path: plain loops over the packed layout, in exactly the arithmetic order
//! documented in [`crate::gemm`]. Also the reference the SIMD paths are tested against.

use crate::acts::Acts;
use crate::out::Out;
use crate::packed::{FloatPacked, PANEL, QuantPacked};

/// Scalar quantized GEMM over panels `p0..p0 + np`.
///
/// # Safety
/// See [`crate::gemm::QuantKernel`].
pub(crate) unsafe fn quant_panels(w: &QuantPacked, a: &Acts, p0: usize, np: usize, out: Out) {
    let kind = w.kind;
    let (k, block, sub) = (w.k, kind.block(), kind.sub());
    let (nblk, nsub) = (k / block, block / sub);
    for p in p0..p0 + np {
        let qs = &w.qs[p * PANEL * k..][..PANEL * k];
        for t in 0..out.t {
            let xq = &a.q[t * k..][..k];
            let xd = &a.d[t * nblk..][..nblk];
            let mut row = [0.0f32; PANEL];
            for (r, acc) in row.iter_mut().enumerate().take(out.valid(p)) {
                for b in 0..nblk {
                    let mut isum = 0i32;
                    for s in 0..nsub {
                        let mut dot = 0i32;
                        for i in 0..sub {
                            let kk = b * block + s * sub + i;
                            let wq = qs[((kk / 4) * PANEL + r) * 4 + kk % 4];
                            dot += i32::from(xq[kk]) * i32::from(wq);
                        }
                        let sc = if kind.has_scales() {
                            w.scales[((p * nblk + b) * nsub + s) * PANEL + r]
                        } else {
                            1
                        };
                        isum += sc * dot;
                    }
                    let pb = (p * nblk + b) * PANEL + r;
                    isum -= w.corr[pb];
                    *acc += (w.d[pb] * xd[b]) * isum as f32;
                    if kind.has_mins() {
                        let xs = &a.sums[(t * nblk + b) * 8..][..8];
                        let mut msum = 0i32;
                        for (j, &x) in xs.iter().enumerate() {
                            let m =
                                w.mins[((p * nblk + b) * 4 + j / 2) * PANEL * 2 + r * 2 + j % 2];
                            msum += i32::from(m) * i32::from(x);
                        }
                        *acc -= (w.dmin[pb] * xd[b]) * msum as f32;
                    }
                }
            }
            // SAFETY: t < out.t and panel p is ours (kernel contract).
            unsafe { store(out, t, p, &row) };
        }
    }
}

/// Scalar float GEMM over panels `p0..p0 + np` (added to `out` when `ACC`).
///
/// # Safety
/// See [`crate::gemm::FloatKernel`].
pub(crate) unsafe fn float_panels<const ACC: bool>(
    w: &FloatPacked,
    x: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    let k = w.k;
    for p in p0..p0 + np {
        let wp = &w.w[p * PANEL * k..][..PANEL * k];
        for t in 0..out.t {
            let xt = &x[t * k..][..k];
            let mut row = [0.0f32; PANEL];
            if ACC {
                // SAFETY: t < out.t and panel p is ours; `valid` columns read.
                unsafe {
                    std::ptr::copy_nonoverlapping(out.at(t, p), row.as_mut_ptr(), out.valid(p))
                };
            }
            for (r, acc) in row.iter_mut().enumerate() {
                for (kk, &xv) in xt.iter().enumerate() {
                    *acc = wp[kk * PANEL + r].mul_add(xv, *acc);
                }
            }
            // SAFETY: t < out.t and panel p is ours (kernel contract).
            unsafe { store(out, t, p, &row) };
        }
    }
}

/// # Safety
/// `t < out.t` and panel `p` belongs to the calling task.
unsafe fn store(out: Out, t: usize, p: usize, row: &[f32; PANEL]) {
    let valid = out.valid(p);
    // SAFETY: t < out.t, panel p is this task's; we write `valid` columns of it.
    unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), out.at(t, p), valid) };
}
