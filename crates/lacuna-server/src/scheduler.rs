//! The generation workers: a fixed number of threads (`--max-concurrent`) that run
//! generations on the [`SharedEngine`], fed by a bounded queue (`--queue`). Handlers never
//! run a forward pass: they submit a [`Job`] and read its [`Event`]s from a channel.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lacuna::{CancelToken, Finish, Output, Prepared, SharedEngine, StepView};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::logprobs::{self, Entry};
use crate::text::SettledText;

/// One generation to run.
pub(crate) struct Job {
    /// The checked request, one per choice (OpenAI's `n`); the choices run at once, on
    /// threads of their own, so their passes batch together.
    pub(crate) prepared: Vec<Prepared>,
    /// Stop sequences.
    pub(crate) stop: Vec<String>,
    /// Whether to send every step's canvas.
    pub(crate) include_canvas: bool,
    /// Set by the handler when its client goes away, by the worker on a stop sequence, and
    /// by shutdown.
    pub(crate) cancel: CancelToken,
    /// Where the worker reports.
    pub(crate) events: mpsc::Sender<Event>,
}

/// What a worker reports about a job: per choice, steps then one `Done`; or one `Failed`
/// for the whole job.
#[derive(Debug)]
pub(crate) enum Event {
    /// A denoising step ran.
    Step {
        /// The choice.
        index: usize,
        /// Newly settled text (may be empty).
        delta: String,
        /// The whole canvas, when asked for.
        canvas: Option<serde_json::Value>,
        /// With log-probabilities asked for: those of the tokens that settled this step.
        logprobs: Option<Vec<Entry>>,
    },
    /// Generation ended.
    Done(Box<Finished>),
    /// Generation failed or was cancelled.
    Failed(ApiError),
}

/// The end of a generation.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The choice.
    pub(crate) index: usize,
    /// The rest of the text not yet sent in a `Step`.
    pub(crate) delta: String,
    /// The whole text.
    pub(crate) text: String,
    /// OpenAI's finish reason: `stop` (end token or stop sequence) or `length`.
    pub(crate) finish_reason: &'static str,
    /// Prompt tokens.
    pub(crate) prompt_tokens: usize,
    /// Generated tokens (before the end token or stop sequence).
    pub(crate) completion_tokens: usize,
    /// Sampler counters and timings (`None` when a stop sequence ended it early).
    pub(crate) output: Option<Output>,
    /// With log-probabilities requested: one per completion token, decoded.
    pub(crate) logprobs: Option<Vec<Entry>>,
    /// How many of `logprobs` went out in `Step` events already.
    pub(crate) logprobs_sent: usize,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// Jobs waiting for a worker.
    pub(crate) queued: AtomicUsize,
    /// Jobs a worker is running.
    pub(crate) active: AtomicUsize,
    /// Requests answered, by outcome.
    pub(crate) completed: AtomicU64,
    /// Requests cancelled (client gone, shutdown).
    pub(crate) cancelled: AtomicU64,
    /// Requests that failed inside the engine.
    pub(crate) failed: AtomicU64,
    /// Requests refused: queue full.
    pub(crate) rejected: AtomicU64,
    /// Recent steps as (when, positions committed), for the rates; the totals are the
    /// engine's ([`SharedEngine::stats`]).
    recent: Mutex<VecDeque<(Instant, u64)>>,
}

/// The window of the per-second rates.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(10);

impl Metrics {
    fn record_step(&self, committed: u64) {
        let mut r = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        r.push_back((now, committed));
        while r.front().is_some_and(|&(t, _)| now - t > RATE_WINDOW) {
            r.pop_front();
        }
    }

    /// Steps and generated tokens per second over the last [`RATE_WINDOW`].
    pub(crate) fn rates(&self) -> (f64, f64) {
        let r = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let (mut steps, mut tokens) = (0u64, 0);
        for &(_, k) in r.iter().filter(|&&(t, _)| now - t <= RATE_WINDOW) {
            steps += 1;
            tokens += k;
        }
        let w = RATE_WINDOW.as_secs_f64();
        (steps as f64 / w, tokens as f64 / w)
    }
}

/// The queue and its workers.
pub(crate) struct Scheduler {
    /// Unbounded: admission is decided in [`Scheduler::submit`] from the counters.
    tx: Mutex<Option<Sender<Job>>>,
    capacity: usize,
    engine: Arc<SharedEngine>,
    /// Counters.
    pub(crate) metrics: Arc<Metrics>,
    shutting_down: AtomicBool,
    /// Cancel tokens of the jobs submitted and not finished (for shutdown).
    live: Arc<Mutex<Vec<CancelToken>>>,
    max_concurrent: usize,
}

impl Scheduler {
    /// Starts `max_concurrent` worker threads over `engine`, with room for `queue` waiting
    /// jobs.
    pub(crate) fn start(
        engine: Arc<SharedEngine>,
        max_concurrent: usize,
        queue: usize,
    ) -> Arc<Self> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let metrics = Arc::new(Metrics::default());
        let live = Arc::new(Mutex::new(Vec::new()));
        for i in 0..max_concurrent.max(1) {
            let (rx, engine, metrics, live) = (
                Arc::clone(&rx),
                Arc::clone(&engine),
                Arc::clone(&metrics),
                Arc::clone(&live),
            );
            std::thread::Builder::new()
                .name(format!("lacuna-gen-{i}"))
                .spawn(move || worker(&rx, &engine, &metrics, &live))
                .expect("spawning a generation worker thread");
        }
        Arc::new(Self {
            tx: Mutex::new(Some(tx)),
            engine,
            metrics,
            shutting_down: AtomicBool::new(false),
            live,
            max_concurrent,
            capacity: max_concurrent.max(1) + queue,
        })
    }

    /// The engine.
    pub(crate) fn engine(&self) -> &Arc<SharedEngine> {
        &self.engine
    }

    /// Worker threads.
    pub(crate) fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }

    /// Whether shutdown has begun.
    pub(crate) fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Queues `job`: 429 when the queue is full, 503 when shutting down.
    pub(crate) fn submit(&self, job: Job) -> Result<(), ApiError> {
        if self.shutting_down() {
            return Err(ApiError::shutting_down());
        }
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = tx.as_ref() else {
            return Err(ApiError::shutting_down());
        };
        // Under the sender's lock: check and count as one step.
        let m = &self.metrics;
        let (active, queued) = (
            m.active.load(Ordering::Acquire),
            m.queued.load(Ordering::Acquire),
        );
        if active + queued >= self.capacity {
            m.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::queue_full(active, queued));
        }
        let cancel = job.cancel.clone();
        m.queued.fetch_add(1, Ordering::AcqRel);
        if tx.send(job).is_err() {
            m.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(ApiError::shutting_down());
        }
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|c| !c.is_cancelled());
        live.push(cancel);
        Ok(())
    }

    /// Refuses new jobs from now on (503); jobs already queued or running go on until they
    /// finish or [`Scheduler::cancel_all`].
    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Cancels every job still running or queued.
    pub(crate) fn cancel_all(&self) {
        for c in self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            c.cancel();
        }
    }

    /// Jobs queued or running.
    pub(crate) fn in_flight(&self) -> usize {
        self.metrics.queued.load(Ordering::Acquire) + self.metrics.active.load(Ordering::Acquire)
    }
}

fn worker(
    rx: &Mutex<Receiver<Job>>,
    engine: &SharedEngine,
    metrics: &Metrics,
    live: &Mutex<Vec<CancelToken>>,
) {
    loop {
        // One worker waits on the queue at a time; the others wait for the lock.
        let job = match rx.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return, // the queue is closed: shutdown
        };
        metrics.active.fetch_add(1, Ordering::AcqRel);
        metrics.queued.fetch_sub(1, Ordering::AcqRel);
        let cancel = job.cancel.clone();
        let outcome = run_choices(engine, metrics, &job);
        match &outcome {
            Ok(()) => metrics.completed.fetch_add(1, Ordering::Relaxed),
            Err(e) if e.code == Some("cancelled") => {
                metrics.cancelled.fetch_add(1, Ordering::Relaxed)
            }
            Err(_) => metrics.failed.fetch_add(1, Ordering::Relaxed),
        };
        if let Err(e) = outcome {
            let _ = job.events.blocking_send(Event::Failed(e));
        }
        metrics.active.fetch_sub(1, Ordering::AcqRel);
        cancel.cancel(); // marks it finished for `live`
        live.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|c| !c.is_cancelled());
    }
}

/// Runs every choice of `job` at once (one on this thread, the others on scoped threads of
/// their own), each sending its steps and its `Done`; the first failure cancels the others
/// and is the job's.
fn run_choices(engine: &SharedEngine, metrics: &Metrics, job: &Job) -> Result<(), ApiError> {
    let run = |index: usize| {
        let event = run_job(engine, metrics, job, index);
        match event {
            Event::Failed(e) => {
                job.cancel.cancel();
                Err(e)
            }
            done => {
                // The handler may be gone (client disconnected): nothing to tell then.
                let _ = job.events.blocking_send(done);
                Ok(())
            }
        }
    };
    let results: Vec<Result<(), ApiError>> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..job.prepared.len())
            .map(|i| scope.spawn(move || run(i)))
            .collect();
        let mut results = vec![run(0)];
        for h in others {
            results.push(
                h.join()
                    .unwrap_or_else(|_| Err(ApiError::internal("a generation thread panicked"))),
            );
        }
        results
    });
    // A real failure before a cancellation it caused in the other choices.
    let mut errors: Vec<ApiError> = results.into_iter().filter_map(Result::err).collect();
    errors.sort_by_key(|e| e.code == Some("cancelled"));
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Choice `index` of `job`, with a cancel flag of its own (a stop sequence ends only its
/// choice) that follows the job's (client gone, shutdown, another choice failed).
fn run_job(engine: &SharedEngine, metrics: &Metrics, job: &Job, index: usize) -> Event {
    if job.cancel.is_cancelled() {
        return Event::Failed(cancelled());
    }
    let prepared = &job.prepared[index];
    let cancel = CancelToken::new();
    let tokenizer = Arc::clone(engine.tokenizer());
    let mask = engine.mask_token_id();
    let mut text = SettledText::new(
        &tokenizer,
        mask,
        engine.eos_ids(),
        job.stop.clone(),
        prepared.constrained(),
    );
    // The records as of the last step, for a generation a stop sequence cancels (which
    // returns no output); only kept when asked for.
    let mut last_records: Vec<Option<lacuna::TokenLogprob>> = Vec::new();
    // Records of settled tokens already sent in a step.
    let mut sent = 0;
    let result = engine.generate(prepared, &cancel, |view: &StepView<'_>| {
        metrics.record_step(view.committed.len() as u64);
        if job.cancel.is_cancelled() {
            cancel.cancel();
        }
        if let Some(records) = view.logprobs {
            last_records.clear();
            last_records.extend_from_slice(records);
        }
        // A draft (DiffusionGemma's canvas being denoised) changes at every step: only what
        // precedes it can settle.
        let end = view
            .canvas
            .len()
            .saturating_sub(view.draft)
            .max(view.prompt_len);
        let delta = text.update(&tokenizer, &view.canvas[view.prompt_len..end]);
        if text.stopped() {
            cancel.cancel();
        }
        // The tokens that settled with this step's text (a record exists for each: settled
        // tokens are committed).
        let logprobs = view.logprobs.and_then(|records| {
            let settled = text.settled_tokens().min(records.len());
            let new = records.get(sent..settled).unwrap_or_default();
            let fresh = logprobs::entries(&tokenizer, new, new.len());
            sent += fresh.len();
            (!fresh.is_empty()).then_some(fresh)
        });
        let canvas = job
            .include_canvas
            .then(|| crate::canvas::canvas_json(&tokenizer, mask, view));
        if (delta.is_empty() && canvas.is_none() && logprobs.is_none())
            || cancel.is_cancelled() && !text.stopped()
        {
            return;
        }
        if job
            .events
            .blocking_send(Event::Step {
                index,
                delta,
                canvas,
                logprobs,
            })
            .is_err()
        {
            // The client is gone: stop at the next step.
            job.cancel.cancel();
        }
    });
    let prompt_tokens = prepared.prompt_tokens().len();
    match result {
        Ok(out) => {
            let (delta, whole) = text.finish(&out.text);
            let eos = matches!(out.stats.finish, Finish::Eos { .. })
                || out.tokens.len() < prepared.gen_length();
            let completion_tokens = if text.stopped() {
                text.settled_tokens().min(out.tokens.len())
            } else {
                out.tokens.len()
            };
            Event::Done(Box::new(Finished {
                index,
                delta,
                text: whole,
                finish_reason: if eos || text.stopped() {
                    "stop"
                } else {
                    "length"
                },
                prompt_tokens,
                completion_tokens,
                logprobs: out
                    .logprobs
                    .as_ref()
                    .map(|r| logprobs::entries(&tokenizer, r, completion_tokens)),
                logprobs_sent: sent,
                output: Some(out),
            }))
        }
        Err(lacuna::Error::Cancelled) if text.stopped() => Event::Done(Box::new(Finished {
            index,
            delta: String::new(),
            text: text.finish_stopped(),
            finish_reason: "stop",
            prompt_tokens,
            completion_tokens: text.settled_tokens(),
            logprobs: prepared
                .logprobs()
                .map(|_| logprobs::entries(&tokenizer, &last_records, text.settled_tokens())),
            logprobs_sent: sent,
            output: None,
        })),
        Err(lacuna::Error::Cancelled) => Event::Failed(cancelled()),
        Err(e) => {
            tracing::error!(error = %e, "generation failed");
            Event::Failed(ApiError::internal(format!("generation failed: {e}")))
        }
    }
}

fn cancelled() -> ApiError {
    ApiError::shutting_down().with_code("cancelled")
}
