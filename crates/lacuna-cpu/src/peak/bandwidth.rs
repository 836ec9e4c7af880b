//! The machine's memory read bandwidth, the other floor of a pass beside the compute peak:
//! a pass over small windows must still read every weight once, so its time cannot go
//! below the bytes it reads over this rate.
//!
//! The probe streams a buffer much larger than the last-level cache with the widest loads
//! of the machine, split in equal contiguous parts over `threads` threads that start
//! together, and reports the best of several repetitions (the least disturbed one).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::Error;

/// Default probe size: 512 MiB, far above any last-level cache of a 2–64 core machine, so
/// the stream comes from DRAM.
pub const DEFAULT_PROBE_BYTES: usize = 512 << 20;

/// One bandwidth measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    /// Threads that read at once.
    pub threads: usize,
    /// Bytes read per repetition.
    pub bytes: usize,
    /// Time of the fastest repetition.
    pub best: Duration,
}

impl Bandwidth {
    /// Bytes per second of the fastest repetition.
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.best.as_secs_f64().max(1e-12)
    }

    /// The same in GB/s (10^9 bytes per second).
    pub fn gb_per_s(&self) -> f64 {
        self.bytes_per_s() / 1e9
    }
}

/// Measures the read bandwidth of `threads` threads streaming `bytes` bytes (rounded down
/// to whole 4 KiB pages per thread) `reps` times; the buffer is allocated and first
/// touched by the threads that read it, then freed.
///
/// # Errors
/// [`Error::BadShape`] when `threads` or `reps` is 0 or `bytes` gives a thread less than
/// one page.
pub fn read_bandwidth(threads: usize, bytes: usize, reps: usize) -> Result<Bandwidth, Error> {
    const PAGE: usize = 4096;
    if threads == 0 || reps == 0 {
        return Err(Error::BadShape {
            what: "bandwidth probe",
            detail: "threads and repetitions must be at least 1",
        });
    }
    let per = bytes / threads / PAGE * PAGE;
    if per == 0 {
        return Err(Error::BadShape {
            what: "bandwidth probe",
            detail: "fewer bytes than one page per thread",
        });
    }
    let words = per / 8;
    let mut parts: Vec<Vec<u64>> = Vec::new();
    parts.resize_with(threads, Vec::new);
    // First touch by the reading thread (NUMA machines place the pages near it).
    std::thread::scope(|s| {
        for (i, part) in parts.iter_mut().enumerate() {
            s.spawn(move || {
                *part = (0..words as u64).map(|w| w ^ (i as u64 + 1)).collect();
            });
        }
    });
    let mut best = Duration::MAX;
    let mut check = 0u64;
    for _ in 0..reps {
        let start = Barrier::new(threads);
        let results: Vec<(Instant, Instant, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .iter()
                .map(|part| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        let t0 = Instant::now();
                        let sum = sum_words(part);
                        (t0, Instant::now(), sum)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("bandwidth probe thread panicked"))
                .collect()
        });
        let first = results.iter().map(|r| r.0).min().expect("threads >= 1");
        let last = results.iter().map(|r| r.1).max().expect("threads >= 1");
        best = best.min(last - first);
        check = results.iter().fold(check, |c, r| c.wrapping_add(r.2));
    }
    std::hint::black_box(check);
    Ok(Bandwidth {
        threads,
        bytes: per * threads,
        best,
    })
}

/// The wrapping sum of `words`, with the widest loads this CPU has.
pub(crate) fn sum_words(words: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked above).
        return unsafe { sum_avx2(words) };
    }
    sum_plain(words)
}

/// Eight independent chains, so the adds never wait on each other (the compiler
/// vectorizes this with the baseline SIMD of the target: SSE2, NEON).
fn sum_plain(words: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    let mut chunks = words.chunks_exact(8);
    for c in &mut chunks {
        for (a, &w) in acc.iter_mut().zip(c) {
            *a = a.wrapping_add(w);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0u64, |s, &w| s.wrapping_add(w));
    acc.iter().fold(tail, |s, &a| s.wrapping_add(a))
}

/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_avx2(words: &[u64]) -> u64 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_setzero_si256(); 8];
    let mut chunks = words.chunks_exact(32);
    for c in &mut chunks {
        for (i, a) in acc.iter_mut().enumerate() {
            // SAFETY: the chunk holds 32 words: words 4i..4i+4 are in bounds.
            let v = unsafe { _mm256_loadu_si256(c.as_ptr().add(4 * i).cast()) };
            *a = _mm256_add_epi64(*a, v);
        }
    }
    let mut lanes = [0u64; 4];
    let mut total = sum_plain(chunks.remainder());
    for a in acc {
        // SAFETY: `lanes` is 32 writable bytes.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), a) };
        total = lanes.iter().fold(total, |s, &l| s.wrapping_add(l));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_agree_with_a_plain_fold() {
        // Lengths around the 8- and 32-word chunks, values that wrap.
        for len in [0, 1, 7, 8, 31, 32, 33, 100, 1000] {
            let words: Vec<u64> = (0..len as u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::MAX / 3))
                .collect();
            let want = words.iter().fold(0u64, |s, &w| s.wrapping_add(w));
            assert_eq!(sum_words(&words), want, "len {len}");
            assert_eq!(sum_plain(&words), want, "len {len}");
        }
    }

    #[test]
    fn measures_a_positive_rate_and_rejects_impossible_probes() {
        let bw = read_bandwidth(2, 8 << 20, 2).unwrap();
        assert_eq!((bw.threads, bw.bytes), (2, 8 << 20));
        assert!(bw.best > Duration::ZERO && bw.gb_per_s().is_finite());
        // Rounded down to whole pages per thread.
        assert_eq!(read_bandwidth(3, 3 * 4096 + 5, 1).unwrap().bytes, 3 * 4096);
        for (t, b, r) in [(0, 1 << 20, 1), (1, 1 << 20, 0), (4, 4096, 1)] {
            assert!(
                matches!(read_bandwidth(t, b, r), Err(Error::BadShape { .. })),
                "{t} {b} {r}"
            );
        }
    }
}
