//! Deterministic random-weight GGUF files with each architecture's real metadata keys and
//! tensor layout (as llama.cpp's converter writes them), at tiny shapes for tests and at
//! real per-layer shapes (few layers) for benchmarks.
//!
//! Quantized weights are drawn directly in the quantized domain (random codes, scales chosen
//! so each weight has standard deviation about `1/sqrt(k)`): no quantizer is involved, the
//! files are valid ggml blocks, and every row of a `[n x k]` projection keeps unit-RMS
//! inputs at unit scale, so activations stay in a realistic range through the layers.
//! Norm weights and `ffn_gate_inp` stay F32, as `llama-quantize` leaves them.

use half::{bf16, f16};
use lacuna_gguf::{GgmlType, GgufWriter};

use crate::{Arch, Error, Result};

mod gemma;
mod vocab;

/// Tensor sizes of a fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Embedding width.
    pub n_embd: usize,
    /// Attention heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Dense FFN width (MoE: the `feed_forward_length` key).
    pub n_ff: usize,
    /// Vocabulary size.
    pub n_vocab: usize,
    /// Experts (0 for dense).
    pub n_expert: usize,
    /// Experts per token.
    pub n_expert_used: usize,
    /// Width of one expert.
    pub n_ff_exp: usize,
    /// Width of one head (0: `n_embd / n_head`).
    pub head_dim: usize,
    /// Rotary dimensions per head (0: the whole head).
    pub n_rot: usize,
    /// Shared experts (LLaDA2) and the width of each.
    pub n_expert_shared: usize,
    /// Width of one shared expert.
    pub n_ff_shexp: usize,
    /// Leading layers with a dense FFN (LLaDA2).
    pub n_dense_lead: usize,
    /// Expert groups for group-limited routing (0: none) and groups used per token.
    pub n_group: usize,
    /// Groups used per token.
    pub n_group_used: usize,
}

impl Dims {
    /// A dense model's sizes.
    pub const fn dense(
        n_embd: usize,
        n_head: usize,
        n_head_kv: usize,
        n_ff: usize,
        n_vocab: usize,
    ) -> Dims {
        Dims {
            n_embd,
            n_head,
            n_head_kv,
            n_ff,
            n_vocab,
            n_expert: 0,
            n_expert_used: 0,
            n_ff_exp: 0,
            head_dim: 0,
            n_rot: 0,
            n_expert_shared: 0,
            n_ff_shexp: 0,
            n_dense_lead: 0,
            n_group: 0,
            n_group_used: 0,
        }
    }

    /// Width of one head.
    pub const fn head(&self) -> usize {
        if self.head_dim == 0 {
            self.n_embd / self.n_head
        } else {
            self.head_dim
        }
    }

    /// Rotary dimensions per head.
    pub const fn rot(&self) -> usize {
        if self.n_rot == 0 {
            self.head()
        } else {
            self.n_rot
        }
    }
}

/// A named size preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Small enough for unit tests (every matrix width a multiple of 256).
    Tiny,
    /// LLaDA-8B per-layer shapes: d=4096, 32 heads, FFN 12288, vocab 126464.
    Llada8b,
    /// Dream-7B per-layer shapes: d=3584, 28/4 heads, FFN 18944, vocab 152064.
    Dream7b,
    /// LLaDA-MoE-7B-A1B per-layer shapes: d=2048, 16 heads, 64 experts of 1024 (8 used),
    /// vocab 157184.
    LladaMoe7b,
    /// LLaDA2.0-mini per-layer shapes: d=2048, 16/4 heads of 128 (64 rotary), 256 experts
    /// of 512 (8 used, 8 groups, 4 used), one shared expert, dense FFN 5120, vocab 157184.
    Llada2Mini,
    /// RND1-30B per-layer shapes (Qwen3-30B-A3B): d=2048, 32/4 heads of 128, 128 experts of
    /// 768 (8 used), vocab 151936.
    Rnd1_30b,
    /// DiffusionGemma 26B-A4B per-layer shapes (Gemma 4): d=2816, 16 heads of 256 over 8
    /// KV heads on sliding layers (window 1024) and of 512 over 2 on global ones (every
    /// sixth, and the last), dense FFN 2112 beside 128 experts of 704 (8 used), vocab
    /// 262144, canvas 256.
    DiffusionGemma26b,
}

impl Shape {
    /// The preset named `name` (`tiny`, `llada-8b`, `dream-7b`, `llada-moe-7b`,
    /// `llada2-mini`, `rnd1-30b`, `diffusiongemma-26b-a4b`).
    pub fn from_name(name: &str) -> Option<Shape> {
        match name {
            "tiny" => Some(Shape::Tiny),
            "llada-8b" => Some(Shape::Llada8b),
            "dream-7b" => Some(Shape::Dream7b),
            "llada-moe-7b" => Some(Shape::LladaMoe7b),
            "llada2-mini" => Some(Shape::Llada2Mini),
            "rnd1-30b" => Some(Shape::Rnd1_30b),
            "diffusiongemma-26b-a4b" => Some(Shape::DiffusionGemma26b),
            _ => None,
        }
    }
}

/// Which ggml types the weights get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantMix {
    /// Everything F32.
    F32,
    /// Matrices F16.
    F16,
    /// Matrices BF16.
    Bf16,
    /// Matrices Q8_0.
    Q8_0,
    /// Like llama.cpp's Q4_K_M: Q6_K for `attn_v`, `ffn_down` and `output`, Q4_K elsewhere.
    Q4KM,
}

impl QuantMix {
    /// The mix named `name` (`f32`, `f16`, `bf16`, `q8_0`, `q4_k_m`).
    pub fn from_name(name: &str) -> Option<QuantMix> {
        match name {
            "f32" => Some(QuantMix::F32),
            "f16" => Some(QuantMix::F16),
            "bf16" => Some(QuantMix::Bf16),
            "q8_0" => Some(QuantMix::Q8_0),
            "q4_k_m" => Some(QuantMix::Q4KM),
            _ => None,
        }
    }

    /// The name [`QuantMix::from_name`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            QuantMix::F32 => "f32",
            QuantMix::F16 => "f16",
            QuantMix::Bf16 => "bf16",
            QuantMix::Q8_0 => "q8_0",
            QuantMix::Q4KM => "q4_k_m",
        }
    }

    fn main(self) -> GgmlType {
        match self {
            QuantMix::F32 => GgmlType::F32,
            QuantMix::F16 => GgmlType::F16,
            QuantMix::Bf16 => GgmlType::BF16,
            QuantMix::Q8_0 => GgmlType::Q8_0,
            QuantMix::Q4KM => GgmlType::Q4_K,
        }
    }

    fn high(self) -> GgmlType {
        match self {
            QuantMix::Q4KM => GgmlType::Q6_K,
            other => other.main(),
        }
    }
}

/// Everything that determines a fixture file.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureSpec {
    /// Architecture.
    pub arch: Arch,
    /// Sizes.
    pub dims: Dims,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Weight types.
    pub quant: QuantMix,
    /// No `output.weight`: the LM head is `token_embd` (tied embeddings).
    pub tied: bool,
    /// PRNG seed.
    pub seed: u64,
    /// Write LLaDA2's weights as llama.cpp's autoregressive `bailingmoe2` (same tensors,
    /// keys under `bailingmoe2.`): the oracle of LLaDA2's graph with blocks of 1.
    pub bailingmoe2_twin: bool,
}

impl FixtureSpec {
    /// The preset `shape` of `arch` with `n_layer` blocks, weights of `quant`, seed 0.
    pub fn new(arch: Arch, shape: Shape, n_layer: usize, quant: QuantMix) -> FixtureSpec {
        let dense = Dims::dense;
        let llada2 = |n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab| Dims {
            head_dim,
            n_rot: head_dim / 2,
            ..dense(n_embd, n_head, n_head_kv, n_ff, n_vocab)
        };
        let dims = match (arch, shape) {
            (Arch::Llada, Shape::Tiny) => dense(256, 4, 4, 512, 512),
            (Arch::Dream, Shape::Tiny) => dense(256, 4, 2, 768, 512),
            (Arch::LladaMoe, Shape::Tiny) => Dims {
                n_expert: 8,
                n_expert_used: 2,
                n_ff_exp: 256,
                ..dense(256, 4, 4, 512, 512)
            },
            // Q is wider than the embedding (4 heads of 128 over d=256), as in Qwen3-MoE.
            (Arch::Rnd1, Shape::Tiny) => Dims {
                n_expert: 8,
                n_expert_used: 3,
                n_ff_exp: 256,
                head_dim: 128,
                ..dense(256, 4, 2, 768, 512)
            },
            (Arch::Llada2, Shape::Tiny) => Dims {
                n_expert: 16,
                n_expert_used: 4,
                n_ff_exp: 256,
                n_expert_shared: 1,
                n_ff_shexp: 256,
                n_dense_lead: 1,
                n_group: 4,
                n_group_used: 2,
                ..llada2(256, 4, 2, 64, 512, 512)
            },
            // Sliding layers' heads; the global layers' are twice as wide over a quarter of
            // the KV heads (fixture::gemma).
            (Arch::DiffusionGemma, Shape::Tiny) => Dims {
                n_expert: 8,
                n_expert_used: 2,
                n_ff_exp: 256,
                head_dim: 64,
                ..dense(256, 4, 2, 512, 512)
            },
            (Arch::DiffusionGemma, _) | (_, Shape::DiffusionGemma26b) => Dims {
                n_expert: 128,
                n_expert_used: 8,
                n_ff_exp: 704,
                head_dim: 256,
                ..dense(2816, 16, 8, 2112, 262_144)
            },
            (Arch::Llada2, _) | (_, Shape::Llada2Mini) => Dims {
                n_expert: 256,
                n_expert_used: 8,
                n_ff_exp: 512,
                n_expert_shared: 1,
                n_ff_shexp: 512,
                n_dense_lead: 1,
                n_group: 8,
                n_group_used: 4,
                ..llada2(2048, 16, 4, 128, 5120, 157_184)
            },
            (Arch::Rnd1, _) | (_, Shape::Rnd1_30b) => Dims {
                n_expert: 128,
                n_expert_used: 8,
                n_ff_exp: 768,
                head_dim: 128,
                ..dense(2048, 32, 4, 6144, 151_936)
            },
            (Arch::LladaMoe, _) | (_, Shape::LladaMoe7b) => Dims {
                n_expert: 64,
                n_expert_used: 8,
                n_ff_exp: 1024,
                ..dense(2048, 16, 16, 8192, 157_184)
            },
            (_, Shape::Llada8b) => dense(4096, 32, 32, 12_288, 126_464),
            (_, Shape::Dream7b) => dense(3584, 28, 4, 18_944, 152_064),
        };
        FixtureSpec {
            arch,
            dims,
            n_layer,
            quant,
            tied: false,
            seed: 0,
            bailingmoe2_twin: false,
        }
    }

    /// The canonical mask token id of the architecture, or the last token at small sizes.
    pub fn mask_token_id(&self) -> u32 {
        let real = match self.arch {
            Arch::Llada => 126_336,
            Arch::Dream => 151_666,
            Arch::LladaMoe | Arch::Llada2 => 156_895,
            Arch::Rnd1 => 151_669,
            // DiffusionGemma's `<mask>` (its sampler never uses it).
            Arch::DiffusionGemma => 4,
        };
        if real < self.dims.n_vocab {
            real as u32
        } else {
            (self.dims.n_vocab - 1) as u32
        }
    }
}

/// SplitMix64: small, fast, deterministic.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Approximately standard normal (sum of four uniforms).
    fn normal(&mut self) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * 3.0f32.sqrt()
    }
    fn fill(&mut self, out: &mut [u8]) {
        for c in out.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
}

/// Random bytes of an `n x k` matrix of `ty` whose weights have standard deviation
/// about `sigma`.
fn random_matrix(rng: &mut Rng, ty: GgmlType, n: usize, k: usize, sigma: f32) -> Result<Vec<u8>> {
    let count = n * k;
    let mut out = Vec::with_capacity(count * ty.type_size() / ty.block_size());
    match ty {
        GgmlType::F32 => (0..count).for_each(|_| out.extend((rng.normal() * sigma).to_le_bytes())),
        GgmlType::F16 => (0..count)
            .for_each(|_| out.extend(f16::from_f32(rng.normal() * sigma).to_bits().to_le_bytes())),
        GgmlType::BF16 => (0..count)
            .for_each(|_| out.extend(bf16::from_f32(rng.normal() * sigma).to_bits().to_le_bytes())),
        GgmlType::Q8_0 => {
            let mut b = [0u8; 34];
            for _ in 0..count / 32 {
                // Uniform codes in [-128, 127] have standard deviation ~73.9.
                let d = sigma / 73.9 * (0.75 + 0.5 * rng.unit());
                b[..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
                rng.fill(&mut b[2..]);
                out.extend_from_slice(&b);
            }
        }
        GgmlType::Q4_K => {
            let mut b = [0u8; 144];
            for _ in 0..count / 256 {
                let (mut sc, mut m) = ([0u8; 8], [0u8; 8]);
                for j in 0..8 {
                    sc[j] = rng.range(32, 63) as u8;
                    // min ~ 7.5 * scale keeps each sub-block centred near zero.
                    m[j] =
                        (u32::from(sc[j]) as i32 + rng.range(0, 4) as i32 - 2).clamp(0, 63) as u8;
                }
                // Codes 0..15 have standard deviation ~4.6; scales average ~47.5.
                let d = sigma / (4.6 * 47.5);
                let dmin = d * 7.5;
                b[0..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
                b[2..4].copy_from_slice(&f16::from_f32(dmin).to_bits().to_le_bytes());
                for j in 0..4 {
                    b[4 + j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
                    b[4 + j + 4] = (m[j] & 63) | ((m[j + 4] >> 4) << 6);
                    b[4 + j + 8] = (sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4);
                }
                rng.fill(&mut b[16..]);
                out.extend_from_slice(&b);
            }
        }
        GgmlType::Q6_K => {
            let mut b = [0u8; 210];
            for _ in 0..count / 256 {
                rng.fill(&mut b[..192]);
                for s in &mut b[192..208] {
                    *s = rng.range(40, 80) as u8;
                }
                // Codes -32..31 have standard deviation ~18.5; scales average 60.
                let d = sigma / (18.5 * 60.0);
                b[208..].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
                out.extend_from_slice(&b);
            }
        }
        _ => return Err(Error::Fixture("unsupported fixture type")),
    }
    Ok(out)
}

fn vector(rng: &mut Rng, n: usize, mean: f32, sigma: f32) -> Vec<u8> {
    (0..n)
        .flat_map(|_| (mean + sigma * rng.normal()).to_le_bytes())
        .collect()
}

/// Where a tensor's bytes are drawn from: called at most once, and not at all by a hook
/// that only wants the file's shapes.
type Draw<'a> = &'a mut dyn FnMut() -> Result<Vec<u8>>;

/// What is given each tensor in turn: its name, dims, type and the draw of its bytes.
type Hook<'h> = &'h mut dyn FnMut(&str, &[u64], GgmlType, Draw<'_>) -> Result<()>;

/// Where the generator puts the file: metadata always into `file`, each tensor into
/// `file` too, or to `hook` instead (so that a preset can quantize the tensors one at a
/// time, never holding the model in F32).
struct Out<'h> {
    file: GgufWriter,
    hook: Option<Hook<'h>>,
}

impl Out<'_> {
    fn meta(&mut self, key: &str, value: impl Into<lacuna_gguf::Value>) -> Result<()> {
        self.file.add_metadata(key, value)?;
        Ok(())
    }

    /// An `[n x k]` matrix of `ty` with weights of standard deviation about `sigma`.
    fn matrix(
        &mut self,
        rng: &mut Rng,
        name: &str,
        ty: GgmlType,
        k: usize,
        n: usize,
        sigma: f32,
    ) -> Result<()> {
        self.tensor(name, &[k as u64, n as u64], ty, || {
            random_matrix(rng, ty, n, k, sigma)
        })
    }

    /// An F32 vector of `n` values about `mean` (standard deviation `sigma`).
    fn vector(&mut self, rng: &mut Rng, name: &str, n: usize, mean: f32, sigma: f32) -> Result<()> {
        self.tensor(name, &[n as u64], GgmlType::F32, || {
            Ok(vector(rng, n, mean, sigma))
        })
    }

    fn tensor(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
        mut draw: impl FnMut() -> Result<Vec<u8>>,
    ) -> Result<()> {
        match &mut self.hook {
            Some(hook) => hook(name, dims, ty, &mut draw),
            None => {
                self.file.add_tensor(name, dims, ty, draw()?)?;
                Ok(())
            }
        }
    }
}

/// Builds the fixture `spec` describes, ready to write.
pub fn build(spec: &FixtureSpec) -> Result<GgufWriter> {
    build_with(spec, None)
}

/// The fixture's metadata, and its tensors too unless `hook` takes them.
fn build_with(spec: &FixtureSpec, hook: Option<Hook<'_>>) -> Result<GgufWriter> {
    let mut out = Out {
        file: GgufWriter::new(),
        hook,
    };
    if spec.arch == Arch::DiffusionGemma {
        gemma::build(spec, &mut out)?;
    } else {
        build_into(spec, &mut out)?;
    }
    Ok(out.file)
}

fn build_into(spec: &FixtureSpec, w: &mut Out<'_>) -> Result<()> {
    let d = spec.dims;
    if d.n_embd % 256 != 0 || d.n_head == 0 || d.n_head_kv == 0 || d.n_head % d.n_head_kv != 0 {
        return Err(Error::Fixture(
            "n_embd must be a multiple of 256 and heads divide evenly",
        ));
    }
    if spec.n_layer == 0 || d.n_vocab < vocab::MIN_VOCAB {
        return Err(Error::Fixture("need at least one layer and 260 tokens"));
    }
    if spec.arch.is_moe() != (d.n_expert > 0) {
        return Err(Error::Fixture("experts are for the MoE architectures only"));
    }
    if spec.bailingmoe2_twin && spec.arch != Arch::Llada2 {
        return Err(Error::Fixture("the bailingmoe2 twin is LLaDA2's layout"));
    }
    let arch = if spec.bailingmoe2_twin {
        "bailingmoe2"
    } else {
        spec.arch.name()
    };
    let key = |s: &str| format!("{arch}.{s}");
    let hd = d.head();
    w.meta("general.architecture", arch)?;
    w.meta(
        "general.name",
        format!("lacuna fixture {arch} {}", spec.quant.name()).as_str(),
    )?;
    w.meta("general.file_type", 1u32)?;
    w.meta(&key("vocab_size"), d.n_vocab as u32)?;
    w.meta(&key("context_length"), 4096u32)?;
    w.meta(&key("embedding_length"), d.n_embd as u32)?;
    w.meta(&key("block_count"), spec.n_layer as u32)?;
    w.meta(&key("feed_forward_length"), d.n_ff as u32)?;
    w.meta(&key("attention.head_count"), d.n_head as u32)?;
    w.meta(&key("attention.head_count_kv"), d.n_head_kv as u32)?;
    if d.head_dim != 0 {
        w.meta(&key("attention.key_length"), hd as u32)?;
        w.meta(&key("attention.value_length"), hd as u32)?;
    }
    let (base, eps) = match spec.arch {
        Arch::Llada => (500_000.0f32, 1e-5f32),
        Arch::Dream => (1_000_000.0, 1e-6),
        Arch::LladaMoe => (50_000.0, 1e-5),
        Arch::Rnd1 => (1_000_000.0, 1e-6),
        Arch::Llada2 => (600_000.0, 1e-6),
        Arch::DiffusionGemma => unreachable!("built by fixture::gemma"),
    };
    w.meta(&key("rope.freq_base"), base)?;
    w.meta(&key("attention.layer_norm_rms_epsilon"), eps)?;
    w.meta(&key("rope.dimension_count"), d.rot() as u32)?;
    // LLaDA2's converter writes no causal key (its attention is block-causal).
    if spec.arch != Arch::Llada2 {
        w.meta(&key("attention.causal"), false)?;
    }
    if spec.arch.is_moe() {
        w.meta(&key("expert_count"), d.n_expert as u32)?;
        w.meta(&key("expert_used_count"), d.n_expert_used as u32)?;
        w.meta(&key("expert_feed_forward_length"), d.n_ff_exp as u32)?;
    }
    if spec.arch == Arch::Llada2 {
        // As the BailingMoE-v2 converter writes them (LLaDA2.0-mini: sigmoid gating,
        // normalised weights times 2.5, 8 groups of which 4 are used).
        w.meta(&key("leading_dense_block_count"), d.n_dense_lead as u32)?;
        w.meta(&key("expert_shared_count"), d.n_expert_shared as u32)?;
        w.meta(
            &key("expert_shared_feed_forward_length"),
            d.n_ff_shexp as u32,
        )?;
        w.meta(&key("expert_weights_scale"), 2.5f32)?;
        w.meta(&key("expert_weights_norm"), true)?;
        w.meta(&key("expert_gating_func"), 2u32)?;
        w.meta(&key("expert_group_count"), d.n_group as u32)?;
        w.meta(&key("expert_group_used_count"), d.n_group_used as u32)?;
    }
    // Dream's and RND1's converters write no shift key (llama-diffusion-cli: shifted).
    if !matches!(spec.arch, Arch::Dream | Arch::Rnd1) {
        w.meta("diffusion.shift_logits", false)?;
    }
    vocab::add_vocab(&mut w.file, d.n_vocab, spec.mask_token_id())?;

    let mut rng = Rng(spec.seed ^ 0x1ACB_4A00);
    let (main, high) = (spec.quant.main(), spec.quant.high());
    let sig = |k: usize| 1.0 / (k as f32).sqrt();
    w.matrix(
        &mut rng,
        "token_embd.weight",
        main,
        d.n_embd,
        d.n_vocab,
        1.0,
    )?;
    w.vector(&mut rng, "output_norm.weight", d.n_embd, 1.0, 0.1)?;
    if !spec.tied {
        w.matrix(
            &mut rng,
            "output.weight",
            high,
            d.n_embd,
            d.n_vocab,
            2.0 * sig(d.n_embd),
        )?;
    }
    let (q_dim, kv_dim) = (d.n_head * hd, d.n_head_kv * hd);
    for il in 0..spec.n_layer {
        let p = |s: &str| format!("blk.{il}.{s}");
        w.vector(&mut rng, &p("attn_norm.weight"), d.n_embd, 1.0, 0.1)?;
        if spec.arch.fused_qkv() {
            // Q and K rows at 2/sqrt(k), V rows at 1/sqrt(k), in one tensor: drawn as two
            // matrices of the same type, concatenated along the output rows.
            w.tensor(
                &p("attn_qkv.weight"),
                &[d.n_embd as u64, (q_dim + 2 * kv_dim) as u64],
                main,
                || {
                    let sigma = sig(d.n_embd);
                    let mut qk =
                        random_matrix(&mut rng, main, q_dim + kv_dim, d.n_embd, 2.0 * sigma)?;
                    qk.extend(random_matrix(&mut rng, main, kv_dim, d.n_embd, sigma)?);
                    Ok(qk)
                },
            )?;
        } else {
            w.matrix(
                &mut rng,
                &p("attn_q.weight"),
                main,
                d.n_embd,
                q_dim,
                2.0 * sig(d.n_embd),
            )?;
            w.matrix(
                &mut rng,
                &p("attn_k.weight"),
                main,
                d.n_embd,
                kv_dim,
                2.0 * sig(d.n_embd),
            )?;
            w.matrix(
                &mut rng,
                &p("attn_v.weight"),
                high,
                d.n_embd,
                kv_dim,
                sig(d.n_embd),
            )?;
        }
        if spec.arch == Arch::Dream {
            w.vector(&mut rng, &p("attn_q.bias"), q_dim, 0.0, 0.2)?;
            w.vector(&mut rng, &p("attn_k.bias"), kv_dim, 0.0, 0.2)?;
            w.vector(&mut rng, &p("attn_v.bias"), kv_dim, 0.0, 0.2)?;
        }
        if spec.arch.has_qk_norm() {
            w.vector(&mut rng, &p("attn_q_norm.weight"), hd, 1.0, 0.1)?;
            w.vector(&mut rng, &p("attn_k_norm.weight"), hd, 1.0, 0.1)?;
        }
        w.matrix(
            &mut rng,
            &p("attn_output.weight"),
            main,
            q_dim,
            d.n_embd,
            0.5 * sig(q_dim),
        )?;
        w.vector(&mut rng, &p("ffn_norm.weight"), d.n_embd, 1.0, 0.1)?;
        if spec.arch.is_moe() && il >= d.n_dense_lead {
            let (e, ff) = (d.n_expert, d.n_ff_exp);
            w.tensor(
                &p("ffn_gate_inp.weight"),
                &[d.n_embd as u64, e as u64],
                GgmlType::F32,
                || random_matrix(&mut rng, GgmlType::F32, e, d.n_embd, sig(d.n_embd)),
            )?;
            for (name, ty, k, n) in [
                ("ffn_gate_exps.weight", main, d.n_embd, ff),
                ("ffn_up_exps.weight", main, d.n_embd, ff),
                ("ffn_down_exps.weight", high, ff, d.n_embd),
            ] {
                let sigma = if name.starts_with("ffn_down") {
                    0.5 * sig(k)
                } else {
                    sig(k)
                };
                w.tensor(&p(name), &[k as u64, n as u64, e as u64], ty, || {
                    random_matrix(&mut rng, ty, n * e, k, sigma)
                })?;
            }
            if spec.arch == Arch::Llada2 {
                // Selection bias of the size a trained router's correction has next to
                // sigmoid probabilities.
                w.vector(&mut rng, &p("exp_probs_b.bias"), e, 0.0, 0.05)?;
                let sh = d.n_ff_shexp * d.n_expert_shared;
                w.matrix(
                    &mut rng,
                    &p("ffn_gate_shexp.weight"),
                    main,
                    d.n_embd,
                    sh,
                    sig(d.n_embd),
                )?;
                w.matrix(
                    &mut rng,
                    &p("ffn_up_shexp.weight"),
                    main,
                    d.n_embd,
                    sh,
                    sig(d.n_embd),
                )?;
                w.matrix(
                    &mut rng,
                    &p("ffn_down_shexp.weight"),
                    high,
                    sh,
                    d.n_embd,
                    0.5 * sig(sh),
                )?;
            }
        } else {
            w.matrix(
                &mut rng,
                &p("ffn_gate.weight"),
                main,
                d.n_embd,
                d.n_ff,
                sig(d.n_embd),
            )?;
            w.matrix(
                &mut rng,
                &p("ffn_up.weight"),
                main,
                d.n_embd,
                d.n_ff,
                sig(d.n_embd),
            )?;
            w.matrix(
                &mut rng,
                &p("ffn_down.weight"),
                high,
                d.n_ff,
                d.n_embd,
                0.5 * sig(d.n_ff),
            )?;
        }
    }
    Ok(())
}

/// The fixture of `spec` with F32 weights, quantized under `preset` the way llama-quantize
/// does it (its type per tensor, ggml's reference quantizers): the files people publish,
/// at fixture sizes. `spec.quant` is ignored.
///
/// The bytes are those of [`crate::quantize`] over the F32 fixture, but each tensor is drawn
/// and quantized in turn: only the quantized file is held, never the model in F32 (32 GB
/// at the 32-layer LLaDA-8B shape).
pub fn build_preset(spec: &FixtureSpec, preset: crate::Preset) -> Result<GgufWriter> {
    use crate::quantize::{convert, plan, quantized_metadata};
    let f32_spec = FixtureSpec {
        quant: QuantMix::F32,
        ..spec.clone()
    };
    // The shapes first (nothing drawn): llama-quantize plans over the whole file.
    let mut shapes = Vec::new();
    let header = build_with(
        &f32_spec,
        Some(&mut |name, dims, ty, _| {
            shapes.push((name.to_string(), dims.to_vec(), ty));
            Ok(())
        }),
    )?;
    let plan = plan(
        header.metadata(),
        preset,
        shapes
            .iter()
            .map(|(n, d, t)| (n.as_str(), d.as_slice(), *t)),
    )?;
    let mut tensors = Vec::with_capacity(shapes.len());
    build_with(
        &f32_spec,
        Some(&mut |name, dims, ty, draw| {
            let to = plan.type_of(name)?;
            let data = convert(name, ty, to, dims, &draw()?)?;
            tensors.push((name.to_string(), dims.to_vec(), to, data));
            Ok(())
        }),
    )?;
    tensors.sort_by(|a, b| crate::preset::quantize_order(&a.0, &b.0));
    let mut w = quantized_metadata(header.metadata(), preset)?;
    for (name, dims, ty, data) in tensors {
        w.add_tensor(&name, &dims, ty, data)?;
    }
    Ok(w)
}

#[cfg(test)]
mod tests;
