//! CPU kernels for the diffusion-LM workload: quantized GEMM over a whole canvas,
//! bidirectional attention, RMSNorm, RoPE, SwiGLU and the sampler's vocabulary-row math.
//!
//! The only crate with `#[target_feature]` code. The instruction path (AMX, AVX-512 VNNI,
//! AVX-VNNI, AVX2, scalar) is detected once at run time; every fast path is tested against
//! the scalar references of [`lacuna_quant`]. Knows nothing of models.
