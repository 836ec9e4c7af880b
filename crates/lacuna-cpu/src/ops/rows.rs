//! Row movement and element-wise sums between the kernels of a forward pass: row gathers
//! and column splits, residual and bias adds, and the scatter and per-group sums that put
//! rows computed for a subset back in place (a mixture-of-experts layer's expert outputs
//! into their token-and-slot rows, then summed per token). Each output element is one
//! product or a sum in a fixed order, so every path gives the same bits.

use crate::Error;
use crate::ops::multiversion;

/// `dst[r] = src[rows[r]][col0 .. col0 + cols]` for every `cols`-wide row `r` of `dst`,
/// `src` being rows `src_width` wide (`rows` `None`: row `r` itself): row gathers and
/// column splits.
pub fn copy_rows(
    src: &[f32],
    src_width: usize,
    col0: usize,
    rows: Option<&[usize]>,
    dst: &mut [f32],
    cols: usize,
) -> Result<(), Error> {
    if cols == 0 || col0.checked_add(cols).is_none_or(|end| end > src_width) {
        return Err(Error::BadShape {
            what: "copy_rows",
            detail: "need 0 < cols and col0 + cols <= src_width",
        });
    }
    if !dst.len().is_multiple_of(cols) {
        return Err(Error::BadLength {
            what: "copy_rows dst (whole rows of cols)",
            expected: dst.len().div_ceil(cols) * cols,
            found: dst.len(),
        });
    }
    let n = dst.len() / cols;
    if let Some(rows) = rows
        && rows.len() != n
    {
        return Err(Error::BadLength {
            what: "copy_rows rows (one per dst row)",
            expected: n,
            found: rows.len(),
        });
    }
    let src_rows = src.len() / src_width;
    let last = rows.map_or(n.checked_sub(1), |r| r.iter().copied().max());
    if last.is_some_and(|r| r >= src_rows) {
        return Err(Error::BadShape {
            what: "copy_rows",
            detail: "a source row is outside src",
        });
    }
    for (r, out) in dst.chunks_exact_mut(cols).enumerate() {
        let from = rows.map_or(r, |rows| rows[r]) * src_width + col0;
        out.copy_from_slice(&src[from..from + cols]);
    }
    Ok(())
}

/// `x += y`, element-wise.
pub fn add(x: &mut [f32], y: &[f32]) -> Result<(), Error> {
    if x.len() != y.len() {
        return Err(Error::BadLength {
            what: "add y",
            expected: x.len(),
            found: y.len(),
        });
    }
    add_body(x, y);
    Ok(())
}

multiversion! {
    fn add_body(x: &mut [f32], y: &[f32]) {
        for (a, &b) in x.iter_mut().zip(y) {
            *a += b;
        }
    }
}

/// Adds `bias` to every `bias.len()`-wide row of `x`.
pub fn add_bias(x: &mut [f32], bias: &[f32]) -> Result<(), Error> {
    if bias.is_empty() || !x.len().is_multiple_of(bias.len()) {
        return Err(Error::BadLength {
            what: "add_bias x (whole rows of bias.len())",
            expected: x.len().div_ceil(bias.len().max(1)) * bias.len(),
            found: x.len(),
        });
    }
    for row in x.chunks_exact_mut(bias.len()) {
        add_body(row, bias);
    }
    Ok(())
}

/// `dst[to[r]] = scale[r] * src[r]` for each `width`-wide row `r` of `src` (`to` distinct;
/// rows of `dst` that no `to` names are left as they are).
pub fn scatter_scaled(
    src: &[f32],
    to: &[usize],
    scale: &[f32],
    dst: &mut [f32],
    width: usize,
) -> Result<(), Error> {
    for (what, expected, found) in [
        (
            "scatter_scaled src (one row per to)",
            to.len() * width,
            src.len(),
        ),
        ("scatter_scaled scale (one per to)", to.len(), scale.len()),
    ] {
        if expected != found {
            return Err(Error::BadLength {
                what,
                expected,
                found,
            });
        }
    }
    if width == 0 || to.iter().any(|&r| r >= dst.len() / width) {
        return Err(Error::BadShape {
            what: "scatter_scaled",
            detail: "need 0 < width and every destination row inside dst",
        });
    }
    for ((row, &to), &w) in src.chunks_exact(width).zip(to).zip(scale) {
        scale_into(&mut dst[to * width..][..width], row, w);
    }
    Ok(())
}

multiversion! {
    /// `out = x * w`.
    fn scale_into(out: &mut [f32], x: &[f32], w: f32) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = v * w;
        }
    }
}

/// `out[i] = slots[i*k] + slots[i*k + 1] + ... + slots[i*k + k - 1]` for every
/// `width`-wide row `i` of `out`, summed in slot order: the `k` consecutive rows of each
/// group of `slots` added up.
pub fn sum_slots(slots: &[f32], k: usize, width: usize, out: &mut [f32]) -> Result<(), Error> {
    if k == 0 || width == 0 || !out.len().is_multiple_of(width) {
        return Err(Error::BadShape {
            what: "sum_slots",
            detail: "need k, width > 0 and whole rows of width in out",
        });
    }
    let expected = out.len().checked_mul(k).ok_or(Error::BadShape {
        what: "sum_slots",
        detail: "rows x k x width overflows",
    })?;
    if slots.len() != expected {
        return Err(Error::BadLength {
            what: "sum_slots slots (k rows per out row)",
            expected,
            found: slots.len(),
        });
    }
    for (o, group) in out
        .chunks_exact_mut(width)
        .zip(slots.chunks_exact(k * width))
    {
        o.copy_from_slice(&group[..width]);
        for slot in group.chunks_exact(width).skip(1) {
            add_body(o, slot);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
