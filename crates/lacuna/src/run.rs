//! Running a [`Prepared`] request through its sampler over any denoiser: the one loop both
//! [`Engine`](crate::Engine) (the model itself) and [`SharedEngine`](crate::SharedEngine)
//! (the model taken in turns) use.

use std::cell::RefCell;
use std::time::Instant;

use lacuna_sampler::{
    CanvasDenoiser, StepView, Xoshiro256PlusPlus, diffusion_gemma, dream, llada, llada2, rnd1,
};
use lacuna_tokenizer::Tokenizer;

use crate::Result;
use crate::prepare::{Prepared, SamplerConfig};
use crate::request::{Output, Timings};
use crate::timed::Timed;

/// Generates `prepared` with `denoiser`, calling `on_step` after every step; `start` is when
/// the request arrived (for the total time). Sampler errors convert through `E`.
pub(crate) fn run<D, F>(
    denoiser: &mut D,
    prepared: &Prepared,
    tokenizer: &Tokenizer,
    mask_id: u32,
    start: Instant,
    on_step: F,
) -> Result<Output>
where
    D: CanvasDenoiser,
    crate::Error: From<lacuna_sampler::Error<D::Error>>,
    F: FnMut(&StepView<'_>),
{
    match &prepared.search {
        Some(search) => crate::infill::search(
            denoiser, prepared, search, tokenizer, mask_id, start, on_step,
        ),
        None => run_one(denoiser, prepared, tokenizer, mask_id, start, on_step),
    }
}

/// [`run`] for one generation (not a search).
pub(crate) fn run_one<D, F>(
    denoiser: &mut D,
    prepared: &Prepared,
    tokenizer: &Tokenizer,
    mask_id: u32,
    start: Instant,
    mut on_step: F,
) -> Result<Output>
where
    D: CanvasDenoiser,
    crate::Error: From<lacuna_sampler::Error<D::Error>>,
    F: FnMut(&StepView<'_>),
{
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(prepared.seed);
    let mut step_ms = Vec::with_capacity(prepared.steps);
    let encode_ms = RefCell::new(Vec::new());
    let mut denoiser = Timed {
        inner: denoiser,
        encode_ms: &encode_ms,
    };
    let denoiser = &mut denoiser;
    let mut last = Instant::now();
    // The encoder passes since the last step are not the step's.
    let mut encoded = 0;
    let mut step = |view: &StepView<'_>| {
        let encoding: f64 = {
            let passes = encode_ms.borrow();
            let since = passes[encoded..].iter().sum();
            encoded = passes.len();
            since
        };
        step_ms.push((last.elapsed().as_secs_f64() * 1e3 - encoding).max(0.0));
        on_step(view);
        last = Instant::now();
    };
    let prompt = &prepared.prompt;
    let generation = match &prepared.sampler {
        SamplerConfig::Llada(c) => llada::generate(denoiser, prompt, c, &mut rng, &mut step),
        SamplerConfig::Dream(c) => dream::generate(denoiser, prompt, c, &mut rng, &mut step),
        SamplerConfig::Llada2(c) => llada2::generate(denoiser, prompt, c, &mut rng, &mut step),
        SamplerConfig::Rnd1(c) => rnd1::generate(denoiser, prompt, c, &mut rng, &mut step),
        SamplerConfig::DiffusionGemma(c) => {
            diffusion_gemma::generate(denoiser, prompt, c, &mut rng, &mut step)
        }
    }?;
    let text = if prepared.constrained() {
        tokenizer.concat(&generation.tokens)?
    } else {
        tokenizer.decode(&generation.tokens)?
    };
    Ok(Output {
        prompt_tokens: prompt.clone(),
        tokens: generation.tokens,
        text,
        canvas: generation.canvas,
        stats: generation.stats,
        logprobs: generation.logprobs,
        infill: None,
        mask_id,
        timings: Timings {
            prepare_s: prepared.prepare_s,
            step_ms,
            encode_ms: encode_ms.into_inner(),
            total_s: start.elapsed().as_secs_f64(),
        },
    })
}
