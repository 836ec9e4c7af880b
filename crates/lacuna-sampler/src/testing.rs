//! A denoiser for the samplers' unit tests: each row computed by a function of the canvas,
//! the row and the token, every request recorded, failing on demand.

use crate::denoiser::{Denoiser, Pass};

/// The error [`FnModel`] fails with.
#[derive(Debug, thiserror::Error)]
#[error("boom")]
pub(crate) struct Boom;

/// A denoiser computing each row with `f(canvas, row, token)` and recording requests.
pub(crate) struct FnModel<F> {
    pub(crate) vocab: usize,
    pub(crate) f: F,
    pub(crate) requests: Vec<(Vec<u32>, Vec<usize>)>,
    /// Fail every call with [`Boom`].
    pub(crate) fail: bool,
}

impl<F: Fn(&[u32], usize, usize) -> f32> Denoiser for FnModel<F> {
    type Error = Boom;
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Boom> {
        if self.fail {
            return Err(Boom);
        }
        self.requests.push((canvas.to_vec(), rows.to_vec()));
        for (i, &r) in rows.iter().enumerate() {
            for t in 0..self.vocab {
                out[i * self.vocab + t] = (self.f)(canvas, r, t);
            }
        }
        Ok(())
    }
}

/// An [`FnModel`] of `vocab` tokens that does not fail.
pub(crate) fn model<F: Fn(&[u32], usize, usize) -> f32>(vocab: usize, f: F) -> FnModel<F> {
    FnModel {
        vocab,
        f,
        requests: Vec::new(),
        fail: false,
    }
}
