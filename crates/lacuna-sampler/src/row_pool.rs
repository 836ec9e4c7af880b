//! A step's per-row work (argmax, softmax, entropy, filters) spread over the rayon pool the
//! sampler runs in: the engine's threads, which sit idle while the sampler reads the logits.
//! Each row is computed exactly as it would be alone, so no result depends on the thread
//! count; draws from the [`crate::UniformSource`] stay with the caller, in row order.
//!
//! At LLaDA's 126,464-token vocabulary one row's confidence (an f64 softmax) costs about
//! 0.2 ms on one core, and a cached step asks for a block's rows: enough to matter against
//! a small model's step when one thread does them.

use crate::rng::UniformSource;
use rayon::prelude::*;

/// `f(i, scratch)` for `i` in `0..n`, in order. The indices are cut into one contiguous run
/// per thread of the current pool, each with a scratch of `scratch` (grown to the thread
/// count, kept for the next step).
pub(crate) fn map<S, T, F>(n: usize, scratch: &mut Vec<S>, f: F) -> Vec<T>
where
    S: Default + Send,
    T: Send,
    F: Fn(usize, &mut S) -> T + Sync,
{
    if n == 0 {
        return Vec::new();
    }
    let (runs, per) = split(n, scratch);
    if runs == 1 {
        let s = &mut scratch[0];
        return (0..n).map(|i| f(i, s)).collect();
    }
    let parts: Vec<Vec<T>> = scratch[..runs]
        .par_iter_mut()
        .enumerate()
        .map(|(c, s)| (c * per..n.min((c + 1) * per)).map(|i| f(i, s)).collect())
        .collect();
    parts.into_iter().flatten().collect()
}

/// [`map`] over the `vocab`-wide rows of `logits`, each handed to `f` to read and rewrite.
pub(crate) fn map_mut<S, T, F>(
    logits: &mut [f32],
    vocab: usize,
    scratch: &mut Vec<S>,
    f: F,
) -> Vec<T>
where
    S: Default + Send,
    T: Send,
    F: Fn(usize, &mut [f32], &mut S) -> T + Sync,
{
    let n = logits.len().checked_div(vocab).unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    let (runs, per) = split(n, scratch);
    let parts: Vec<Vec<T>> = scratch[..runs]
        .par_iter_mut()
        .zip(logits[..n * vocab].par_chunks_mut(per * vocab))
        .enumerate()
        .map(|(c, (s, run))| {
            run.chunks_exact_mut(vocab)
                .enumerate()
                .map(|(i, row)| f(c * per + i, row, s))
                .collect()
        })
        .collect();
    parts.into_iter().flatten().collect()
}

/// `n > 0` items cut into one contiguous run per thread of the current pool (at most `n`
/// runs of `per` items, the last maybe shorter or empty), `scratch` grown to one per run:
/// `(runs, per)`.
fn split<S: Default>(n: usize, scratch: &mut Vec<S>) -> (usize, usize) {
    let runs = rayon::current_num_threads().clamp(1, n);
    if scratch.len() < runs {
        scratch.resize_with(runs, S::default);
    }
    (runs, n.div_ceil(runs))
}

/// Row `i` of `vocab`-wide logits.
pub(crate) fn row(logits: &[f32], vocab: usize, i: usize) -> &[f32] {
    &logits[i * vocab..(i + 1) * vocab]
}

/// The one draw a row's function may take, drawn beforehand in row order by the caller (so
/// the stream is consumed as when the rows ran one at a time).
pub(crate) struct Drawn(pub(crate) Option<f64>);

impl UniformSource for Drawn {
    fn next_f64(&mut self) -> f64 {
        self.0
            .take()
            .expect("a row took a draw its caller did not draw for it")
    }
    fn next_f32(&mut self) -> f32 {
        unreachable!("rows draw in f64 only")
    }
}

#[cfg(test)]
mod tests {
    use super::{map, map_mut, row};

    #[test]
    fn rows_come_back_in_order_with_their_index_on_any_pool() {
        let vocab = 5;
        for n in [0usize, 1, 2, 3, 7, 16, 33] {
            let logits: Vec<f32> = (0..n * vocab).map(|x| x as f32).collect();
            for threads in [1, 2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("pool");
                let mut scratch: Vec<Vec<usize>> = Vec::new();
                let got = pool.install(|| {
                    map(n, &mut scratch, |i, s| {
                        s.push(i);
                        (i, row(&logits, vocab, i)[0])
                    })
                });
                let want: Vec<(usize, f32)> = (0..n).map(|i| (i, (i * vocab) as f32)).collect();
                assert_eq!(got, want, "{n} rows on {threads} threads");
                // Every row went through exactly one scratch, each a contiguous run.
                let mut seen: Vec<usize> = scratch.iter().flatten().copied().collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
                assert!(scratch.len() <= threads.max(1));
                let mut rows = logits.clone();
                let got = pool.install(|| {
                    map_mut(&mut rows, vocab, &mut scratch, |i, r, _| {
                        r[1] = -(i as f32);
                        r[0]
                    })
                });
                let want: Vec<f32> = (0..n).map(|i| (i * vocab) as f32).collect();
                assert_eq!(got, want, "{n} rows on {threads} threads, in place");
                for i in 0..n {
                    assert_eq!(row(&rows, vocab, i)[1], -(i as f32));
                    assert_eq!(row(&rows, vocab, i)[2], row(&logits, vocab, i)[2]);
                }
            }
        }
    }
}
