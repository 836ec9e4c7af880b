//! [`Engine`]: a loaded model with its tokenizer, chat template and worker threads.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use lacuna_gguf::GgufFile;
use lacuna_models::{Arch, CpuBackend, Model};
use lacuna_sampler::{DreamConfig, LladaConfig, StepView, Xoshiro256PlusPlus, dream, llada};
use lacuna_tokenizer::{ChatTemplate, Tokenizer};

use crate::request::{GenerateRequest, Output, Prompt, Timings};
use crate::{Error, Result};

/// How an [`Engine`] runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Worker threads of the kernels; `None` means one per logical core.
    pub threads: Option<usize>,
}

/// A model ready to generate: weights on the CPU backend, the tokenizer and chat template
/// read from the same GGUF file, the mask and end tokens, and a private thread pool.
///
/// ```no_run
/// use lacuna::{Engine, EngineOptions, GenerateRequest, Prompt};
/// let mut engine = Engine::load("llada-8b-instruct-q4_k_m.gguf", &EngineOptions::default())?;
/// let request = GenerateRequest::new(Prompt::user("Why is the sky blue?"));
/// let out = engine.generate(&request, |step| {
///     eprintln!("step {}/{}: committed {:?}", step.step + 1, step.total_steps, step.committed);
/// })?;
/// println!("{}", out.text);
/// # Ok::<(), lacuna::Error>(())
/// ```
pub struct Engine {
    model: Model<CpuBackend>,
    tokenizer: Arc<Tokenizer>,
    template: Option<ChatTemplate>,
    mask_id: u32,
    eos_ids: Vec<u32>,
    pool: rayon::ThreadPool,
    load_s: f64,
    name: String,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("name", &self.name)
            .field("arch", &self.arch())
            .field("mask_id", &self.mask_id)
            .field("threads", &self.threads())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Memory-maps the GGUF file at `path` and loads model, tokenizer and chat template.
    pub fn load(path: impl AsRef<Path>, options: &EngineOptions) -> Result<Engine> {
        let start = Instant::now();
        let path = path.as_ref();
        let file = GgufFile::open(path).map_err(|source| match source {
            io @ lacuna_gguf::Error::Io { .. } => Error::Gguf(io),
            source => Error::Open {
                path: path.display().to_string(),
                source,
            },
        })?;
        Self::build(file, options, start)
    }

    /// Loads a GGUF file already in memory (or built by a fixture generator).
    pub fn from_gguf(file: GgufFile, options: &EngineOptions) -> Result<Engine> {
        Self::build(file, options, Instant::now())
    }

    fn build(file: GgufFile, options: &EngineOptions, start: Instant) -> Result<Engine> {
        let threads = match options.threads {
            Some(0) => return Err(Error::ZeroThreads),
            Some(n) => n,
            None => 0, // rayon: one per logical core
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("lacuna-{i}"))
            .build()
            .map_err(|source| Error::ThreadPool { threads, source })?;
        // Weight repacking is parallel: run it on the engine's own pool.
        let model = pool.install(|| Model::load(file, CpuBackend::new()))?;
        let tokenizer = Tokenizer::from_gguf(model.file())?;
        if tokenizer.n_vocab() != model.vocab_size() {
            return Err(Error::VocabMismatch {
                tokenizer: tokenizer.n_vocab(),
                model: model.vocab_size(),
            });
        }
        let template = match ChatTemplate::from_tokenizer(&tokenizer) {
            Ok(t) => Some(t),
            Err(lacuna_tokenizer::Error::NoChatTemplate) => None,
            Err(e) => return Err(e.into()),
        };
        let special = tokenizer.vocab().special();
        let mask_id = model
            .mask_token_id()
            .or(special.mask)
            .ok_or(Error::NoMaskToken { arch: model.arch() })?;
        let mut eos_ids: Vec<u32> = tokenizer.vocab().eog_ids().to_vec();
        if eos_ids.is_empty() {
            eos_ids.extend(special.eos);
        }
        eos_ids.retain(|&id| id != mask_id);
        let name = model
            .file()
            .metadata()
            .get::<&str>("general.name")
            .map_or_else(|_| model.arch().name().to_string(), str::to_string);
        Ok(Engine {
            model,
            tokenizer: Arc::new(tokenizer),
            template,
            mask_id,
            eos_ids,
            pool,
            load_s: start.elapsed().as_secs_f64(),
            name,
        })
    }

    /// The architecture (which picks the sampler: LLaDA for `llada`/`llada-moe`, Dream for
    /// `dream`).
    pub fn arch(&self) -> Arch {
        self.model.arch()
    }

    /// `general.name`, or the architecture when the file has none.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model.
    pub fn model(&self) -> &Model<CpuBackend> {
        &self.model
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The tokenizer, shared: a step callback can decode with it while
    /// [`Engine::generate`] borrows the engine.
    pub fn shared_tokenizer(&self) -> Arc<Tokenizer> {
        Arc::clone(&self.tokenizer)
    }

    /// Whether the file has a chat template ([`Prompt::Chat`] needs one).
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// The mask token id.
    pub fn mask_token_id(&self) -> u32 {
        self.mask_id
    }

    /// The end tokens generation stops at.
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos_ids
    }

    /// The longest canvas (prompt + generated tokens) the model accepts.
    pub fn context_length(&self) -> usize {
        self.model.context_length()
    }

    /// Worker threads of the engine's pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Seconds [`Engine::load`] took (map, check, repack weights, build tokenizer).
    pub fn load_s(&self) -> f64 {
        self.load_s
    }

    pub(crate) fn set_load_s(&mut self, s: f64) {
        self.load_s = s;
    }

    /// The prompt of `request` as token ids: chat messages through the chat template, text
    /// through the tokenizer (BOS/EOS as the vocabulary asks, special tokens parsed).
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<Vec<u32>> {
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

    /// Generates for `request`, calling `on_step` after every denoising step with a view of
    /// the canvas (the whole canvas, the positions committed this step and their
    /// confidences). Runs on the engine's thread pool.
    pub fn generate<F>(&mut self, request: &GenerateRequest, mut on_step: F) -> Result<Output>
    where
        F: FnMut(&StepView<'_>) + Send,
    {
        let start = Instant::now();
        let prompt = self.prompt_tokens(&request.prompt)?;
        let total = prompt.len() + request.gen_length;
        if total > self.context_length() {
            return Err(Error::ContextOverflow {
                prompt: prompt.len(),
                gen_length: request.gen_length,
                total,
                context: self.context_length(),
            });
        }
        let sampler = self.sampler_config(request)?;
        let prepare_s = start.elapsed().as_secs_f64();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(request.seed);
        let mut step_ms = Vec::with_capacity(request.steps);
        let model = &mut self.model;
        let generation = self.pool.install(|| {
            let mut last = Instant::now();
            let mut step = |view: &StepView<'_>| {
                step_ms.push(last.elapsed().as_secs_f64() * 1e3);
                on_step(view);
                last = Instant::now();
            };
            match &sampler {
                SamplerConfig::Llada(c) => llada::generate(model, &prompt, c, &mut rng, &mut step),
                SamplerConfig::Dream(c) => dream::generate(model, &prompt, c, &mut rng, &mut step),
            }
        })?;
        let text = self.tokenizer.decode(&generation.tokens)?;
        Ok(Output {
            prompt_tokens: prompt,
            tokens: generation.tokens,
            text,
            canvas: generation.canvas,
            stats: generation.stats,
            mask_id: self.mask_id,
            timings: Timings {
                prepare_s,
                step_ms,
                total_s: start.elapsed().as_secs_f64(),
            },
        })
    }

    /// The sampler settings `request` asks for, for this model's sampler; checked.
    fn sampler_config(&self, r: &GenerateRequest) -> Result<SamplerConfig> {
        let arch = self.arch();
        let unsupported = |setting, belongs_to| Error::UnsupportedSetting {
            setting,
            arch,
            belongs_to,
        };
        let config = match arch {
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
                    gen_length: r.gen_length,
                    block_length: r.block_length.unwrap_or(r.gen_length),
                    steps: r.steps,
                    temperature: r.temperature,
                    cfg_scale: r.cfg_scale.unwrap_or(0.0),
                    remasking: r.remasking.unwrap_or_default(),
                    mask_id: Some(self.mask_id),
                    eos_ids: self.eos_ids.clone(),
                    keep_after_eos: r.keep_after_eos,
                    parallel: r.parallel,
                    cache: r.cache,
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
                    gen_length: r.gen_length,
                    steps: r.steps,
                    alg: r.algorithm.unwrap_or_default(),
                    alg_temp: r.alg_temp.unwrap_or(0.0),
                    temperature: r.temperature as f32,
                    top_p: r.top_p,
                    top_k: r.top_k,
                    mask_id: Some(self.mask_id),
                    eos_ids: self.eos_ids.clone(),
                    keep_after_eos: r.keep_after_eos,
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
        };
        Ok(config)
    }
}

/// The sampler of the model's family, with its settings.
enum SamplerConfig {
    Llada(LladaConfig),
    Dream(DreamConfig),
}
