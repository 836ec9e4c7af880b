//! Routing helpers of the MoE block and RoPE pairing.

use super::moe::{softmax_row, top_k};
use crate::RopeStyle;
use crate::backend::RopeParams;
use crate::cpu::rope;

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
