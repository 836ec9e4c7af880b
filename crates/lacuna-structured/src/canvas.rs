//! The constraint over one generation's region: which token-automaton states each boundary
//! between positions can be in, forward from the start through the fixed tokens and the
//! masked positions ("any token"), and backward from the accepting states, so that a state
//! is kept only when it lies on a path through the whole region. From those sets come the
//! tokens each masked position may take, whether the region can still be completed, and the
//! most likely completion of a run of positions (a Viterbi pass, DINGO's program).
//!
//! Cost of one pass over a region of `L` positions: forward and backward, the sum over
//! boundaries of the states kept times their successors; a position's allowed tokens add its
//! states' transitions and one pass over the vocabulary. Passes are cached on the region.

use std::ops::Range;
use std::sync::Arc;

use lacuna_sampler::ConstraintState;

use crate::tokens::TokenAutomaton;

/// A set of states as bits.
#[derive(Debug, Clone)]
struct Bits {
    words: usize,
    data: Vec<u64>,
}

impl Bits {
    fn new(rows: usize, states: usize) -> Bits {
        let words = states.div_ceil(64);
        Bits {
            words,
            data: vec![0; rows * words],
        }
    }
    fn row(&self, r: usize) -> &[u64] {
        &self.data[r * self.words..(r + 1) * self.words]
    }
    fn clear(&mut self) {
        self.data.fill(0);
    }
    fn get(&self, r: usize, q: u32) -> bool {
        self.data[r * self.words + q as usize / 64] >> (q % 64) & 1 == 1
    }
    fn set(&mut self, r: usize, q: u32) {
        self.data[r * self.words + q as usize / 64] |= 1 << (q % 64);
    }
    /// The states in row `r`, ascending.
    fn iter(&self, r: usize) -> impl Iterator<Item = u32> + '_ {
        self.row(r).iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                (b != 0).then(|| {
                    let i = b.trailing_zeros();
                    b &= b - 1;
                    w as u32 * 64 + i
                })
            })
        })
    }
    fn any(&self, r: usize) -> bool {
        self.row(r).iter().any(|&w| w != 0)
    }
}

/// One generation's constraint state.
#[derive(Debug)]
pub(crate) struct RegionState {
    auto: Arc<TokenAutomaton>,
    free: u32,
    /// The region the sets below were computed for.
    region: Vec<u32>,
    valid: bool,
    /// `forward[i]`: states reachable at boundary `i`; `live[i]`: those on a complete path.
    forward: Bits,
    live: Bits,
    /// Scratch: which classes a position allows.
    allowed: Vec<bool>,
}

impl RegionState {
    pub(crate) fn new(auto: Arc<TokenAutomaton>, len: usize, free: u32) -> RegionState {
        let n = auto.len();
        let classes = auto.n_classes;
        RegionState {
            auto,
            free,
            region: Vec::new(),
            valid: false,
            forward: Bits::new(len + 1, n),
            live: Bits::new(len + 1, n),
            allowed: vec![false; classes],
        }
    }

    /// The class of `token` (0, never allowed, for ids outside the vocabulary).
    fn class(&self, token: u32) -> u32 {
        self.auto
            .token_class
            .get(token as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The forward and live sets of `region` (cached).
    fn compute(&mut self, region: &[u32]) {
        if self.valid && self.region == region {
            return;
        }
        let len = region.len();
        if self.forward.data.len() != (len + 1) * self.forward.words {
            let n = self.auto.len();
            self.forward = Bits::new(len + 1, n);
            self.live = Bits::new(len + 1, n);
        }
        self.forward.clear();
        self.live.clear();
        let auto = Arc::clone(&self.auto);
        self.forward.set(0, auto.start);
        for (i, &tok) in region.iter().enumerate() {
            let states: Vec<u32> = self.forward.iter(i).collect();
            if tok == self.free {
                for q in states {
                    for &t in auto.successors(q) {
                        self.forward.set(i + 1, t);
                    }
                }
            } else {
                let c = self.class(tok);
                for q in states {
                    if let Some(t) = auto.step(q, c) {
                        self.forward.set(i + 1, t);
                    }
                }
            }
        }
        let ends: Vec<u32> = self.forward.iter(len).collect();
        for q in ends {
            if auto.accept[q as usize] {
                self.live.set(len, q);
            }
        }
        for i in (0..len).rev() {
            let tok = region[i];
            let states: Vec<u32> = self.forward.iter(i).collect();
            for q in states {
                let on_path = if tok == self.free {
                    auto.successors(q).iter().any(|&t| self.live.get(i + 1, t))
                } else {
                    auto.step(q, self.class(tok))
                        .is_some_and(|t| self.live.get(i + 1, t))
                };
                if on_path {
                    self.live.set(i, q);
                }
            }
        }
        self.region.clear();
        self.region.extend_from_slice(region);
        self.valid = true;
    }

    /// Marks in `self.allowed` the classes position `pos` may take.
    fn allow(&mut self, pos: usize) {
        self.allowed.fill(false);
        for q in self.live.iter(pos) {
            for &(c, t) in self.auto.edges(q) {
                if self.live.get(pos + 1, t) {
                    self.allowed[c as usize] = true;
                }
            }
        }
    }
}

impl ConstraintState for RegionState {
    fn completable(&mut self, region: &[u32]) -> bool {
        self.compute(region);
        self.live.any(0)
    }

    fn restrict(&mut self, region: &[u32], pos: usize, logits: &mut [f32]) {
        self.compute(region);
        self.allow(pos);
        let tc = &self.auto.token_class;
        for (t, l) in logits.iter_mut().enumerate() {
            let c = tc.get(t).copied().unwrap_or(0) as usize;
            if !self.allowed[c] {
                *l = f32::NEG_INFINITY;
            }
        }
    }

    fn most_likely(
        &mut self,
        region: &[u32],
        range: Range<usize>,
        scores: &[f32],
    ) -> Option<Vec<u32>> {
        self.compute(region);
        let n = self.auto.len();
        let width = range.len();
        if width == 0 {
            return self.live.any(0).then(Vec::new);
        }
        let vocab = scores.len() / width;
        let auto = Arc::clone(&self.auto);
        let mut value = vec![f32::NEG_INFINITY; n];
        for q in self.live.iter(range.start) {
            value[q as usize] = 0.0;
        }
        // back[i][state]: (previous state, class) of the best path into it.
        let mut back: Vec<Vec<(u32, u32)>> = Vec::with_capacity(width);
        let mut best = vec![f32::NEG_INFINITY; auto.n_classes];
        let mut best_token = vec![0u32; auto.n_classes];
        let mut tokens_of: Vec<Vec<u32>> = Vec::with_capacity(width);
        for (k, pos) in range.clone().enumerate() {
            best.fill(f32::NEG_INFINITY);
            let row = &scores[k * vocab..(k + 1) * vocab];
            for (t, &s) in row.iter().enumerate() {
                let c = auto.token_class.get(t).copied().unwrap_or(0) as usize;
                if c != 0 && s > best[c] {
                    best[c] = s;
                    best_token[c] = t as u32;
                }
            }
            tokens_of.push(best_token.clone());
            let mut next = vec![f32::NEG_INFINITY; n];
            let mut from = vec![(u32::MAX, 0u32); n];
            for q in self.live.iter(pos) {
                let v = value[q as usize];
                if v == f32::NEG_INFINITY {
                    continue;
                }
                for &(c, t) in auto.edges(q) {
                    let s = best[c as usize];
                    if s == f32::NEG_INFINITY || !self.live.get(pos + 1, t) {
                        continue;
                    }
                    if v + s > next[t as usize] {
                        next[t as usize] = v + s;
                        from[t as usize] = (q, c);
                    }
                }
            }
            back.push(from);
            value = next;
        }
        let (mut q, _) = self
            .live
            .iter(range.end)
            .map(|q| (q, value[q as usize]))
            .filter(|&(_, v)| v > f32::NEG_INFINITY)
            .fold(None, |acc: Option<(u32, f32)>, (q, v)| match acc {
                Some((_, b)) if b >= v => acc,
                _ => Some((q, v)),
            })?;
        let mut out = vec![0u32; width];
        for k in (0..width).rev() {
            let (p, c) = back[k][q as usize];
            out[k] = tokens_of[k][c as usize];
            q = p;
        }
        Some(out)
    }
}
