//! Model graphs for the five GGUF architectures `llada` (LLaDA), `dream` (Dream), `llada-moe`
//! (LLaDA-MoE), `llada2` (LLaDA2.0/2.1) and `rnd1` (RND1): hyperparameters from metadata,
//! weights from the mapped file, and a forward pass over a whole canvas on a compute
//! [`Backend`].
//!
//! Two backends implement it: [`CpuBackend`] (lacuna-cpu's kernels, the reference) and
//! [`CudaBackend`] (lacuna-cuda). The CUDA backend is compiled everywhere and its host side is
//! tested against the CPU backend; on an H200 it matched the CPU backend (whole forwards,
//! batched passes), though far from the GPU's speed. [`AnyModel`] holds a
//! model on whichever [`Device`] was chosen.
//!
//! ```no_run
//! use lacuna_models::Model;
//! let mut model = Model::open("llada-8b-q4_k_m.gguf")?;
//! let canvas = [1u32, 2, 3, 126336, 126336];
//! let rows = [3, 4]; // only the masked positions
//! let mut logits = vec![0.0; rows.len() * model.vocab_size()];
//! model.forward(&canvas, &rows, &mut logits)?;
//! # Ok::<(), lacuna_models::Error>(())
//! ```

mod arch;
pub mod backend;
mod config;
mod cpu;
mod cuda;
mod device;
mod error;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
mod model;
pub mod preset;
mod quantize;
mod weights;

pub use arch::{Arch, RopeStyle};
pub use backend::{Backend, Buffers, PlannedMatrix, WeightPlan, Weights};
pub use config::{Config, EbDefaults, Gating, GemmaConfig, GemmaLayerShape, MoeConfig};
pub use cpu::{CpuBackend, WeightLayout};
pub use cuda::CudaBackend;
pub use device::{AnyModel, Device};
pub use error::{Error, Result};
pub use model::{BatchPass, Bound, DEFAULT_BLOCK, KvCache, Model, PartTimes, PassSpec};
pub use preset::Preset;
pub use quantize::quantize;
