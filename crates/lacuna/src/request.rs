//! What to generate: the prompt and the sampler settings, and what comes back.

use lacuna_models::Arch;
use lacuna_sampler::{
    CachePolicy, DreamAlg, Editing, ParallelConfig, Remasking, Stats, TokenLogprob,
};
use lacuna_tokenizer::ChatMessage;

use crate::infill::InfillSearch;

/// The prompt of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Chat messages, rendered through the model's chat template (`tokenizer.chat_template`)
    /// with an assistant turn opened.
    Chat(Vec<ChatMessage>),
    /// Text used as is (no template), encoded with the vocabulary's BOS/EOS rules.
    Text(String),
    /// Token ids used as is.
    Tokens(Vec<u32>),
}

impl Prompt {
    /// A one-message chat prompt from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Prompt::Chat(vec![ChatMessage::new("user", content)])
    }
}

/// One generation: a prompt and the sampler settings.
///
/// Settings marked *LLaDA* or *Dream* belong to that sampler only; setting one for a model
/// of the other family is an [`Error::UnsupportedSetting`](crate::Error::UnsupportedSetting).
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    /// The prompt.
    pub prompt: Prompt,
    /// Tokens to generate (the canvas length after the prompt). Default 128.
    pub gen_length: usize,
    /// Denoising steps in total. Default 32. Unused in parallel mode.
    pub steps: usize,
    /// Block length of semi-autoregressive decoding; must divide `gen_length`. LLaDA: `None`
    /// means one block of `gen_length`. Dream: only with `parallel` (its official sampler
    /// has no blocks). Default `None`.
    pub block_length: Option<usize>,
    /// Token temperature; 0 is greedy. Default 0.
    pub temperature: f64,
    /// *LLaDA*: remasking strategy (default `low_confidence`).
    pub remasking: Option<Remasking>,
    /// *LLaDA*: classifier-free guidance scale (default 0, off).
    pub cfg_scale: Option<f32>,
    /// *Dream*: remasking algorithm (default `origin`).
    pub algorithm: Option<DreamAlg>,
    /// *Dream*: temperature of the position draw (default 0).
    pub alg_temp: Option<f32>,
    /// *Dream*, *LLaDA2*: nucleus threshold.
    pub top_p: Option<f64>,
    /// *Dream*, *LLaDA2*: top-k filter.
    pub top_k: Option<usize>,
    /// Fast-dLLM parallel decoding instead of the official fixed schedule.
    pub parallel: Option<ParallelConfig>,
    /// Key/value reuse between steps (Fast-dLLM's prefix and dual caches); `None` (the
    /// default) runs the whole canvas at every step, exactly. Dream needs `parallel` for it.
    pub cache: CachePolicy,
    /// Seed of the sampler's random draws.
    pub seed: u64,
    /// Run the whole schedule and keep what follows the first end token.
    pub keep_after_eos: bool,
    /// *LLaDA2*: LLaDA2.1's token-to-token editing (default none: the LLaDA2.0 loop).
    pub editing: Option<Editing>,
    /// Report each generated token's log-probability and this many alternatives
    /// ([`Output::logprobs`]); at most 20. A diffusion model has no single left-to-right
    /// distribution, so each token's figures are those of the denoising step that committed
    /// it: the log-softmax of that step's raw logits for its position (temperature 1, no
    /// top-k/top-p: the model's own distribution, as OpenAI reports it). Default `None`:
    /// nothing is computed.
    pub logprobs: Option<usize>,
    /// Infilling (fill in the middle): text that follows the generated region. The canvas
    /// is prompt, `gen_length` masks, then this text (tokenized without BOS/EOS); only the
    /// middle is denoised, every position sees the suffix, and [`Output`] holds the middle
    /// (cut at its first end token, so a short fill in a long budget reads naturally).
    /// Bidirectional models only (LLaDA, LLaDA-MoE, Dream, RND1); LLaDA2's block-causal
    /// attention never shows the suffix to the middle, so it is an
    /// [`Error::InfillUnsupported`](crate::Error::InfillUnsupported). Default `None`.
    pub suffix: Option<String>,
    /// Infilling: middle lengths to try instead of `gen_length` (empty, the default: no
    /// search). Each length runs as a whole generation with `steps` scaled to it
    /// (`ceil(steps × length / gen_length)`, rounded up to a multiple of its blocks) and
    /// `block_length` kept where it divides the length (else one block); the fill with the
    /// highest [`infill::fill_score`](crate::infill::fill_score) is returned, and
    /// [`Output::infill`] lists every candidate. Needs a `suffix`; at most
    /// [`MAX_INFILL_LENGTHS`](crate::infill::MAX_INFILL_LENGTHS) lengths.
    pub infill_lengths: Vec<usize>,
    /// Structured output: the answer must be a word of this language (a JSON Schema's, any
    /// JSON object, a regex's, one of some strings, a regular GBNF grammar's), whichever
    /// positions each step commits; see [`lacuna_sampler::constraint`]. The answer's text is
    /// then its tokens' bytes as they are (no space clean-up), the text the constraint
    /// checked. Compiled once per spec and engine (cached). Default `None`: free text.
    pub constraint: Option<lacuna_structured::Spec>,
}

impl GenerateRequest {
    /// Choice `i` of a request for several (OpenAI's `n`): the same request with the seed
    /// `seed + i` (wrapping), so the choices differ at temperature > 0 and each is what the
    /// same request with that seed gives alone.
    pub fn for_choice(&self, i: usize) -> GenerateRequest {
        GenerateRequest {
            seed: self.seed.wrapping_add(i as u64),
            ..self.clone()
        }
    }

    /// A fill-in-the-middle request: `prefix` as raw text, then `gen_length` masks, then
    /// `suffix` (see [`GenerateRequest::suffix`]); the other settings are the defaults.
    pub fn infill(prefix: impl Into<String>, suffix: impl Into<String>) -> Self {
        Self {
            suffix: Some(suffix.into()),
            ..Self::new(Prompt::Text(prefix.into()))
        }
    }

    /// The fast preset on top of these settings, for a model of `arch` (see
    /// [`fast_cache`](crate::settings::fast_cache)): Fast-dLLM's dual cache with
    /// threshold-0.9 parallel decoding in blocks of 32 (or of the whole generation when it is
    /// not a multiple of 32) for LLaDA, LLaDA-MoE and Dream; LLaDA2's exact block cache with
    /// its own threshold rule; RND1, which has neither, is left as it is.
    pub fn fast(mut self, arch: Arch) -> Self {
        let Some(cache) = crate::settings::fast_cache(arch) else {
            return self;
        };
        self.cache = cache;
        if arch != Arch::Llada2 && self.parallel.is_none() {
            self.parallel = Some(ParallelConfig::default());
        }
        if self.block_length.is_none() {
            self.block_length = crate::settings::default_block_length(arch, self.gen_length, true);
        }
        self
    }

    /// A request for `prompt` with the default settings.
    pub fn new(prompt: Prompt) -> Self {
        Self {
            prompt,
            gen_length: crate::settings::DEFAULT_GEN_LENGTH,
            steps: 32,
            block_length: None,
            temperature: 0.0,
            remasking: None,
            cfg_scale: None,
            algorithm: None,
            alg_temp: None,
            top_p: None,
            top_k: None,
            parallel: None,
            cache: CachePolicy::None,
            seed: 0,
            keep_after_eos: false,
            editing: None,
            logprobs: None,
            suffix: None,
            infill_lengths: Vec::new(),
            constraint: None,
        }
    }
}

/// Wall-clock timings of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    /// Prompt preparation (chat template, tokenization, checks), seconds.
    pub prepare_s: f64,
    /// Duration of each denoising step, milliseconds, in order (an encoder pass run before a
    /// step is not in it: see `encode_ms`).
    pub step_ms: Vec<f64>,
    /// Duration of each encoder pass, milliseconds, in order: DiffusionGemma's prompt pass,
    /// then one commit pass per finished canvas but the last. Empty for the other models.
    pub encode_ms: Vec<f64>,
    /// Everything from the call to its return, seconds.
    pub total_s: f64,
}

impl Timings {
    /// Median step time in milliseconds (0 when no step ran).
    pub fn step_ms_median(&self) -> f64 {
        median(&self.step_ms)
    }
}

/// The median of `values` (0 for none).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The result of [`Engine::generate`](crate::Engine::generate).
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The prompt as token ids (after the chat template).
    pub prompt_tokens: Vec<u32>,
    /// The generated tokens, cut before the first end token unless `keep_after_eos`.
    pub tokens: Vec<u32>,
    /// `tokens` decoded (control tokens hidden).
    pub text: String,
    /// The final canvas, prompt included.
    pub canvas: Vec<u32>,
    /// Sampler counters (steps run, denoiser calls, why it finished).
    pub stats: Stats,
    /// The mask token id (positions still holding it were never committed).
    pub mask_id: u32,
    /// Timings.
    pub timings: Timings,
    /// With [`GenerateRequest::logprobs`] set: one entry per token of `tokens`, from the
    /// step that committed it (`None` for a position left masked). `None` when not asked.
    pub logprobs: Option<Vec<Option<TokenLogprob>>>,
    /// With [`GenerateRequest::infill_lengths`]: every length tried and its score (the
    /// output is the chosen one's; `stats` and `timings` count them all). `None` otherwise.
    pub infill: Option<InfillSearch>,
}

impl Output {
    /// Generated positions committed per denoiser call (1 for the official one-token-per-step
    /// schedules; more with parallel decoding); 0 when no call ran.
    pub fn tokens_per_forward(&self) -> f64 {
        let generated = self.canvas.len() - self.prompt_tokens.len();
        let calls = self.stats.denoiser_calls;
        if calls == 0 {
            return 0.0;
        }
        let masks_left = self.canvas[self.prompt_tokens.len()..]
            .iter()
            .filter(|&&t| t == self.mask_id)
            .count();
        (generated - masks_left) as f64 / calls as f64
    }

    /// Canvas positions run through the model per denoiser call (the canvas length without a
    /// cache; the window's length on cached steps); 0 when no call ran.
    pub fn positions_per_forward(&self) -> f64 {
        let calls = self.stats.denoiser_calls;
        if calls == 0 {
            0.0
        } else {
            self.stats.positions_computed as f64 / calls as f64
        }
    }

    /// Generated canvas positions per second of the whole call (`gen_length / total_s`).
    pub fn tokens_per_s(&self) -> f64 {
        let generated = self.canvas.len() - self.prompt_tokens.len();
        if self.timings.total_s > 0.0 {
            generated as f64 / self.timings.total_s
        } else {
            0.0
        }
    }
}
