use super::*;
use crate::math::softmax_into;
use proptest::prelude::*;

fn keep(k: usize) -> Option<TopK> {
    Some(TopK {
        k,
        ties: Ties::Keep,
    })
}

fn lowest_id(k: usize) -> Option<TopK> {
    Some(TopK {
        k,
        ties: Ties::LowestId,
    })
}

fn applied(row: &[f32], f: Filters) -> Vec<f64> {
    let mut s = Scratch::default();
    f.apply(row, &mut s);
    s.logits().to_vec()
}

const NEG: f64 = f64::NEG_INFINITY;

#[test]
fn top_k_keeps_ties_or_takes_the_lowest_ids() {
    let row = [1.0f32, 3.0, 3.0, 2.0, 3.0];
    let f = Filters {
        top_k: keep(2),
        ..Filters::default()
    };
    assert_eq!(applied(&row, f), vec![NEG, 3.0, 3.0, NEG, 3.0]);
    let f = Filters {
        top_k: lowest_id(2),
        ..Filters::default()
    };
    assert_eq!(applied(&row, f), vec![NEG, 3.0, 3.0, NEG, NEG]);
    // k beyond the vocabulary keeps everything; k = 0 counts as 1.
    let f = Filters {
        top_k: lowest_id(9),
        ..Filters::default()
    };
    assert_eq!(applied(&row, f), vec![1.0, 3.0, 3.0, 2.0, 3.0]);
    let f = Filters {
        top_k: lowest_id(0),
        ..Filters::default()
    };
    assert_eq!(applied(&row, f), vec![NEG, 3.0, NEG, NEG, NEG]);
}

#[test]
fn the_temperature_divides_in_f32() {
    let row = [1.0f32, 0.1, -0.3];
    let f = Filters {
        temperature: 0.7,
        ..Filters::default()
    };
    let want: Vec<f64> = row.iter().map(|&x| f64::from(x / 0.7f32)).collect();
    assert_eq!(applied(&row, f), want);
    // 0 leaves the row as it is.
    let want: Vec<f64> = row.iter().map(|&x| f64::from(x)).collect();
    assert_eq!(applied(&row, Filters::default()), want);
}

#[test]
fn the_order_decides_what_top_p_sees() {
    // Full row: p0 = e / (e + 3) = 0.475, so top-p 0.6 keeps tokens 0 and 1, which top-k 2
    // then keeps. After top-k 2 first, p0 = e / (e + 1) = 0.731 passes 0.6 alone.
    let row = [1.0f32, 0.0, 0.0, 0.0];
    let filters = |order| Filters {
        temperature: 1.0,
        top_k: lowest_id(2),
        top_p: Some(0.6),
        order,
    };
    let p_then_k = applied(&row, filters(FilterOrder::TemperatureTopPTopK));
    assert_eq!(p_then_k, vec![1.0, 0.0, NEG, NEG]);
    let k_then_p = applied(&row, filters(FilterOrder::TemperatureTopKTopP));
    assert_eq!(k_then_p, vec![1.0, NEG, NEG, NEG]);
    assert_eq!(
        applied(&row, filters(FilterOrder::TopKTemperatureTopP)),
        k_then_p
    );
}

#[test]
fn entropy_of_hand_made_rows() {
    let uniform = [0.5f32; 4];
    assert!((entropy(&uniform) - 4f64.ln()).abs() < 1e-15);
    // Filtered tokens count as probability 0.
    let filtered = [0.0f64, NEG, 0.0, NEG];
    assert!((entropy(&filtered) - 2f64.ln()).abs() < 1e-15);
    assert_eq!(entropy(&[3.0f32]), 0.0);
    assert!((log_sum_exp(&[0.0f64, 2f64.ln()]) - 3f64.ln()).abs() < 1e-15);
}

proptest! {
    /// The same numbers in f32 and f64 give the same bits.
    #[test]
    fn entropy_is_the_same_for_f32_rows_and_their_f64_copies(
        row in prop::collection::vec(-30f32..30.0, 1..64),
    ) {
        let wide: Vec<f64> = row.iter().map(|&x| f64::from(x)).collect();
        prop_assert_eq!(entropy(&row).to_bits(), entropy(&wide).to_bits());
        let mut p = Vec::new();
        softmax_into(&wide, &mut p);
        let direct: f64 = p.iter().filter(|&&q| q > 0.0).map(|&q| -q * q.ln()).sum();
        prop_assert!((entropy(&row) - direct).abs() < 1e-9);
    }
}

mod nucleus_props {
    use super::super::nucleus;
    use crate::math::softmax_into;
    use proptest::prelude::*;

    /// The definition, by a full stable sort.
    fn naive(logits: &[f64], probs: &[f64], p: f64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..logits.len()).collect();
        order.sort_by(|&a, &b| logits[b].partial_cmp(&logits[a]).expect("no NaN"));
        let mut cum = 0.0;
        for (rank, &i) in order.iter().enumerate() {
            cum += probs[i];
            if cum > p {
                order.truncate(rank + 1);
                return order;
            }
        }
        order
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn partial_selection_equals_a_full_sort(
            n in 1usize..3000,
            seed in any::<u64>(),
            spread in prop_oneof![Just(0.5f64), Just(4.0), Just(40.0), Just(400.0)],
            levels in prop_oneof![Just(8u64), Just(1 << 20)],
            p in prop_oneof![Just(0.0f64), 0.01f64..0.999, Just(0.99999)],
        ) {
            let mut rng = crate::rng::Xoshiro256PlusPlus::seed_from_u64(seed);
            // Few levels give many ties; spread sets how peaked the distribution is.
            let logits: Vec<f64> = (0..n)
                .map(|_| (rng.next_u64() % levels) as f64 / levels as f64 * spread)
                .collect();
            let mut probs = Vec::new();
            softmax_into(&logits, &mut probs);
            let mut order = Vec::new();
            let kept = nucleus(&logits, &probs, p, &mut order);
            let want = naive(&logits, &probs, p);
            prop_assert_eq!(&order[..kept], &want[..]);
        }
    }
}
