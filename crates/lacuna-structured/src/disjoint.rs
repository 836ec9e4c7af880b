//! Whether alternatives share a word (`oneOf` needs them not to): the product of their byte
//! automata, searched breadth first for a state where both accept.

use std::collections::{HashSet, VecDeque};

use regex_syntax::hir::Hir;

use crate::dfa::{ByteDfa, DEAD, DfaLimits};

const LIMITS: DfaLimits = DfaLimits {
    nfa_bytes: 8 << 20,
    dfa_bytes: 16 << 20,
};

/// `Ok` when no two of `alts` share a word, else the indices of two that do (or that were
/// too large to check, which counts as overlapping).
pub(crate) fn check(alts: &[Hir]) -> Result<(), (usize, usize)> {
    let dfas: Vec<Option<ByteDfa>> = alts
        .iter()
        .map(|h| ByteDfa::build(h, LIMITS).ok())
        .collect();
    for i in 0..alts.len() {
        for j in i + 1..alts.len() {
            match (&dfas[i], &dfas[j]) {
                (Some(a), Some(b)) if !intersect(a, b) => {}
                // An empty alternative (its build fails as `Empty`) overlaps nothing.
                (None, _) | (_, None) if is_empty(&alts[i]) || is_empty(&alts[j]) => {}
                _ => return Err((i, j)),
            }
        }
    }
    Ok(())
}

fn is_empty(h: &Hir) -> bool {
    matches!(ByteDfa::build(h, LIMITS), Err(crate::Error::Empty))
}

/// Whether `a` and `b` accept a common word.
fn intersect(a: &ByteDfa, b: &ByteDfa) -> bool {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(a.start, b.start)]);
    seen.insert((a.start, b.start));
    while let Some((p, q)) = queue.pop_front() {
        if a.accept[p as usize] && b.accept[q as usize] {
            return true;
        }
        for byte in 0..=255u8 {
            let (s, t) = (a.step(p, byte), b.step(q, byte));
            if s != DEAD && t != DEAD && seen.insert((s, t)) {
                queue.push_back((s, t));
            }
        }
    }
    false
}
