//! A language's byte automaton: the HIR compiled by `regex-automata` (Thompson NFA, subset
//! construction, minimization) into a dense DFA anchored at the start, then copied into a
//! plain table over its byte classes with full-match acceptance, unreachable and dead-end
//! states removed.

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};
use regex_syntax::hir::Hir;

use crate::error::{Error, Result};

/// "No transition".
pub(crate) const DEAD: u32 = u32::MAX;

/// Size limits of one byte automaton.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DfaLimits {
    /// Bytes of the Thompson NFA.
    pub(crate) nfa_bytes: usize,
    /// Bytes of the dense DFA (and of its determinization).
    pub(crate) dfa_bytes: usize,
}

/// A deterministic automaton over bytes: `next[state * n_classes + class[byte]]`, a full
/// match when the input ends in an `accept` state.
#[derive(Debug, Clone)]
pub(crate) struct ByteDfa {
    pub(crate) class: [u8; 256],
    pub(crate) n_classes: usize,
    pub(crate) next: Vec<u32>,
    pub(crate) accept: Vec<bool>,
    pub(crate) start: u32,
}

impl ByteDfa {
    /// States.
    pub(crate) fn len(&self) -> usize {
        self.accept.len()
    }

    /// The state after `byte` from `state`, or [`DEAD`].
    pub(crate) fn step(&self, state: u32, byte: u8) -> u32 {
        self.next[state as usize * self.n_classes + self.class[byte as usize] as usize]
    }

    /// Whether the whole of `s` is in the language.
    #[cfg(test)]
    pub(crate) fn matches(&self, s: &[u8]) -> bool {
        let mut q = self.start;
        for &b in s {
            q = self.step(q, b);
            if q == DEAD {
                return false;
            }
        }
        self.accept[q as usize]
    }

    /// A random word of at most about `max_len` bytes (longer only when no shorter word
    /// exists from where the walk is), from a seeded xorshift.
    #[cfg(test)]
    pub(crate) fn sample(&self, seed: &mut u64, max_len: usize) -> Vec<u8> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let n = self.len();
        let k = self.n_classes;
        // Bytes from each state to an accepting one.
        let mut dist: Vec<usize> = self
            .accept
            .iter()
            .map(|&a| if a { 0 } else { usize::MAX })
            .collect();
        loop {
            let mut changed = false;
            for q in 0..n {
                for c in 0..k {
                    let t = self.next[q * k + c];
                    if t != DEAD && dist[t as usize] != usize::MAX && dist[t as usize] + 1 < dist[q]
                    {
                        dist[q] = dist[t as usize] + 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut q = self.start;
        let mut out = Vec::new();
        loop {
            let left = max_len.saturating_sub(out.len());
            if self.accept[q as usize] && (next() % 8 == 0 || left == 0) {
                return out;
            }
            let here = dist[q as usize];
            let opts: Vec<usize> = (0..k)
                .filter(|&c| {
                    let t = self.next[q as usize * k + c];
                    t != DEAD && (dist[t as usize] < here || dist[t as usize] < left)
                })
                .collect();
            if opts.is_empty() {
                return out;
            }
            let c = opts[(next() % opts.len() as u64) as usize];
            let bytes: Vec<u8> = (0..=255u8)
                .filter(|&b| self.class[b as usize] as usize == c)
                .collect();
            out.push(bytes[(next() % bytes.len() as u64) as usize]);
            q = self.next[q as usize * k + c];
        }
    }

    /// Compiles `hir` (a language to match whole).
    pub(crate) fn build(hir: &Hir, limits: DfaLimits) -> Result<ByteDfa> {
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(limits.nfa_bytes))
                    .shrink(false),
            )
            .build_from_hir(hir)
            .map_err(|e| too_large("NFA bytes", limits.nfa_bytes, &e.to_string()))?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Anchored)
                    .minimize(true)
                    .accelerate(false)
                    .dfa_size_limit(Some(limits.dfa_bytes))
                    .determinize_size_limit(Some(limits.dfa_bytes)),
            )
            .build_from_nfa(&nfa)
            .map_err(|e| too_large("DFA bytes", limits.dfa_bytes, &e.to_string()))?;
        Self::from_dense(&dfa)
    }

    /// Copies `dfa`'s reachable, co-reachable states into a table.
    fn from_dense(dfa: &dense::DFA<Vec<u32>>) -> Result<ByteDfa> {
        let classes = dfa.byte_classes();
        let mut class = [0u8; 256];
        for b in 0..=255u8 {
            class[b as usize] = classes.get(b);
        }
        let n_classes = classes.alphabet_len() - 1; // without the end-of-input class
        let reps: Vec<u8> = (0..n_classes)
            .map(|c| {
                (0..=255u8)
                    .find(|&b| class[b as usize] as usize == c)
                    .unwrap_or(0)
            })
            .collect();
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| Error::RegexFeature {
                feature: e.to_string(),
            })?;
        // Breadth first from the start state.
        let mut ids: std::collections::HashMap<StateID, u32> = Default::default();
        let mut order = vec![start];
        ids.insert(start, 0);
        let mut edges: Vec<Vec<Option<StateID>>> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            let row: Vec<Option<StateID>> = reps
                .iter()
                .map(|&b| {
                    let t = dfa.next_state(s, b);
                    (!dfa.is_dead_state(t) && !dfa.is_quit_state(t)).then_some(t)
                })
                .collect();
            for t in row.iter().flatten() {
                if !ids.contains_key(t) {
                    ids.insert(*t, order.len() as u32);
                    order.push(*t);
                }
            }
            edges.push(row);
            i += 1;
        }
        let accept: Vec<bool> = order
            .iter()
            .map(|&s| dfa.is_match_state(dfa.next_eoi_state(s)))
            .collect();
        let n = order.len();
        let mut next = vec![DEAD; n * n_classes];
        for (q, row) in edges.iter().enumerate() {
            for (c, t) in row.iter().enumerate() {
                if let Some(t) = t {
                    next[q * n_classes + c] = ids[t];
                }
            }
        }
        prune(ByteDfa {
            class,
            n_classes,
            next,
            accept,
            start: 0,
        })
    }
}

/// Keeps the states from which an accepting state is reachable (renumbered, the start first);
/// [`Error::Empty`] when the start is not one of them.
fn prune(dfa: ByteDfa) -> Result<ByteDfa> {
    let (n, k) = (dfa.len(), dfa.n_classes);
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    for q in 0..n {
        for c in 0..k {
            let t = dfa.next[q * k + c];
            if t != DEAD {
                rev[t as usize].push(q as u32);
            }
        }
    }
    let mut live = dfa.accept.clone();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&q| live[q as usize]).collect();
    while let Some(q) = stack.pop() {
        for &p in &rev[q as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    if !live[dfa.start as usize] {
        return Err(Error::Empty);
    }
    let mut id = vec![DEAD; n];
    let mut m = 0u32;
    for q in 0..n {
        if live[q] {
            id[q] = m;
            m += 1;
        }
    }
    let mut next = vec![DEAD; m as usize * k];
    let mut accept = vec![false; m as usize];
    for q in (0..n).filter(|&q| live[q]) {
        accept[id[q] as usize] = dfa.accept[q];
        for c in 0..k {
            let t = dfa.next[q * k + c];
            if t != DEAD && live[t as usize] {
                next[id[q] as usize * k + c] = id[t as usize];
            }
        }
    }
    Ok(ByteDfa {
        class: dfa.class,
        n_classes: k,
        next,
        accept,
        start: id[dfa.start as usize],
    })
}

fn too_large(what: &'static str, limit: usize, detail: &str) -> Error {
    if detail.contains("exceeded") || detail.contains("limit") {
        Error::TooLarge {
            what,
            limit: limit as u64,
        }
    } else {
        Error::RegexFeature {
            feature: detail.to_string(),
        }
    }
}
