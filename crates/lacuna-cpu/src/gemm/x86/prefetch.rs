//! Software prefetch of the next task's panels while the tiles of this one compute.
//!
//! Over a few tokens a kernel alternates between reading a pair of panels from memory (the
//! demand misses of its first tile, or of the rebuild into the byte form) and computing on
//! them from L2; the hardware prefetcher only runs ahead of a stream of demand misses, so
//! the compute phase leaves the memory idle and the read phase leaves the vector units idle.
//! The kernel hands its tiles a [`Prefetch`] of the panels that follow its own (the next task
//! of the same thread under rayon's contiguous splits), and each tile issues a few prefetches
//! per sub-block, so the next pair is in L2 when its turn comes.

use core::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};

use crate::packed::QuantPacked;

/// The most arrays of a matrix that hold per-panel bytes (weights and constants).
const REGIONS: usize = 11;

/// Cache lines of some panels of a matrix, issued a few at a time by [`Prefetch::step`].
pub(super) struct Prefetch {
    /// `(first byte, cache lines)` of each array's part for the panels.
    regions: [(*const u8, usize); REGIONS],
    n: usize,
    /// The region and line the next prefetch reads.
    at: usize,
    line: usize,
    /// Lines issued by each [`Prefetch::step`].
    per_step: usize,
}

impl Prefetch {
    /// Nothing to prefetch.
    fn none() -> Prefetch {
        Prefetch {
            regions: [(std::ptr::null(), 0); REGIONS],
            n: 0,
            at: 0,
            line: 0,
            per_step: 0,
        }
    }

    /// The panels `p..p + np` of `w` (clamped to its panels; none when `p` is past them),
    /// spread over `steps` calls of [`Prefetch::step`].
    pub(super) fn panels(w: &QuantPacked, p: usize, np: usize, steps: usize) -> Prefetch {
        let mut pf = Prefetch::none();
        let end = (p + np).min(w.panels);
        if p >= end || steps == 0 {
            return pf;
        }
        let mut add = |base: *const u8, len: usize, elt: usize| {
            if len == 0 {
                return;
            }
            // Every array is laid out panel-major with the same size per panel.
            let per_panel = len / w.panels * elt;
            // SAFETY: `p * per_panel` is within the array (`p < w.panels`); the pointer is
            // only prefetched, never dereferenced.
            let first = unsafe { base.add(p * per_panel) };
            let bytes = (end - p) * per_panel;
            // Whole lines: the first may start mid-line.
            let lines = (first as usize % 64 + bytes).div_ceil(64);
            pf.regions[pf.n] = (first.wrapping_sub(first as usize % 64), lines);
            pf.n += 1;
        };
        add(w.qs.as_ptr().cast(), w.qs.len(), 1);
        add(w.scales.as_ptr().cast(), w.scales.len(), 4);
        add(w.scales8.as_ptr().cast(), w.scales8.len(), 1);
        add(w.corr.as_ptr().cast(), w.corr.len(), 4);
        add(w.corr16.as_ptr().cast(), w.corr16.len(), 2);
        add(w.mins.as_ptr().cast(), w.mins.len(), 2);
        add(w.mins8.as_ptr().cast(), w.mins8.len(), 1);
        add(w.d.as_ptr().cast(), w.d.len(), 4);
        add(w.dmin.as_ptr().cast(), w.dmin.len(), 4);
        add(w.d16.as_ptr().cast(), w.d16.len(), 2);
        add(w.e8.as_ptr(), w.e8.len(), 1);
        let lines: usize = pf.regions[..pf.n].iter().map(|r| r.1).sum();
        pf.per_step = lines.div_ceil(steps);
        pf
    }

    /// Issues the next [`Prefetch::per_step`] lines (none once every region is issued).
    #[inline(always)]
    pub(super) fn step(&mut self) {
        for _ in 0..self.per_step {
            let Some(line) = self.next_line() else {
                return;
            };
            // SAFETY: a prefetch reads nothing architecturally and cannot fault; SSE is
            // part of x86-64.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(line.cast()) };
        }
    }

    /// The next line to fetch, if any is left.
    #[inline(always)]
    fn next_line(&mut self) -> Option<*const u8> {
        if self.at >= self.n {
            return None;
        }
        let (base, lines) = self.regions[self.at];
        let line = base.wrapping_add(self.line * 64);
        self.line += 1;
        if self.line == lines {
            self.at += 1;
            self.line = 0;
        }
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::{Form, Inner, PackedWeight};
    use crate::testing::{Rng, weights};
    use lacuna_quant::GgmlType;

    /// The lines `steps` steps issue are exactly those of the panels' bytes in every array
    /// the kernels read, none twice, whatever the form.
    #[test]
    fn issues_every_line_of_the_next_panels_once() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (n, k) = (96, 512);
        for (ty, form) in [
            (GgmlType::Q4_K, Form::Bytes),
            (GgmlType::Q4_K, Form::Small),
            (GgmlType::Q6_K, Form::Planar),
            (GgmlType::Q8_0, Form::Half),
            (GgmlType::MXFP4, Form::Half),
            (GgmlType::Q5_K, Form::Bytes),
        ] {
            let bytes = weights(ty, n, k, &mut rng, 1.0);
            let w = PackedWeight::new_with(ty, n, k, &bytes, form).unwrap();
            let Inner::Quant(q) = &w.inner else {
                panic!("{ty:?} is quantized")
            };
            for (p, np, steps) in [(0, 2, 7), (2, 2, 1000), (5, 2, 3), (6, 2, 1), (4, 9, 50)] {
                let mut pf = Prefetch::panels(q, p, np, steps);
                let mut issued = Vec::new();
                for _ in 0..steps {
                    for _ in 0..pf.per_step {
                        if let Some(l) = pf.next_line() {
                            issued.push(l as usize);
                        }
                    }
                }
                assert!(
                    pf.next_line().is_none(),
                    "{ty:?} {form:?} p {p}: lines left over"
                );
                let mut want = Vec::new();
                let end = (p + np).min(q.panels);
                let mut lines = |v: *const u8, len: usize, elt: usize| {
                    if len == 0 || p >= end {
                        return;
                    }
                    let per = len / q.panels * elt;
                    let (a, b) = (v as usize + p * per, v as usize + end * per);
                    want.extend((a & !63..b).step_by(64));
                };
                lines(q.qs.as_ptr().cast(), q.qs.len(), 1);
                lines(q.scales.as_ptr().cast(), q.scales.len(), 4);
                lines(q.scales8.as_ptr().cast(), q.scales8.len(), 1);
                lines(q.corr.as_ptr().cast(), q.corr.len(), 4);
                lines(q.corr16.as_ptr().cast(), q.corr16.len(), 2);
                lines(q.mins.as_ptr().cast(), q.mins.len(), 2);
                lines(q.mins8.as_ptr().cast(), q.mins8.len(), 1);
                lines(q.d.as_ptr().cast(), q.d.len(), 4);
                lines(q.dmin.as_ptr().cast(), q.dmin.len(), 4);
                lines(q.d16.as_ptr().cast(), q.d16.len(), 2);
                lines(q.e8.as_ptr(), q.e8.len(), 1);
                assert!(!want.is_empty() || p >= q.panels);
                assert_eq!(issued, want, "{ty:?} {form:?} panels {p}+{np}");
            }
        }
    }
}
