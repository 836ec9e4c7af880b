//! The one thing a sampler needs from a model: logits for some rows of a canvas.

use crate::error::Error;
use crate::output::Stats;

/// A mask predictor: given the whole canvas, the logits of some of its output rows.
///
/// The model runs over the whole canvas (every position attends to every other), but the
/// LM head is expensive (vocab × hidden per row), so the sampler asks only for the rows it
/// uses: the still-masked positions of the current block for LLaDA, the rows *before* the
/// masked positions for Dream (whose logits are shifted: position `i` is predicted by row
/// `i - 1`, and position 0 by row 0).
pub trait Denoiser {
    /// The model's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The number of logits per row.
    fn vocab_size(&self) -> usize;

    /// Writes the logits of canvas rows `rows` (ascending, distinct) into `out`, row-major,
    /// `rows.len() × vocab_size()` values.
    fn logits(
        &mut self,
        canvas: &[u32],
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error>;
}

impl<D: Denoiser + ?Sized> Denoiser for &mut D {
    type Error = D::Error;
    fn vocab_size(&self) -> usize {
        (**self).vocab_size()
    }
    fn logits(
        &mut self,
        canvas: &[u32],
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        (**self).logits(canvas, rows, out)
    }
}

/// Asks `denoiser` for `rows`, resizing `out`, counts the call, and rejects bad rows (see
/// [`check_rows`]).
pub(crate) fn fetch_logits<D: Denoiser>(
    denoiser: &mut D,
    canvas: &[u32],
    rows: &[usize],
    out: &mut Vec<f32>,
    stats: &mut Stats,
) -> Result<(), Error<D::Error>> {
    let vocab = denoiser.vocab_size();
    out.clear();
    out.resize(rows.len() * vocab, 0.0);
    denoiser
        .logits(canvas, rows, out)
        .map_err(Error::Denoiser)?;
    stats.denoiser_calls += 1;
    stats.logit_rows += rows.len();
    check_rows(out, rows, vocab)
}

/// Rejects NaN, +inf and rows of only -inf (-inf alone is a legitimate "never this token").
pub(crate) fn check_rows<E>(logits: &[f32], rows: &[usize], vocab: usize) -> Result<(), Error<E>> {
    for (r, row) in logits.chunks_exact(vocab).enumerate() {
        let mut any_finite = false;
        for (token, &v) in row.iter().enumerate() {
            if v.is_nan() || v == f32::INFINITY {
                return Err(Error::InvalidLogit {
                    row: rows[r],
                    token,
                    value: v,
                });
            }
            any_finite |= v.is_finite();
        }
        if !any_finite {
            return Err(Error::NoFiniteLogit { row: rows[r] });
        }
    }
    Ok(())
}
