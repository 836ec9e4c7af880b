//! [`SharedEngine`]: one loaded model serving several generations at once. Each generation
//! runs its sampler on its own thread with its own key/value cache; the forward passes that
//! are waiting when the model frees up run as one batch ([`crate::batch`]), so concurrent
//! canvases advance together and share each read of the weights, and a generation computes
//! exactly what it would alone (bit for bit: [`lacuna_models::Model::forward_batch`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use lacuna_models::{AnyModel, Arch, Backend, CpuBackend, CudaBackend, KvCache, Model};
use lacuna_sampler::{CanvasDenoiser, Denoiser, Pass, StepView};
use lacuna_tokenizer::Tokenizer;

use crate::batch::{self, BatchLimits, BatchRun, Collector, GemmaOp, Histogram, Job, JobError};
use crate::prepare::{Prepared, Preparer};
use crate::request::{GenerateRequest, Output};
use crate::{Engine, Error, Result, run};

/// A flag that stops a generation at its next denoising step
/// ([`Error::Cancelled`]). Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the generation to stop before its next forward pass.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A poisoned lock only means a panic elsewhere; the data (counters, the engine) is still
/// consistent between passes, so keep going.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Counters of a [`SharedEngine`] since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedStats {
    /// Generations running now (their sampler started, not yet returned).
    pub active: usize,
    /// Forward passes run (each batch is one forward).
    pub forwards: u64,
    /// Canvases' passes run, over all batches (at least `forwards`).
    pub passes: u64,
    /// Passes per batch (bucket bounds [`crate::batch::PASS_BUCKETS`]).
    pub batch_passes: Histogram,
    /// Positions run through the layers per batch ([`crate::batch::TOKEN_BUCKETS`]).
    pub batch_tokens: Histogram,
    /// Denoising steps completed (over all generations).
    pub steps: u64,
    /// Generated positions committed (over all generations).
    pub committed: u64,
}

/// A loaded [`Engine`] shared between threads: [`SharedEngine::generate`] takes `&self`, so
/// many threads can generate at once; their forward passes run in batches
/// ([`BatchLimits`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use lacuna::{CancelToken, Engine, EngineOptions, GenerateRequest, Prompt, SharedEngine};
/// let engine = Arc::new(SharedEngine::new(Engine::demo(&EngineOptions::default())?));
/// let handles: Vec<_> = ["And God said,", "In the beginning"]
///     .into_iter()
///     .map(|text| {
///         let engine = Arc::clone(&engine);
///         std::thread::spawn(move || {
///             let prepared = engine.prepare(&GenerateRequest::new(Prompt::Text(text.into())))?;
///             engine.generate(&prepared, &CancelToken::new(), |_| {})
///         })
///     })
///     .collect();
/// for h in handles {
///     println!("{}", h.join().unwrap()?.text);
/// }
/// # Ok::<(), lacuna::Error>(())
/// ```
pub struct SharedEngine {
    model: SharedModel,
    pool: rayon::ThreadPool,
    prep: Arc<Preparer>,
    stats: Mutex<SharedStats>,
    name: String,
    threads: usize,
    load_s: f64,
    info: ModelInfo,
}

/// What a [`SharedEngine`]'s model file says about itself, read when the engine is shared,
/// for model listings (`lacuna serve`'s `/api/tags` and `/api/show`): the model itself is
/// only reachable between batched passes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The GGUF file's size in bytes.
    pub file_bytes: u64,
    /// Elements of every tensor (experts included).
    pub parameters: u64,
    /// Bytes of the weights as the backend holds them (see `Model::weight_bytes`).
    pub weight_bytes: u64,
    /// Whether the weights are on a CUDA device (else in host memory).
    pub on_gpu: bool,
    /// The file's key-value metadata.
    pub metadata: lacuna_gguf::Metadata,
}

impl ModelInfo {
    fn of(model: &AnyModel) -> Self {
        let file = model.file();
        Self {
            file_bytes: file.bytes().len() as u64,
            parameters: file.tensors().iter().map(|t| t.n_elements()).sum(),
            weight_bytes: model.weight_bytes() as u64,
            on_gpu: matches!(model, AnyModel::Cuda(_)),
            metadata: file.metadata().clone(),
        }
    }
}

impl std::fmt::Debug for SharedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEngine")
            .field("name", &self.name)
            .field("arch", &self.prep.arch)
            .finish_non_exhaustive()
    }
}

impl SharedEngine {
    /// Shares `engine`, batching with [`BatchLimits::for_width`] of its model.
    pub fn new(engine: Engine) -> Self {
        let limits = BatchLimits::for_width(engine.model().config().n_embd);
        Self::with_limits(engine, limits)
    }

    /// Shares `engine`, batching passes within `limits` ([`BatchLimits::off`]: one pass at
    /// a time, in arrival order). Limits of 0 are taken as 1.
    pub fn with_limits(engine: Engine, limits: BatchLimits) -> Self {
        let limits = BatchLimits {
            max_passes: limits.max_passes.max(1),
            max_tokens: limits.max_tokens.max(1),
        };
        let name = engine.name().to_string();
        let threads = engine.threads();
        let load_s = engine.load_s();
        let info = ModelInfo::of(engine.model());
        let Engine {
            model, prep, pool, ..
        } = engine;
        let model = match model {
            AnyModel::Cpu(m) => SharedModel::Cpu(Collector::new(m, limits)),
            AnyModel::Cuda(m) => SharedModel::Cuda(Collector::new(m, limits)),
        };
        Self {
            model,
            pool,
            prep,
            name,
            threads,
            load_s,
            info,
            stats: Mutex::new(SharedStats::default()),
        }
    }

    /// `general.name`, or the architecture when the file has none.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model file's size, parameter count and metadata.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The architecture (which picks the sampler).
    pub fn arch(&self) -> Arch {
        self.prep.arch
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Arc<Tokenizer> {
        &self.prep.tokenizer
    }

    /// Whether the file has a chat template.
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
        self.prep.context
    }

    /// Worker threads of the engine's pool.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Seconds the engine took to load.
    pub fn load_s(&self) -> f64 {
        self.load_s
    }

    /// How passes are batched.
    pub fn batch_limits(&self) -> BatchLimits {
        match &self.model {
            SharedModel::Cpu(c) => c.limits(),
            SharedModel::Cuda(c) => c.limits(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> SharedStats {
        *lock(&self.stats)
    }

    /// [`Engine::prompt_tokens`]: the prompt as token ids.
    pub fn prompt_tokens(&self, prompt: &crate::Prompt) -> Result<Vec<u32>> {
        self.prep.prompt_tokens(prompt)
    }

    /// Checks `request` (prompt, context, sampler settings) without touching the model, so it
    /// never waits for another generation's forward pass.
    pub fn prepare(&self, request: &GenerateRequest) -> Result<Prepared> {
        self.prep.prepare(request)
    }

    /// [`Engine::constraint`]: `spec` compiled for this model, from its cache.
    pub fn constraint(
        &self,
        spec: &lacuna_structured::Spec,
    ) -> Result<std::sync::Arc<lacuna_structured::Compiled>> {
        self.prep.constraint(spec)
    }

    /// Generates `prepared` on the calling thread, each forward pass batched with the other
    /// generations' passes waiting at the time. `cancel` stops it before its next pass ([`Error::Cancelled`]); `on_step` runs on
    /// this thread after every step, without the model held.
    pub fn generate<F>(
        &self,
        prepared: &Prepared,
        cancel: &CancelToken,
        on_step: F,
    ) -> Result<Output>
    where
        F: FnMut(&StepView<'_>),
    {
        let start = Instant::now();
        lock(&self.stats).active += 1;
        let out = match &self.model {
            SharedModel::Cpu(m) => self.generate_on(m, prepared, cancel, start, on_step),
            SharedModel::Cuda(m) => self.generate_on(m, prepared, cancel, start, on_step),
        };
        lock(&self.stats).active -= 1;
        out
    }

    /// [`Engine::score`], each forward pass batched with the other generations' passes.
    /// `cancel` stops it before its next pass ([`Error::Cancelled`]).
    pub fn score(
        &self,
        tokens: &[u32],
        scoring: &crate::likelihood::Scoring,
        cancel: &CancelToken,
    ) -> Result<crate::likelihood::EchoLogprobs> {
        let config = self.prep.scoring(tokens, scoring)?;
        lock(&self.stats).active += 1;
        let out = match &self.model {
            SharedModel::Cpu(m) => self.score_on(m, tokens, &config, cancel),
            SharedModel::Cuda(m) => self.score_on(m, tokens, &config, cancel),
        };
        lock(&self.stats).active -= 1;
        out
    }

    fn score_on<B: Backend>(
        &self,
        model: &Collector<B>,
        tokens: &[u32],
        config: &crate::likelihood::LikelihoodConfig,
        cancel: &CancelToken,
    ) -> Result<crate::likelihood::EchoLogprobs>
    where
        Model<B>: Send,
    {
        let _member = model.join();
        let mut denoiser = InTurn {
            shared: self,
            model,
            cache: KvCache::default(),
            out: Vec::new(),
            attention_block: None,
            cancel,
            vocab: self.prep.tokenizer.n_vocab(),
            canvas_length: 0,
        };
        lacuna_sampler::likelihood::echo_logprobs(&mut denoiser, tokens, config).map_err(
            |e| match e {
                TurnError::Model(m) => Error::Model(m),
                TurnError::Batch(detail) => Error::BatchFailed { detail },
                TurnError::Cancelled => Error::Cancelled,
            },
        )
    }

    /// One generation on the typed model: its own cache, of the model's backend.
    fn generate_on<B: Backend, F: FnMut(&StepView<'_>)>(
        &self,
        model: &Collector<B>,
        prepared: &Prepared,
        cancel: &CancelToken,
        start: Instant,
        mut on_step: F,
    ) -> Result<Output>
    where
        Model<B>: Send,
    {
        // Checked by the model at every pass.
        let attention_block = prepared.attention_block();
        let _member = model.join();
        let mut denoiser = InTurn {
            shared: self,
            model,
            cache: KvCache::default(),
            out: Vec::new(),
            attention_block,
            cancel,
            vocab: self.prep.tokenizer.n_vocab(),
            canvas_length: self.prep.gemma.map_or(0, |(c, _)| c),
        };
        run::run(
            &mut denoiser,
            prepared,
            &self.prep.tokenizer,
            self.prep.mask_id,
            start,
            |view| {
                {
                    let mut s = lock(&self.stats);
                    s.steps += 1;
                    s.committed += view.committed.len() as u64;
                }
                on_step(view);
            },
        )
    }
}

/// The model of a [`SharedEngine`], typed by its backend. (One per engine, so the variants'
/// sizes do not matter.)
#[allow(clippy::large_enum_variant)]
enum SharedModel {
    Cpu(Collector<CpuBackend>),
    Cuda(Collector<CudaBackend>),
}

/// Why a forward pass of a [`SharedEngine`] generation did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    #[error(transparent)]
    Model(#[from] lacuna_models::Error),
    #[error("a batched forward pass failed: {0}")]
    Batch(String),
    #[error("cancelled")]
    Cancelled,
}

/// The denoiser of one shared generation: its own cache, which travels with each pass it
/// queues.
struct InTurn<'a, B: Backend> {
    shared: &'a SharedEngine,
    model: &'a Collector<B>,
    cache: KvCache<B::Buf>,
    /// The logits buffer that travels with each pass (reused).
    out: Vec<f32>,
    /// This generation's attention block (LLaDA2; `None`: the architecture's own mask).
    attention_block: Option<usize>,
    cancel: &'a CancelToken,
    vocab: usize,
    /// DiffusionGemma's canvas length (0 for the masked-diffusion models).
    canvas_length: usize,
}

impl<B: Backend> Denoiser for InTurn<'_, B>
where
    Model<B>: Send,
    B::Buf: Send,
{
    type Error = TurnError;

    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn supports_cache(&self) -> bool {
        true
    }

    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), TurnError> {
        if self.cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        self.turn(pass.clone(), None, canvas, rows, out)
    }
}

impl<B: Backend> InTurn<'_, B>
where
    Model<B>: Send,
    B::Buf: Send,
{
    /// Queues one pass (or a DiffusionGemma encoder/decoder pass) and waits for it.
    fn turn(
        &mut self,
        pass: Pass,
        gemma: Option<GemmaOp>,
        canvas: &[u32],
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), TurnError> {
        if self.cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        let mut buf = std::mem::take(&mut self.out);
        buf.resize(out.len(), 0.0);
        if let Some(GemmaOp::Decode(true)) = gemma {
            // The self-conditioning signal the decoder reads in place.
            buf.copy_from_slice(out);
        }
        let job = Job {
            cache: std::mem::take(&mut self.cache),
            pass,
            attention_block: self.attention_block,
            tokens: canvas.to_vec(),
            rows: rows.to_vec(),
            out: buf,
            cancel: self.cancel.clone(),
            gemma,
            result: None,
        };
        let shared = self.shared;
        let job = self.model.submit(
            job,
            |model, jobs| shared.pool.install(|| batch::run_batch(model, jobs)),
            |r: BatchRun| {
                let mut s = lock(&shared.stats);
                s.forwards += 1;
                s.passes += r.passes as u64;
                s.batch_passes.record(&batch::PASS_BUCKETS, r.passes as u64);
                s.batch_tokens
                    .record(&batch::TOKEN_BUCKETS, r.tokens as u64);
            },
        );
        self.cache = job.cache;
        self.out = job.out;
        match job.result {
            Some(Ok(())) => {
                out.copy_from_slice(&self.out);
                Ok(())
            }
            Some(Err(JobError::Model(e))) => Err(TurnError::Model(e)),
            Some(Err(JobError::Batch(detail))) => Err(TurnError::Batch(detail)),
            Some(Err(JobError::Cancelled)) | None => Err(TurnError::Cancelled),
        }
    }
}

impl<B: Backend> CanvasDenoiser for InTurn<'_, B>
where
    Model<B>: Send,
    B::Buf: Send,
{
    fn encode(&mut self, tokens: &[u32]) -> Result<(), TurnError> {
        self.turn(Pass::Full, Some(GemmaOp::Encode), tokens, &[], &mut [])
    }

    fn decode(
        &mut self,
        canvas: &[u32],
        self_cond: bool,
        logits: &mut [f32],
    ) -> Result<(), TurnError> {
        self.turn(
            Pass::Full,
            Some(GemmaOp::Decode(self_cond)),
            canvas,
            &[],
            logits,
        )
    }

    fn canvas_length(&self) -> usize {
        self.canvas_length
    }
}

impl From<lacuna_sampler::Error<TurnError>> for Error {
    fn from(e: lacuna_sampler::Error<TurnError>) -> Self {
        match e.into_denoiser() {
            Ok(TurnError::Model(m)) => Error::Model(m),
            Ok(TurnError::Batch(detail)) => Error::BatchFailed { detail },
            Ok(TurnError::Cancelled) => Error::Cancelled,
            Err(s) => s.into(),
        }
    }
}
