use proptest::prelude::*;

use super::*;
use crate::testing::Rng;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn vec(rng: &mut Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.f32() * scale).collect()
}

/// `n` distinct indices below `below`, in random order.
fn distinct(rng: &mut Rng, n: usize, below: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..below).collect();
    for i in (1..below).rev() {
        all.swap(i, rng.next() as usize % (i + 1));
    }
    all.truncate(n);
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Gathers of chosen rows (repeats allowed) and column splits, against indexing.
    #[test]
    fn copy_rows_matches_indexing(
        (src_rows, src_width, col_frac, cols_frac, n, seed) in
            (1usize..20, 1usize..70, 0.0f64..1.0, 0.0f64..=1.0, 0usize..20, any::<u64>()),
        gather in any::<bool>(),
    ) {
        let col0 = (src_width as f64 * col_frac) as usize;
        let cols = ((src_width - col0) as f64 * cols_frac).ceil().max(1.0) as usize;
        let mut rng = Rng(seed | 1);
        let src = vec(&mut rng, src_rows * src_width, 3.0);
        let rows: Vec<usize> = (0..n).map(|_| rng.next() as usize % src_rows).collect();
        let n = if gather { n } else { n.min(src_rows) };
        let sel = gather.then_some(&rows[..]);
        let mut want = Vec::new();
        for r in 0..n {
            let from = sel.map_or(r, |s| s[r]) * src_width + col0;
            want.extend_from_slice(&src[from..from + cols]);
        }
        let mut got = vec![f32::NAN; n * cols];
        copy_rows(&src, src_width, col0, sel, &mut got, cols).unwrap();
        prop_assert_eq!(bits(&got), bits(&want));
    }

    /// Residual and bias adds, element by element.
    #[test]
    fn add_and_add_bias_match_scalar((rows, width, seed) in (0usize..9, 1usize..300, any::<u64>())) {
        let mut rng = Rng(seed | 1);
        let x = vec(&mut rng, rows * width, 10.0);
        let y = vec(&mut rng, rows * width, 10.0);
        let b = vec(&mut rng, width, 1.0);
        let mut got = x.clone();
        add(&mut got, &y).unwrap();
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        prop_assert_eq!(bits(&got), bits(&want));
        let mut got = x.clone();
        add_bias(&mut got, &b).unwrap();
        let want: Vec<f32> = x.iter().enumerate().map(|(i, a)| a + b[i % width]).collect();
        prop_assert_eq!(bits(&got), bits(&want));
    }

    /// Scaled rows into distinct destination rows, then per-group sums in slot order: a
    /// mixture-of-experts layer's combine, against plain loops.
    #[test]
    fn scatter_then_sum_match_scalar(
        (tokens, k, width, picked, seed) in (1usize..12, 1usize..5, 1usize..100, 0.0f64..=1.0, any::<u64>()),
    ) {
        let mut rng = Rng(seed | 1);
        let slots = tokens * k;
        let n = ((slots as f64 * picked).round() as usize).max(1);
        let to = distinct(&mut rng, n, slots);
        let src = vec(&mut rng, n * width, 5.0);
        let scale = vec(&mut rng, n, 1.0);
        let before = vec(&mut rng, slots * width, 2.0);
        let mut want = before.clone();
        for (r, &t) in to.iter().enumerate() {
            for c in 0..width {
                want[t * width + c] = src[r * width + c] * scale[r];
            }
        }
        let mut got = before.clone();
        scatter_scaled(&src, &to, &scale, &mut got, width).unwrap();
        prop_assert_eq!(bits(&got), bits(&want));

        let mut sum_want = vec![0.0f32; tokens * width];
        for i in 0..tokens {
            for c in 0..width {
                let mut acc = want[i * k * width + c];
                for s in 1..k {
                    acc += want[(i * k + s) * width + c];
                }
                sum_want[i * width + c] = acc;
            }
        }
        let mut sum_got = vec![f32::NAN; tokens * width];
        sum_slots(&want, k, width, &mut sum_got).unwrap();
        prop_assert_eq!(bits(&sum_got), bits(&sum_want));
    }
}

#[test]
fn bad_shapes_are_errors() {
    let src = [1.0f32; 12];
    let mut dst = [0.0f32; 6];
    // Columns past the source row, no columns, a ragged destination, a row outside src,
    // fewer row indices than destination rows.
    assert!(matches!(
        copy_rows(&src, 4, 2, None, &mut dst, 3),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        copy_rows(&src, 4, 0, None, &mut dst, 0),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        copy_rows(&src, 4, 0, None, &mut dst[..5], 2),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        copy_rows(&src, 4, 0, Some(&[0, 3, 1]), &mut dst, 2),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        copy_rows(&src, 4, 0, Some(&[0, 1]), &mut dst, 2),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        copy_rows(&src, 2, 0, None, &mut [0.0; 14], 2),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        add(&mut [0.0; 3], &[1.0; 2]),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        add_bias(&mut [0.0; 5], &[1.0; 2]),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        add_bias(&mut [0.0; 4], &[]),
        Err(Error::BadLength { .. })
    ));
    let mut slots = [0.0f32; 8];
    assert!(matches!(
        scatter_scaled(&[1.0; 4], &[0, 4], &[1.0, 1.0], &mut slots, 2),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        scatter_scaled(&[1.0; 4], &[0, 1], &[1.0], &mut slots, 2),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        sum_slots(&slots, 0, 2, &mut [0.0; 2]),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        sum_slots(&slots, 2, 2, &mut [0.0; 6]),
        Err(Error::BadLength { .. })
    ));
    assert_eq!(slots, [0.0; 8], "a rejected call writes nothing");
}
