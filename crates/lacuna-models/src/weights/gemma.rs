//! `diffusion-gemma`'s tensors, as llama.cpp's pull request #24423 names and shapes them:
//! Gemma 4 layers (Q/K norms, no `attn_v` on the global layers, four extra norms, a dense
//! GeGLU block beside experts whose gate and up halves share `ffn_gate_up_exps`, a router
//! with its own input scale, per-expert output scales, and one output scalar per layer for
//! the encoder and one for the decoder), one `rope_freqs` for the global layers, and the
//! optional `self_cond_*` block.

use lacuna_quant::GgmlType;
use rayon::prelude::*;

use super::{Act, Dense, Experts, Linear, Loader, MatCost, Weights};
use crate::backend::Backend;
use crate::{Config, Error, GemmaConfig, GemmaLayerShape, Result};

/// One Gemma 4 layer.
pub(crate) struct GemmaLayer<B: Backend> {
    pub(crate) shape: GemmaLayerShape,
    pub(crate) attn_norm: B::Vector,
    pub(crate) q: Linear<B>,
    pub(crate) k: Linear<B>,
    /// Absent on global layers: V is the raw K projection.
    pub(crate) v: Option<Linear<B>>,
    pub(crate) o: Linear<B>,
    pub(crate) q_norm: B::Vector,
    pub(crate) k_norm: B::Vector,
    pub(crate) post_attn_norm: B::Vector,
    /// The dense block's pre-norm (`ffn_norm`, Hugging Face's `pre_feedforward_layernorm`).
    pub(crate) ffn_norm: B::Vector,
    pub(crate) dense: Dense<B>,
    pub(crate) post_ffw_norm_1: B::Vector,
    pub(crate) pre_ffw_norm_2: B::Vector,
    /// The router's input norm: `ffn_gate_inp.scale / sqrt(d)` (the router reads
    /// `rms_norm(x) * scale / sqrt(d)` of the residual).
    pub(crate) router_norm: B::Vector,
    pub(crate) experts: Experts<B>,
    pub(crate) post_ffw_norm_2: B::Vector,
    pub(crate) post_ffw_norm: B::Vector,
    /// The decoder's output scalar (`layer_output_scale`, canvas rows).
    pub(crate) out_scale: f32,
    /// The encoder's (`enc_layer_output_scale`, prompt rows).
    pub(crate) enc_out_scale: f32,
}

/// The self-conditioning block: a GeGLU MLP over the softmax-weighted embedding of the
/// previous step's logits.
pub(crate) struct SelfCond<B: Backend> {
    pub(crate) pre_norm: B::Vector,
    pub(crate) mlp: Dense<B>,
    /// The token embedding transposed (`n_embd` rows of `n_vocab`), so that the soft
    /// embedding `probs @ E` is one matrix product.
    pub(crate) embd_t: Linear<B>,
}

/// Everything `diffusion-gemma` has beyond [`Weights`]' output norm and head.
pub(crate) struct GemmaWeights<B: Backend> {
    pub(crate) layers: Vec<GemmaLayer<B>>,
    /// Frequency factors of the global layers' RoPE (`n_rot / 2`).
    pub(crate) rope_freqs: Vec<f32>,
    /// `None` when the file has no `self_cond_*` tensors: then every step runs without
    /// self-conditioning (as the first step always does).
    pub(crate) self_cond: Option<SelfCond<B>>,
    /// All-ones norm weights: the model width and each head width (the norms without
    /// scale: V, the canvas embedding, the router's input).
    pub(crate) ones_d: B::Vector,
    pub(crate) ones_head: Vec<(usize, B::Vector)>,
}

impl<B: Backend> GemmaWeights<B> {
    /// The all-ones vector of width `n` (a head width of the model).
    pub(crate) fn ones(&self, n: usize) -> &B::Vector {
        &self
            .ones_head
            .iter()
            .find(|(w, _)| *w == n)
            .expect("a vector of ones for every head width")
            .1
    }
}

impl<B: Backend> Loader<'_, B> {
    /// A one-element F32 scalar tensor (a layer's output scale), 1 when absent.
    fn scalar(&self, name: &str) -> Result<f32> {
        match self.optional(name, |n| self.host_vector(n, 1))? {
            None => Ok(1.0),
            Some(v) if v[0].is_finite() => Ok(v[0]),
            Some(v) => Err(Error::BadTensor {
                name: name.to_string(),
                detail: format!("{} is not finite", v[0]),
            }),
        }
    }

    /// The experts' gate and up halves: from the fused `ffn_gate_up_exps` (gate rows first,
    /// as Hugging Face's `gate_up_proj.chunk(2)`), or from separate tensors.
    fn gate_up_experts(
        &self,
        p: &dyn Fn(&str) -> String,
        d: usize,
        ff: usize,
        ne: usize,
    ) -> Result<[(Vec<B::Weight>, MatCost); 2]> {
        let fused = p("ffn_gate_up_exps.weight");
        let gate = p("ffn_gate_exps.weight");
        if !self.has(&fused) && !self.has(&gate) {
            return Err(Error::MissingTensor {
                name: format!("{fused} (or separate {gate} and ffn_up_exps)"),
            });
        }
        if !self.has(&fused) {
            return Ok([
                self.experts(&p("ffn_gate_exps.weight"), d, ff, ne)?,
                self.experts(&p("ffn_up_exps.weight"), d, ff, ne)?,
            ]);
        }
        let info = self.checked(&fused, &[d, 2 * ff, ne])?;
        let data = self.file.info_data(info);
        let per = data.len() / ne;
        let half = per / 2;
        let mut halves: [(Vec<B::Weight>, MatCost); 2] = Default::default();
        let mut in_place = false;
        for e in 0..ne {
            let expert = &data[e * per..(e + 1) * per];
            for (h, (ws, _)) in halves.iter_mut().enumerate() {
                let bytes = &expert[h * half..(h + 1) * half];
                let (w, held) = self.prepare(true, &fused, info, bytes, ff, d)?;
                in_place |= held;
                ws.push(w);
            }
        }
        self.after_prepare(data, in_place);
        for (ws, cost) in &mut halves {
            *cost = MatCost {
                n: ff,
                k: d,
                file_bytes: half as u64,
                held_bytes: ws
                    .first()
                    .map_or(0, |w| self.backend.weight_bytes(w) as u64),
            };
        }
        Ok(halves)
    }

    fn gemma_layer(
        &self,
        cfg: &Config,
        il: usize,
        shape: GemmaLayerShape,
    ) -> Result<GemmaLayer<B>> {
        let p = |s: &str| format!("blk.{il}.{s}");
        let d = cfg.n_embd;
        let m = cfg.moe.expect("diffusion-gemma has experts");
        let (hd, kvd) = (shape.head_dim, shape.n_head_kv * shape.head_dim);
        let qd = cfg.n_head * hd;
        let dense = |prefix: &str, ff: usize| -> Result<Dense<B>> {
            Ok(Dense {
                gate: self.linear_no_bias(&format!("{prefix}gate"), d, ff)?,
                up: self.linear_no_bias(&format!("{prefix}up"), d, ff)?,
                down: self.linear_no_bias(&format!("{prefix}down"), ff, d)?,
            })
        };
        let (ne, ff) = (m.n_expert, m.n_ff_exp);
        let (router, router_cost) = self.matrix(&p("ffn_gate_inp.weight"), d, ne)?;
        let inv_sqrt_d = 1.0 / (d as f32).sqrt();
        let router_norm =
            match self.optional(&p("ffn_gate_inp.scale"), |n| self.host_vector(n, d))? {
                Some(v) => v.into_iter().map(|x| x * inv_sqrt_d).collect(),
                None => vec![inv_sqrt_d; d],
            };
        let [(gate, gate_cost), (up, up_cost)] = self.gate_up_experts(&p, d, ff, ne)?;
        let (down, down_cost) = self.experts(&p("ffn_down_exps.weight"), ff, d, ne)?;
        let expert_scale = self.optional(&p("ffn_down_exps.scale"), |n| self.host_vector(n, ne))?;
        let v_name = p("attn_v.weight");
        let v = match (shape.has_v, self.has(&v_name)) {
            (true, _) | (false, true) => Some(self.linear_no_bias(&p("attn_v"), d, kvd)?),
            (false, false) => None,
        };
        Ok(GemmaLayer {
            shape: GemmaLayerShape {
                has_v: v.is_some(),
                ..shape
            },
            attn_norm: self.vector(&p("attn_norm.weight"), d)?,
            q: self.linear_no_bias(&p("attn_q"), d, qd)?,
            k: self.linear_no_bias(&p("attn_k"), d, kvd)?,
            v,
            o: self.linear_no_bias(&p("attn_output"), qd, d)?,
            q_norm: self.vector(&p("attn_q_norm.weight"), hd)?,
            k_norm: self.vector(&p("attn_k_norm.weight"), hd)?,
            post_attn_norm: self.vector(&p("post_attention_norm.weight"), d)?,
            ffn_norm: self.vector(&p("ffn_norm.weight"), d)?,
            dense: dense(&p("ffn_"), cfg.n_ff)?,
            post_ffw_norm_1: self.vector(&p("post_ffw_norm_1.weight"), d)?,
            pre_ffw_norm_2: self.vector(&p("pre_ffw_norm_2.weight"), d)?,
            router_norm: self.backend.prepare_vector(router_norm)?,
            experts: Experts {
                cfg: m,
                router,
                probs_bias: None,
                gate,
                up,
                down,
                router_cost,
                expert_cost: [gate_cost, up_cost, down_cost],
                shared: None,
                expert_scale,
                act: Act::GeluTanh,
            },
            post_ffw_norm_2: self.vector(&p("post_ffw_norm_2.weight"), d)?,
            post_ffw_norm: self.vector(&p("post_ffw_norm.weight"), d)?,
            out_scale: self.scalar(&p("layer_output_scale.weight"))?,
            enc_out_scale: self.scalar(&p("enc_layer_output_scale.weight"))?,
        })
    }

    /// The token embedding transposed into `n_embd` rows of `n_vocab`, quantized as the
    /// table is (F32 and F16 stay; anything else becomes Q8_0), built a slab of vocabulary
    /// rows at a time so no full f32 copy of the table is ever held.
    fn embedding_transposed(&self, cfg: &Config) -> Result<Linear<B>> {
        let (d, nv) = (cfg.n_embd, cfg.n_vocab);
        let info = self.checked("token_embd.weight", &[d, nv])?;
        let ty = transposed_type(info.ty, nv);
        let data = self.file.info_data(info);
        let src_row = data.len() / nv;
        // Slabs of vocabulary rows: a whole number of the target type's blocks.
        const SLAB: usize = 1024;
        let out_row = nv / ty.block_size() * ty.type_size();
        let mut out = vec![0u8; d * out_row];
        let mut rows = vec![0.0f32; SLAB * d];
        let decode = |source| Error::Decode {
            name: "token_embd.weight".to_string(),
            source,
        };
        // Both halves of a slab in parallel (rows decoded, then columns quantized, each into
        // its own slice): at 262k words by 2,816 this was most of a compact model's load.
        for v0 in (0..nv).step_by(SLAB) {
            let n = SLAB.min(nv - v0);
            rows.par_chunks_exact_mut(d)
                .take(n)
                .enumerate()
                .try_for_each(|(r, dst)| {
                    let src = &data[(v0 + r) * src_row..(v0 + r + 1) * src_row];
                    lacuna_quant::dequantize_row(info.ty, src, dst).map_err(decode)
                })?;
            let at = v0 / ty.block_size() * ty.type_size();
            let len = n / ty.block_size() * ty.type_size();
            let rows = &rows;
            out.par_chunks_exact_mut(out_row)
                .enumerate()
                .try_for_each_init(
                    || vec![0.0f32; SLAB],
                    |col, (j, row)| {
                        for (r, c) in col.iter_mut().take(n).enumerate() {
                            *c = rows[r * d + j];
                        }
                        lacuna_quant::quantize_row(ty, &col[..n], &mut row[at..at + len])
                            .map_err(decode)
                    },
                )?;
        }
        let file_bytes = out.len() as u64;
        // Handed over, not copied: a backend keeping the compact layout owns these bytes
        // (the table at this width is 0.8 GB for Gemma 4's 262k vocabulary).
        let w = self
            .backend
            .prepare_weight_owned(ty, d, nv, out)
            .map_err(|e| self.type_error("token_embd.weight", info, e))?;
        self.prepared
            .set(self.prepared.get() + self.backend.weight_bytes(&w));
        let cost = MatCost {
            n: d,
            k: nv,
            file_bytes,
            held_bytes: self.backend.weight_bytes(&w) as u64,
        };
        Ok(Linear {
            w,
            b: None,
            n: d,
            cost,
        })
    }

    pub(super) fn load_gemma(&self, cfg: &Config, g: &GemmaConfig) -> Result<Weights<B>> {
        let d = cfg.n_embd;
        // The LM head first, as `load` does (its file pages resident while little is held).
        let output = self.lm_head(cfg)?;
        let mut layers = Vec::with_capacity(cfg.n_layer);
        for (il, &shape) in g.layers.iter().enumerate() {
            layers.push(self.gemma_layer(cfg, il, shape)?);
        }
        let rope_freqs = if g.layers.iter().any(|l| !l.sliding) {
            self.host_vector("rope_freqs.weight", g.n_rot / 2)?
        } else {
            Vec::new()
        };
        if let Some(bad) = rope_freqs.iter().find(|f| f.is_nan() || **f <= 0.0) {
            return Err(Error::BadTensor {
                name: "rope_freqs.weight".to_string(),
                detail: format!("frequency factor {bad} must be positive"),
            });
        }
        let sc_names = [
            "self_cond_pre_norm.weight",
            "self_cond_gate.weight",
            "self_cond_up.weight",
            "self_cond_down.weight",
        ];
        let present = sc_names.iter().filter(|n| self.has(n)).count();
        let self_cond = match present {
            0 => None,
            4 => Some(SelfCond {
                pre_norm: self.vector("self_cond_pre_norm.weight", d)?,
                mlp: Dense {
                    gate: self.linear_no_bias("self_cond_gate", d, cfg.n_ff)?,
                    up: self.linear_no_bias("self_cond_up", d, cfg.n_ff)?,
                    down: self.linear_no_bias("self_cond_down", cfg.n_ff, d)?,
                },
                embd_t: self.embedding_transposed(cfg)?,
            }),
            _ => {
                let missing = sc_names.iter().find(|n| !self.has(n)).unwrap_or(&"");
                return Err(Error::MissingTensor {
                    name: format!("{missing} (the file has part of the self-conditioning block)"),
                });
            }
        };
        let mut widths: Vec<usize> = g.layers.iter().map(|l| l.head_dim).collect();
        widths.sort_unstable();
        widths.dedup();
        let ones_head = widths
            .into_iter()
            .map(|w| Ok((w, self.backend.prepare_vector(vec![1.0; w])?)))
            .collect::<Result<_>>()?;
        Ok(Weights {
            layers: Vec::new(),
            output_norm: self.vector("output_norm.weight", d)?,
            output,
            gemma: Some(Box::new(GemmaWeights {
                layers,
                rope_freqs,
                self_cond,
                ones_d: self.backend.prepare_vector(vec![1.0; d])?,
                ones_head,
            })),
        })
    }
}

/// The type the transposed embedding is held in, from the table's: F32 and F16 stay,
/// anything else becomes Q8_0 (F16 when the vocabulary is not whole Q8_0 blocks).
fn transposed_type(table: GgmlType, n_vocab: usize) -> GgmlType {
    match table {
        GgmlType::F32 => GgmlType::F32,
        GgmlType::F16 | GgmlType::BF16 => GgmlType::F16,
        _ if n_vocab % 32 == 0 => GgmlType::Q8_0,
        _ => GgmlType::F16,
    }
}

/// Bytes a `diffusion-gemma` model holds beside its file's matrices (see
/// [`crate::WeightPlan::other_bytes`]): the transposed embedding when the file has the
/// self-conditioning block, and a decode step's f32 buffers over the vocabulary: the
/// sampler's logits of the canvas, the backend's probabilities of a chunk of its rows
/// (`SC_CHUNK_ROWS`). 0 for other architectures.
pub(crate) fn extra_bytes(cfg: &Config, file: &lacuna_gguf::GgufFile) -> u64 {
    let Some(g) = &cfg.gemma else {
        return 0;
    };
    let (d, nv) = (cfg.n_embd as u64, cfg.n_vocab as u64);
    let chunk = crate::model::SC_CHUNK_ROWS.min(g.canvas_length) as u64;
    let buffers = (g.canvas_length as u64 + chunk) * nv * 4;
    let table = file
        .tensors()
        .iter()
        .find(|t| t.name == "token_embd.weight");
    let self_cond = file
        .tensors()
        .iter()
        .any(|t| t.name == "self_cond_gate.weight");
    let transposed = match table {
        Some(t) if self_cond => {
            let ty = transposed_type(t.ty, cfg.n_vocab);
            d * ty.row_bytes(nv).unwrap_or(nv * 4)
        }
        _ => 0,
    };
    buffers + transposed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arch;
    use crate::fixture::{FixtureSpec, QuantMix, Shape, build};

    /// What `--weights auto` counts beside the matrices: the transposed table (Q8_0 from a
    /// quantized table), the canvas's logits and a chunk's probabilities (the tiny canvas,
    /// 32 rows, is one chunk); nothing for other models.
    #[test]
    fn extra_bytes_count_the_transposed_table_and_the_canvas_buffers() {
        let file = |arch| {
            let spec = FixtureSpec::new(arch, Shape::Tiny, 1, QuantMix::Q8_0);
            lacuna_gguf::GgufFile::from_vec(build(&spec).unwrap().to_vec().unwrap()).unwrap()
        };
        let g = file(Arch::DiffusionGemma);
        let cfg = Config::from_metadata(g.metadata()).unwrap();
        let (d, nv) = (cfg.n_embd as u64, cfg.n_vocab as u64);
        let canvas = cfg.gemma.as_ref().unwrap().canvas_length as u64;
        assert_eq!(
            extra_bytes(&cfg, &g),
            d * nv / 32 * 34 + 2 * canvas * nv * 4
        );
        let l = file(Arch::Llada);
        let cfg = Config::from_metadata(l.metadata()).unwrap();
        assert_eq!(extra_bytes(&cfg, &l), 0);
    }
}
