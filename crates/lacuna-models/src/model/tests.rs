//! Routing helpers of the MoE block, and DiffusionGemma's self-conditioning in chunks of
//! rows. (RoPE's pairing is tested with the kernel, in lacuna-cpu.)

use proptest::strategy::Strategy;

use super::moe::{route, softmax_row, top_k};
use crate::{Gating, MoeConfig};

#[test]
fn softmax_sums_to_one_and_keeps_order() {
    let mut x = [1.0f32, 3.0, -2.0, 3.0, 0.5];
    softmax_row(&mut x);
    assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    assert!(x[1] > x[0] && x[0] > x[4] && x[4] > x[2]);
    let mut idx = [0usize; 3];
    top_k(&x, 3, &mut idx);
    assert_eq!(idx, [1, 3, 0], "largest first, ties by lower index");
}

proptest::proptest! {
    /// The insertion top-k is a full descending sort's first k (ties by lower index), on
    /// values with many ties, infinities and NaN.
    #[test]
    fn top_k_is_the_head_of_a_descending_sort(
        x in proptest::collection::vec(
            proptest::prop_oneof![
                (-4i8..4).prop_map(f32::from),
                proptest::num::f32::ANY,
                proptest::strategy::Just(f32::NEG_INFINITY),
            ],
            1..300,
        ),
        k in 1usize..10,
    ) {
        let k = k.min(x.len());
        let mut idx: Vec<usize> = (0..x.len()).collect();
        idx.sort_by(|&a, &b| x[b].total_cmp(&x[a]).then(a.cmp(&b)));
        let mut got = vec![usize::MAX; k];
        top_k(&x, k, &mut got);
        proptest::prop_assert_eq!(&got[..], &idx[..k]);
    }
}

proptest::proptest! {
    /// Group-limited routing selects what ggml's graph selects, written here with full
    /// sorts: groups scored by their two best selection scores (summed in f64), the
    /// n_group_used best kept (ties by lower index), then the k best experts among them.
    /// Scores with many ties; 2 to 8 groups of 1 to 6 experts.
    #[test]
    fn grouped_routing_keeps_the_best_groups(
        (n_group, per, used, k, x) in (1usize..4, 2usize..7).prop_flat_map(|(lg, per)| {
            let n_group = 1 << lg;
            (
                proptest::strategy::Just(n_group),
                proptest::strategy::Just(per),
                1..=n_group,
                1..=per,
                proptest::collection::vec((-3i8..3).prop_map(|v| f32::from(v) * 0.5), n_group * per),
            )
        })
    ) {
        let ne = n_group * per;
        let m = MoeConfig {
            n_expert: ne,
            n_expert_used: k,
            n_group,
            n_group_used: used,
            ..moe(Gating::Softmax, false, (0, 0), 0.0)
        };
        let mut p = x.clone();
        let (mut sel, mut w, mut buf) = (vec![0usize; k], vec![0f32; k], Vec::new());
        route(&m, None, &mut p, &mut buf, &mut sel, &mut w);
        // The reference, on the same probabilities.
        let mut probs = x.clone();
        softmax_row(&mut probs);
        let desc = |v: &[f32]| {
            let mut idx: Vec<usize> = (0..v.len()).collect();
            idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
            idx
        };
        let scores: Vec<f32> = probs
            .chunks_exact(per)
            .map(|g| {
                let o = desc(g);
                (f64::from(g[o[0]]) + f64::from(g[o[1]])) as f32
            })
            .collect();
        let keep = &desc(&scores)[..used];
        let masked: Vec<f32> = (0..ne)
            .map(|e| if keep.contains(&(e / per)) { probs[e] } else { f32::NEG_INFINITY })
            .collect();
        proptest::prop_assert_eq!(&sel[..], &desc(&masked)[..k]);
        proptest::prop_assert!(buf.len() == ne, "the group scores are not left behind");
    }
}

fn moe(gating: Gating, norm: bool, groups: (usize, usize), scale: f32) -> MoeConfig {
    MoeConfig {
        n_expert: 8,
        n_expert_used: 2,
        n_ff_exp: 4,
        weights_scale: scale,
        gating,
        norm_weights: norm,
        n_group: groups.0,
        n_group_used: groups.1,
        n_expert_shared: 0,
        n_ff_shared: 0,
        n_dense_lead: 0,
    }
}

/// Sigmoid gating, selection bias, group limit, normalisation and scale, as
/// `build_moe_ffn` orders them.
#[test]
fn routing_follows_build_moe_ffn() {
    let logits = [2.0f32, 1.9, -1.0, -1.0, 1.0, 0.9, 0.8, 0.7];
    let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
    let (mut sel, mut w, mut buf) = ([0usize; 2], [0f32; 2], Vec::new());

    // Softmax, no groups, no normalisation: the two largest probabilities.
    let mut p = logits;
    route(
        &moe(Gating::Softmax, false, (0, 0), 0.0),
        None,
        &mut p,
        &mut buf,
        &mut sel,
        &mut w,
    );
    assert_eq!(sel, [0, 1]);
    assert_eq!(w, [p[0], p[1]]);

    // A bias moves the selection but not the weights (they stay the unbiased sigmoids).
    let bias = [0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9];
    let mut p = logits;
    route(
        &moe(Gating::Sigmoid, false, (0, 0), 0.0),
        Some(&bias),
        &mut p,
        &mut buf,
        &mut sel,
        &mut w,
    );
    assert_eq!(sel, [7, 0]);
    assert_eq!(w, [sig(0.7), sig(2.0)]);

    // 4 groups of 2, one kept: group scores (top two summed) are 3.9-ish, -2, 1.9, 1.5 in
    // sigmoid space, so group 0 wins; normalised and scaled by 2.5.
    let mut p = logits;
    route(
        &moe(Gating::Sigmoid, true, (4, 1), 2.5),
        None,
        &mut p,
        &mut buf,
        &mut sel,
        &mut w,
    );
    assert_eq!(sel, [0, 1]);
    let sum = ((f64::from(sig(2.0)) + f64::from(sig(1.9))) as f32).max(6.103_515_6e-5);
    assert_eq!(w, [sig(2.0) / sum * 2.5, sig(1.9) / sum * 2.5]);

    // With group 0 out of reach (bias), the next best group supplies both experts.
    let bias = [-5.0f32, -5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let mut p = logits;
    route(
        &moe(Gating::Sigmoid, true, (4, 1), 0.0),
        Some(&bias),
        &mut p,
        &mut buf,
        &mut sel,
        &mut w,
    );
    assert_eq!(sel, [4, 5]);
}

/// The self-conditioning product runs a chunk of canvas rows at a time: the decoder's logits
/// are the same bits whatever the chunk (here 64 + 36 rows, 7 x 13 + 9, and all 100 at once).
#[test]
fn self_conditioning_chunks_give_the_same_bits() {
    use crate::fixture::{FixtureSpec, QuantMix, Shape, build};
    use crate::{Arch, CpuBackend, KvCache, Model};
    let spec = FixtureSpec::new(Arch::DiffusionGemma, Shape::Tiny, 2, QuantMix::Q8_0);
    let file = lacuna_gguf::GgufFile::from_vec(build(&spec).unwrap().to_vec().unwrap()).unwrap();
    let mut m = Model::load(file, CpuBackend::new()).unwrap();
    let v = m.vocab_size();
    let prompt: Vec<u32> = (0..20).map(|i| (i * 37 + 5) % v as u32).collect();
    let canvas: Vec<u32> = (0..100).map(|i| (i * 91 + 11) % v as u32).collect();
    let mut cache = KvCache::new();
    m.gemma_encode(&mut cache, &prompt, None).unwrap();
    let mut first = vec![0.0; canvas.len() * v];
    m.gemma_decode(&mut cache, &canvas, None, &mut first)
        .unwrap();
    let sc: Vec<f32> = first.iter().map(|x| x / 0.8).collect();
    let mut runs = Vec::new();
    for chunk in [None, Some(13), Some(1000)] {
        super::gemma::SC_CHUNK_TEST.set(chunk);
        let mut out = vec![0.0; canvas.len() * v];
        m.gemma_decode(&mut cache, &canvas, Some(&sc), &mut out)
            .unwrap();
        runs.push(out);
    }
    super::gemma::SC_CHUNK_TEST.set(None);
    assert_ne!(runs[0], first, "self-conditioning changed nothing");
    assert_eq!(runs[0], runs[2], "64-row chunks against one pass");
    assert_eq!(runs[1], runs[2], "13-row chunks against one pass");
}
