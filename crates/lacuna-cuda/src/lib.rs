//! CUDA kernels, compiled at run time with NVRTC through `cudarc`, so the workspace builds
//! and tests on machines with no GPU and no CUDA toolkit.
//!
//! The only crate that names `cudarc`. Knows nothing of models.
