//! llama-quantize's presets (`llama_ftype`) and the type it gives each tensor under them:
//! `llama_tensor_get_type` of llama.cpp's `src/llama-quant.cpp`, transcribed for the tensor
//! names of the architectures here (no importance matrix, no overrides, not `--pure`).
//! Checked against llama.cpp itself: `tests/presets.rs` compares the type and bytes of every
//! tensor with files `llama_model_quantize` wrote.

use lacuna_gguf::GgmlType;

/// A llama-quantize preset (`llama_ftype`), by the name llama-quantize prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Preset {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3KS,
    Q3KM,
    Q3KL,
    Q4KS,
    Q4KM,
    Q5KS,
    Q5KM,
    Q6K,
    IQ4NL,
    IQ4XS,
    MXFP4Moe,
}

impl Preset {
    /// Every preset, in `llama_ftype` order.
    pub const ALL: [Preset; 17] = [
        Preset::Q4_0,
        Preset::Q4_1,
        Preset::Q8_0,
        Preset::Q5_0,
        Preset::Q5_1,
        Preset::Q2K,
        Preset::Q3KS,
        Preset::Q3KM,
        Preset::Q3KL,
        Preset::Q4KS,
        Preset::Q4KM,
        Preset::Q5KS,
        Preset::Q5KM,
        Preset::Q6K,
        Preset::IQ4NL,
        Preset::IQ4XS,
        Preset::MXFP4Moe,
    ];

    /// The name as llama-quantize spells it (`Q4_K_M`).
    pub fn name(self) -> &'static str {
        self.row().0
    }

    /// `llama_ftype` (the value of `general.file_type`).
    pub fn ftype(self) -> u32 {
        self.row().1
    }

    /// The preset's default tensor type (`llama_ftype_get_default_type`).
    pub fn default_type(self) -> GgmlType {
        self.row().2
    }

    fn row(self) -> (&'static str, u32, GgmlType) {
        use GgmlType as T;
        match self {
            Preset::Q4_0 => ("Q4_0", 2, T::Q4_0),
            Preset::Q4_1 => ("Q4_1", 3, T::Q4_1),
            Preset::Q8_0 => ("Q8_0", 7, T::Q8_0),
            Preset::Q5_0 => ("Q5_0", 8, T::Q5_0),
            Preset::Q5_1 => ("Q5_1", 9, T::Q5_1),
            Preset::Q2K => ("Q2_K", 10, T::Q2_K),
            Preset::Q3KS => ("Q3_K_S", 11, T::Q3_K),
            Preset::Q3KM => ("Q3_K_M", 12, T::Q3_K),
            Preset::Q3KL => ("Q3_K_L", 13, T::Q3_K),
            Preset::Q4KS => ("Q4_K_S", 14, T::Q4_K),
            Preset::Q4KM => ("Q4_K_M", 15, T::Q4_K),
            Preset::Q5KS => ("Q5_K_S", 16, T::Q5_K),
            Preset::Q5KM => ("Q5_K_M", 17, T::Q5_K),
            Preset::Q6K => ("Q6_K", 18, T::Q6_K),
            Preset::IQ4NL => ("IQ4_NL", 25, T::IQ4_NL),
            Preset::IQ4XS => ("IQ4_XS", 30, T::IQ4_XS),
            Preset::MXFP4Moe => ("MXFP4_MOE", 38, T::MXFP4),
        }
    }

    /// The preset named `name` (case-insensitive, `q4_k_m` or `Q4_K_M`).
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The preset whose `llama_ftype` is `ftype`.
    pub fn from_ftype(ftype: u32) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.ftype() == ftype)
    }
}

/// The name llama.cpp gives a `general.file_type` value (`llama_model_ftype_name`), for the
/// ones a diffusion GGUF is likely to carry; `None` for others.
pub fn file_type_name(ftype: u32) -> Option<&'static str> {
    match ftype {
        0 => Some("F32"),
        1 => Some("F16"),
        32 => Some("BF16"),
        other => Preset::from_ftype(other).map(Preset::name),
    }
}

/// Whether the CPU backend multiplies by matrices of type `ty` (every type of the presets
/// above, and F32/F16/BF16).
pub fn matrix_type_runs(ty: GgmlType) -> bool {
    lacuna_cpu::PackedWeight::supports(ty)
}

/// llama-quantize's tensor categories (`tensor_get_category`), by name substring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

fn category(name: &str) -> Category {
    if name == "output.weight" {
        return Category::Output;
    }
    if name == "token_embd.weight" {
        return Category::TokenEmbd;
    }
    let table = [
        ("attn_qkv.weight", Category::AttnQkv),
        ("attn_v.weight", Category::AttnV),
        ("attn_k.weight", Category::AttnK),
        ("attn_q.weight", Category::AttnQ),
        ("attn_output.weight", Category::AttnOutput),
        ("ffn_up", Category::FfnUp),
        ("ffn_gate", Category::FfnGate),
        ("ffn_down", Category::FfnDown),
    ];
    table
        .into_iter()
        .find(|(pat, _)| name.contains(pat))
        .map_or(Category::Other, |(_, c)| c)
}

/// What the type choice needs to know about the model (llama.cpp's `hparams`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFacts {
    /// Transformer blocks.
    pub n_layer: usize,
    /// `n_head / n_head_kv` of layer 0 (`hparams.n_gqa()`; 0 without KV heads).
    pub n_gqa: usize,
    /// Experts per MoE layer (0 for dense).
    pub n_expert: usize,
}

/// One tensor as the type choice sees it.
#[derive(Debug, Clone, Copy)]
pub struct TensorFacts<'a> {
    /// Its name.
    pub name: &'a str,
    /// Dims in ggml order.
    pub dims: &'a [u64],
}

/// `llama_tensor_get_type` over a whole file: feed the tensors in llama-quantize's order
/// ([`quantize_order`]) and get each one's type.
#[derive(Debug)]
pub struct TypePlanner {
    preset: Preset,
    model: ModelFacts,
    tied: bool,
    n_attention_wv: usize,
    i_attention_wv: usize,
    i_ffn_down: usize,
}

impl TypePlanner {
    /// A planner for the tensors `names` of a model (the counters llama.cpp's
    /// `init_quantize_state_counters` takes from them).
    pub fn new<'a>(
        preset: Preset,
        model: ModelFacts,
        names: impl IntoIterator<Item = &'a str>,
    ) -> TypePlanner {
        let (mut n_attention_wv, mut tied) = (0, true);
        for name in names {
            match category(name) {
                Category::AttnV | Category::AttnQkv => n_attention_wv += 1,
                Category::Output => tied = false,
                _ => {}
            }
        }
        TypePlanner {
            preset,
            model,
            tied,
            n_attention_wv,
            i_attention_wv: 0,
            i_ffn_down: 0,
        }
    }

    /// The type of `t`, whose type in the source file is `source`.
    pub fn type_of(&mut self, t: TensorFacts<'_>, source: GgmlType) -> GgmlType {
        if !allows_quantization(t) {
            return source;
        }
        let chosen = self.impl_type(t);
        fallback(chosen, t.dims[0])
    }

    /// `llama_tensor_get_type_impl` for the presets of [`Preset`].
    fn impl_type(&mut self, t: TensorFacts<'_>) -> GgmlType {
        use GgmlType as T;
        use Preset as P;
        let ftype = self.preset;
        let m = self.model;
        let cat = category(t.name);
        let mut new = ftype.default_type();
        let more_bits = |i: usize, n: usize| {
            let (i, n) = (i as i64, n as i64);
            i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
        };
        if cat == Category::Output || (self.tied && cat == Category::TokenEmbd) {
            let qk = new.block_size() as u64;
            if ftype == P::MXFP4Moe || t.dims[0] % qk != 0 {
                new = T::Q8_0;
            } else if new != T::Q8_0 {
                new = T::Q6_K;
            }
        } else if ftype == P::MXFP4Moe {
            // Expert tensors (3-D) MXFP4, everything else Q8_0.
            new = if t.dims.get(2).is_some_and(|&e| e > 1) {
                T::MXFP4
            } else {
                T::Q8_0
            };
        } else if cat == Category::TokenEmbd {
            // No change for these presets.
        } else if matches!(cat, Category::AttnV | Category::AttnQkv) {
            let (i, n) = (self.i_attention_wv, self.n_attention_wv);
            match ftype {
                P::Q2K => new = if m.n_gqa >= 4 { T::Q4_K } else { T::Q3_K },
                P::Q3KM => new = if i < 2 { T::Q5_K } else { T::Q4_K },
                P::Q3KL => new = T::Q5_K,
                P::IQ4NL | P::IQ4XS if m.n_gqa >= 4 => new = T::Q5_K,
                P::Q4KM | P::Q5KM if more_bits(i, n) => new = T::Q6_K,
                P::Q4KS if i < 4 => new = T::Q5_K,
                _ => {}
            }
            if m.n_expert == 8 {
                new = T::Q8_0;
            }
            self.i_attention_wv += 1;
        } else if cat == Category::AttnK {
            if m.n_expert == 8 {
                new = T::Q8_0;
            }
        } else if cat == Category::FfnDown {
            // With experts llama.cpp reads the layer from the name, else counts tensors.
            let i = if m.n_expert > 1 {
                layer_of(t.name).unwrap_or(self.i_ffn_down)
            } else {
                self.i_ffn_down
            };
            let n = m.n_layer;
            match ftype {
                P::Q2K => new = T::Q3_K,
                P::Q3KM => new = if i < n / 16 { T::Q5_K } else { T::Q4_K },
                P::Q3KL => new = T::Q5_K,
                P::Q4KM if more_bits(i, n) => new = T::Q6_K,
                P::IQ4NL | P::IQ4XS if i < n / 8 => new = T::Q5_K,
                P::Q5KM if more_bits(i, n) => new = T::Q6_K,
                P::Q4KS if i < n / 8 => new = T::Q5_K,
                _ => {}
            }
            self.i_ffn_down += 1;
        } else if cat == Category::AttnOutput {
            if m.n_expert == 8 {
                if matches!(
                    ftype,
                    P::Q2K | P::Q3KS | P::Q3KM | P::IQ4NL | P::Q4KS | P::Q4KM | P::IQ4XS
                ) {
                    new = T::Q5_K;
                }
            } else {
                match ftype {
                    P::Q2K => new = T::Q3_K,
                    P::Q3KM => new = T::Q4_K,
                    P::Q3KL => new = T::Q5_K,
                    _ => {}
                }
            }
        }
        // ATTENTION_QKV's own branch is unreachable: llama.cpp tests attn_v-like
        // categories (which include QKV) first. FFN_GATE/FFN_UP change only IQ3_XS.
        new
    }
}

/// `blk.N.` → N.
fn layer_of(name: &str) -> Option<usize> {
    name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

/// `tensor_allows_quantization` for the names of these architectures.
fn allows_quantization(t: TensorFacts<'_>) -> bool {
    t.dims.len() >= 2
        && t.name.ends_with("weight")
        && !t.name.contains("_norm.weight")
        && !t.name.contains("ffn_gate_inp.weight")
}

/// `tensor_type_fallback`: a type whose block does not divide the row length becomes a
/// 32-element one (F16 when even that does not divide it).
fn fallback(ty: GgmlType, ncols: u64) -> GgmlType {
    use GgmlType as T;
    if ncols % ty.block_size() as u64 == 0 {
        return ty;
    }
    let to = match ty {
        T::IQ4_XS => T::IQ4_NL,
        T::Q2_K | T::Q3_K => T::Q4_0,
        T::Q4_K => T::Q5_0,
        T::Q5_K => T::Q5_1,
        T::Q6_K => T::Q8_0,
        other => other,
    };
    if ncols % to.block_size() as u64 == 0 {
        to
    } else {
        T::F16
    }
}

/// llama-quantize's tensor order (`weight_name_comparer`): tensors outside the blocks first,
/// then block by block, by name within each.
pub fn quantize_order(a: &str, b: &str) -> std::cmp::Ordering {
    let layer = |s: &str| layer_of(s).map_or(-1, |l| l as i64);
    layer(a).cmp(&layer(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests;
