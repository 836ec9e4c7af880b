//! The architectures Lacuna runs, as `general.architecture` names them, and what differs
//! between their graphs.

use crate::{Error, Result};

/// A model architecture (the GGUF `general.architecture` value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `llada`: LLaDA-8B Base/Instruct, LLaDA-1.5, iLLaDA (LLaMA-like, normal RoPE).
    Llada,
    /// `dream`: Dream-7B, Dream-Coder, DiffuCoder (Qwen2-like: QKV biases, NeoX RoPE, GQA).
    Dream,
    /// `llada-moe`: LLaDA-MoE-7B-A1B (Q/K RMS norms, NeoX RoPE, softmax-gated experts).
    LladaMoe,
    /// `rnd1`: RND1-30B (Qwen3-MoE layers: Q/K RMS norms, NeoX RoPE, 128 softmax-gated
    /// experts with renormalised top-k weights), bidirectional.
    Rnd1,
    /// `llada2`: LLaDA2.0/2.1-mini and -flash (the BailingMoE-v2 backbone: fused QKV, Q/K
    /// norms, partial NeoX RoPE, sigmoid-routed experts with selection bias and group-limited
    /// top-k, a shared expert, leading dense layers), attention block-causal.
    Llada2,
    /// `diffusion-gemma`: Google's DiffusionGemma (26B-A4B), the Gemma 4 backbone as a causal
    /// encoder of the prompt and a bidirectional decoder of a 256-token canvas over its K/V
    /// (sliding-window and global layers, a dense MLP beside 128 experts, self-conditioning),
    /// denoising from uniform noise rather than masks.
    DiffusionGemma,
}

/// How RoPE pairs the elements of a head (ggml's rope modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// `LLAMA_ROPE_TYPE_NORM`: adjacent pairs `(2i, 2i + 1)`.
    Normal,
    /// `LLAMA_ROPE_TYPE_NEOX`: pairs `(i, i + n_rot / 2)`.
    Neox,
}

impl Arch {
    /// Every supported architecture.
    pub const ALL: [Arch; 6] = [
        Arch::Llada,
        Arch::Dream,
        Arch::LladaMoe,
        Arch::Rnd1,
        Arch::Llada2,
        Arch::DiffusionGemma,
    ];

    /// The masked-diffusion architectures (every one but DiffusionGemma): the ones the
    /// samplers' cached, windowed and block-causal passes apply to.
    pub const MASKED: [Arch; 5] = [
        Arch::Llada,
        Arch::Dream,
        Arch::LladaMoe,
        Arch::Rnd1,
        Arch::Llada2,
    ];

    /// The architecture named `name`, or [`Error::UnknownArchitecture`].
    pub fn from_name(name: &str) -> Result<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| Error::UnknownArchitecture {
                name: name.to_string(),
            })
    }

    /// The names of [`Arch::ALL`], comma-separated (for error messages).
    pub fn names() -> String {
        Arch::ALL.map(Arch::name).join(", ")
    }

    /// The GGUF name, which also prefixes the architecture's metadata keys.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::Llada => "llada",
            Arch::Dream => "dream",
            Arch::LladaMoe => "llada-moe",
            Arch::Rnd1 => "rnd1",
            Arch::Llada2 => "llada2",
            Arch::DiffusionGemma => "diffusion-gemma",
        }
    }

    /// The RoPE mode llama.cpp uses for the architecture (`llama_model_rope_type`).
    pub const fn rope_style(self) -> RopeStyle {
        match self {
            Arch::Llada => RopeStyle::Normal,
            Arch::Dream | Arch::LladaMoe | Arch::Rnd1 | Arch::Llada2 | Arch::DiffusionGemma => {
                RopeStyle::Neox
            }
        }
    }

    /// Whether the feed-forward block is a mixture of experts.
    pub const fn is_moe(self) -> bool {
        matches!(
            self,
            Arch::LladaMoe | Arch::Rnd1 | Arch::Llada2 | Arch::DiffusionGemma
        )
    }

    /// Whether the attention has per-head RMS norms on Q and K (`attn_q_norm`, `attn_k_norm`).
    pub const fn has_qk_norm(self) -> bool {
        matches!(
            self,
            Arch::LladaMoe | Arch::Rnd1 | Arch::Llada2 | Arch::DiffusionGemma
        )
    }

    /// Whether the official sampler decodes in blocks (LLaDA, LLaDA-MoE, LLaDA2); Dream's and
    /// RND1's denoise the whole canvas at once.
    pub const fn block_wise(self) -> bool {
        matches!(self, Arch::Llada | Arch::LladaMoe | Arch::Llada2)
    }

    /// Whether Q, K and V come from one fused projection (`attn_qkv`).
    pub const fn fused_qkv(self) -> bool {
        matches!(self, Arch::Llada2)
    }

    /// Whether attention is block-causal (each block sees itself and the blocks before
    /// it), the mask LLaDA2's generate code builds; the others are bidirectional.
    pub const fn block_causal(self) -> bool {
        matches!(self, Arch::Llada2)
    }

    /// Whether the model's logits are shifted by one (row `i - 1` predicts token `i`), the
    /// default when `diffusion.shift_logits` is absent: true for Dream and RND1 (whose
    /// llama.cpp support shifts, as `llama-diffusion-cli` assumes for it).
    pub const fn default_shift_logits(self) -> bool {
        matches!(self, Arch::Dream | Arch::Rnd1)
    }

    /// Whether the model is an encoder-decoder over uniform noise (DiffusionGemma): it has
    /// no mask token to fill and its own sampler; the masked-diffusion samplers, caches and
    /// infilling do not apply.
    pub const fn uniform_state(self) -> bool {
        matches!(self, Arch::DiffusionGemma)
    }
}

impl std::str::FromStr for Arch {
    type Err = Error;

    fn from_str(s: &str) -> Result<Arch> {
        Arch::from_name(s)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_architecture_lists_every_supported_one() {
        let e = "gpt9".parse::<Arch>().unwrap_err().to_string();
        for a in Arch::ALL {
            assert!(e.contains(a.name()), "{e} lacks {a}");
            assert_eq!(a.name().parse::<Arch>().unwrap(), a);
        }
    }
}
