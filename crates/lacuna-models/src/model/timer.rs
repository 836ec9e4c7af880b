//! Per-part timing of a profiling pass. Normal passes read no clock: on an asynchronous
//! device a clock read between two launches measures the queue, not the work. A profiling
//! pass synchronizes the backend before each read, so every part is charged its own time.

use std::time::{Duration, Instant};

use crate::Result;
use crate::backend::Backend;
use crate::weights::MatCost;

/// Wall time spent in each part of the profiling passes since the last reset, and counters
/// of every pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PartTimes {
    /// Projections and feed-forward matmuls (including MoE routing and experts).
    pub gemm: Duration,
    /// Attention (scores, softmax, weighted sum of values).
    pub attention: Duration,
    /// The LM head matmul.
    pub lm_head: Duration,
    /// Embedding lookup, norms, RoPE, SwiGLU, residual adds, bias adds.
    pub other: Duration,
    /// Profiling passes timed (the durations above are their sums).
    pub passes: u32,
    /// Bytes of expert weights the passes read (every pass, profiling or not), in the form
    /// the backend keeps them: each expert that at least one token was routed to, once per
    /// layer and pass.
    pub expert_bytes: u64,
    /// Expert matmul groups run (expert x layer x pass with at least one token).
    pub experts_run: u64,
    /// Passes run (every pass, profiling or not): the divisor of the work counters below.
    pub passes_run: u64,
    /// Operations of the passes' weight matmuls (projections, feed-forward, router,
    /// experts, LM head), one multiply and one add per product: `2 * t * n * k` each.
    /// Attention's own products (scores, weighted values) are not counted.
    pub matmul_ops: u64,
    /// Bytes of weight data the passes' matmuls read, as the GGUF file stores them: each
    /// matrix once per pass (its reads are shared by all the pass's tokens), each expert
    /// once per layer and pass it has tokens in. The embedding table's rows are not
    /// counted. Divided by the memory read bandwidth, this is the floor of a pass.
    pub file_bytes_read: u64,
    /// The same reads in the form the backend holds the weights (a repacked layout can be
    /// larger than the file's).
    pub held_bytes_read: u64,
}

impl PartTimes {
    /// Mean work of one pass run since `earlier` (a previous reading of the same model's
    /// counters; [`PartTimes::default`] for all of them): (matmul operations, file bytes,
    /// held bytes). Zeros when no pass ran.
    pub fn work_per_pass_since(&self, earlier: &PartTimes) -> (f64, f64, f64) {
        let n = self.passes_run.saturating_sub(earlier.passes_run).max(1) as f64;
        let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / n;
        (
            per(self.matmul_ops, earlier.matmul_ops),
            per(self.file_bytes_read, earlier.file_bytes_read),
            per(self.held_bytes_read, earlier.held_bytes_read),
        )
    }
}

/// A part of the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Gemm,
    Attention,
    LmHead,
    Other,
}

/// The clock of one pass: a no-op unless the pass profiles.
pub(crate) struct Timer {
    last: Option<Instant>,
    times: PartTimes,
}

impl Timer {
    /// A timer that reads the clock only when `profile`.
    pub(crate) fn new<B: Backend>(be: &mut B, profile: bool) -> Result<Self> {
        let last = if profile {
            be.synchronize()?;
            Some(Instant::now())
        } else {
            None
        };
        Ok(Self {
            last,
            times: PartTimes::default(),
        })
    }

    /// Charges the time since the previous mark to `part` (after the backend has finished
    /// what was queued).
    pub(crate) fn mark<B: Backend>(&mut self, be: &mut B, part: Part) -> Result<()> {
        let Some(last) = self.last else {
            return Ok(());
        };
        be.synchronize()?;
        let now = Instant::now();
        let d = now - last;
        match part {
            Part::Gemm => self.times.gemm += d,
            Part::Attention => self.times.attention += d,
            Part::LmHead => self.times.lm_head += d,
            Part::Other => self.times.other += d,
        }
        self.last = Some(now);
        Ok(())
    }

    /// Counts one MoE layer's expert reads.
    pub(crate) fn experts(&mut self, bytes: u64, run: u64) {
        self.times.expert_bytes += bytes;
        self.times.experts_run += run;
    }

    /// Counts one matmul of `t` rows with the weight of size `c`.
    pub(crate) fn matmul(&mut self, t: usize, c: &MatCost) {
        self.times.matmul_ops += 2 * (t * c.n) as u64 * c.k as u64;
        self.times.file_bytes_read += c.file_bytes;
        self.times.held_bytes_read += c.held_bytes;
    }

    /// Adds this pass into `total`.
    pub(crate) fn finish(self, total: &mut PartTimes) {
        if self.last.is_some() {
            total.gemm += self.times.gemm;
            total.attention += self.times.attention;
            total.lm_head += self.times.lm_head;
            total.other += self.times.other;
            total.passes += 1;
        }
        total.expert_bytes += self.times.expert_bytes;
        total.experts_run += self.times.experts_run;
        total.passes_run += 1;
        total.matmul_ops += self.times.matmul_ops;
        total.file_bytes_read += self.times.file_bytes_read;
        total.held_bytes_read += self.times.held_bytes_read;
    }
}
