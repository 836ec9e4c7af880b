//! `Y[T x N] = X[T x K] . W[N x K]^T` over a whole canvas: activation quantization once per
//! matmul, then one microkernel per instruction path over panels of 16 weight rows, two
//! panels per `rayon` task, every token per task. [`matmul_on`] dispatches every weight
//! layout: repacked quantized and float panels here, and compact matrices
//! ([`crate::compact`]'s kernels over few tokens; over many, each panel decoded into the
//! repacked layout and run here).
//!
//! # Arithmetic (identical on every path)
//! For each output `(t, n)` and each weight block `b` (256 elements for K-quants, 32 for
//! Q8_0/Q4_0), the integer sums are exact: `isum = sum_sub(sc * sum(x_q * w_q))` and, for
//! Q4_K/Q5_K, `msum = sum_j(min_j * sum32_j(x_q))`. They are folded into an f32 accumulator
//! starting at 0, block by block in K order, as
//! `acc = acc + (d_w * d_x) * isum` then `acc = acc - (dmin_w * d_x) * msum`
//! (separate multiply and add, no FMA), so every path gives bit-identical results, and the
//! thread count never changes a result. ggml's scalar `vec_dot_*` computes the same integer
//! sums and the same `d_w * d_x` products but sums blocks in another order (8 lanes for the
//! K-quants), so the two differ by f32 rounding only: at most about
//! `2 * (8 * blocks + 8) * f32::EPSILON * sum(|term|)` over ggml's per-lane terms (tested).
//!
//! Float weights: `acc = fma(w, x, acc)` over K in order per output, with `x` first rounded
//! to f16/bf16 for F16/BF16 weights as ggml does (its `vec_dot_type`).
//!
//! Float offsets (Q2_K's mins per 16, Q4_1/Q5_1's `m` per 32): after the integer part, the
//! same fma chain continues from the output over the groups, `acc = fma(aff_g, s_g, acc)`,
//! with `s_g` the activation group's `d * sum(q)` (ggml's Q8_1 `s`, rounded to f16, for
//! Q4_1/Q5_1). ggml adds each block's offset term inside its block loop instead, so the two
//! differ by f32 rounding again, plus f32 rounding of `d * sum` for Q2_K.

use rayon::prelude::*;

use crate::acts::Acts;
use crate::compact::{self, CompactQuant};
use crate::out::Out;
use crate::packed::{FloatPacked, Inner, PANEL, QuantPacked, reads_small};
use crate::{Error, PackedWeight, Path};

#[cfg(target_arch = "aarch64")]
mod arm;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Reusable buffers for [`matmul`] and [`crate::attention_rows`]: keep one per thread of the
/// caller and neither allocates once the buffers have grown to the largest call.
#[derive(Debug, Default)]
pub struct Workspace {
    acts: Acts,
    pub(crate) attn: crate::ops::AttnBuffers,
}

impl Workspace {
    /// An empty workspace; buffers grow on first use.
    pub fn new() -> Workspace {
        Workspace::default()
    }
}

/// `y[t][n] = sum_k x[t][k] * w[n][k]` on the active path ([`Path::active`]).
///
/// `x` is `t x k` row-major f32, `y` is `t x n` row-major and is overwritten. To compute
/// only some rows of `X` (e.g. the LM head over masked positions), gather those rows into
/// `x` and pass their count as `t`.
pub fn matmul(
    x: &[f32],
    t: usize,
    w: &PackedWeight,
    y: &mut [f32],
    ws: &mut Workspace,
) -> Result<(), Error> {
    matmul_on(Path::active()?, x, t, w, y, ws)
}

/// [`matmul`] on a chosen instruction path (tests and benches run every available one).
pub fn matmul_on(
    path: Path,
    x: &[f32],
    t: usize,
    w: &PackedWeight,
    y: &mut [f32],
    ws: &mut Workspace,
) -> Result<(), Error> {
    check_len("x", x.len(), t.checked_mul(w.k()))?;
    check_len("y", y.len(), t.checked_mul(w.n()))?;
    run(path, x, t, w, Out::new(y.as_mut_ptr(), w.n(), t), ws)
}

/// [`matmul`] with output row `i` written to `rows[i]` (each `n` long) instead of one
/// `t x n` matrix, `t = rows.len()`: a batch's LM head writes each canvas's logits into
/// that canvas's buffer, with no batch-sized copy. The same kernels compute the same bits.
pub fn matmul_rows(
    x: &[f32],
    w: &PackedWeight,
    rows: &mut [&mut [f32]],
    ws: &mut Workspace,
) -> Result<(), Error> {
    matmul_rows_on(Path::active()?, x, w, rows, ws)
}

/// [`matmul_rows`] on a chosen instruction path.
pub fn matmul_rows_on(
    path: Path,
    x: &[f32],
    w: &PackedWeight,
    rows: &mut [&mut [f32]],
    ws: &mut Workspace,
) -> Result<(), Error> {
    for r in rows.iter() {
        check_len("row of y", r.len(), Some(w.n()))?;
    }
    let table: Vec<*mut f32> = rows.iter_mut().map(|r| r.as_mut_ptr()).collect();
    run(path, x, table.len(), w, Out::rows(&table, w.n()), ws)
}

/// The body of [`matmul_on`] and [`matmul_rows_on`]: `out` is checked to hold `t x n`.
fn run(
    path: Path,
    x: &[f32],
    t: usize,
    w: &PackedWeight,
    out: Out,
    ws: &mut Workspace,
) -> Result<(), Error> {
    if !path.is_available() {
        return Err(Error::PathUnavailable { path });
    }
    let (n, k) = (w.n(), w.k());
    check_len("x", x.len(), t.checked_mul(k))?;
    if t == 0 {
        return Ok(());
    }
    ws.acts.prepare(w.act_kind(), x, t, k);
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut per_task = 2;
    #[cfg(target_arch = "x86_64")]
    if path == Path::Amx {
        // A compact matrix over many tokens runs its panels, decoded to the byte form, on
        // the AMX kernel too (`compact_by_panels`).
        let kind = match &w.inner {
            Inner::Quant(q) => Some(q.kind),
            Inner::Compact(c) if t >= PANEL_TOKENS => Some(c.kind),
            _ => None,
        };
        if kind.is_some_and(|kind| x86::amx::takes(kind, t)) {
            ws.acts
                .prepare_tiles(t, k, x86::amx::TOKEN_STEP, 256, false);
            per_task = x86::amx::TASK_PANELS;
        } else if kind.is_some_and(|kind| x86::amx32::takes(kind, t)) {
            ws.acts
                .prepare_tiles(t, k, x86::amx32::TOKEN_TILE, 32, true);
            ws.acts.pad_scales(t, k / 32, x86::amx32::TOKEN_TILE);
        }
    }
    let signed = match &w.inner {
        Inner::Quant(_) => path.is_aarch64(),
        // Many tokens: the compact matrix runs panel by panel on the repacked kernels.
        Inner::Compact(_) if t >= PANEL_TOKENS => path.is_aarch64(),
        Inner::Compact(c) => compact::reads_signed(path, c),
        Inner::Float(_) => false,
    };
    if signed {
        ws.acts.prepare_signed(t, k);
    }
    let acts = &ws.acts;
    match &w.inner {
        Inner::Quant(q) if q.small && !reads_small(path) => small_by_panels(path, q, acts, out),
        Inner::Quant(q) => {
            // The AMX kernel runs what its tiles take and hands the rest (the small form's
            // planes and level indices, short canvases) to the AVX-512 kernel itself.
            let kernel = quant_kernel(path);
            let fkernel = float_kernel(path, true);
            for_tasks(q.panels, per_task, |p0, np| {
                // SAFETY: the path is available (checked above); each task writes only
                // the columns of its own panels (see `Out`).
                unsafe { kernel(q, acts, p0, np, out) }
                // The float offsets, added to the same panels by the same task.
                // SAFETY: as above.
                unsafe { add_offsets(path, q, fkernel, &acts.g, p0, np, out) }
            });
        }
        Inner::Float(f) if !f.w16.is_empty() && !reads_narrow_float(path) => {
            // F16/BF16 held narrow, on a path whose float kernel reads f32: each pair of
            // panels widened into a per-thread buffer first.
            let kernel = float_kernel(path, false);
            for_tasks(f.panels, 2, |p0, np| {
                WIDE_FLOAT.with_borrow_mut(|wide| {
                    f.widen_panels(p0, np, wide);
                    // SAFETY: as above; `wide` holds panels p0..p0 + np of `f` as panels
                    // 0..np, and the view starts at their first column.
                    unsafe { kernel(wide, &acts.f, 0, np, out.panels_from(p0)) }
                })
            });
        }
        Inner::Float(f) => {
            let kernel = float_kernel(path, false);
            for_tasks(f.panels, 2, |p0, np| {
                // SAFETY: as above.
                unsafe { kernel(f, &acts.f, p0, np, out) }
            });
        }
        Inner::Compact(c) if t >= PANEL_TOKENS => compact_by_panels(path, c, acts, n, out),
        Inner::Compact(c) => compact::matmul(path, c, acts, n, out),
    }
    Ok(())
}

/// Canvases of at least this many tokens run a compact matrix through
/// [`compact_by_panels`]: per panel, decoding once into the repacked layout costs less than
/// the decode-per-use kernels' slower dot products. With the vectorised panel decoder the two
/// meet at about 32 tokens on AVX-512 VNNI (4096 x 4096, Q4_K, Q6_K, Q8_0); below, the
/// decode-per-use kernels win.
const PANEL_TOKENS: usize = 32;

/// A compact matrix over many tokens: each panel of 16 rows is decoded into a per-task
/// one-panel buffer of the repacked layout, then the path's GEMM kernel runs on it; the
/// memory held stays the file's size plus one panel per task, and the results are the
/// repacked layout's bits.
fn compact_by_panels(path: Path, w: &CompactQuant, acts: &Acts, n: usize, out: Out) {
    // On AMX `run` prepared the activation tiles the AMX kernels take from here on.
    let kernel = quant_kernel(path);
    (0..n.div_ceil(PANEL)).into_par_iter().for_each_init(
        || QuantPacked::one_panel(w.kind, w.k),
        |panel, p| {
            let rows = out.valid(p);
            panel.refill(
                &w.bytes[p * PANEL * w.row_bytes..][..rows * w.row_bytes],
                w.row_bytes,
            );
            // SAFETY: the path is available (`matmul_on` checked it); panel p exists and
            // this task is the only writer of its columns.
            unsafe { kernel(panel, acts, 0, 1, out.panel(p)) }
        },
    );
}

/// A small matrix ([`QuantPacked::small`]) on a path whose kernel reads the byte form:
/// each panel expanded into a per-task one-panel buffer, then that kernel: the same bits,
/// slower (packing picks the small form only where a kernel reads it).
fn small_by_panels(path: Path, w: &QuantPacked, acts: &Acts, out: Out) {
    let kernel = quant_kernel(path);
    let fkernel = float_kernel(path, true);
    (0..w.panels).into_par_iter().for_each_init(
        || QuantPacked::one_panel(w.kind, w.k),
        |panel, p| {
            w.expand_panel(p, panel);
            // SAFETY: the path is available (`run` checked it); panel p exists and this
            // task is the only writer of its columns.
            unsafe {
                kernel(panel, acts, 0, 1, out.panel(p));
                add_offsets(path, w, fkernel, &acts.g, p, 1, out);
            }
        },
    );
}

/// Whether `path`'s float kernel reads F16/BF16 weights held narrow
/// ([`FloatPacked::w16`]): the AVX-512 one (AVX-512 VNNI and AMX), the AVX2 one where the
/// CPU has F16C (every AVX2 CPU made so far) and the NEON one, the paths packing holds them
/// so for.
fn reads_narrow_float(path: Path) -> bool {
    match path {
        Path::Avx512Vnni | Path::Amx => true,
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 | Path::AvxVnni => std::arch::is_x86_feature_detected!("f16c"),
        Path::Neon | Path::NeonDot | Path::NeonI8mm => true,
        _ => false,
    }
}

thread_local! {
    /// Two panels of F16/BF16 weights widened ([`FloatPacked::widen_panels`]).
    static WIDE_FLOAT: std::cell::RefCell<FloatPacked> = std::cell::RefCell::new(FloatPacked::empty());
    /// Two panels of narrow float offsets widened ([`QuantPacked::offsets_panels`]).
    static OFFSETS: std::cell::RefCell<FloatPacked> = std::cell::RefCell::new(FloatPacked::empty());
}

/// Adds the float offsets of `w` (Q2_K, Q4_1, Q5_1: f32 in [`QuantPacked::affine`], or in
/// the small form f16 in [`QuantPacked::affine16`] or Q2_K's 4-bit mins) to panels
/// `p0..p0 + np` of `out`, by the float GEMM `fkernel` (accumulating) over the activations'
/// scaled group sums `g`; nothing for a type without offsets.
///
/// # Safety
/// `path` is available and `fkernel` its kernel; panels `p0..p0 + np` exist and belong to
/// the caller; `g` was prepared for `w`.
unsafe fn add_offsets(
    path: Path,
    w: &QuantPacked,
    fkernel: FloatKernel,
    g: &[f32],
    p0: usize,
    np: usize,
    out: Out,
) {
    if let Some(m) = &w.affine {
        for p in (p0..p0 + np).step_by(2) {
            // SAFETY: the contract; the float kernels take one or two panels.
            unsafe { fkernel(m, g, p, (p0 + np - p).min(2), out) }
        }
    } else if w.kind.affine_group().is_some() {
        // Held narrow by the small form: f16 (Q4_1, Q5_1) or 4-bit mins (Q2_K).
        OFFSETS.with_borrow_mut(|m| {
            for p in (p0..p0 + np).step_by(2) {
                let two = (p0 + np - p).min(2);
                match path {
                    // SAFETY: AVX-512 F/BW are part of these paths (available: the
                    // contract); `w` is Q2_K in the small form (its 4-bit mins).
                    #[cfg(target_arch = "x86_64")]
                    Path::Avx512Vnni | Path::Amx if !w.mins4.is_empty() => unsafe {
                        x86::avx512::q2k_offsets(w, p, two, m)
                    },
                    _ => w.offsets_panels(p, two, m),
                }
                // SAFETY: the contract; `m` holds panels p..p + two's offsets, written to
                // their columns.
                unsafe { fkernel(m, g, 0, two, out.panels_from(p)) }
            }
        });
    }
}

/// `y[t][n] = x[t][k] . w^T` for float weights `w` (`n` rows), on this thread only: the
/// building block of kernels that already run as parallel tasks (attention).
///
/// # Panics
/// If `x` or `y` is too short or `n` exceeds `w`'s rows.
pub(crate) fn float_serial(
    path: Path,
    w: &FloatPacked,
    n: usize,
    x: &[f32],
    t: usize,
    y: &mut [f32],
) {
    assert!(x.len() >= t * w.k && y.len() >= t * n && n <= w.panels * PANEL && path.is_available());
    assert!(
        w.w16.is_empty() || reads_narrow_float(path),
        "narrow float weights"
    );
    let out = Out::new(y.as_mut_ptr(), n, t);
    let kernel = float_kernel(path, false);
    for p0 in (0..n.div_ceil(PANEL)).step_by(2) {
        let np = (n.div_ceil(PANEL) - p0).min(2);
        // SAFETY: the path is available and the lengths were checked above; this thread is
        // the only writer of `y`.
        unsafe { kernel(w, x, p0, np, out) };
    }
}

fn check_len(what: &'static str, found: usize, expected: Option<usize>) -> Result<(), Error> {
    let expected = expected.ok_or(Error::BadShape {
        what,
        detail: "t * dimension overflows",
    })?;
    if found != expected {
        return Err(Error::BadLength {
            what,
            expected,
            found,
        });
    }
    Ok(())
}

/// Runs `f(first_panel, panel_count)` over groups of `per_task` panels in parallel.
fn for_tasks(panels: usize, per_task: usize, f: impl Fn(usize, usize) + Sync) {
    (0..panels.div_ceil(per_task))
        .into_par_iter()
        .for_each(|g| f(per_task * g, (panels - per_task * g).min(per_task)));
}

/// A quantized-GEMM kernel: computes panels `p0..p0 + np` for every token (np is 1 or 2,
/// up to [`x86::amx::TASK_PANELS`] for the AMX kernel when it takes the matmul).
///
/// # Safety
/// The CPU must support the kernel's path, and no other thread may write the columns of
/// these panels in `out` meanwhile.
pub(crate) type QuantKernel = unsafe fn(&QuantPacked, &Acts, usize, usize, Out);
/// A float-GEMM kernel (same contract as [`QuantKernel`]; activations `[t][k]`).
/// Each kernel comes in two forms: one overwriting `out`, one adding to what it holds (the
/// float offsets of Q2_K/Q4_1/Q5_1 after their integer part); see [`float_kernel`].
pub(crate) type FloatKernel = unsafe fn(&FloatPacked, &[f32], usize, usize, Out);

/// The quantized kernel of `path` (AMX's takes tile-prepared activations: callers without
/// them pass [`Path::Avx512Vnni`] instead).
fn quant_kernel(path: Path) -> QuantKernel {
    match path {
        #[cfg(target_arch = "x86_64")]
        Path::Amx => x86::amx::quant_panels,
        #[cfg(target_arch = "x86_64")]
        Path::Avx512Vnni => x86::avx512::quant_panels,
        #[cfg(target_arch = "x86_64")]
        Path::AvxVnni => x86::avxvnni::quant_panels,
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => x86::avx2::quant_panels,
        #[cfg(target_arch = "aarch64")]
        Path::NeonI8mm => arm::quant_panels_i8mm,
        #[cfg(target_arch = "aarch64")]
        Path::NeonDot => arm::quant_panels_dot,
        #[cfg(target_arch = "aarch64")]
        Path::Neon => arm::quant_panels_neon,
        _ => scalar::quant_panels,
    }
}

/// The float kernel of `path`; with `accumulate` the form that adds to `out`.
fn float_kernel(path: Path, accumulate: bool) -> FloatKernel {
    match (path, accumulate) {
        #[cfg(target_arch = "x86_64")]
        (Path::Avx512Vnni | Path::Amx, false) => x86::avx512::float_panels::<false>,
        #[cfg(target_arch = "x86_64")]
        (Path::Avx512Vnni | Path::Amx, true) => x86::avx512::float_panels::<true>,
        #[cfg(target_arch = "x86_64")]
        (Path::AvxVnni | Path::Avx2, false) => x86::avx2::float_panels::<false>,
        #[cfg(target_arch = "x86_64")]
        (Path::AvxVnni | Path::Avx2, true) => x86::avx2::float_panels::<true>,
        #[cfg(target_arch = "aarch64")]
        (Path::Neon | Path::NeonDot | Path::NeonI8mm, false) => arm::float_panels::<false>,
        #[cfg(target_arch = "aarch64")]
        (Path::Neon | Path::NeonDot | Path::NeonI8mm, true) => arm::float_panels::<true>,
        (_, false) => scalar::float_panels::<false>,
        (_, true) => scalar::float_panels::<true>,
    }
}

#[cfg(test)]
mod tests;
