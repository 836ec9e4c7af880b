//! [`Engine`]: a loaded model with its tokenizer, chat template and worker threads.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use lacuna_gguf::GgufFile;
use lacuna_models::{AnyModel, Arch, Backend, Device, Model};
use lacuna_sampler::StepView;
use lacuna_tokenizer::{ChatTemplate, Tokenizer};

use crate::prepare::{Prepared, Preparer};
use crate::request::{GenerateRequest, Output, Prompt};
use crate::{Error, Result, run};

/// How an [`Engine`] runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Worker threads of the kernels; `None` means one per logical core.
    pub threads: Option<usize>,
    /// How quantized weights are kept (default: repacked, compact only where the repacked
    /// copy would take more than three quarters of the available memory, nine tenths for a
    /// model without experts, and this CPU has the compact kernel for their type).
    pub weights: lacuna_models::WeightLayout,
    /// Where the model runs (default: a usable CUDA GPU, else the CPU).
    pub device: Device,
}

/// A model ready to generate: weights on the CPU or a CUDA GPU ([`EngineOptions::device`]), the tokenizer and chat template
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
    pub(crate) model: AnyModel,
    pub(crate) prep: Arc<Preparer>,
    pub(crate) pool: rayon::ThreadPool,
    load_s: f64,
    name: String,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("name", &self.name)
            .field("arch", &self.arch())
            .field("mask_id", &self.prep.mask_id)
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
        let model = pool.install(|| AnyModel::load(file, options.device, options.weights))?;
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
        let prep = Arc::new(Preparer {
            tokenizer: Arc::new(tokenizer),
            template,
            arch: model.arch(),
            mask_id,
            eos_ids,
            context: model.context_length(),
            gemma: model
                .config()
                .gemma
                .as_ref()
                .map(|g| (g.canvas_length, g.eb)),
            constraints: crate::prepare::Constraints::new(),
        });
        Ok(Engine {
            model,
            prep,
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
    pub fn model(&self) -> &AnyModel {
        &self.model
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.prep.tokenizer
    }

    /// The tokenizer, shared: a step callback can decode with it while
    /// [`Engine::generate`] borrows the engine.
    pub fn shared_tokenizer(&self) -> Arc<Tokenizer> {
        Arc::clone(&self.prep.tokenizer)
    }

    /// Whether the file has a chat template ([`Prompt::Chat`] needs one).
    pub fn has_chat_template(&self) -> bool {
        self.prep.template.is_some()
    }

    /// The mask token id.
    pub fn mask_token_id(&self) -> u32 {
        self.prep.mask_id
    }

    /// The end tokens generation stops at.
    pub fn eos_ids(&self) -> &[u32] {
        &self.prep.eos_ids
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

    #[cfg(feature = "demo")]
    pub(crate) fn set_load_s(&mut self, s: f64) {
        self.load_s = s;
    }

    /// The prompt of `request` as token ids: chat messages through the chat template, text
    /// through the tokenizer (BOS/EOS as the vocabulary asks, special tokens parsed).
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<Vec<u32>> {
        self.prep.prompt_tokens(prompt)
    }

    /// Logits of every canvas position of one non-causal forward pass over `tokens`
    /// (`tokens.len() x vocab` values into `out`), on the engine's thread pool: what one
    /// uncached denoising step computes.
    pub fn logits(&mut self, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        self.logits_with_block(tokens, None, out)
    }

    /// [`Engine::logits`] with LLaDA2's block-causal attention in blocks of `attention_block`
    /// (`None`: the architecture's own mask; 1 is causal attention, as llama.cpp's
    /// `bailingmoe2` graph computes).
    pub fn logits_with_block(
        &mut self,
        tokens: &[u32],
        attention_block: Option<usize>,
        out: &mut [f32],
    ) -> Result<()> {
        let Engine { model, pool, .. } = self;
        let block = attention_block;
        Ok(pool.install(|| match model {
            AnyModel::Cpu(m) => m.forward_all_with_block(tokens, block, out),
            AnyModel::Cuda(m) => m.forward_all_with_block(tokens, block, out),
        })?)
    }

    /// Every token's log-likelihood value under the model ([`crate::likelihood`]): for every
    /// split `c ≥ 1`, the values of `tokens[c..]` sum to the LLaDA estimate of
    /// `log p(tokens[c..] | tokens[..c])`. Costs [`crate::likelihood::echo_passes`] forward
    /// passes (at most [`crate::likelihood::MAX_PASSES`]).
    pub fn score(
        &mut self,
        tokens: &[u32],
        scoring: &crate::likelihood::Scoring,
    ) -> Result<crate::likelihood::EchoLogprobs> {
        let config = self.prep.scoring(tokens, scoring)?;
        let Engine { model, pool, .. } = self;
        pool.install(|| match model {
            AnyModel::Cpu(m) => score_on(m, tokens, &config),
            AnyModel::Cuda(m) => score_on(m, tokens, &config),
        })
    }

    /// Runs `f` on the model inside the engine's thread pool (the kernels' rayon tasks run on
    /// the engine's threads): for work on the model the engine has no method for, such as a
    /// batched pass ([`lacuna_models::Model::forward_batch`]) in a benchmark.
    pub fn install<R: Send>(&mut self, f: impl FnOnce(&mut AnyModel) -> R + Send) -> R {
        let model = &mut self.model;
        self.pool.install(|| f(model))
    }

    /// The model, to profile or inspect it (a forward bench times its passes through
    /// [`Engine::logits`] on the engine's own threads).
    pub fn model_mut(&mut self) -> &mut AnyModel {
        &mut self.model
    }

    /// Checks `request` against this model (prompt, context, sampler settings) without
    /// generating; [`Engine::generate_prepared`] runs the result.
    pub fn prepare(&self, request: &GenerateRequest) -> Result<Prepared> {
        self.prep.prepare(request)
    }

    /// `spec` compiled for this model's vocabulary, from the engine's cache (compiled now
    /// on a miss): to check a schema or compile it ahead of the first request, and to read
    /// its size ([`Compiled::states`](lacuna_structured::Compiled::states), ...).
    pub fn constraint(
        &self,
        spec: &lacuna_structured::Spec,
    ) -> Result<std::sync::Arc<lacuna_structured::Compiled>> {
        self.prep.constraint(spec)
    }

    /// Generates for `request`, calling `on_step` after every denoising step with a view of
    /// the canvas (the whole canvas, the positions committed this step and their
    /// confidences). Runs on the engine's thread pool.
    pub fn generate<F>(&mut self, request: &GenerateRequest, on_step: F) -> Result<Output>
    where
        F: FnMut(&StepView<'_>) + Send,
    {
        let start = Instant::now();
        let prepared = self.prepare(request)?;
        self.run_prepared(&prepared, start, on_step)
    }

    /// Generates a request checked by [`Engine::prepare`].
    pub fn generate_prepared<F>(&mut self, prepared: &Prepared, on_step: F) -> Result<Output>
    where
        F: FnMut(&StepView<'_>) + Send,
    {
        self.run_prepared(prepared, Instant::now(), on_step)
    }

    fn run_prepared<F>(&mut self, prepared: &Prepared, start: Instant, on_step: F) -> Result<Output>
    where
        F: FnMut(&StepView<'_>) + Send,
    {
        let Engine {
            model, prep, pool, ..
        } = self;
        let block = prepared.attention_block();
        pool.install(|| match model {
            AnyModel::Cpu(m) => generate_on(m, block, prepared, prep, start, on_step),
            AnyModel::Cuda(m) => generate_on(m, block, prepared, prep, start, on_step),
        })
    }
}

/// [`Engine::score`] on a typed model, with the architecture's own attention mask.
fn score_on<B: Backend>(
    model: &mut Model<B>,
    tokens: &[u32],
    config: &crate::likelihood::LikelihoodConfig,
) -> Result<crate::likelihood::EchoLogprobs> {
    let mut denoiser = model.bind(None)?;
    Ok(lacuna_sampler::likelihood::echo_logprobs(
        &mut denoiser,
        tokens,
        config,
    )?)
}

/// One generation on a typed model: the model bound to a fresh cache of its own backend and
/// the generation's attention block, run through the sampler.
fn generate_on<B: Backend, F: FnMut(&StepView<'_>)>(
    model: &mut Model<B>,
    attention_block: Option<usize>,
    prepared: &Prepared,
    prep: &Preparer,
    start: Instant,
    on_step: F,
) -> Result<Output> {
    let mut denoiser = model.bind(attention_block)?;
    run::run(
        &mut denoiser,
        prepared,
        &prep.tokenizer,
        prep.mask_id,
        start,
        on_step,
    )
}
