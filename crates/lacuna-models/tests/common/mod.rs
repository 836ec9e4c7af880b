//! Shared by the model tests: comparing logits with a reference's, and fixtures rebuilt with
//! edited metadata or tensors.

#![allow(dead_code)]

use lacuna_gguf::{GgmlType, GgufFile, GgufWriter, Value};
use lacuna_models::fixture::{FixtureSpec, build};
use lacuna_models::{CpuBackend, Error, Model};

/// The fixture `spec` rebuilt with `edit` applied to its metadata (`None` drops the key) and
/// `tensor` to its tensors (`Some((dims, ty))` replaces one with zeros, empty `dims` drops
/// it), then loaded.
pub(crate) fn edited(
    spec: &FixtureSpec,
    edit: impl Fn(&str, Value) -> Option<Value>,
    tensor: impl Fn(&str) -> Option<(Vec<u64>, GgmlType)>,
) -> Result<Model, Error> {
    let src = GgufFile::from_vec(build(spec).unwrap().to_vec().unwrap()).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in src.metadata().iter() {
        if k == "general.alignment" {
            continue;
        }
        if let Some(v) = edit(k, v.clone()) {
            w.add_metadata(k, v).unwrap();
        }
    }
    for info in src.tensors() {
        match tensor(&info.name) {
            None => {
                w.add_tensor(
                    &info.name,
                    &info.dims,
                    info.ty,
                    src.info_data(info).to_vec(),
                )
                .unwrap();
            }
            Some((dims, _)) if dims.is_empty() => {}
            Some((dims, ty)) => {
                w.add_tensor_zeroed(&info.name, &dims, ty).unwrap();
            }
        }
    }
    Model::load(
        GgufFile::from_vec(w.to_vec().unwrap()).unwrap(),
        CpuBackend::new(),
    )
}

/// Raw f32 little-endian logits from `path`.
pub(crate) fn read_logits(path: &str) -> Vec<f32> {
    std::fs::read(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The relative L2 error of `got` against `want`.
pub(crate) fn rel_l2(got: &[f32], want: &[f32]) -> f64 {
    let err: f64 = got
        .iter()
        .zip(want)
        .map(|(&a, &b)| f64::from(a - b).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|&b| f64::from(b).powi(2)).sum();
    (err / norm.max(1e-30)).sqrt()
}

/// Per row of `vocab` logits: the relative L2 error of `got` against `want`, and whether
/// the two rows have the same arg-max.
pub(crate) fn rows(got: &[f32], want: &[f32], vocab: usize) -> Vec<(f64, bool)> {
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
    got.chunks_exact(vocab)
        .zip(want.chunks_exact(vocab))
        .map(|(g, r)| (rel_l2(g, r), argmax(g) == argmax(r)))
        .collect()
}

/// `n` reproducible values in [-1, 1) from `seed` (xorshift; never all zeros).
pub(crate) fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// ggml bytes of `n x k` weights of `ty` quantized from `vals` by lacuna-quant.
pub(crate) fn quantized(ty: lacuna_quant::GgmlType, n: usize, k: usize, vals: &[f32]) -> Vec<u8> {
    let row = ty.row_bytes(k as u64).unwrap() as usize;
    let mut out = vec![0u8; n * row];
    for (src, dst) in vals.chunks_exact(k).zip(out.chunks_exact_mut(row)) {
        lacuna_quant::quantize_row(ty, src, dst).unwrap();
    }
    out
}
