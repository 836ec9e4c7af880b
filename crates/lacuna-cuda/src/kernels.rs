//! The CUDA C++ kernel sources, compiled by NVRTC at first use ([`crate::nvrtc`]), and the
//! entry points each one defines.

/// One kernel source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// The file's stem, for logs, errors and the cache.
    pub name: &'static str,
    body: &'static str,
    /// The `extern "C"` kernels it defines.
    pub entries: &'static [&'static str],
    /// Whether ptxas's report must show no register spills (the GEMM and attention
    /// kernels, whose speed depends on it).
    pub no_spills: bool,
}

const PRELUDE: &str = include_str!("kernels/prelude.cuh");

impl Source {
    /// The text NVRTC compiles: the shared prelude, then the file.
    pub fn text(&self) -> String {
        format!("{PRELUDE}\n{}", self.body)
    }

    /// A source of `body` under `name`, defining no listed entry (for tests of the
    /// compiler path).
    #[doc(hidden)]
    pub fn for_test(name: &'static str, body: &'static str) -> Source {
        Source {
            name,
            body,
            entries: &[],
            no_spills: false,
        }
    }
}

/// Activation quantization to the weight type's partner format.
pub const QUANTIZE: Source = Source {
    name: "quantize",
    body: include_str!("kernels/quantize.cu"),
    entries: &["quantize_q8k", "quantize_q8_0", "round_f16", "round_bf16"],
    no_spills: false,
};

/// The int8 tensor-core GEMM over repacked quantized weights.
pub const GEMM_Q: Source = Source {
    name: "gemm_q",
    body: include_str!("kernels/gemm_q.cu"),
    entries: &[
        "gemm_k16",
        "gemm_k32",
        "gemm_k32_mins",
        "gemm_b32",
        "sum_splits",
    ],
    no_spills: true,
};

/// The F16/BF16 tensor-core GEMM and the F32 GEMM.
pub const GEMM_F: Source = Source {
    name: "gemm_f",
    body: include_str!("kernels/gemm_f.cu"),
    entries: &["gemm_f16", "gemm_bf16", "gemm_f32"],
    no_spills: true,
};

/// Flash-style attention with subset queries, cached keys and block-causal masks.
pub const ATTENTION: Source = Source {
    name: "attention",
    body: include_str!("kernels/attention.cu"),
    entries: &["attention"],
    no_spills: true,
};

/// Norms, RoPE, SwiGLU, adds, row copies, MoE scatter, embedding rows.
pub const ELEMENTWISE: Source = Source {
    name: "elementwise",
    body: include_str!("kernels/elementwise.cu"),
    entries: &[
        "rms_norm",
        "rope",
        "swiglu",
        "add",
        "add_bias",
        "copy_rows",
        "scatter_scaled",
        "sum_slots",
        "get_rows_k",
        "get_rows_b32",
        "get_rows_f16",
        "get_rows_f32",
    ],
    no_spills: false,
};

/// Every source.
pub const ALL: [Source; 5] = [QUANTIZE, GEMM_Q, GEMM_F, ATTENTION, ELEMENTWISE];

/// The compute capabilities CI compiles every source for (Ampere, Ada, Hopper).
pub const CI_ARCHES: [u32; 3] = [80, 89, 90];
