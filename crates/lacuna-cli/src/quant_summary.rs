//! The quantization summary `lacuna inspect` prints first: the preset the file says it is,
//! bits per weight, and which tensors have which type (by role, with the layers).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use lacuna::gguf::{GgmlType, GgufFile};
use lacuna::models::preset::{file_type_name, matrix_type_runs};
use serde_json::{Value as Json, json};

/// One type's share of the file.
struct TypeRow {
    tensors: u64,
    params: u64,
    bytes: u64,
    /// Role (the name without `blk.N.`) → layers that have it (empty: outside the blocks).
    roles: BTreeMap<String, Vec<usize>>,
}

fn rows(f: &GgufFile) -> BTreeMap<GgmlType, TypeRow> {
    let mut by = BTreeMap::new();
    for t in f.tensors() {
        let row = by.entry(t.ty).or_insert_with(|| TypeRow {
            tensors: 0,
            params: 0,
            bytes: 0,
            roles: BTreeMap::new(),
        });
        row.tensors += 1;
        row.params += t.n_elements();
        row.bytes += t.n_bytes;
        let (layer, role) = split_layer(&t.name);
        let layers = row.roles.entry(role.to_string()).or_default();
        layers.extend(layer);
    }
    by
}

/// `blk.12.attn_v.weight` → (Some(12), `attn_v.weight`).
fn split_layer(name: &str) -> (Option<usize>, &str) {
    if let Some(rest) = name.strip_prefix("blk.")
        && let Some((n, role)) = rest.split_once('.')
        && let Ok(n) = n.parse()
    {
        return (Some(n), role);
    }
    (None, name)
}

/// `0-3,6,9,28-31`.
fn ranges(layers: &[usize]) -> String {
    let mut v = layers.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

fn preset_line(f: &GgufFile) -> String {
    match f.metadata().get_u32_opt("general.file_type") {
        Ok(Some(ft)) => match file_type_name(ft) {
            Some(name) => format!("{name} (general.file_type {ft})"),
            None => format!("file type {ft} (not a preset Lacuna knows)"),
        },
        _ => "general.file_type not recorded".to_string(),
    }
}

/// Bits per weight over every tensor, as llama.cpp's loader prints it.
fn bpw(by: &BTreeMap<GgmlType, TypeRow>) -> (u64, f64) {
    let params: u64 = by.values().map(|r| r.params).sum();
    let bytes: u64 = by.values().map(|r| r.bytes).sum();
    (
        params,
        if params == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 / params as f64
        },
    )
}

/// The text block.
pub(crate) fn text(f: &GgufFile) -> String {
    let by = rows(f);
    let (params, bpw) = bpw(&by);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "quantization: {}, {bpw:.2} bits per weight over {:.3} B parameters",
        preset_line(f),
        params as f64 / 1e9
    );
    for (ty, r) in &by {
        let share = 100.0 * r.params as f64 / params.max(1) as f64;
        let roles: Vec<String> = r
            .roles
            .iter()
            .map(|(role, layers)| {
                let role = role.escape_debug().to_string();
                if layers.is_empty() {
                    role
                } else {
                    format!("{role} [{}]", ranges(layers))
                }
            })
            .collect();
        let runs = if matrix_type_runs(*ty) {
            ""
        } else {
            " (Lacuna cannot multiply by this type yet)"
        };
        let _ = writeln!(
            s,
            "  {:<8} {:>5} tensors {share:>5.1}% of weights{runs}: {}",
            ty.name(),
            r.tensors,
            roles.join(", ")
        );
    }
    s
}

/// The same as JSON.
pub(crate) fn json(f: &GgufFile) -> Json {
    let by = rows(f);
    let (params, bpw) = bpw(&by);
    let ft = f.metadata().get_u32_opt("general.file_type").ok().flatten();
    json!({
        "file_type": ft,
        "preset": ft.and_then(file_type_name),
        "bits_per_weight": bpw,
        "parameters": params,
        "by_type": by.iter().map(|(ty, r)| json!({
            "type": ty.name(),
            "tensors": r.tensors,
            "parameters": r.params,
            "runs": matrix_type_runs(*ty),
            "roles": r.roles.iter().map(|(role, layers)| json!({
                "role": role, "layers": ranges(layers),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_ranges_and_names() {
        assert_eq!(ranges(&[0, 1, 2, 3, 6, 9, 28, 29, 30, 31]), "0-3,6,9,28-31");
        assert_eq!(ranges(&[]), "");
        assert_eq!(
            split_layer("blk.12.attn_v.weight"),
            (Some(12), "attn_v.weight")
        );
        assert_eq!(split_layer("output.weight"), (None, "output.weight"));
        assert_eq!(split_layer("blk.x.y"), (None, "blk.x.y"));
    }
}
