//! The denoising loop of diffusion language models and its remasking strategies (LLaDA,
//! Dream, Fast-dLLM parallel decoding), written against a small [`Denoiser`] trait so that it
//! knows no model.
//!
//! Each sampler is a transcription of the model's official sampling code (not of llama.cpp's
//! diffusion example, which deviates from it): [`llada::generate`] follows ML-GSAI/LLaDA
//! `generate.py`, [`dream::generate`] follows Dream's `generation_utils.py`,
//! [`llada2::generate`] follows LLaDA2's `modeling_llada2_moe.py` (block by block, confidence
//! threshold, LLaDA2.1's editing as an option), [`rnd1::generate`] follows RND1's
//! `diffusion_sample` (entropy-ordered, whole canvas), and the first two offer
//! Fast-dLLM's confidence-threshold parallel decoding as an opt-in [`ParallelConfig`]. Every
//! config holds the shared [`Common`] settings (length, mask and end tokens); Dream, LLaDA2
//! and RND1 filter their logits with [`sampling`]'s one [`Filters`]. With
//! [`Common::logprobs`] set, each committed token's log-probability and alternatives are
//! recorded from the step that committed it ([`logprob`]). All
//! randomness comes from one [`UniformSource`] in a documented order, so a seed fixes the
//! output. `tools/sampler-ref` holds a numpy transcription of the official code that wrote the
//! committed cases in `tests/data`.
//!
//! ```
//! use lacuna_sampler::{Common, Denoiser, LladaConfig, Pass, Xoshiro256PlusPlus, llada};
//!
//! /// A stand-in model: every row prefers token 7.
//! struct Toy;
//! impl Denoiser for Toy {
//!     type Error = std::convert::Infallible;
//!     fn vocab_size(&self) -> usize { 10 }
//!     fn forward(&mut self, _canvas: &[u32], _pass: &Pass, rows: &[usize], out: &mut [f32])
//!         -> Result<(), Self::Error> {
//!         for row in out.chunks_exact_mut(10) {
//!             row.fill(0.0);
//!             row[7] = 3.0;
//!         }
//!         assert_eq!(out.len(), rows.len() * 10);
//!         Ok(())
//!     }
//! }
//!
//! let config = LladaConfig {
//!     common: Common {
//!         gen_length: 8,
//!         mask_id: Some(9),
//!         eos_ids: vec![2],
//!         ..Common::default()
//!     },
//!     block_length: 4,
//!     steps: 4,
//!     ..LladaConfig::default()
//! };
//! let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
//! let out = llada::generate(&mut Toy, &[1, 2, 3], &config, &mut rng, |step| {
//!     // Stream the canvas: step.canvas, step.committed, step.confidences...
//!     assert!(step.step < step.total_steps);
//! })?;
//! assert_eq!(out.tokens, vec![7; 8]);
//! # Ok::<(), lacuna_sampler::Error<std::convert::Infallible>>(())
//! ```

pub mod cache;
mod canvas;
pub mod common;
pub mod constraint;
pub mod denoiser;
pub mod diffusion_gemma;
pub mod dream;
pub mod error;
pub mod likelihood;
pub mod llada;
pub mod llada2;
pub mod logprob;
pub mod math;
pub mod names;
pub mod output;
pub mod parallel;
pub mod rnd1;
pub mod rng;
mod row_pool;
pub mod sampling;
pub mod schedule;
pub mod select;
#[cfg(test)]
mod testing;

pub use cache::CachePolicy;
pub use common::Common;
pub use constraint::{Constraint, ConstraintRef, ConstraintState};
pub use denoiser::{CanvasDenoiser, Denoiser, Pass};
pub use diffusion_gemma::EntropyBoundConfig;
pub use dream::{DreamAlg, DreamConfig};
pub use error::{ConfigError, Error};
pub use llada::{LladaConfig, Remasking};
pub use llada2::{Editing, Llada2Config};
pub use logprob::{TokenLogprob, TopLogprob};
pub use names::UnknownName;
pub use output::{Finish, Generation, Stats, StepView};
pub use parallel::{ParallelConfig, ParallelRule};
pub use rnd1::Rnd1Config;
pub use rng::{ReplayDraws, UniformSource, Xoshiro256PlusPlus};
pub use sampling::{FilterOrder, Filters, Logit, Ties, TopK};
