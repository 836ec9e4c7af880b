use super::*;
use proptest::prelude::*;

#[test]
fn llada_counts_match_hand_computed_schedules() {
    assert_eq!(llada_transfer_counts(8, 3), vec![3, 3, 2]);
    assert_eq!(llada_transfer_counts(4, 8), vec![1, 1, 1, 1, 0, 0, 0, 0]);
    assert_eq!(llada_transfer_counts(32, 32), vec![1; 32]);
    assert_eq!(llada_transfer_counts(0, 2), vec![0, 0]);
}

proptest! {
    /// get_num_transfer_tokens: base = masks // steps, the first masks % steps get one more.
    #[test]
    fn llada_counts_equal_the_official_formula(masks in 0usize..600, steps in 1usize..300) {
        let c = llada_transfer_counts(masks, steps);
        prop_assert_eq!(c.len(), steps);
        prop_assert_eq!(c.iter().sum::<usize>(), masks);
        for (i, &k) in c.iter().enumerate() {
            let expected = masks / steps + usize::from(i < masks % steps);
            prop_assert_eq!(k, expected);
        }
    }

    #[test]
    fn dream_timesteps_run_from_one_to_eps_and_decrease(steps in 1usize..1024, eps in 1e-5f32..0.5) {
        let ts = dream_timesteps(steps, eps);
        prop_assert_eq!(ts.len(), steps + 1);
        prop_assert_eq!(ts[0], 1.0);
        prop_assert_eq!(ts[steps], eps);
        for i in 0..steps {
            prop_assert!(ts[i + 1] < ts[i], "not decreasing at {}: {:?}", i, &ts[i..i + 2]);
            let exact = 1.0 + (f64::from(eps) - 1.0) * i as f64 / steps as f64;
            prop_assert!((f64::from(ts[i]) - exact).abs() < 1e-6);
        }
    }

    /// Whatever the step count, Dream's schedule commits every mask by the last step and
    /// never more than remain.
    #[test]
    fn dream_counts_never_exceed_the_masks_and_finish_them(masks in 1usize..512, steps in 1usize..256) {
        let ts = dream_timesteps(steps, 1e-3);
        let mut left = masks;
        for i in 0..steps {
            let k = dream_transfer_count(left, ts[i], ts[i + 1], i + 1 == steps);
            prop_assert!(k <= left);
            left -= k;
        }
        prop_assert_eq!(left, 0);
    }
}

#[test]
fn dream_count_truncates_in_float32_like_python_int() {
    // steps = 4, eps = 1e-3: t = 1, s = 0.75025; 8 * 0.24975 = 1.998 truncates to 1.
    let ts = dream_timesteps(4, 1e-3);
    assert_eq!(ts[1], 0.75025);
    assert_eq!(dream_transfer_count(8, ts[0], ts[1], false), 1);
    assert_eq!(dream_transfer_count(8, ts[3], ts[4], true), 8);
    assert_eq!(dream_p_transfer(ts[3], ts[4], true), 1.0);
    assert_eq!(dream_p_transfer(ts[0], ts[1], false), 1.0 - ts[1]);
}

#[test]
fn dream_timesteps_use_the_two_sided_fused_form() {
    // The second half is computed from the end: the last point is exactly eps and the one
    // before is eps - step, not 1 + step * (steps - 1).
    let ts = dream_timesteps(3, 1e-3);
    let step = (1e-3f32 - 1.0) / 3.0;
    assert_eq!(ts[1], step.mul_add(1.0, 1.0));
    assert_eq!(ts[2], (-step).mul_add(1.0, 1e-3));
}

#[test]
fn dream_timesteps_are_fused_where_that_changes_the_count() {
    // With 15 steps, timestep 12 is 0.2008 with a fused multiply-add (PyTorch's CUDA kernel
    // as nvcc compiles it) but 0.20080002 with separate roundings; with 1004 masks left the
    // step then commits 332 positions, not 333.
    let ts = dream_timesteps(15, 1e-3);
    assert_eq!(ts[12], 0.2008f32);
    assert_eq!(ts[13], 0.1342f32);
    assert_eq!(dream_transfer_count(1004, ts[12], ts[13], false), 332);
}
