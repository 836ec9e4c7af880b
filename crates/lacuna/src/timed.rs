//! A denoiser that times the encoder's passes (DiffusionGemma's prompt and commit passes),
//! so that a generation reports them apart from its denoising steps.

use std::cell::RefCell;
use std::time::Instant;

use lacuna_sampler::{CanvasDenoiser, Denoiser, Pass};

/// `inner`, with each [`CanvasDenoiser::encode`] call's wall-clock milliseconds pushed onto
/// `encode_ms`; everything else is passed through.
pub(crate) struct Timed<'a, D: ?Sized> {
    pub(crate) inner: &'a mut D,
    pub(crate) encode_ms: &'a RefCell<Vec<f64>>,
}

impl<D: Denoiser + ?Sized> Denoiser for Timed<'_, D> {
    type Error = D::Error;

    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn supports_cache(&self) -> bool {
        self.inner.supports_cache()
    }

    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), D::Error> {
        self.inner.forward(canvas, pass, rows, out)
    }
}

impl<D: CanvasDenoiser + ?Sized> CanvasDenoiser for Timed<'_, D> {
    fn encode(&mut self, tokens: &[u32]) -> Result<(), D::Error> {
        let t = Instant::now();
        let done = self.inner.encode(tokens);
        self.encode_ms
            .borrow_mut()
            .push(t.elapsed().as_secs_f64() * 1e3);
        done
    }

    fn decode(
        &mut self,
        canvas: &[u32],
        self_cond: bool,
        logits: &mut [f32],
    ) -> Result<(), D::Error> {
        self.inner.decode(canvas, self_cond, logits)
    }

    fn canvas_length(&self) -> usize {
        self.inner.canvas_length()
    }
}
