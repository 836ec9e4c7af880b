//! The token automaton: a byte automaton lifted to a vocabulary's tokens, so that one step
//! of it is one canvas position.
//!
//! Tokens whose bytes fall in the same byte classes act alike in every state, so they are
//! grouped first (a vocabulary of 126k tokens has far fewer groups under a schema's
//! classes); each state's transitions are found by walking a trie of the groups' class
//! sequences from the state, pruning where the byte automaton dies. The groups are then
//! merged into token classes that go to the same state from every state, so that a canvas
//! step touches classes, not tokens. The end tokens form one more class: from an accepting
//! state they lead to `ended`, which only end tokens leave (the padding after an answer).

use std::collections::HashMap;
use std::time::Instant;

use crate::dfa::{ByteDfa, DEAD};
use crate::error::{Error, Result};

/// What the token automaton is built over: each token's bytes (`None`: never allowed, e.g.
/// control tokens), and the end tokens.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    tokens: Vec<Option<Box<[u8]>>>,
    end: Vec<u32>,
}

impl Vocabulary {
    /// A vocabulary of `tokens` (by id; empty byte strings are treated as `None`), with the
    /// end tokens `end` (ids that stop an answer; they must be `None` in `tokens`).
    pub fn new(tokens: Vec<Option<Vec<u8>>>, end: Vec<u32>) -> Self {
        let tokens = tokens
            .into_iter()
            .map(|t| t.filter(|b| !b.is_empty()).map(Vec::into_boxed_slice))
            .collect();
        let mut end = end;
        end.sort_unstable();
        end.dedup();
        Vocabulary { tokens, end }
    }

    /// Token ids.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary has no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The bytes of token `id`, when it may appear in an answer.
    pub fn bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).and_then(|t| t.as_deref())
    }

    /// Whether `id` is an end token.
    pub fn is_end(&self, id: u32) -> bool {
        self.end.binary_search(&id).is_ok()
    }
}

/// Limits on building one token automaton.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenLimits {
    pub(crate) states: usize,
    /// Trie nodes visited over all states (the work of the build).
    pub(crate) steps: u64,
    pub(crate) millis: u64,
}

/// A deterministic automaton over token classes.
#[derive(Debug, Clone)]
pub(crate) struct TokenAutomaton {
    /// The class of each token id (0: never allowed).
    pub(crate) token_class: Vec<u32>,
    pub(crate) n_classes: usize,
    /// Per state, its transitions `(class, next)` sorted by class: `trans[offs[q]..offs[q+1]]`.
    pub(crate) offs: Vec<u32>,
    pub(crate) trans: Vec<(u32, u32)>,
    /// Per state, the distinct next states: `succ[succ_offs[q]..succ_offs[q+1]]`.
    pub(crate) succ_offs: Vec<u32>,
    pub(crate) succ: Vec<u32>,
    pub(crate) accept: Vec<bool>,
    /// Fewest tokens from each state to an accepting one (`u32::MAX`: none).
    pub(crate) dist: Vec<u32>,
    pub(crate) start: u32,
}

impl TokenAutomaton {
    /// States (the `ended` state included).
    pub(crate) fn len(&self) -> usize {
        self.accept.len()
    }

    /// The transitions of `q`.
    pub(crate) fn edges(&self, q: u32) -> &[(u32, u32)] {
        &self.trans[self.offs[q as usize] as usize..self.offs[q as usize + 1] as usize]
    }

    /// The distinct successors of `q`.
    pub(crate) fn successors(&self, q: u32) -> &[u32] {
        &self.succ[self.succ_offs[q as usize] as usize..self.succ_offs[q as usize + 1] as usize]
    }

    /// The state after class `c` from `q`.
    pub(crate) fn step(&self, q: u32, c: u32) -> Option<u32> {
        let e = self.edges(q);
        e.binary_search_by_key(&c, |&(k, _)| k).ok().map(|i| e[i].1)
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.token_class.len() * 4
            + self.offs.len() * 4
            + self.trans.len() * 8
            + self.succ_offs.len() * 4
            + self.succ.len() * 4
            + self.accept.len()
            + self.dist.len() * 4
    }

    /// Lifts `dfa` to `vocab`'s tokens.
    pub(crate) fn build(dfa: &ByteDfa, vocab: &Vocabulary, limits: TokenLimits) -> Result<Self> {
        let began = Instant::now();
        // Group the tokens by their class sequences.
        let mut group_of: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut token_group = vec![u32::MAX; vocab.len()];
        let mut seqs: Vec<Vec<u8>> = Vec::new();
        for (id, t) in vocab.tokens.iter().enumerate() {
            let Some(bytes) = t else { continue };
            if vocab.is_end(id as u32) {
                continue;
            }
            let seq: Vec<u8> = bytes.iter().map(|&b| dfa.class[b as usize]).collect();
            let g = *group_of.entry(seq.clone()).or_insert_with(|| {
                seqs.push(seq);
                (seqs.len() - 1) as u32
            });
            token_group[id] = g;
        }
        let trie = Trie::new(&seqs);
        let mut walker = Walker {
            dfa,
            trie: &trie,
            steps: 0,
            limits,
            began,
        };
        // Token-level states, breadth first from the start; `ended` is added last.
        let mut ids: HashMap<u32, u32> = HashMap::new();
        let mut order = vec![dfa.start];
        ids.insert(dfa.start, 0);
        let mut i = 0;
        // Pass 1: find the states and refine the groups into classes.
        let mut class_of = vec![1u32; seqs.len()]; // 0 is "never"
        let mut next_class = 2u32;
        let mut refine: HashMap<(u32, u32), u32> = HashMap::new();
        let mut out: Vec<(u32, u32)> = Vec::new();
        while i < order.len() {
            let q = order[i];
            out.clear();
            walker.walk(q, &mut out)?;
            refine.clear();
            for &(g, t) in &out {
                let key = (class_of[g as usize], t);
                let c = *refine.entry(key).or_insert_with(|| {
                    next_class += 1;
                    next_class - 1
                });
                class_of[g as usize] = c;
                if let std::collections::hash_map::Entry::Vacant(e) = ids.entry(t) {
                    if order.len() >= limits.states {
                        return Err(Error::TooLarge {
                            what: "token automaton states",
                            limit: limits.states as u64,
                        });
                    }
                    e.insert(order.len() as u32);
                    order.push(t);
                }
            }
            i += 1;
        }
        // Dense class ids: 0 never, then the groups' classes, then the end class.
        let mut dense: HashMap<u32, u32> = HashMap::new();
        for c in class_of.iter_mut() {
            let n = dense.len() as u32 + 1;
            *c = *dense.entry(*c).or_insert(n);
        }
        let end_class = dense.len() as u32 + 1;
        let n_classes = end_class as usize + 1;
        let mut rep = vec![u32::MAX; n_classes];
        for (g, &c) in class_of.iter().enumerate() {
            if rep[c as usize] == u32::MAX {
                rep[c as usize] = g as u32;
            }
        }
        let ended = order.len() as u32;
        let n = order.len() + 1;
        // Pass 2: each state's transitions by class, through one group of each class.
        let mut offs = Vec::with_capacity(n + 1);
        let mut trans: Vec<(u32, u32)> = Vec::new();
        let mut accept = Vec::with_capacity(n);
        for &q in &order {
            offs.push(trans.len() as u32);
            for c in 1..end_class {
                let g = rep[c as usize];
                if g == u32::MAX {
                    continue;
                }
                let mut s = q;
                for &b in &seqs[g as usize] {
                    s = dfa.next[s as usize * dfa.n_classes + b as usize];
                    if s == DEAD {
                        break;
                    }
                }
                if s != DEAD {
                    trans.push((c, ids[&s]));
                }
            }
            let acc = dfa.accept[q as usize];
            if acc && !vocab.end.is_empty() {
                trans.push((end_class, ended));
            }
            accept.push(acc);
        }
        offs.push(trans.len() as u32);
        if !vocab.end.is_empty() {
            trans.push((end_class, ended));
        }
        offs.push(trans.len() as u32);
        accept.push(true);
        let mut token_class = vec![0u32; vocab.len()];
        for (id, &g) in token_group.iter().enumerate() {
            if g != u32::MAX {
                token_class[id] = class_of[g as usize];
            }
        }
        for &e in &vocab.end {
            if let Some(c) = token_class.get_mut(e as usize) {
                *c = end_class;
            }
        }
        let mut succ_offs = Vec::with_capacity(n + 1);
        let mut succ = Vec::new();
        for q in 0..n {
            succ_offs.push(succ.len() as u32);
            let mut s: Vec<u32> = trans[offs[q] as usize..offs[q + 1] as usize]
                .iter()
                .map(|&(_, t)| t)
                .collect();
            s.sort_unstable();
            s.dedup();
            succ.extend(s);
        }
        succ_offs.push(succ.len() as u32);
        let mut auto = TokenAutomaton {
            token_class,
            n_classes,
            offs,
            trans,
            succ_offs,
            succ,
            accept,
            dist: Vec::new(),
            start: 0,
        };
        auto.dist = auto.distances();
        if auto.dist[0] == u32::MAX {
            return Err(Error::Empty);
        }
        Ok(auto)
    }

    /// Fewest tokens from each state to an accepting state (breadth first on the reversed
    /// transitions).
    fn distances(&self) -> Vec<u32> {
        let n = self.len();
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        for q in 0..n as u32 {
            for &t in self.successors(q) {
                rev[t as usize].push(q);
            }
        }
        let mut dist = vec![u32::MAX; n];
        let mut queue: std::collections::VecDeque<u32> =
            (0..n as u32).filter(|&q| self.accept[q as usize]).collect();
        for &q in &queue {
            dist[q as usize] = 0;
        }
        while let Some(q) = queue.pop_front() {
            for &p in &rev[q as usize] {
                if dist[p as usize] == u32::MAX {
                    dist[p as usize] = dist[q as usize] + 1;
                    queue.push_back(p);
                }
            }
        }
        dist
    }
}

/// A trie of class sequences: node `i`'s children are `child[first[i]..first[i+1]]`
/// (`(class, node)` sorted by class), `group[i]` the group ending there.
struct Trie {
    first: Vec<u32>,
    child: Vec<(u8, u32)>,
    group: Vec<u32>,
}

impl Trie {
    fn new(seqs: &[Vec<u8>]) -> Trie {
        // Sorted sequences give each node's children contiguously (depth-first order).
        let mut idx: Vec<u32> = (0..seqs.len() as u32).collect();
        idx.sort_by(|&a, &b| seqs[a as usize].cmp(&seqs[b as usize]));
        let mut kids: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut group = vec![u32::MAX];
        for &g in &idx {
            let mut node = 0usize;
            for &c in &seqs[g as usize] {
                node = match kids[node].last() {
                    Some(&(k, n)) if k == c => n as usize,
                    _ => {
                        let n = kids.len();
                        kids.push(Vec::new());
                        group.push(u32::MAX);
                        kids[node].push((c, n as u32));
                        n
                    }
                };
            }
            group[node] = g;
        }
        let mut first = Vec::with_capacity(kids.len() + 1);
        let mut child = Vec::new();
        for k in &kids {
            first.push(child.len() as u32);
            child.extend_from_slice(k);
        }
        first.push(child.len() as u32);
        Trie {
            first,
            child,
            group,
        }
    }
}

/// Walks the trie from a byte state, within the build's limits.
struct Walker<'a> {
    dfa: &'a ByteDfa,
    trie: &'a Trie,
    steps: u64,
    limits: TokenLimits,
    began: Instant,
}

impl Walker<'_> {
    /// Every group that reads through from `q`, with the byte state it ends in.
    fn walk(&mut self, q: u32, out: &mut Vec<(u32, u32)>) -> Result<()> {
        let mut stack: Vec<(u32, u32)> = vec![(0, q)];
        let k = self.dfa.n_classes;
        while let Some((node, s)) = stack.pop() {
            self.steps += 1;
            if self.steps % (1 << 20) == 0 {
                if self.steps > self.limits.steps {
                    return Err(Error::TooLarge {
                        what: "token automaton work (trie steps)",
                        limit: self.limits.steps,
                    });
                }
                if self.began.elapsed().as_millis() as u64 > self.limits.millis {
                    return Err(Error::TooLarge {
                        what: "compile time in milliseconds",
                        limit: self.limits.millis,
                    });
                }
            }
            let g = self.trie.group[node as usize];
            if g != u32::MAX && node != 0 {
                out.push((g, s));
            }
            let (a, b) = (
                self.trie.first[node as usize] as usize,
                self.trie.first[node as usize + 1] as usize,
            );
            for &(c, child) in &self.trie.child[a..b] {
                let t = self.dfa.next[s as usize * k + c as usize];
                if t != DEAD {
                    stack.push((child, t));
                }
            }
        }
        Ok(())
    }
}
