//! Lacuna: a local inference engine for diffusion language models over GGUF files, for five
//! architectures: `llada` (LLaDA), `dream` (Dream), `llada-moe` (LLaDA-MoE), `llada2`
//! (LLaDA2.0/2.1) and `rnd1` (RND1).
//!
//! This is the crate programs embed. [`Engine::load`] maps a GGUF file and prepares the
//! model, its tokenizer and chat template; [`Engine::generate`] runs the model family's
//! official sampler (LLaDA's for `llada` and `llada-moe`, Dream's for `dream`, LLaDA2's
//! threshold sampler for `llada2`, RND1's entropy-ordered one for `rnd1`) and calls back after
//! every denoising step with a [`StepView`] of the canvas, for streaming. [`SharedEngine`]
//! interleaves several generations step by step (the server's scheduler).
//!
//! Models run on the CPU (kernels for the x86-64 and aarch64 instruction sets, chosen at run
//! time) or on a CUDA GPU ([`EngineOptions::device`]). The CUDA backend is always compiled
//! (NVRTC and the driver are loaded at run time, no toolkit needed to build) and its host side
//! is tested against the CPU backend; on an H200 it gave the CPU backend's results, though
//! far from the GPU's speed.
//!
//! ```no_run
//! use lacuna::{Engine, EngineOptions, GenerateRequest, Prompt};
//! let mut engine = Engine::load("model.gguf", &EngineOptions { threads: Some(4), ..Default::default() })?;
//! let mut request = GenerateRequest::new(Prompt::user("Write a haiku about rain."));
//! request.gen_length = 64;
//! request.steps = 64;
//! request.block_length = Some(32);
//! let out = engine.generate(&request, |view| {
//!     let masked = view.canvas.iter().filter(|&&t| t == 126336).count();
//!     eprintln!("step {}: {masked} masks left", view.step + 1);
//! })?;
//! println!("{} ({:.1} tokens/s)", out.text, out.tokens_per_s());
//! # Ok::<(), lacuna::Error>(())
//! ```
//!
//! Cargo features (all off by default): `demo` embeds the three tiny demo models
//! (`Engine::demo`, `Demo`; about 15 MB, from a checkout of the repository), `fixture` exports
//! the random-weight model fixtures (`lacuna::models::fixture`) that tests and benchmarks use.

pub mod batch;
#[cfg(feature = "demo")]
mod demo;
mod engine;
mod error;
pub mod eval;
pub mod infill;
pub mod likelihood;
mod prepare;
mod request;
mod run;
pub mod settings;
mod shared;
mod timed;
pub mod tools;

pub use batch::{BatchLimits, Histogram};
#[cfg(feature = "demo")]
pub use demo::{
    DEMO_GGUF, DEMO_LAYERS, DEMO_PROMPT, DEMO_TASKS_GGUF, DEMO_TASKS_LLADA2_GGUF, Demo, UnknownDemo,
};
pub use engine::{Engine, EngineOptions};
pub use error::{Error, Result};
pub use prepare::Prepared;
pub use request::{GenerateRequest, Output, Prompt, Timings, median};
pub use settings::{Settings, SettingsError};
pub use shared::{CancelToken, ModelInfo, SharedEngine, SharedStats};

pub use lacuna_cpu as cpu;
pub use lacuna_cuda as cuda;
pub use lacuna_gguf as gguf;
pub use lacuna_models as models;
pub use lacuna_quant as quant;
pub use lacuna_sampler as sampler;
pub use lacuna_sampler::{
    CachePolicy, DreamAlg, Editing, Finish, ParallelConfig, ParallelRule, Remasking, Stats,
    StepView, TokenLogprob, TopLogprob,
};
pub use lacuna_structured as structured;
pub use lacuna_tokenizer as tokenizer;
pub use lacuna_tokenizer::ChatMessage;
