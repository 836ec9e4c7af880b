//! Finding, checking and preparing a model's tensors: names as llama.cpp's `llama-arch.cpp`
//! lists them, shapes as its `load_arch_tensors` expects, types the backend supports.

use lacuna_gguf::{GgufFile, TensorInfo};

use crate::backend::Backend;
use crate::{Config, Error, MoeConfig, Result};

pub(crate) mod gemma;

/// A projection: a prepared weight and an optional f32 bias.
pub(crate) struct Linear<B: Backend> {
    pub(crate) w: B::Weight,
    pub(crate) b: Option<B::Vector>,
    /// Output features.
    pub(crate) n: usize,
    /// What one product with it reads and computes.
    pub(crate) cost: MatCost,
}

/// The size of one `[n x k]` weight, for the work a pass reports: its operations per
/// token and its bytes in the file and as the backend holds them (the floor of a pass is
/// the bytes it must read, see [`crate::PartTimes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MatCost {
    pub(crate) n: usize,
    pub(crate) k: usize,
    /// Bytes of the tensor's data in the GGUF file.
    pub(crate) file_bytes: u64,
    /// Bytes of the backend's prepared copy ([`Weights::weight_bytes`](crate::Weights::weight_bytes)).
    pub(crate) held_bytes: u64,
}

/// The feed-forward block of one layer.
/// The activation of a gated feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// `silu(gate) * up` (SwiGLU: LLaMA, Qwen, BailingMoE).
    Silu,
    /// `gelu_tanh(gate) * up` (GeGLU: Gemma).
    GeluTanh,
}

pub(crate) enum Ffn<B: Backend> {
    /// `down(silu(gate(x)) * up(x))`.
    Dense(Dense<B>),
    /// Routed experts, each a dense SwiGLU block without biases (boxed: far larger than a
    /// dense block's three handles).
    Moe(Box<Experts<B>>),
}

/// The experts of one MoE layer and how tokens are routed to them.
pub(crate) struct Experts<B: Backend> {
    pub(crate) cfg: MoeConfig,
    /// `[n_expert x n_embd]` router.
    pub(crate) router: B::Weight,
    /// Per-expert bias added to the router probabilities for selection only
    /// (`exp_probs_b.bias`, DeepSeek-V3's correction; LLaDA2).
    pub(crate) probs_bias: Option<Vec<f32>>,
    pub(crate) gate: Vec<B::Weight>,
    pub(crate) up: Vec<B::Weight>,
    pub(crate) down: Vec<B::Weight>,
    /// The router's size.
    pub(crate) router_cost: MatCost,
    /// One expert's gate, up and down sizes (every expert of a tensor has the same).
    pub(crate) expert_cost: [MatCost; 3],
    /// The shared experts as one dense SwiGLU block (`ffn_{gate,up,down}_shexp`), run on
    /// every token and added to the routed output.
    pub(crate) shared: Option<Dense<B>>,
    /// Each expert's output scale (Gemma 4's `ffn_down_exps.scale`), applied to its routing
    /// weight after normalisation.
    pub(crate) expert_scale: Option<Vec<f32>>,
    /// The experts' activation.
    pub(crate) act: Act,
}

/// A dense SwiGLU block: `down(silu(gate(x)) * up(x))`.
pub(crate) struct Dense<B: Backend> {
    pub(crate) gate: Linear<B>,
    pub(crate) up: Linear<B>,
    pub(crate) down: Linear<B>,
}

/// The query, key and value projections: separate, or one fused `attn_qkv` whose output
/// rows are Q, then K, then V.
pub(crate) enum Qkv<B: Backend> {
    Split {
        q: Linear<B>,
        k: Linear<B>,
        v: Linear<B>,
    },
    Fused(Linear<B>),
}

/// One transformer block.
pub(crate) struct Layer<B: Backend> {
    pub(crate) attn_norm: B::Vector,
    pub(crate) qkv: Qkv<B>,
    pub(crate) o: Linear<B>,
    pub(crate) q_norm: Option<B::Vector>,
    pub(crate) k_norm: Option<B::Vector>,
    pub(crate) ffn_norm: B::Vector,
    pub(crate) ffn: Ffn<B>,
}

/// Everything but the token embedding (read row by row from the file).
pub(crate) struct Weights<B: Backend> {
    pub(crate) layers: Vec<Layer<B>>,
    pub(crate) output_norm: B::Vector,
    pub(crate) output: Linear<B>,
    /// `diffusion-gemma`'s layers and extras (its `layers` above are empty).
    pub(crate) gemma: Option<Box<gemma::GemmaWeights<B>>>,
}

/// The weight types every matrix may have, for error messages: the types of every
/// llama-quantize preset from Q2_K to Q8_0, IQ4_NL, IQ4_XS and MXFP4_MOE.
pub(crate) const MATRIX_TYPES: &str = "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, \
     q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4: every llama-quantize preset but the IQ1_*, IQ2_* \
     and IQ3_* ones, whose kernels Lacuna does not have yet";

pub(crate) struct Loader<'a, B: Backend> {
    pub(crate) file: &'a GgufFile,
    pub(crate) backend: &'a B,
    /// Bytes the backend holds for the matrices prepared so far.
    pub(crate) prepared: std::cell::Cell<usize>,
    /// Of those, the bytes it reads in place from the file (not copied).
    pub(crate) in_place: std::cell::Cell<usize>,
}

impl<B: Backend> Loader<'_, B> {
    pub(crate) fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.file.tensor(name).map_err(|_| Error::MissingTensor {
            name: name.to_string(),
        })
    }

    fn has(&self, name: &str) -> bool {
        self.file.tensor(name).is_ok()
    }

    pub(crate) fn checked(&self, name: &str, dims: &[usize]) -> Result<&TensorInfo> {
        let info = self.info(name)?;
        let expected: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        if info.dims != expected {
            return Err(Error::TensorShape {
                name: name.to_string(),
                expected,
                found: info.dims.clone(),
            });
        }
        Ok(info)
    }

    /// A norm weight or bias of `n` elements, prepared by the backend.
    fn vector(&self, name: &str, n: usize) -> Result<B::Vector> {
        self.backend.prepare_vector(self.host_vector(name, n)?)
    }

    /// `load(name)` when the file has a tensor `name`, else `None`.
    fn optional<T>(&self, name: &str, load: impl FnOnce(&str) -> Result<T>) -> Result<Option<T>> {
        if self.has(name) {
            load(name).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A 1-D f32 vector of `n` elements, on the host.
    fn host_vector(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        let info = self.checked(name, &[n])?;
        if info.ty.block_size() != 1 || !lacuna_quant::can_dequantize(info.ty) {
            return Err(Error::TensorType {
                name: name.to_string(),
                ty: info.ty,
                supported: "f32, f16, bf16",
            });
        }
        let mut out = vec![0.0; n];
        lacuna_quant::dequantize_row(info.ty, self.file.info_data(info), &mut out).map_err(
            |source| Error::Decode {
                name: name.to_string(),
                source,
            },
        )?;
        Ok(out)
    }

    /// A `[n x k]` weight (ggml dims `[k, n]`), prepared by the backend.
    fn matrix(&self, name: &str, k: usize, n: usize) -> Result<(B::Weight, MatCost)> {
        let info = self.checked(name, &[k, n])?;
        let data = self.file.info_data(info);
        let (w, in_place) = self.prepare(false, name, info, data, n, k)?;
        self.after_prepare(data, in_place);
        let cost = MatCost {
            n,
            k,
            file_bytes: data.len() as u64,
            held_bytes: self.backend.weight_bytes(&w) as u64,
        };
        Ok((w, cost))
    }

    /// One matrix (`expert`: one expert's) from `bytes`, a slice of tensor `name`, prepared
    /// by the backend, and whether it holds the file's bytes in place.
    pub(crate) fn prepare(
        &self,
        expert: bool,
        name: &str,
        info: &TensorInfo,
        bytes: &[u8],
        n: usize,
        k: usize,
    ) -> Result<(B::Weight, bool)> {
        let be = self.backend;
        let (w, in_place) = match self.file.share(bytes) {
            Some(shared) => be.prepare_in_file(expert, info.ty, n, k, &shared),
            None if expert => be.prepare_expert(info.ty, n, k, bytes).map(|w| (w, false)),
            None => be.prepare_weight(info.ty, n, k, bytes).map(|w| (w, false)),
        }
        .map_err(|e| self.type_error(name, info, e))?;
        self.count(&w, in_place);
        Ok((w, in_place))
    }

    /// Adds a prepared weight to the bytes held (and held in place).
    fn count(&self, w: &B::Weight, in_place: bool) {
        let bytes = self.backend.weight_bytes(w);
        self.prepared.set(self.prepared.get() + bytes);
        if in_place {
            self.in_place.set(self.in_place.get() + bytes);
        }
    }

    /// After a tensor's `data` was prepared: a backend holding its own copy lets the OS drop
    /// the file's pages of it; one holding them in place (`in_place`) has them read ahead.
    pub(crate) fn after_prepare(&self, data: &[u8], in_place: bool) {
        if in_place {
            self.file.prefetch(data);
        } else {
            self.file.release(data);
        }
    }

    /// An unsupported weight type as the typed error naming the tensor.
    fn type_error(&self, name: &str, info: &TensorInfo, e: Error) -> Error {
        match e {
            Error::Cpu(lacuna_cpu::Error::UnsupportedType { .. }) => Error::TensorType {
                name: name.to_string(),
                ty: info.ty,
                supported: MATRIX_TYPES,
            },
            other => other,
        }
    }

    /// Each expert of a `[k, n, n_expert]` tensor, prepared separately.
    fn experts(
        &self,
        name: &str,
        k: usize,
        n: usize,
        n_expert: usize,
    ) -> Result<(Vec<B::Weight>, MatCost)> {
        let info = self.checked(name, &[k, n, n_expert])?;
        let data = self.file.info_data(info);
        let per = data.len() / n_expert;
        let mut in_place = false;
        let experts: Result<Vec<B::Weight>> = (0..n_expert)
            .map(|e| {
                let (w, held) =
                    self.prepare(true, name, info, &data[e * per..(e + 1) * per], n, k)?;
                in_place |= held;
                Ok(w)
            })
            .collect();
        self.after_prepare(data, in_place);
        let experts = experts?;
        let cost = MatCost {
            n,
            k,
            file_bytes: per as u64,
            held_bytes: experts
                .first()
                .map_or(0, |w| self.backend.weight_bytes(w) as u64),
        };
        Ok((experts, cost))
    }

    /// A projection with its optional `.bias` (Q, K and V: llama.cpp's `build_qkv` adds
    /// them when present).
    fn linear(&self, prefix: &str, k: usize, n: usize) -> Result<Linear<B>> {
        let (w, cost) = self.matrix(&format!("{prefix}.weight"), k, n)?;
        Ok(Linear {
            w,
            b: self.optional(&format!("{prefix}.bias"), |b| self.vector(b, n))?,
            n,
            cost,
        })
    }

    /// A projection whose bias llama.cpp's graphs for these architectures never add
    /// (`attn_output`, FFN, `output`): a bias in the file is ignored, as llama.cpp does.
    fn linear_no_bias(&self, prefix: &str, k: usize, n: usize) -> Result<Linear<B>> {
        let (w, cost) = self.matrix(&format!("{prefix}.weight"), k, n)?;
        Ok(Linear {
            w,
            b: None,
            n,
            cost,
        })
    }

    pub(crate) fn load(&self, cfg: &Config) -> Result<Weights<B>> {
        if let Some(g) = &cfg.gemma {
            return self.load_gemma(cfg, g);
        }
        let d = cfg.n_embd;
        // The LM head first: while a tensor is repacked its file pages are resident too,
        // and this one is the largest (0.4-0.8 GB), so it is done while little else is held.
        let output = self.lm_head(cfg)?;
        let mut layers = Vec::with_capacity(cfg.n_layer);
        for il in 0..cfg.n_layer {
            let p = |s: &str| format!("blk.{il}.{s}");
            let (q_norm, k_norm) = if cfg.arch.has_qk_norm() {
                (
                    Some(self.vector(&p("attn_q_norm.weight"), cfg.head_dim)?),
                    Some(self.vector(&p("attn_k_norm.weight"), cfg.head_dim)?),
                )
            } else {
                (None, None)
            };
            let dense = |name: &str, ff: usize| -> Result<Dense<B>> {
                Ok(Dense {
                    gate: self.linear_no_bias(&p(&format!("ffn_gate{name}")), d, ff)?,
                    up: self.linear_no_bias(&p(&format!("ffn_up{name}")), d, ff)?,
                    down: self.linear_no_bias(&p(&format!("ffn_down{name}")), ff, d)?,
                })
            };
            let ffn = match cfg.moe {
                Some(m) if il >= m.n_dense_lead => {
                    let (router, router_cost) =
                        self.matrix(&p("ffn_gate_inp.weight"), d, m.n_expert)?;
                    let (ne, ff) = (m.n_expert, m.n_ff_exp);
                    let (gate, gate_cost) = self.experts(&p("ffn_gate_exps.weight"), d, ff, ne)?;
                    let (up, up_cost) = self.experts(&p("ffn_up_exps.weight"), d, ff, ne)?;
                    let (down, down_cost) = self.experts(&p("ffn_down_exps.weight"), ff, d, ne)?;
                    Ffn::Moe(Box::new(Experts {
                        cfg: m,
                        router,
                        probs_bias: self.optional(&p("exp_probs_b.bias"), |b| {
                            self.host_vector(b, m.n_expert)
                        })?,
                        gate,
                        up,
                        down,
                        router_cost,
                        expert_cost: [gate_cost, up_cost, down_cost],
                        shared: if m.n_expert_shared > 0 {
                            Some(dense("_shexp", m.n_ff_shared)?)
                        } else {
                            None
                        },
                        expert_scale: None,
                        act: Act::Silu,
                    }))
                }
                _ => Ffn::Dense(dense("", cfg.n_ff)?),
            };
            let qkv = if cfg.arch.fused_qkv() {
                Qkv::Fused(self.linear(&p("attn_qkv"), d, cfg.q_dim() + 2 * cfg.kv_dim())?)
            } else {
                Qkv::Split {
                    q: self.linear(&p("attn_q"), d, cfg.q_dim())?,
                    k: self.linear(&p("attn_k"), d, cfg.kv_dim())?,
                    v: self.linear(&p("attn_v"), d, cfg.kv_dim())?,
                }
            };
            layers.push(Layer {
                attn_norm: self.vector(&p("attn_norm.weight"), d)?,
                qkv,
                o: self.linear_no_bias(&p("attn_output"), cfg.q_dim(), d)?,
                q_norm,
                k_norm,
                ffn_norm: self.vector(&p("ffn_norm.weight"), d)?,
                ffn,
            });
        }
        Ok(Weights {
            layers,
            output_norm: self.vector("output_norm.weight", d)?,
            output,
            gemma: None,
        })
    }

    /// `output`, or `token_embd` when the embeddings are tied (llama.cpp duplicates it as
    /// the LM head).
    fn lm_head(&self, cfg: &Config) -> Result<Linear<B>> {
        if self.has("output.weight") {
            return self.linear_no_bias("output", cfg.n_embd, cfg.n_vocab);
        }
        let (w, cost) = self.matrix("token_embd.weight", cfg.n_embd, cfg.n_vocab)?;
        Ok(Linear {
            w,
            b: None,
            n: cfg.n_vocab,
            cost,
        })
    }
}
