//! The request vocabulary, defined once: the settings a user can give (a CLI flag, a field of
//! the server's `diffusion` object, a struct field in a program), the presets and defaults
//! that fill in what they leave out, and the rules that join them. Front-ends only map their
//! syntax onto [`Settings`]; [`Settings::request`] turns it into the [`GenerateRequest`] for
//! a model's architecture, so `lacuna run --fast` and `"diffusion": {"fast": true}` cannot
//! mean two things.

use lacuna_models::Arch;
use lacuna_sampler::{
    CachePolicy, DreamAlg, Editing, Llada2Config, ParallelConfig, ParallelRule, Remasking,
};

use crate::request::{GenerateRequest, Prompt};

/// The most choices one request may ask for (OpenAI's `n`): they run as one batch.
pub const MAX_CHOICES: usize = 8;

/// Tokens generated when a request does not say how many.
pub const DEFAULT_GEN_LENGTH: usize = 128;

/// The block length of semi-autoregressive decoding when a request gives none (LLaDA's
/// official setting), used whenever the generation length is a multiple of it.
pub const DEFAULT_BLOCK_LENGTH: usize = 32;

/// A request's settings as a user gives them: `None`/`false` means "not said", and
/// [`Settings::request`] fills it in for the model's architecture.
///
/// ```
/// use lacuna::{CachePolicy, Prompt, Settings, models::Arch};
/// let fast = Settings { fast: true, ..Settings::default() };
/// // The fast preset is the dual cache for LLaDA and LLaDA2's exact block cache for LLaDA2.
/// let llada = fast.request(Prompt::Text("x".into()), Arch::Llada).unwrap();
/// assert_eq!(llada.cache, CachePolicy::Dual);
/// let llada2 = fast.request(Prompt::Text("x".into()), Arch::Llada2).unwrap();
/// assert_eq!(llada2.cache, CachePolicy::Prefix);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// Tokens to generate (default [`DEFAULT_GEN_LENGTH`]).
    pub gen_length: Option<usize>,
    /// Denoising steps (default: [`default_steps`]).
    pub steps: Option<usize>,
    /// Block length (default: [`default_block_length`]).
    pub block_length: Option<usize>,
    /// Token temperature (default 0, greedy).
    pub temperature: Option<f64>,
    /// Nucleus threshold (Dream, LLaDA2, RND1).
    pub top_p: Option<f64>,
    /// Top-k filter (Dream, LLaDA2, RND1).
    pub top_k: Option<usize>,
    /// Seed of the sampler's draws (default 0).
    pub seed: Option<u64>,
    /// LLaDA remasking strategy.
    pub remasking: Option<Remasking>,
    /// Dream remasking algorithm.
    pub algorithm: Option<DreamAlg>,
    /// Dream: temperature of the position draw.
    pub alg_temp: Option<f32>,
    /// LLaDA classifier-free guidance scale.
    pub cfg_scale: Option<f32>,
    /// Key/value cache policy (default: the fast preset's when `fast`, else none).
    pub cache: Option<CachePolicy>,
    /// Parallel decoding (Fast-dLLM's threshold rule unless a rule below is given).
    pub parallel: bool,
    /// Parallel rule: commit positions whose confidence reaches this.
    pub threshold: Option<f64>,
    /// Parallel rule: Fast-dLLM's factor rule with this factor.
    pub factor: Option<f64>,
    /// Parallel rule: EB-Sampler's entropy bound (nats).
    pub entropy_bound: Option<f64>,
    /// The fast preset ([`fast_cache`] plus parallel decoding where the sampler has it);
    /// each of its parts can still be set on its own.
    pub fast: bool,
    /// LLaDA2.1's token-to-token editing.
    pub editing: bool,
    /// Confidence above which editing replaces a committed token (default 0.9).
    pub editing_threshold: Option<f64>,
    /// Editing-only steps once a block has no mask (default 16).
    pub max_post_steps: Option<usize>,
    /// Run the whole schedule and keep what follows the first end token.
    pub keep_after_eos: bool,
    /// Report each generated token's log-probability with this many alternatives (0 to
    /// [`MAX_TOP_LOGPROBS`]), from the step that committed it (see
    /// [`GenerateRequest::logprobs`]). `None`: not reported.
    pub logprobs: Option<usize>,
    /// Infilling: middle lengths to search instead of `gen_length` (see
    /// [`GenerateRequest::infill_lengths`]); empty: no search.
    pub infill_lengths: Vec<usize>,
    /// Structured output ([`GenerateRequest::constraint`]).
    pub constraint: Option<lacuna_structured::Spec>,
    /// Scoring text ([`crate::likelihood`]): mask sets per estimate (default
    /// [`crate::likelihood::DEFAULT_SAMPLES`]).
    pub likelihood_samples: Option<usize>,
}

impl Settings {
    /// How to score text under these settings: [`Settings::likelihood_samples`], the seed,
    /// and [`Settings::logprobs`] alternatives per token.
    pub fn scoring(&self) -> crate::likelihood::Scoring {
        crate::likelihood::Scoring {
            samples: self
                .likelihood_samples
                .unwrap_or(crate::likelihood::DEFAULT_SAMPLES),
            seed: self.seed.unwrap_or(0),
            top: self.logprobs.unwrap_or(0),
        }
    }
}

/// Most alternatives [`Settings::logprobs`] may ask for (OpenAI's `top_logprobs` limit).
pub const MAX_TOP_LOGPROBS: usize = lacuna_sampler::logprob::MAX_TOP_LOGPROBS;

/// A combination of settings that cannot work, found before the model is asked. Each names
/// the setting at fault by its canonical name (the [`Settings`] field), which a front-end
/// spells its own way through [`SettingsError::message`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SettingsError {
    /// A count that must be positive is 0.
    Zero {
        /// The setting.
        setting: &'static str,
    },
    /// More than one parallel rule.
    SeveralRules,
    /// A parallel rule without parallel decoding.
    NeedsParallel {
        /// The rule given.
        setting: &'static str,
    },
    /// An editing option without editing.
    NeedsEditing {
        /// The option given.
        setting: &'static str,
    },
    /// The fast preset with classifier-free guidance (whose unconditional pass runs on
    /// another canvas, which the dual cache does not hold).
    FastWithCfg,
    /// The fast preset on a sampler that has neither blocks nor a cache (RND1).
    FastUnsupported {
        /// The model's architecture.
        arch: Arch,
    },
    /// More log-probability alternatives than [`MAX_TOP_LOGPROBS`].
    TooManyLogprobs {
        /// The number asked for.
        requested: usize,
    },
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(&|name| format!("`{name}`")))
    }
}

impl std::error::Error for SettingsError {}

impl SettingsError {
    /// The setting to blame (a [`Settings`] field name); `None` when it is a combination.
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            SettingsError::Zero { setting }
            | SettingsError::NeedsParallel { setting }
            | SettingsError::NeedsEditing { setting } => Some(setting),
            SettingsError::FastWithCfg => Some("cfg_scale"),
            SettingsError::SeveralRules => None,
            SettingsError::FastUnsupported { .. } => Some("fast"),
            SettingsError::TooManyLogprobs { .. } => Some("logprobs"),
        }
    }

    /// The message, with every setting's name written by `spell` (`--cfg-scale` for the
    /// CLI, `diffusion.cfg_scale` for the server).
    pub fn message(&self, spell: &dyn Fn(&str) -> String) -> String {
        let s = spell;
        match self {
            SettingsError::Zero { setting } => format!("{} must be at least 1", s(setting)),
            SettingsError::SeveralRules => format!(
                "give at most one of {}, {}, {}",
                s("threshold"),
                s("factor"),
                s("entropy_bound")
            ),
            SettingsError::NeedsParallel { setting } => format!(
                "{} is a parallel-decoding rule: the rules {}, {} and {} need {} (or {})",
                s(setting),
                s("threshold"),
                s("factor"),
                s("entropy_bound"),
                s("parallel"),
                s("fast")
            ),
            SettingsError::NeedsEditing { setting } => {
                format!("{} needs {}", s(setting), s("editing"))
            }
            SettingsError::FastWithCfg => format!(
                "{} (dual cache) cannot be combined with {}: the unconditional pass runs on \
                 another canvas; use {} none with {}",
                s("fast"),
                s("cfg_scale"),
                s("cache"),
                s("cfg_scale")
            ),
            SettingsError::FastUnsupported { arch } => format!(
                "{} does not apply to {arch}: its sampler denoises the whole canvas with \
                 neither blocks nor a key/value cache",
                s("fast")
            ),
            SettingsError::TooManyLogprobs { requested } => format!(
                "{} must be at most {MAX_TOP_LOGPROBS}, got {requested}",
                s("logprobs")
            ),
        }
    }
}

/// The cache the fast preset picks for `arch`: Fast-dLLM's dual cache for the bidirectional
/// block samplers (LLaDA, LLaDA-MoE, Dream), LLaDA2's exact block cache (`prefix` over its
/// block-causal attention: finished blocks never change); `None` for RND1, whose sampler has
/// no blocks and no cache.
pub fn fast_cache(arch: Arch) -> Option<CachePolicy> {
    match arch {
        Arch::Llada | Arch::LladaMoe | Arch::Dream => Some(CachePolicy::Dual),
        Arch::Llada2 => Some(CachePolicy::Prefix),
        Arch::Rnd1 | Arch::DiffusionGemma => None,
    }
}

/// The block length for `arch` when a request gives none: [`DEFAULT_BLOCK_LENGTH`] (or one
/// block of the whole generation when `gen_length` is not a multiple of it) for the
/// block-wise samplers, and for Dream in parallel mode; `None` (no blocks) otherwise.
pub fn default_block_length(arch: Arch, gen_length: usize, parallel: bool) -> Option<usize> {
    let blocks = match arch {
        Arch::Llada | Arch::LladaMoe | Arch::Llada2 => true,
        Arch::Dream => parallel,
        Arch::Rnd1 | Arch::DiffusionGemma => false,
    };
    blocks.then_some(if gen_length % DEFAULT_BLOCK_LENGTH == 0 {
        DEFAULT_BLOCK_LENGTH
    } else {
        gen_length
    })
}

/// The denoising steps for `arch` when a request gives none. LLaDA2 counts steps per block
/// (its official default, 32); the others take 4 tokens per step (32 steps for 128 tokens),
/// rounded up to a multiple of the number of blocks.
pub fn default_steps(arch: Arch, gen_length: usize, block_length: Option<usize>) -> usize {
    if arch == Arch::Llada2 {
        return Llada2Config::default().steps;
    }
    if arch == Arch::DiffusionGemma {
        // Steps per canvas: the official cap (the sampler stops earlier once confident).
        return lacuna_sampler::EntropyBoundConfig::default().max_steps;
    }
    let steps = (gen_length / 4).max(1);
    match block_length.filter(|&b| b > 0 && gen_length % b == 0) {
        Some(b) => {
            let blocks = gen_length / b;
            steps.div_ceil(blocks) * blocks
        }
        None => steps,
    }
}

impl Settings {
    /// The parallel rule the settings ask for (`None`: no parallel decoding), checked: at
    /// most one rule, and a rule only with parallel decoding. `parallel` is whether the
    /// request decodes in parallel once the presets are applied.
    pub fn parallel_rule(&self, parallel: bool) -> Result<Option<ParallelRule>, SettingsError> {
        let rules = [
            ("threshold", self.threshold.map(ParallelRule::Threshold)),
            ("factor", self.factor.map(ParallelRule::Factor)),
            (
                "entropy_bound",
                self.entropy_bound.map(ParallelRule::EntropyBound),
            ),
        ];
        let mut given = rules.iter().filter_map(|&(n, r)| r.map(|r| (n, r)));
        let first = given.next();
        if given.next().is_some() {
            return Err(SettingsError::SeveralRules);
        }
        match (first, parallel) {
            (Some((setting, _)), false) => Err(SettingsError::NeedsParallel { setting }),
            (Some((_, rule)), true) => Ok(Some(rule)),
            (None, true) => Ok(Some(ParallelConfig::default().rule)),
            (None, false) => Ok(None),
        }
    }

    /// The [`GenerateRequest`] for `prompt` on a model of `arch`: the fast preset applied
    /// where asked, every default filled in. Sampler-specific checks (a Dream setting for
    /// LLaDA, a block length that does not divide the length) come later, from
    /// [`Engine::prepare`](crate::Engine::prepare).
    pub fn request(&self, prompt: Prompt, arch: Arch) -> Result<GenerateRequest, SettingsError> {
        for (setting, value) in [
            ("gen_length", self.gen_length),
            ("steps", self.steps),
            ("block_length", self.block_length),
        ] {
            if value == Some(0) {
                return Err(SettingsError::Zero { setting });
            }
        }
        if self.infill_lengths.contains(&0) {
            return Err(SettingsError::Zero {
                setting: "infill_lengths",
            });
        }
        if let Some(requested) = self.logprobs.filter(|&k| k > MAX_TOP_LOGPROBS) {
            return Err(SettingsError::TooManyLogprobs { requested });
        }
        if self.fast {
            if fast_cache(arch).is_none() {
                return Err(SettingsError::FastUnsupported { arch });
            }
            if self.cfg_scale.is_some_and(|c| c != 0.0) {
                return Err(SettingsError::FastWithCfg);
            }
        }
        if !self.editing {
            if self.editing_threshold.is_some() {
                return Err(SettingsError::NeedsEditing {
                    setting: "editing_threshold",
                });
            }
            if self.max_post_steps.is_some() {
                return Err(SettingsError::NeedsEditing {
                    setting: "max_post_steps",
                });
            }
        }
        // LLaDA2's official sampler already commits by a confidence threshold (0.95): the
        // fast preset keeps it, and a threshold given replaces its value.
        let parallel = self.parallel
            || (self.fast && arch != Arch::Llada2)
            || (arch == Arch::Llada2 && self.threshold.is_some());
        let rule = self.parallel_rule(parallel)?;
        let gen_length = self.gen_length.unwrap_or(DEFAULT_GEN_LENGTH);
        let block_length = self
            .block_length
            .or_else(|| default_block_length(arch, gen_length, parallel));
        let mut r = GenerateRequest::new(prompt);
        r.gen_length = gen_length;
        r.block_length = block_length;
        r.steps = self
            .steps
            .unwrap_or_else(|| default_steps(arch, gen_length, block_length));
        r.temperature = self.temperature.unwrap_or(0.0);
        r.top_p = self.top_p;
        r.top_k = self.top_k;
        r.seed = self.seed.unwrap_or(0);
        r.remasking = self.remasking;
        r.algorithm = self.algorithm;
        r.alg_temp = self.alg_temp;
        r.cfg_scale = self.cfg_scale;
        r.parallel = rule.map(|rule| ParallelConfig { rule });
        r.cache = match self.cache {
            Some(c) => c,
            None if self.fast => fast_cache(arch).unwrap_or_default(),
            None => CachePolicy::None,
        };
        r.editing = self.editing.then(|| {
            let d = Editing::default();
            Editing {
                threshold: self.editing_threshold.unwrap_or(d.threshold),
                max_post_steps: self.max_post_steps.unwrap_or(d.max_post_steps),
                ..d
            }
        });
        r.keep_after_eos = self.keep_after_eos;
        r.logprobs = self.logprobs;
        r.infill_lengths = self.infill_lengths.clone();
        r.constraint = self.constraint.clone();
        Ok(r)
    }
}

#[cfg(test)]
mod tests;
