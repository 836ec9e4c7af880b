//! [`SharedEngine`]: one loaded model serving several generations at once, interleaved step by
//! step. Each generation runs its sampler on its own thread with its own key/value cache;
//! every forward pass takes the model in turn (first come, first served), so concurrent
//! canvases advance together instead of one after another, and a generation computes exactly
//! what it would alone (same kernels, same rows, same cache contents).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use lacuna_models::{AnyModel, Arch, Backend, CpuBackend, CudaBackend, KvCache, Model, PassSpec};
use lacuna_sampler::{Denoiser, Pass, StepView};
use lacuna_tokenizer::Tokenizer;

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

/// A ticket lock: forward passes get the model in the order they asked for it, so no
/// generation starves (a plain mutex lets the thread that just released it win again).
#[derive(Debug, Default)]
struct Turns {
    state: Mutex<(u64, u64)>, // (next ticket, ticket served)
    turn: Condvar,
}

impl Turns {
    fn wait(&self) -> Turn<'_> {
        let mut s = lock(&self.state);
        let ticket = s.0;
        s.0 += 1;
        while s.1 != ticket {
            s = self
                .turn
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        Turn { turns: self }
    }
}

/// Holding the model; the next ticket is served on drop.
struct Turn<'a> {
    turns: &'a Turns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        lock(&self.turns.state).1 += 1;
        self.turns.turn.notify_all();
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
    /// Forward passes run.
    pub forwards: u64,
    /// Denoising steps completed (over all generations).
    pub steps: u64,
    /// Generated positions committed (over all generations).
    pub committed: u64,
}

/// A loaded [`Engine`] shared between threads: [`SharedEngine::generate`] takes `&self`, so
/// many threads can generate at once; their forward passes alternate step by step.
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
    turns: Turns,
    prep: Arc<Preparer>,
    stats: Mutex<SharedStats>,
    name: String,
    threads: usize,
    load_s: f64,
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
    /// Shares `engine`.
    pub fn new(engine: Engine) -> Self {
        let name = engine.name().to_string();
        let threads = engine.threads();
        let load_s = engine.load_s();
        let Engine {
            model, prep, pool, ..
        } = engine;
        let model = match model {
            AnyModel::Cpu(m) => SharedModel::Cpu(Mutex::new(m)),
            AnyModel::Cuda(m) => SharedModel::Cuda(Mutex::new(m)),
        };
        Self {
            model,
            pool,
            prep,
            name,
            threads,
            load_s,
            turns: Turns::default(),
            stats: Mutex::new(SharedStats::default()),
        }
    }

    /// `general.name`, or the architecture when the file has none.
    pub fn name(&self) -> &str {
        &self.name
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

    /// Counters so far.
    pub fn stats(&self) -> SharedStats {
        *lock(&self.stats)
    }

    /// Checks `request` (prompt, context, sampler settings) without touching the model, so it
    /// never waits for another generation's forward pass.
    pub fn prepare(&self, request: &GenerateRequest) -> Result<Prepared> {
        self.prep.prepare(request)
    }

    /// Generates `prepared` on the calling thread, taking the model in turn for each forward
    /// pass. `cancel` stops it before its next pass ([`Error::Cancelled`]); `on_step` runs on
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

    /// One generation on the typed model: its own cache, of the model's backend.
    fn generate_on<B: Backend, F: FnMut(&StepView<'_>)>(
        &self,
        model: &Mutex<Model<B>>,
        prepared: &Prepared,
        cancel: &CancelToken,
        start: Instant,
        mut on_step: F,
    ) -> Result<Output>
    where
        Model<B>: Send,
    {
        // Checked by the model at every pass; taking the model's lock here would jump the
        // queue of the turns.
        let attention_block = prepared.attention_block();
        let mut denoiser = InTurn {
            shared: self,
            model,
            cache: KvCache::default(),
            attention_block,
            cancel,
            vocab: self.prep.tokenizer.n_vocab(),
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
    Cpu(Mutex<Model<CpuBackend>>),
    Cuda(Mutex<Model<CudaBackend>>),
}

/// Why a forward pass of a [`SharedEngine`] generation did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    #[error(transparent)]
    Model(#[from] lacuna_models::Error),
    #[error("cancelled")]
    Cancelled,
}

/// The denoiser of one shared generation: its own cache, passed to the model for each pass
/// it runs in its turn.
struct InTurn<'a, B: Backend> {
    shared: &'a SharedEngine,
    model: &'a Mutex<Model<B>>,
    cache: KvCache<B::Buf>,
    /// This generation's attention block (LLaDA2; `None`: the architecture's own mask).
    attention_block: Option<usize>,
    cancel: &'a CancelToken,
    vocab: usize,
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

    fn logits(&mut self, canvas: &[u32], rows: &[usize], out: &mut [f32]) -> Result<(), TurnError> {
        self.forward(canvas, &Pass::Full, rows, out)
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
        let _turn = self.shared.turns.wait();
        // Cancelled while waiting: give the turn back at once.
        if self.cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        let mut guard = lock(self.model);
        let model = &mut *guard;
        let spec = PassSpec {
            pass,
            attention_block: self.attention_block,
        };
        let cache = &mut self.cache;
        let result = self
            .shared
            .pool
            .install(|| model.forward_pass(cache, spec, canvas, rows, out));
        lock(&self.shared.stats).forwards += 1;
        Ok(result?)
    }
}

impl From<lacuna_sampler::Error<TurnError>> for Error {
    fn from(e: lacuna_sampler::Error<TurnError>) -> Self {
        match e.into_denoiser() {
            Ok(TurnError::Model(m)) => Error::Model(m),
            Ok(TurnError::Cancelled) => Error::Cancelled,
            Err(s) => s.into(),
        }
    }
}
