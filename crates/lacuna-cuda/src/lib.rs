//! CUDA kernels, compiled at run time with NVRTC through `cudarc`, so the workspace builds
//! and tests on machines with no GPU and no CUDA toolkit: both libraries are loaded
//! dynamically, and probed ([`library`]) before any other call so that a missing one is a
//! typed [`Error`], never a panic.
//!
//! The only crate that names `cudarc`. Knows nothing of models: it offers device buffers,
//! weights repacked for the tensor cores ([`repack`]), and the operations a graph needs
//! ([`Gpu`]).

mod error;
mod gpu;
mod info;
pub mod kernels;
pub mod library;
pub mod nvrtc;
pub mod repack;

pub use error::{Error, Result};
pub use gpu::{AttnArgs, DevBuf, DevView, DevWeight, Gpu};
pub use info::{GpuInfo, device_count};
