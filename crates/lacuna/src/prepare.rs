//! Turning a [`GenerateRequest`] into checked sampler input, with no access to the model's
//! weights: the prompt through the chat template and tokenizer, the sampler settings for the
//! model's family, the context check. [`crate::SharedEngine`] does this on the caller's
//! thread while another request's forward pass holds the model.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use lacuna_models::{Arch, EbDefaults};
use lacuna_sampler::{
    CachePolicy, Common, ConstraintRef, DreamConfig, EntropyBoundConfig, Llada2Config, LladaConfig,
    ParallelRule, Rnd1Config,
};
use lacuna_structured::{Compiled, ConstraintCache, Limits, Spec, Vocabulary};
use lacuna_tokenizer::{ChatTemplate, TokenAttr, Tokenizer};

use crate::request::{GenerateRequest, Prompt};
use crate::{Error, Result};

/// A request checked against a model: its prompt tokens and validated sampler settings.
/// Made by [`Engine::prepare`](crate::Engine::prepare) or
/// [`SharedEngine::prepare`](crate::SharedEngine::prepare); run by the engine that made it.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(crate) prompt: Vec<u32>,
    pub(crate) sampler: SamplerConfig,
    pub(crate) seed: u64,
    pub(crate) gen_length: usize,
    pub(crate) steps: usize,
    pub(crate) prepare_s: f64,
    /// An infill length search: one prepared generation per length (then `sampler` is the
    /// longest's, and `gen_length`/`steps` the longest and the sum).
    pub(crate) search: Option<Search>,
}

/// The candidates of an infill length search, the log-probabilities the request asked for,
/// and the end tokens that close a fill.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub(crate) candidates: Vec<Prepared>,
    pub(crate) logprobs: Option<usize>,
    pub(crate) eos_ids: Vec<u32>,
}

impl Prepared {
    /// The prompt as token ids (after the chat template).
    pub fn prompt_tokens(&self) -> &[u32] {
        &self.prompt
    }

    /// Tokens to generate (an infill length search: its longest length).
    pub fn gen_length(&self) -> usize {
        self.gen_length
    }

    /// Denoising steps of the schedule (an upper bound in parallel mode; an infill length
    /// search: all its candidates').
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The alternatives per token when log-probabilities were asked for
    /// ([`GenerateRequest::logprobs`](crate::GenerateRequest::logprobs)).
    pub fn logprobs(&self) -> Option<usize> {
        match &self.search {
            Some(search) => search.logprobs,
            None => self.sampler.common().logprobs,
        }
    }

    /// Whether the answer is constrained (structured output): its text is then its tokens'
    /// bytes as they are.
    pub fn constrained(&self) -> bool {
        self.sampler.common().constraint.is_some()
    }

    /// The block length the model's block-causal attention must use (LLaDA2: the sampler's
    /// block length, as its generate code builds the mask); `None` for the others.
    pub fn attention_block(&self) -> Option<usize> {
        match &self.sampler {
            SamplerConfig::Llada2(c) => Some(c.block_length),
            _ => None,
        }
    }
}

/// The sampler of the model's family, with its settings.
#[derive(Debug, Clone)]
pub(crate) enum SamplerConfig {
    Llada(LladaConfig),
    Dream(DreamConfig),
    Llada2(Llada2Config),
    Rnd1(Rnd1Config),
    DiffusionGemma(EntropyBoundConfig),
}

impl SamplerConfig {
    /// The settings every sampler shares.
    pub(crate) fn common(&self) -> &Common {
        match self {
            SamplerConfig::Llada(c) => &c.common,
            SamplerConfig::Dream(c) => &c.common,
            SamplerConfig::Llada2(c) => &c.common,
            SamplerConfig::Rnd1(c) => &c.common,
            SamplerConfig::DiffusionGemma(c) => &c.common,
        }
    }
}

/// The structured-output constraints of one model: its vocabulary as the constraint
/// compiler reads it (built at the first constrained request) and the compiled ones.
#[derive(Debug)]
pub(crate) struct Constraints {
    vocab: OnceLock<Vocabulary>,
    cache: ConstraintCache,
}

/// Bytes of compiled constraints a model keeps.
const CONSTRAINT_CACHE_BYTES: usize = 256 << 20;

impl Constraints {
    pub(crate) fn new() -> Self {
        Constraints {
            vocab: OnceLock::new(),
            cache: ConstraintCache::new(CONSTRAINT_CACHE_BYTES, Limits::default()),
        }
    }

    /// The compiled `spec` for this model's vocabulary (cached).
    fn get(&self, spec: &Spec, tokenizer: &Tokenizer, eos_ids: &[u32]) -> Result<Arc<Compiled>> {
        let vocab = self
            .vocab
            .get_or_init(|| answer_vocabulary(tokenizer, eos_ids));
        Ok(self.cache.get(spec, vocab)?.0)
    }
}

/// The tokens an answer may hold, by their bytes: ordinary and byte tokens (control,
/// user-defined and unused ones never appear in a constrained answer), and the end tokens.
fn answer_vocabulary(tokenizer: &Tokenizer, eos_ids: &[u32]) -> Vocabulary {
    let vocab = tokenizer.vocab();
    let tokens = (0..tokenizer.n_vocab() as u32)
        .map(|id| {
            let attr = vocab.token_attr(id)?;
            if !attr.contains_any(TokenAttr::NORMAL | TokenAttr::BYTE) || eos_ids.contains(&id) {
                return None;
            }
            tokenizer.token_bytes(id, false).ok().map(<[u8]>::to_vec)
        })
        .collect();
    Vocabulary::new(tokens, eos_ids.to_vec())
}

/// What preparing a request needs of a loaded model (shared, read-only).
#[derive(Debug)]
pub(crate) struct Preparer {
    pub(crate) tokenizer: Arc<Tokenizer>,
    pub(crate) template: Option<ChatTemplate>,
    pub(crate) arch: Arch,
    pub(crate) mask_id: u32,
    pub(crate) eos_ids: Vec<u32>,
    pub(crate) context: usize,
    /// DiffusionGemma: the canvas length and the file's sampler settings.
    pub(crate) gemma: Option<(usize, EbDefaults)>,
    /// Structured-output constraints, compiled and cached.
    pub(crate) constraints: Constraints,
}

impl Preparer {
    /// The prompt as token ids: chat messages through the chat template, text through the
    /// tokenizer (BOS/EOS as the vocabulary asks, special tokens parsed).
    pub(crate) fn prompt_tokens(&self, prompt: &Prompt) -> Result<Vec<u32>> {
        let vocab = self.tokenizer.n_vocab();
        match prompt {
            Prompt::Tokens(ids) => {
                if let Some((position, &token)) =
                    ids.iter().enumerate().find(|&(_, &t)| t as usize >= vocab)
                {
                    return Err(Error::PromptToken {
                        token,
                        position,
                        vocab,
                    });
                }
                Ok(ids.clone())
            }
            Prompt::Text(text) => Ok(self.tokenizer.encode(text, true, true)?),
            Prompt::Chat(messages) => {
                if messages.is_empty() {
                    return Err(Error::EmptyChat);
                }
                let template = self
                    .template
                    .as_ref()
                    .ok_or(lacuna_tokenizer::Error::NoChatTemplate)?;
                let text = template.render(messages, true)?;
                let mut ids = self.tokenizer.encode(&text, false, true)?;
                // The template usually writes BOS itself; add it only when it did not.
                if self.tokenizer.vocab().add_bos() {
                    if let Some(bos) = self.tokenizer.vocab().special().bos {
                        if ids.first() != Some(&bos) {
                            ids.insert(0, bos);
                        }
                    }
                }
                Ok(ids)
            }
        }
    }

    /// Checks `request` and builds the sampler input.
    pub(crate) fn prepare(&self, request: &GenerateRequest) -> Result<Prepared> {
        if !request.infill_lengths.is_empty() {
            return self.prepare_search(request);
        }
        let start = Instant::now();
        let prompt = self.prompt_tokens(&request.prompt)?;
        let suffix = self.suffix_tokens(request)?;
        let total = prompt.len() + request.gen_length;
        if !suffix.is_empty() && total + suffix.len() > self.context {
            return Err(Error::InfillContextOverflow {
                prompt: prompt.len(),
                gen_length: request.gen_length,
                suffix: suffix.len(),
                total: total + suffix.len(),
                context: self.context,
            });
        }
        if total > self.context {
            return Err(Error::ContextOverflow {
                prompt: prompt.len(),
                gen_length: request.gen_length,
                total,
                context: self.context,
            });
        }
        let sampler = self.sampler_config(request, suffix)?;
        Ok(Prepared {
            prompt,
            sampler,
            seed: request.seed,
            gen_length: request.gen_length,
            steps: request.steps,
            prepare_s: start.elapsed().as_secs_f64(),
            search: None,
        })
    }

    /// An infill length search: each length of `request.infill_lengths` (sorted, repeats
    /// removed) prepared as its own generation (see
    /// [`GenerateRequest::infill_lengths`]), every one checked before any runs.
    fn prepare_search(&self, request: &GenerateRequest) -> Result<Prepared> {
        let start = Instant::now();
        if request.suffix.as_deref().is_none_or(str::is_empty) {
            return Err(Error::InfillLengthsWithoutSuffix);
        }
        let mut lengths = request.infill_lengths.clone();
        lengths.sort_unstable();
        lengths.dedup();
        if lengths.len() > crate::infill::MAX_INFILL_LENGTHS {
            return Err(Error::TooManyInfillLengths {
                given: lengths.len(),
                max: crate::infill::MAX_INFILL_LENGTHS,
            });
        }
        let candidates = lengths
            .iter()
            .map(|&length| self.prepare(&crate::infill::candidate(request, length)))
            .collect::<Result<Vec<_>>>()?;
        let longest = candidates.last().expect("at least one length");
        Ok(Prepared {
            prompt: longest.prompt.clone(),
            sampler: longest.sampler.clone(),
            seed: request.seed,
            gen_length: longest.gen_length,
            steps: candidates.iter().map(|c| c.steps).sum(),
            prepare_s: start.elapsed().as_secs_f64(),
            search: Some(Search {
                eos_ids: self.eos_ids.clone(),
                candidates,
                logprobs: request.logprobs,
            }),
        })
    }

    /// The infill suffix as token ids (no BOS/EOS, special tokens parsed); empty without
    /// one. A model that cannot see a suffix refuses it.
    fn suffix_tokens(&self, request: &GenerateRequest) -> Result<Vec<u32>> {
        let Some(text) = request.suffix.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(Vec::new());
        };
        if self.arch == Arch::Llada2 {
            return Err(Error::InfillUnsupported { arch: self.arch });
        }
        Ok(self.tokenizer.encode(text, false, true)?)
    }

    /// DiffusionGemma's entropy-bound sampler: `steps` caps the steps per canvas, an
    /// `entropy_bound` rule sets the bound, the file's `diffusion.eb_*` keys (or the official
    /// defaults) the rest; every other sampler's setting is refused by name.
    fn gemma_config(&self, r: &GenerateRequest, common: Common) -> Result<SamplerConfig> {
        let arch = self.arch;
        let unsupported = |setting, belongs_to| Error::UnsupportedSetting {
            setting,
            arch,
            belongs_to,
        };
        let masked = "the masked-diffusion samplers (LLaDA, Dream, LLaDA2, RND1)";
        for (set, name) in [
            (r.remasking.is_some(), "remasking"),
            (r.cfg_scale.is_some(), "cfg_scale"),
            (r.algorithm.is_some(), "algorithm"),
            (r.alg_temp.is_some(), "alg_temp"),
            (r.top_p.is_some(), "top_p"),
            (r.top_k.is_some(), "top_k"),
            (r.block_length.is_some(), "block_length"),
            (r.cache != CachePolicy::None, "cache"),
            (r.editing.is_some(), "editing"),
            (r.logprobs.is_some(), "logprobs"),
            (
                r.temperature != 0.0,
                "temperature (DiffusionGemma runs its own schedule, 0.8 down to 0.4)",
            ),
        ] {
            if set {
                return Err(unsupported(name, masked));
            }
        }
        let eb = self
            .gemma
            .map(|(_, eb)| eb)
            .ok_or(Error::UnsupportedSetting {
                setting: "the entropy-bound sampler",
                arch,
                belongs_to: "diffusion-gemma",
            })?;
        let entropy_bound = match r.parallel.map(|p| p.rule) {
            None => f64::from(eb.entropy_bound),
            Some(ParallelRule::EntropyBound(b)) => b,
            Some(_) => {
                return Err(unsupported(
                    "threshold or factor rule",
                    "the masked-diffusion samplers (DiffusionGemma accepts by an entropy bound)",
                ));
            }
        };
        Ok(SamplerConfig::DiffusionGemma(EntropyBoundConfig {
            common,
            max_steps: r.steps,
            t_min: f64::from(eb.t_min),
            t_max: f64::from(eb.t_max),
            entropy_bound,
            stability_threshold: eb.stability_threshold,
            confidence_threshold: f64::from(eb.confidence_threshold),
        }))
    }

    /// `spec` compiled for this model (cached).
    pub(crate) fn constraint(&self, spec: &Spec) -> Result<Arc<Compiled>> {
        self.constraints.get(spec, &self.tokenizer, &self.eos_ids)
    }

    /// The sampler settings `r` asks for, for this model's sampler (`suffix`: the infill
    /// suffix's tokens); checked.
    fn sampler_config(&self, r: &GenerateRequest, suffix: Vec<u32>) -> Result<SamplerConfig> {
        let arch = self.arch;
        let unsupported = |setting, belongs_to| Error::UnsupportedSetting {
            setting,
            arch,
            belongs_to,
        };
        let constraint = match &r.constraint {
            None => None,
            Some(spec) => {
                let compiled = self.constraint(spec)?;
                compiled.check_length(r.gen_length)?;
                Some(ConstraintRef::new(compiled))
            }
        };
        let common = Common {
            gen_length: r.gen_length,
            mask_id: Some(self.mask_id),
            eos_ids: self.eos_ids.clone(),
            keep_after_eos: r.keep_after_eos,
            logprobs: r.logprobs,
            suffix,
            constraint,
        };
        let config = match arch {
            Arch::DiffusionGemma => self.gemma_config(r, common)?,
            Arch::Llada2 => {
                for (set, name, of) in [
                    (r.remasking.is_some(), "remasking", "the LLaDA sampler"),
                    (r.cfg_scale.is_some(), "cfg_scale", "the LLaDA sampler"),
                    (r.algorithm.is_some(), "algorithm", "the Dream sampler"),
                    (r.alg_temp.is_some(), "alg_temp", "the Dream sampler"),
                ] {
                    if set {
                        return Err(unsupported(name, of));
                    }
                }
                // LLaDA2's own rule is a confidence threshold (0.95 by default); a
                // Fast-dLLM threshold replaces its value, the factor rule has no place.
                let threshold = match r.parallel.map(|p| p.rule) {
                    None => Llada2Config::default().threshold,
                    Some(ParallelRule::Threshold(t)) => t,
                    Some(_) => {
                        return Err(unsupported(
                            "parallel factor rule",
                            "the LLaDA and Dream samplers (LLaDA2 takes a threshold)",
                        ));
                    }
                };
                SamplerConfig::Llada2(Llada2Config {
                    common,
                    block_length: r.block_length.unwrap_or(lacuna_models::DEFAULT_BLOCK),
                    steps: r.steps,
                    threshold,
                    temperature: r.temperature,
                    top_k: r.top_k,
                    top_p: r.top_p,
                    editing: r.editing,
                    cache: r.cache,
                })
            }
            Arch::Llada | Arch::LladaMoe => {
                for (set, name) in [
                    (r.algorithm.is_some(), "algorithm"),
                    (r.alg_temp.is_some(), "alg_temp"),
                    (r.top_p.is_some(), "top_p"),
                    (r.top_k.is_some(), "top_k"),
                ] {
                    if set {
                        return Err(unsupported(name, "the Dream sampler"));
                    }
                }
                SamplerConfig::Llada(LladaConfig {
                    common,
                    block_length: r.block_length.unwrap_or(r.gen_length),
                    steps: r.steps,
                    temperature: r.temperature,
                    cfg_scale: r.cfg_scale.unwrap_or(0.0),
                    remasking: r.remasking.unwrap_or_default(),
                    parallel: r.parallel,
                    cache: r.cache,
                })
            }
            Arch::Rnd1 => {
                for (set, name, of) in [
                    (r.remasking.is_some(), "remasking", "the LLaDA sampler"),
                    (r.cfg_scale.is_some(), "cfg_scale", "the LLaDA sampler"),
                    (r.algorithm.is_some(), "algorithm", "the Dream sampler"),
                    (r.alg_temp.is_some(), "alg_temp", "the Dream sampler"),
                    (
                        r.block_length.is_some(),
                        "block_length",
                        "the block-wise samplers",
                    ),
                    (
                        r.parallel.is_some(),
                        "parallel",
                        "the LLaDA, Dream and LLaDA2 samplers",
                    ),
                    (
                        r.cache != CachePolicy::None,
                        "cache",
                        "the block-wise samplers",
                    ),
                ] {
                    if set {
                        return Err(unsupported(name, of));
                    }
                }
                // RND1's official default is greedy at temperature 1; a temperature above 0
                // samples at it.
                SamplerConfig::Rnd1(Rnd1Config {
                    common,
                    steps: r.steps,
                    greedy: r.temperature == 0.0,
                    temperature: if r.temperature == 0.0 {
                        1.0
                    } else {
                        r.temperature
                    },
                    top_k: r.top_k,
                    top_p: r.top_p,
                })
            }
            Arch::Dream => {
                for (set, name) in [
                    (r.remasking.is_some(), "remasking"),
                    (r.cfg_scale.is_some(), "cfg_scale"),
                ] {
                    if set {
                        return Err(unsupported(name, "the LLaDA sampler"));
                    }
                }
                SamplerConfig::Dream(DreamConfig {
                    common,
                    steps: r.steps,
                    alg: r.algorithm.unwrap_or_default(),
                    alg_temp: r.alg_temp.unwrap_or(0.0),
                    temperature: r.temperature as f32,
                    top_p: r.top_p,
                    top_k: r.top_k,
                    parallel: r.parallel,
                    block_length: r.block_length,
                    cache: r.cache,
                    ..DreamConfig::default()
                })
            }
        };
        match &config {
            SamplerConfig::Llada(c) => c.validate()?,
            SamplerConfig::Dream(c) => c.validate()?,
            SamplerConfig::Llada2(c) => c.validate()?,
            SamplerConfig::Rnd1(c) => c.validate()?,
            SamplerConfig::DiffusionGemma(c) => {
                c.validate()?;
                0
            }
        };
        if r.editing.is_some() && !matches!(config, SamplerConfig::Llada2(_)) {
            return Err(unsupported("editing", "the LLaDA2 sampler"));
        }
        Ok(config)
    }
}
