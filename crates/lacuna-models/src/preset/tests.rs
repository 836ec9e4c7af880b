use super::*;
use GgmlType as T;

/// The types of a dense model's tensors under `preset`, in llama-quantize's order.
fn plan(preset: Preset, model: ModelFacts, tensors: &[(&str, &[u64])]) -> Vec<GgmlType> {
    let mut sorted = tensors.to_vec();
    sorted.sort_by(|a, b| quantize_order(a.0, b.0));
    let mut p = TypePlanner::new(preset, model, sorted.iter().map(|t| t.0));
    sorted
        .iter()
        .map(|&(name, dims)| p.type_of(TensorFacts { name, dims }, T::F32))
        .collect()
}

fn layer_tensors(n_layer: usize) -> Vec<(String, Vec<u64>)> {
    let mut v = vec![
        ("token_embd.weight".to_string(), vec![4096, 126_464]),
        ("output.weight".to_string(), vec![4096, 126_464]),
        ("output_norm.weight".to_string(), vec![4096]),
    ];
    for il in 0..n_layer {
        for (s, dims) in [
            ("attn_norm.weight", vec![4096]),
            ("attn_q.weight", vec![4096, 4096]),
            ("attn_k.weight", vec![4096, 4096]),
            ("attn_v.weight", vec![4096, 4096]),
            ("attn_output.weight", vec![4096, 4096]),
            ("ffn_gate.weight", vec![4096, 12_288]),
            ("ffn_up.weight", vec![4096, 12_288]),
            ("ffn_down.weight", vec![12_288, 4096]),
        ] {
            v.push((format!("blk.{il}.{s}"), dims));
        }
    }
    v
}

/// LLaDA-8B at Q4_K_M: the mix llama-quantize prints for 32-layer Llama-shaped models —
/// attn_v and ffn_down Q6_K on the "more bits" layers (0-3, 28-31 and every third between),
/// output Q6_K, norms F32, the rest Q4_K.
#[test]
fn q4_k_m_on_a_32_layer_dense_model() {
    let owned = layer_tensors(32);
    let tensors: Vec<(&str, &[u64])> = owned.iter().map(|(n, d)| (n.as_str(), &d[..])).collect();
    let model = ModelFacts {
        n_layer: 32,
        n_gqa: 1,
        n_expert: 0,
    };
    let mut sorted = tensors.clone();
    sorted.sort_by(|a, b| quantize_order(a.0, b.0));
    let types = plan(Preset::Q4KM, model, &tensors);
    let more = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31];
    for ((name, _), ty) in sorted.iter().zip(&types) {
        let layer = layer_of(name);
        let want = if name.ends_with("norm.weight") {
            T::F32
        } else if *name == "output.weight" {
            T::Q6_K
        } else if name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight") {
            if more.contains(&layer.unwrap()) {
                T::Q6_K
            } else {
                T::Q4_K
            }
        } else {
            T::Q4_K
        };
        assert_eq!(*ty, want, "{name}");
    }
}

#[test]
fn names_ftypes_and_fallbacks() {
    for p in Preset::ALL {
        assert_eq!(Preset::from_name(p.name()), Some(p));
        assert_eq!(Preset::from_name(&p.name().to_lowercase()), Some(p));
        assert_eq!(Preset::from_ftype(p.ftype()), Some(p));
    }
    assert_eq!(file_type_name(15), Some("Q4_K_M"));
    assert_eq!(file_type_name(1), Some("F16"));
    assert_eq!(file_type_name(99), None);
    // Rows of 96: no 256-block fits, 32-blocks do; rows of 40: F16.
    assert_eq!(fallback(T::Q4_K, 96), T::Q5_0);
    assert_eq!(fallback(T::IQ4_XS, 96), T::IQ4_NL);
    assert_eq!(fallback(T::Q6_K, 40), T::F16);
    assert_eq!(fallback(T::Q6_K, 512), T::Q6_K);
}

/// MXFP4_MOE: experts MXFP4, everything else quantizable Q8_0; a tied embedding is the LM head.
#[test]
fn mxfp4_moe_and_tied_embeddings() {
    let model = ModelFacts {
        n_layer: 1,
        n_gqa: 1,
        n_expert: 4,
    };
    let tensors: [(&str, &[u64]); 4] = [
        ("token_embd.weight", &[256, 512]),
        ("blk.0.ffn_gate_inp.weight", &[256, 4]),
        ("blk.0.ffn_up_exps.weight", &[256, 128, 4]),
        ("blk.0.attn_q.weight", &[256, 256]),
    ];
    assert_eq!(
        plan(Preset::MXFP4Moe, model, &tensors),
        [T::Q8_0, T::Q8_0, T::F32, T::MXFP4],
        "order: token_embd, then blk.0 by name"
    );
    // Tied: token_embd takes output's rule (Q6_K), not the default.
    assert_eq!(plan(Preset::Q4_0, model, &tensors[..1]), [T::Q6_K]);
}
