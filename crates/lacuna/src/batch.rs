//! The collector behind [`SharedEngine`](crate::SharedEngine): every forward pass that is
//! waiting when the model frees up runs with the others as one batch
//! ([`Model::forward_batch`]), so concurrent canvases share each read of the weights.
//!
//! No thread of its own: a generation's thread queues its pass and, if no batch is running,
//! leads the next one: it waits a moment for the passes of the other running generations
//! (at most a quarter of the last batch's time), then takes the queue's passes in arrival
//! order, up to the [`BatchLimits`], runs them and hands each result back. Otherwise it waits
//! for its result, or for the model to free up. Passes join at the next batch after they arrive, a cancelled
//! canvas's pass is dropped at the next batch, and arrival order means no canvas starves:
//! the oldest pass is always in the next batch.

use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lacuna_models::{Backend, BatchPass, KvCache, Model, PassSpec};
use lacuna_sampler::Pass;

use crate::shared::CancelToken;

/// How much one batch may take. A batch always takes at least the oldest waiting pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Passes (canvases) per batch; 1 runs every pass alone, in arrival order (the step-by-
    /// step interleaving of earlier versions).
    pub max_passes: usize,
    /// Positions run through the layers per batch (each pass's window, or its whole canvas).
    pub max_tokens: usize,
}

/// Passes per batch by default (the server's `n` is at most 8; several requests' canvases
/// fill the rest).
pub const DEFAULT_MAX_PASSES: usize = 16;

impl BatchLimits {
    /// One pass at a time.
    pub fn off() -> Self {
        Self {
            max_passes: 1,
            max_tokens: usize::MAX,
        }
    }

    /// The default for a model whose rows are `n_embd` wide: [`DEFAULT_MAX_PASSES`], and as
    /// many positions as the batch's quantized activations (one byte per element) fit in this
    /// CPU's L2 cache, between 64 and 1024. While each weight panel streams from memory it is
    /// multiplied with every row of the batch, and the rows stay in L2.
    pub fn for_width(n_embd: usize) -> Self {
        let l2 = l2_bytes().unwrap_or(1 << 20);
        Self {
            max_passes: DEFAULT_MAX_PASSES,
            max_tokens: (l2 / n_embd.max(1)).clamp(64, 1024),
        }
    }
}

/// The size of CPU 0's L2 cache, from sysfs (Linux).
fn l2_bytes() -> Option<usize> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    for i in 0..8 {
        let dir = base.join(format!("index{i}"));
        let level = std::fs::read_to_string(dir.join("level")).ok()?;
        if level.trim() != "2" {
            continue;
        }
        let size = std::fs::read_to_string(dir.join("size")).ok()?;
        let size = size.trim();
        let (num, mul) = match size.strip_suffix('K') {
            Some(n) => (n, 1 << 10),
            None => match size.strip_suffix('M') {
                Some(n) => (n, 1 << 20),
                None => (size, 1),
            },
        };
        return num.parse::<usize>().ok().map(|n| n * mul);
    }
    None
}

/// Upper bounds of the batch histograms' buckets (the last bucket is everything above).
pub const PASS_BUCKETS: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Upper bounds of the batch-token histogram's buckets.
pub const TOKEN_BUCKETS: [u64; 7] = [16, 32, 64, 128, 256, 512, 1024];

/// A histogram of batch sizes: counts per bucket (`counts[i]`: values at most `bounds[i]`
/// and above the bound before; the last count is above every bound), their sum and count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Per bucket, not cumulative.
    pub counts: [u64; 8],
    /// Sum of the values.
    pub sum: u64,
    /// Values recorded.
    pub count: u64,
}

impl Histogram {
    pub(crate) fn record(&mut self, bounds: &[u64; 7], v: u64) {
        let i = bounds.iter().position(|&b| v <= b).unwrap_or(7);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

/// One canvas's pass, owned while it waits: the canvas's cache travels with it.
pub(crate) struct Job<Buf> {
    pub(crate) cache: KvCache<Buf>,
    pub(crate) pass: Pass,
    pub(crate) attention_block: Option<usize>,
    pub(crate) tokens: Vec<u32>,
    pub(crate) rows: Vec<usize>,
    pub(crate) out: Vec<f32>,
    pub(crate) cancel: CancelToken,
    /// DiffusionGemma's encoder or decoder instead of `pass` (run alone, not batched).
    pub(crate) gemma: Option<GemmaOp>,
    /// Set when the batch ran (or the pass was dropped).
    pub(crate) result: Option<Result<(), JobError>>,
}

/// A DiffusionGemma pass of a [`Job`]: its `tokens` through the encoder (committed to its
/// cache), or through the decoder, logits into `out`.
pub(crate) enum GemmaOp {
    Encode,
    /// With self-conditioning: the job's `out` holds the signal on entry.
    Decode(bool),
}

impl<Buf> Job<Buf> {
    /// Positions the pass runs through the layers.
    fn tokens_run(&self) -> usize {
        match &self.pass {
            Pass::Window(w) => w.len(),
            Pass::Full | Pass::Fill => self.tokens.len(),
        }
    }
}

/// Why a queued pass did not run.
#[derive(Debug)]
pub(crate) enum JobError {
    /// Its own checks failed, or (for the batch's first pass) the batch failed.
    Model(lacuna_models::Error),
    /// The batch failed; its first pass has the error itself, the others its message.
    Batch(String),
    /// Cancelled while waiting.
    Cancelled,
}

/// What one batch was, for the counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchRun {
    pub(crate) passes: usize,
    pub(crate) tokens: usize,
}

struct Queue<Buf> {
    next_id: u64,
    waiting: VecDeque<(u64, Job<Buf>)>,
    done: HashMap<u64, Job<Buf>>,
    busy: bool,
    /// Generations running now ([`Collector::join`]): the passes a batch can expect.
    members: usize,
    /// How long the last batch ran.
    last_batch: Duration,
}

/// A model and the passes waiting for it.
pub(crate) struct Collector<B: Backend> {
    model: Mutex<Model<B>>,
    queue: Mutex<Queue<B::Buf>>,
    changed: Condvar,
    limits: BatchLimits,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<B: Backend> Collector<B>
where
    Model<B>: Send,
{
    pub(crate) fn new(model: Model<B>, limits: BatchLimits) -> Self {
        Self {
            model: Mutex::new(model),
            queue: Mutex::new(Queue {
                next_id: 0,
                waiting: VecDeque::new(),
                done: HashMap::new(),
                busy: false,
                members: 0,
                last_batch: Duration::ZERO,
            }),
            changed: Condvar::new(),
            limits,
        }
    }

    pub(crate) fn limits(&self) -> BatchLimits {
        self.limits
    }

    /// Counts a generation in until the returned guard drops: a batch about to start waits
    /// (briefly) for the passes of the members still between two passes.
    pub(crate) fn join(&self) -> Member<'_, B> {
        lock(&self.queue).members += 1;
        Member { collector: self }
    }

    /// Queues `job` and returns it run (its `result` set). `run` executes a batch on the
    /// model (the engine's thread pool installed) and reports it.
    pub(crate) fn submit(
        &self,
        job: Job<B::Buf>,
        run: impl Fn(&mut Model<B>, &mut [Job<B::Buf>]) -> Option<BatchRun>,
        mut ran: impl FnMut(BatchRun),
    ) -> Job<B::Buf> {
        let mut q = lock(&self.queue);
        let id = q.next_id;
        q.next_id += 1;
        q.waiting.push_back((id, job));
        // A leader gathering passes counts this one.
        self.changed.notify_all();
        loop {
            if let Some(job) = q.done.remove(&id) {
                return job;
            }
            if q.busy {
                q = self
                    .changed
                    .wait(q)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                continue;
            }
            // Gather: the other running generations are usually a moment behind (their
            // samplers run after each batch), so a batch started at once would often hold
            // one pass and the rest the next. Wait for them, at most a quarter of the last
            // batch's time (a member that streams slowly or is about to finish does not hold
            // the others up for long).
            let full = |q: &Queue<B::Buf>| {
                q.waiting.len() >= q.members.min(self.limits.max_passes)
                    || q.waiting.iter().map(|(_, j)| j.tokens_run()).sum::<usize>()
                        >= self.limits.max_tokens
            };
            if !full(&q) {
                let deadline = Instant::now() + (q.last_batch / 4).max(GATHER_MIN);
                while !full(&q) && !q.busy {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    q = self
                        .changed
                        .wait_timeout(q, deadline - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
                // Another thread may have led a batch meanwhile (with this pass in it).
                if q.busy || q.done.contains_key(&id) {
                    continue;
                }
            }
            // Lead the next batch: the oldest passes, within the limits.
            q.busy = true;
            let mut ids = Vec::new();
            let mut batch = Vec::new();
            let mut tokens = 0;
            while let Some((_, next)) = q.waiting.front() {
                let t = next.tokens_run();
                let full = batch.len() >= self.limits.max_passes
                    || (!batch.is_empty() && tokens + t > self.limits.max_tokens);
                if full {
                    break;
                }
                let (jid, job) = q.waiting.pop_front().expect("front exists");
                tokens += t;
                ids.push(jid);
                batch.push(job);
            }
            drop(q);
            let started = Instant::now();
            let report = {
                let mut model = lock(&self.model);
                run(&mut model, &mut batch)
            };
            let took = started.elapsed();
            if let Some(r) = report {
                ran(r);
            }
            q = lock(&self.queue);
            q.done.extend(ids.into_iter().zip(batch));
            q.busy = false;
            q.last_batch = took;
            self.changed.notify_all();
        }
    }
}

/// The shortest wait for the other members' passes before a batch starts.
const GATHER_MIN: Duration = Duration::from_millis(1);

/// A generation counted in by [`Collector::join`].
pub(crate) struct Member<'a, B: Backend>
where
    Model<B>: Send,
{
    collector: &'a Collector<B>,
}

impl<B: Backend> Drop for Member<'_, B>
where
    Model<B>: Send,
{
    fn drop(&mut self) {
        lock(&self.collector.queue).members -= 1;
        // A batch waiting for this member's pass need not wait any more.
        self.collector.changed.notify_all();
    }
}

/// Runs `jobs` as one [`Model::forward_batch`]; cancelled ones are dropped first. Sets every
/// job's result; returns what ran, if anything did.
pub(crate) fn run_batch<B: Backend>(
    model: &mut Model<B>,
    jobs: &mut [Job<B::Buf>],
) -> Option<BatchRun> {
    let mut live = Vec::new();
    let mut gemma = 0;
    for job in jobs.iter_mut() {
        if job.cancel.is_cancelled() {
            job.result = Some(Err(JobError::Cancelled));
        } else if let Some(op) = &job.gemma {
            // One at a time: the encoder/decoder passes have no batched form yet.
            let r = match op {
                GemmaOp::Encode => model.gemma_encode(&mut job.cache, &job.tokens, None),
                GemmaOp::Decode(sc) => {
                    model.gemma_decode_in_place(&mut job.cache, &job.tokens, *sc, &mut job.out)
                }
            };
            job.result = Some(r.map_err(JobError::Model));
            gemma += 1;
        } else {
            live.push(job);
        }
    }
    if live.is_empty() && gemma > 0 {
        return Some(BatchRun {
            passes: gemma,
            tokens: jobs
                .iter()
                .filter(|j| j.gemma.is_some())
                .map(|j| j.tokens.len())
                .sum(),
        });
    }
    if live.is_empty() {
        return None;
    }
    let report = BatchRun {
        passes: live.len(),
        tokens: live.iter().map(|j| j.tokens_run()).sum(),
    };
    let results = {
        let mut passes: Vec<BatchPass<'_, B::Buf>> = live
            .iter_mut()
            .map(|j| BatchPass {
                cache: Some(&mut j.cache),
                spec: PassSpec {
                    pass: &j.pass,
                    attention_block: j.attention_block,
                },
                tokens: &j.tokens,
                rows: Some(&j.rows),
                out: &mut j.out,
            })
            .collect();
        model.forward_batch(&mut passes)
    };
    match results {
        Ok(results) => {
            for (job, r) in live.into_iter().zip(results) {
                job.result = Some(r.map_err(JobError::Model));
            }
        }
        Err(e) => {
            let detail = e.to_string();
            let mut e = Some(e);
            for job in live {
                job.result = Some(Err(match e.take() {
                    Some(e) => JobError::Model(e),
                    None => JobError::Batch(detail.clone()),
                }));
            }
        }
    }
    Some(report)
}
