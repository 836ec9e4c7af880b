//! Lacuna: a local inference engine for diffusion language models.
//!
//! This is the crate programs embed: it re-exports the lower layers and offers the
//! high-level `Engine` API (load a GGUF, generate with a per-step view of the canvas).

pub use lacuna_gguf as gguf;
pub use lacuna_quant as quant;
