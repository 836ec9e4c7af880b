use super::*;

#[test]
fn none_is_always_full() {
    let mut plan = CachePlan::new(CachePolicy::None);
    for _ in 0..3 {
        assert_eq!(plan.pass(&[5, 6], 4..8, 12), Pass::Full);
    }
}

#[test]
fn each_block_starts_with_a_fill() {
    for policy in [CachePolicy::Prefix, CachePolicy::Dual] {
        let mut plan = CachePlan::new(policy);
        assert_eq!(plan.pass(&[4, 5], 4..8, 12), Pass::Fill);
        assert!(matches!(plan.pass(&[5], 4..8, 12), Pass::Window(_)));
        plan.begin_block();
        assert_eq!(plan.pass(&[8], 8..12, 12), Pass::Fill);
    }
}

#[test]
fn windows_follow_fast_dllm() {
    let mut prefix = CachePlan::new(CachePolicy::Prefix);
    prefix.pass(&[4], 4..8, 12);
    assert_eq!(prefix.pass(&[5, 7], 4..8, 12), Pass::Window(4..12));
    let mut dual = CachePlan::new(CachePolicy::Dual);
    dual.pass(&[4], 4..8, 12);
    assert_eq!(dual.pass(&[5, 7], 4..8, 12), Pass::Window(4..8));
    // Dream's shifted row before the block widens the window by one.
    assert_eq!(dual.pass(&[3, 5], 4..8, 12), Pass::Window(3..8));
}

#[test]
fn names_round_trip() {
    for p in [CachePolicy::None, CachePolicy::Prefix, CachePolicy::Dual] {
        assert_eq!(p.name().parse::<CachePolicy>().ok(), Some(p));
    }
    assert_eq!("full".parse::<CachePolicy>().ok(), None);
}

#[test]
fn block_causal_fills_once_and_reaches_back_at_a_new_block() {
    // Blocks of 3 after a prompt of 3; begin_block before every step changes nothing.
    let mut plan = CachePlan::block_causal(CachePolicy::Prefix);
    let steps = [
        (&[3usize, 4][..], 3..6),
        (&[4][..], 3..6),
        (&[6, 8][..], 6..9),
    ];
    let passes: Vec<Pass> = steps
        .into_iter()
        .map(|(rows, block)| {
            plan.begin_block();
            plan.pass(rows, block.clone(), block.end)
        })
        .collect();
    let want = [Pass::Fill, Pass::Window(3..6), Pass::Window(3..9)];
    assert_eq!(passes, want);
    assert_eq!(plan.pass(&[7], 6..9, 9), Pass::Window(6..9));
    let mut none = CachePlan::block_causal(CachePolicy::None);
    assert_eq!(none.pass(&[5], 4..8, 8), Pass::Full);
}
