//! The denoising loop of diffusion language models and its remasking strategies (LLaDA,
//! Dream, Fast-dLLM parallel decoding), written against a small [`Denoiser`] trait so that it
//! knows no model.
//!
//! Each sampler is a transcription of the model's official sampling code (not of llama.cpp's
//! diffusion example, which deviates from it): [`llada::generate`] follows ML-GSAI/LLaDA
//! `generate.py`, [`dream::generate`] follows Dream's `generation_utils.py`, and both offer
//! Fast-dLLM's confidence-threshold parallel decoding as an opt-in [`ParallelConfig`]. All
//! randomness comes from one [`UniformSource`] in a documented order, so a seed fixes the
//! output. `tools/sampler-ref` holds a numpy transcription of the official code that wrote the
//! committed cases in `tests/data`.

pub mod denoiser;
pub mod dream;
pub mod error;
pub mod llada;
pub mod math;
pub mod output;
pub mod parallel;
pub mod rng;
pub mod schedule;
pub mod select;

pub use denoiser::Denoiser;
pub use dream::{DreamAlg, DreamConfig};
pub use error::{ConfigError, Error};
pub use llada::{LladaConfig, Remasking};
pub use output::{Finish, Generation, Stats, StepView};
pub use parallel::{ParallelConfig, ParallelRule};
pub use rng::{ReplayDraws, UniformSource, Xoshiro256PlusPlus};
