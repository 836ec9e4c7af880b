//! Comparing logits with llama.cpp's, shared by the parity tests.

#![allow(dead_code)]

/// Raw f32 little-endian logits from `path`.
pub(crate) fn read_logits(path: &str) -> Vec<f32> {
    std::fs::read(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Per row of `vocab` logits: the relative L2 error of `got` against `want`, and whether
/// the two rows have the same arg-max.
pub(crate) fn rows(got: &[f32], want: &[f32], vocab: usize) -> Vec<(f64, bool)> {
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
    got.chunks_exact(vocab)
        .zip(want.chunks_exact(vocab))
        .map(|(g, r)| {
            let err: f64 = g
                .iter()
                .zip(r)
                .map(|(&a, &b)| f64::from(a - b).powi(2))
                .sum();
            let norm: f64 = r.iter().map(|&b| f64::from(b).powi(2)).sum();
            ((err / norm).sqrt(), argmax(g) == argmax(r))
        })
        .collect()
}
