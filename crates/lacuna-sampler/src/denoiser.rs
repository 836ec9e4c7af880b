//! The one thing a sampler needs from a model: logits for some rows of a canvas, computed
//! either from scratch ([`Pass::Full`]) or, for models that keep a per-layer key/value cache
//! between steps, by refreshing that cache ([`Pass::Fill`]) and then recomputing only a window
//! of positions against it ([`Pass::Window`]).

use std::ops::Range;

use crate::error::Error;
use crate::output::Stats;

/// What one denoiser call computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// Every position through every layer; no cache is read or written (the official
    /// samplers, and every step without a cache policy).
    Full,
    /// Every position through every layer, exactly as [`Pass::Full`] (same logits, bit for
    /// bit), and each layer's keys and values of every position are kept for later
    /// [`Pass::Window`] calls on a canvas of the same length.
    Fill,
    /// Only the positions in this range go through the layers. Their keys and values are
    /// computed fresh and written into the cache; every other position's keys and values are
    /// read from the cache as the last [`Pass::Fill`] (or window covering it) left them,
    /// which is stale wherever the canvas changed since: that staleness is the approximation
    /// of Fast-dLLM's prefix and dual caches. Requested rows must lie in the range.
    Window(Range<usize>),
}

/// A mask predictor: given the whole canvas, the logits of some of its output rows.
///
/// The model runs over the whole canvas (every position attends to every other), but the
/// LM head is expensive (vocab × hidden per row), so the sampler asks only for the rows it
/// uses: the still-masked positions of the current block for LLaDA, the rows *before* the
/// masked positions for Dream (whose logits are shifted: position `i` is predicted by row
/// `i - 1`, and position 0 by row 0).
///
/// One method computes: [`Denoiser::forward`]. A denoiser without a key/value cache computes
/// every [`Pass`] as a full one (samplers never ask it for another: they check
/// [`Denoiser::supports_cache`] first).
pub trait Denoiser {
    /// The model's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The number of logits per row.
    fn vocab_size(&self) -> usize;

    /// Writes the logits of canvas rows `rows` (ascending, distinct) into `out`, row-major,
    /// `rows.len() × vocab_size()` values, computing them as `pass` says.
    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error>;

    /// Whether [`Denoiser::forward`] keeps a key/value cache, so that [`Pass::Window`] costs
    /// less than a full pass. Samplers refuse a cache policy for a denoiser without one.
    fn supports_cache(&self) -> bool {
        false
    }

    /// [`Denoiser::forward`] with [`Pass::Full`]: every position through every layer.
    fn logits(
        &mut self,
        canvas: &[u32],
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        self.forward(canvas, &Pass::Full, rows, out)
    }
}

impl<D: Denoiser + ?Sized> Denoiser for &mut D {
    type Error = D::Error;
    fn vocab_size(&self) -> usize {
        (**self).vocab_size()
    }
    fn supports_cache(&self) -> bool {
        (**self).supports_cache()
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        (**self).forward(canvas, pass, rows, out)
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
    fetch_pass(denoiser, canvas, &Pass::Full, rows, out, stats)
}

/// [`fetch_logits`] for any [`Pass`]: a full pass goes through [`Denoiser::logits`] (so the
/// samplers without a cache call exactly what they always did), the others through
/// [`Denoiser::forward`]; counts the positions the pass recomputes.
pub(crate) fn fetch_pass<D: Denoiser>(
    denoiser: &mut D,
    canvas: &[u32],
    pass: &Pass,
    rows: &[usize],
    out: &mut Vec<f32>,
    stats: &mut Stats,
) -> Result<(), Error<D::Error>> {
    let vocab = denoiser.vocab_size();
    out.clear();
    out.resize(rows.len() * vocab, 0.0);
    let computed = match pass {
        Pass::Full => {
            denoiser
                .logits(canvas, rows, out)
                .map_err(Error::Denoiser)?;
            canvas.len()
        }
        Pass::Fill => {
            denoiser
                .forward(canvas, pass, rows, out)
                .map_err(Error::Denoiser)?;
            stats.cache_fills += 1;
            canvas.len()
        }
        Pass::Window(w) => {
            denoiser
                .forward(canvas, pass, rows, out)
                .map_err(Error::Denoiser)?;
            w.len()
        }
    };
    stats.denoiser_calls += 1;
    stats.logit_rows += rows.len();
    stats.positions_computed += computed;
    check_rows(out, rows, vocab)
}

/// Rejects NaN, +inf and rows of only -inf (-inf alone is a legitimate "never this token").
pub(crate) fn check_rows<E>(logits: &[f32], rows: &[usize], vocab: usize) -> Result<(), Error<E>> {
    let bad = |v: f32| v.is_nan() || v == f32::INFINITY;
    for (r, row) in logits.chunks_exact(vocab).enumerate() {
        // Branch-free scans, which vectorize (an early exit per element does not); the
        // offending token is looked for only in a row that has one.
        let (any_bad, any_finite) = row
            .iter()
            .fold((false, false), |(b, f), &v| (b | bad(v), f | v.is_finite()));
        if any_bad && let Some((token, &value)) = row.iter().enumerate().find(|(_, v)| bad(**v)) {
            return Err(Error::InvalidLogit {
                row: rows[r],
                token,
                value,
            });
        }
        if !any_finite {
            return Err(Error::NoFiniteLogit { row: rows[r] });
        }
    }
    Ok(())
}

/// A uniform-state encoder-decoder denoiser (DiffusionGemma): a causal encoder extends the
/// model's context with committed tokens, and a decoder predicts every position of a canvas
/// of noise over that context, conditioned on its previous step's logits.
pub trait CanvasDenoiser: Denoiser {
    /// Appends `tokens` to the context (the prompt, then each finished canvas).
    fn encode(&mut self, tokens: &[u32]) -> Result<(), Self::Error>;

    /// The logits of every position of `canvas` over the context into `logits`
    /// (`canvas.len() × vocab_size()`). With `self_cond`, `logits` holds the previous step's
    /// processed logits on entry, the self-conditioning signal, read before they are
    /// replaced; without (a canvas's first step), its contents are ignored.
    fn decode(
        &mut self,
        canvas: &[u32],
        self_cond: bool,
        logits: &mut [f32],
    ) -> Result<(), Self::Error>;

    /// Tokens per canvas (the model's `diffusion.canvas_length`).
    fn canvas_length(&self) -> usize;
}
