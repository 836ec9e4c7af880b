//! Routing helpers of the MoE block and RoPE pairing.

use super::moe::{route, softmax_row, top_k};
use crate::RopeStyle;
use crate::backend::RopeParams;
use crate::cpu::rope;
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

#[test]
fn rope_rotates_the_pairs_of_each_style() {
    let params = |style| RopeParams {
        style,
        n_rot: 4,
        freq_base: 10_000.0,
        freq_scale: 1.0,
    };
    // Two positions, one head of 4: position 0 is the identity; at position 1 the first
    // pair turns by 1 radian and the second by 1/100 (theta_scale = 10000^(-2/4)).
    for style in [RopeStyle::Normal, RopeStyle::Neox] {
        let mut x = [1.0f32, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0];
        rope(&mut x, 2, 0, 4, params(style));
        assert_eq!(&x[..4], &[1.0, 2.0, 3.0, 4.0]);
        let (p0, p1) = match style {
            RopeStyle::Normal => ((0, 1), (2, 3)),
            RopeStyle::Neox => ((0, 2), (1, 3)),
        };
        let orig = [1.0f32, 2.0, 3.0, 4.0];
        for ((a, b), theta) in [(p0, 1.0f32), (p1, 0.01)] {
            let (c, s) = (theta.cos(), theta.sin());
            let want = (orig[a] * c - orig[b] * s, orig[a] * s + orig[b] * c);
            assert!(
                (x[4 + a] - want.0).abs() < 1e-6 && (x[4 + b] - want.1).abs() < 1e-6,
                "{style:?}"
            );
        }
    }
}

#[test]
fn rope_with_an_offset_is_the_same_rows_of_a_full_rope() {
    let params = RopeParams {
        style: RopeStyle::Neox,
        n_rot: 4,
        freq_base: 500_000.0,
        freq_scale: 1.0,
    };
    let x: Vec<f32> = (0..7 * 8)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let mut full = x.clone();
    rope(&mut full, 7, 0, 4, params);
    let mut part = x[3 * 8..6 * 8].to_vec();
    rope(&mut part, 3, 3, 4, params);
    assert_eq!(part, full[3 * 8..6 * 8]);
}

/// Partial RoPE (LLaDA2): the first n_rot elements of each head rotate as a head of n_rot
/// would; the rest pass through.
#[test]
fn partial_rope_rotates_only_the_leading_dimensions() {
    let params = |n_rot| RopeParams {
        style: RopeStyle::Neox,
        n_rot,
        freq_base: 600_000.0,
        freq_scale: 1.0,
    };
    // 5 positions, 2 heads of 8, 4 rotary dimensions.
    let x: Vec<f32> = (0..5 * 16)
        .map(|i| ((i * 29 % 31) as f32 - 15.0) / 9.0)
        .collect();
    let mut got = x.clone();
    rope(&mut got, 5, 2, 8, params(4));
    // The leading 4 of each head, as heads of 4 with full RoPE.
    let mut lead: Vec<f32> = x.chunks(8).flat_map(|h| h[..4].to_vec()).collect();
    rope(&mut lead, 5, 2, 4, params(4));
    for (i, (g, h)) in got.chunks(8).zip(x.chunks(8)).enumerate() {
        assert_eq!(&g[..4], &lead[i * 4..i * 4 + 4], "head {i}");
        assert_eq!(&g[4..], &h[4..], "head {i} tail");
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
