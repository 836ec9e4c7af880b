use proptest::prelude::*;

use super::*;
use crate::testing::Rng;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// ggml's rope in plain scalar code: one row, one head, one pair at a time, the angles of
/// each row from its own rope cache (`theta_scale` powers by repeated multiplication).
fn reference(x: &mut [f32], t: usize, pos0: usize, head_dim: usize, r: RopeParams) {
    let width = x.len() / t;
    let theta_scale = r.freq_base.powf(-2.0 / r.n_rot as f32);
    for p in 0..t {
        let mut angles = Vec::new();
        let mut theta = (pos0 + p) as f32;
        for _ in 0..r.n_rot / 2 {
            angles.push(theta * r.freq_scale);
            theta *= theta_scale;
        }
        for h in 0..width / head_dim {
            let head = &mut x[p * width + h * head_dim..][..head_dim];
            for (i, &th) in angles.iter().enumerate() {
                let (a, b) = match r.mode {
                    RopeMode::Normal => (2 * i, 2 * i + 1),
                    RopeMode::Neox => (i, i + r.n_rot / 2),
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * th.cos() - x1 * th.sin();
                head[b] = x0 * th.sin() + x1 * th.cos();
            }
        }
    }
}

fn params(mode: RopeMode, n_rot: usize, freq_base: f32, freq_scale: f32) -> RopeParams {
    RopeParams {
        mode,
        n_rot,
        freq_base,
        freq_scale,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The parallel kernel gives the scalar reference's bits on random shapes (partial and
    /// full rotation, several heads, rows past a rayon split) and data.
    #[test]
    fn rope_matches_scalar_reference(
        (t, heads, half_hd, rot_frac, pos0, seed) in
            (1usize..40, 1usize..5, 1usize..40, 0.0f64..=1.0, 0usize..5000, any::<u64>()),
        neox in any::<bool>(),
        freq_base in prop_oneof![Just(10_000.0f32), Just(500_000.0), Just(1.0e6)],
        freq_scale in prop_oneof![Just(1.0f32), Just(0.25)],
    ) {
        let head_dim = 2 * half_hd;
        let n_rot = 2 * ((half_hd as f64 * rot_frac).round() as usize).max(1);
        let mode = if neox { RopeMode::Neox } else { RopeMode::Normal };
        let r = params(mode, n_rot, freq_base, freq_scale);
        let mut rng = Rng(seed | 1);
        let x: Vec<f32> = (0..t * heads * head_dim).map(|_| rng.f32() * 4.0).collect();
        let mut want = x.clone();
        reference(&mut want, t, pos0, head_dim, r);
        let mut got = x.clone();
        rope(&mut got, t, pos0, head_dim, r).unwrap();
        prop_assert_eq!(bits(&got), bits(&want));
        // Rows from an offset on are those rows of the call from position `pos0`.
        let (a, b) = (t / 3, t - t / 4);
        let w = heads * head_dim;
        let mut part = x[a * w..b * w].to_vec();
        rope(&mut part, b - a, pos0 + a, head_dim, r).unwrap();
        prop_assert_eq!(bits(&part), bits(&got[a * w..b * w]));
        // Partial rotation: the leading n_rot of each head turn as heads of n_rot would.
        let mut lead: Vec<f32> = x.chunks(head_dim).flat_map(|h| h[..n_rot].to_vec()).collect();
        rope(&mut lead, t, pos0, n_rot, r).unwrap();
        for (i, (g, h)) in got.chunks(head_dim).zip(x.chunks(head_dim)).enumerate() {
            prop_assert_eq!(bits(&g[..n_rot]), bits(&lead[i * n_rot..][..n_rot]), "head {}", i);
            prop_assert_eq!(bits(&g[n_rot..]), bits(&h[n_rot..]), "head {} tail", i);
        }
    }
}

/// The rotation itself, against f64 trigonometry at small positions (where the f32 angle is
/// close): which elements pair up, and that the elements past `n_rot` pass through.
#[test]
fn rope_rotates_like_ggml() {
    // Three rows at positions 0, 1 and 2 (or 3, 4 and 5), two heads of 8 dims, 6 rotated.
    let (hd, n_rot, base) = (8usize, 6usize, 10000.0f32);
    let x: Vec<f32> = (0..3 * 2 * hd).map(|i| i as f32 * 0.25 - 3.0).collect();
    for (mode, pos0) in [RopeMode::Normal, RopeMode::Neox]
        .into_iter()
        .flat_map(|m| [(m, 0usize), (m, 3)])
    {
        for scale in [1.0f32, 0.5] {
            let mut y = x.clone();
            rope(&mut y, 3, pos0, hd, params(mode, n_rot, base, scale)).unwrap();
            if pos0 == 0 {
                assert_eq!(y[..2 * hd], x[..2 * hd], "position 0 is the identity");
            }
            for row in 0..3 {
                let p = (pos0 + row) as f64 * f64::from(scale);
                for h in 0..2 {
                    let o = (row * 2 + h) * hd;
                    for i in 0..n_rot / 2 {
                        let theta = p * f64::from(base).powf(-2.0 * i as f64 / n_rot as f64);
                        let (a, b) = match mode {
                            RopeMode::Normal => (2 * i, 2 * i + 1),
                            RopeMode::Neox => (i, i + n_rot / 2),
                        };
                        let (x0, x1) = (f64::from(x[o + a]), f64::from(x[o + b]));
                        let want0 = x0 * theta.cos() - x1 * theta.sin();
                        let want1 = x0 * theta.sin() + x1 * theta.cos();
                        assert!((f64::from(y[o + a]) - want0).abs() < 1e-4, "{mode:?}");
                        assert!((f64::from(y[o + b]) - want1).abs() < 1e-4, "{mode:?}");
                    }
                    assert_eq!(y[o + n_rot..o + hd], x[o + n_rot..o + hd]);
                }
            }
        }
    }
}

#[test]
fn rope_rejects_bad_shapes() {
    let r = |n_rot| params(RopeMode::Neox, n_rot, 10000.0, 1.0);
    let mut x = vec![1.0f32; 2 * 8];
    for (n_rot, head_dim) in [(7, 8), (10, 8), (2, 0)] {
        assert!(
            matches!(
                rope(&mut x, 2, 0, head_dim, r(n_rot)),
                Err(Error::BadShape { .. })
            ),
            "n_rot {n_rot} head_dim {head_dim}"
        );
    }
    // Rows that are not whole heads, a length that is not t rows, rows for no positions.
    for (len, t, head_dim) in [(12, 2, 4), (15, 2, 8), (16, 0, 8)] {
        assert!(
            matches!(
                rope(&mut x[..len], t, 0, head_dim, r(2)),
                Err(Error::BadLength { .. })
            ),
            "len {len} t {t} head_dim {head_dim}"
        );
    }
    assert_eq!(rope(&mut [], 0, 0, 8, r(8)), Ok(()));
    assert!(
        x.iter().all(|&v| v == 1.0),
        "a rejected call writes nothing"
    );
}

/// Gemma 4's proportional RoPE as Hugging Face computes it (`_compute_proportional_rope_parameters`
/// and `rotate_half`), in f64: the first `rot` of `head_dim / 2` pairs `(i, i + head_dim / 2)`
/// turn by `p * base^(-2i / head_dim)`, the others not at all.
fn proportional_f64(x: &mut [f64], t: usize, pos0: usize, head_dim: usize, rot: usize, base: f64) {
    let width = x.len() / t;
    let half = head_dim / 2;
    for p in 0..t {
        for h in 0..width / head_dim {
            let head = &mut x[p * width + h * head_dim..][..head_dim];
            for i in 0..rot {
                let th = (pos0 + p) as f64 * base.powf(-2.0 * i as f64 / head_dim as f64);
                let (x0, x1) = (head[i], head[i + half]);
                head[i] = x0 * th.cos() - x1 * th.sin();
                head[i + half] = x0 * th.sin() + x1 * th.cos();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Infinite factors on the trailing pairs give the proportional RoPE of Gemma 4's global
    /// layers; finite factors divide the angle.
    #[test]
    fn factors_give_gemma4s_proportional_rope(
        seed in any::<u64>(),
        t in 1usize..9,
        pos0 in 0usize..3000,
        heads in 1usize..4,
        half_log in 2u32..6,
        rot_frac in 0usize..5,
    ) {
        let head_dim = 2usize << half_log;
        let half = head_dim / 2;
        let rot = half * rot_frac / 4;
        let mut rng = Rng(seed | 1);
        let x: Vec<f32> = (0..t * heads * head_dim).map(|_| rng.f32() * 3.0).collect();
        let mut got = x.clone();
        let factors: Vec<f32> =
            (0..half).map(|i| if i < rot { 1.0 } else { f32::INFINITY }).collect();
        let p = params(RopeMode::Neox, head_dim, 1e6, 1.0);
        rope_with_factors(&mut got, t, pos0, head_dim, p, &factors).unwrap();
        let mut want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        proportional_f64(&mut want, t, pos0, head_dim, rot, 1e6);
        for (g, w) in got.iter().zip(&want) {
            // f32 angles of positions up to 3000: a few ulps of the angle.
            prop_assert!((f64::from(*g) - w).abs() <= 2e-3 * (1.0 + w.abs()), "{g} vs {w}");
        }
        // Factors of 2 halve every angle: the same as a frequency scale of 1/2.
        let twos = vec![2.0f32; half];
        let (mut a, mut b) = (x.clone(), x.clone());
        rope_with_factors(&mut a, t, pos0, head_dim, p, &twos).unwrap();
        rope(&mut b, t, pos0, head_dim, params(RopeMode::Neox, head_dim, 1e6, 0.5)).unwrap();
        prop_assert_eq!(bits(&a), bits(&b));
    }
}

#[test]
fn factors_of_the_wrong_length_are_refused() {
    let mut x = vec![1.0f32; 16];
    let p = params(RopeMode::Neox, 16, 1e4, 1.0);
    assert!(rope_with_factors(&mut x, 1, 0, 16, p, &[1.0; 7]).is_err());
}
