//! The constraint on a canvas against brute force: a region is completable exactly when some
//! filling of its masks is a word, every restricted position keeps exactly the tokens of such
//! fillings, and random commit orders always end in a word.

use lacuna_sampler::Constraint;
use lacuna_structured::{Limits, Spec, Vocabulary, compile};
use proptest::prelude::*;

const FREE: u32 = u32::MAX;
const END: u32 = 0;

/// Token 0 ends, 1 is a control token; the rest are these strings.
const PIECES: &[&str] = &[
    "a", "b", "ab", "ba", "c", "1", "12", "{", "}", "\"", ":", ",", " ", "{\"", "\":", "aa",
];

fn vocab() -> Vocabulary {
    let mut tokens = vec![None, None];
    tokens.extend(PIECES.iter().map(|p| Some(p.as_bytes().to_vec())));
    Vocabulary::new(tokens, vec![END])
}

fn text(region: &[u32]) -> Option<String> {
    let mut s = String::new();
    for &t in region {
        if t == END {
            break;
        }
        s.push_str(PIECES.get((t as usize).checked_sub(2)?)?);
    }
    Some(s)
}

/// Whether a finished region is an answer: a word, then only end tokens.
fn is_answer(re: &regex::Regex, region: &[u32]) -> bool {
    let cut = region
        .iter()
        .position(|&t| t == END)
        .unwrap_or(region.len());
    region[cut..].iter().all(|&t| t == END) && text(region).is_some_and(|s| re.is_match(&s))
}

const PATTERNS: &[&str] = &[
    "a(b|c)*",
    "(ab|ba)+1",
    "[ab]{2,3}",
    "\\{\"a\":1(,\"b\":12)?\\}",
    "1|12|c+",
    "a{0,2}b?",
];

fn all_fillings(region: &[u32], n_tokens: u32, f: &mut impl FnMut(&[u32])) {
    let mut r = region.to_vec();
    fn go(r: &mut Vec<u32>, i: usize, n: u32, f: &mut impl FnMut(&[u32])) {
        if i == r.len() {
            f(r);
            return;
        }
        if r[i] != FREE {
            return go(r, i + 1, n, f);
        }
        for t in 0..n {
            r[i] = t;
            go(r, i + 1, n, f);
        }
        r[i] = FREE;
    }
    go(&mut r, 0, n_tokens, f);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn completable_and_restrict_match_brute_force(
        p in 0..PATTERNS.len(),
        cells in proptest::collection::vec(proptest::option::of(0u32..18), 1..5),
    ) {
        let re = regex::Regex::new(&format!("^(?:{})$", PATTERNS[p])).unwrap();
        let c = compile(&Spec::Regex(PATTERNS[p].into()), &vocab(), &Limits::default()).unwrap();
        let region: Vec<u32> = cells.iter().map(|c| c.unwrap_or(FREE)).collect();
        let n = 2 + PIECES.len() as u32;
        let mut any = false;
        all_fillings(&region, n, &mut |r| any |= is_answer(&re, r));
        let mut state = c.start(region.len(), FREE);
        prop_assert_eq!(state.completable(&region), any, "{:?}", region);
        // Each free position keeps exactly the tokens some answer puts there.
        for pos in (0..region.len()).filter(|&i| region[i] == FREE) {
            let mut logits = vec![0.0f32; n as usize];
            state.restrict(&region, pos, &mut logits);
            for t in 0..n {
                let mut r = region.clone();
                r[pos] = t;
                let mut some = false;
                all_fillings(&r, n, &mut |f| some |= is_answer(&re, f));
                prop_assert_eq!(logits[t as usize].is_finite(), some, "pos {} token {} in {:?}", pos, t, region);
            }
        }
    }

    #[test]
    fn random_commit_orders_end_in_an_answer(
        p in 0..PATTERNS.len(),
        len in 3usize..12,
        seed in any::<u64>(),
    ) {
        let re = regex::Regex::new(&format!("^(?:{})$", PATTERNS[p])).unwrap();
        let c = compile(&Spec::Regex(PATTERNS[p].into()), &vocab(), &Limits::default()).unwrap();
        let mut state = c.start(len, FREE);
        let mut region = vec![FREE; len];
        if !state.completable(&region) {
            prop_assert!(c.min_tokens() > len);
            return Ok(());
        }
        let mut s = seed | 1;
        let mut rnd = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
        let n = 2 + PIECES.len();
        while region.contains(&FREE) {
            let free: Vec<usize> = (0..len).filter(|&i| region[i] == FREE).collect();
            let pos = free[(rnd() % free.len() as u64) as usize];
            let mut logits: Vec<f32> = (0..n).map(|_| (rnd() % 1000) as f32 / 100.0).collect();
            state.restrict(&region, pos, &mut logits);
            let best = (0..n).filter(|&t| logits[t].is_finite())
                .max_by(|&a, &b| logits[a].total_cmp(&logits[b]));
            prop_assert!(best.is_some(), "no token left at {} in {:?}", pos, region);
            region[pos] = best.unwrap() as u32;
            prop_assert!(state.completable(&region));
        }
        prop_assert!(is_answer(&re, &region), "{:?} -> {:?}", region, text(&region));
    }

    #[test]
    fn most_likely_is_the_best_answer(
        p in 0..PATTERNS.len(),
        len in 1usize..4,
        scores in proptest::collection::vec(-5.0f32..5.0, 72),
    ) {
        let re = regex::Regex::new(&format!("^(?:{})$", PATTERNS[p])).unwrap();
        let c = compile(&Spec::Regex(PATTERNS[p].into()), &vocab(), &Limits::default()).unwrap();
        let n = 2 + PIECES.len();
        let region = vec![FREE; len];
        let scores = &scores[..len * n];
        let mut best: Option<f32> = None;
        all_fillings(&region, n as u32, &mut |f| if is_answer(&re, f) {
            let s: f32 = f.iter().enumerate().map(|(i, &t)| scores[i * n + t as usize]).sum();
            best = Some(best.map_or(s, |b: f32| b.max(s)));
        });
        let mut state = c.start(len, FREE);
        let got = state.most_likely(&region, 0..len, scores);
        match (got, best) {
            (None, None) => {}
            (Some(g), Some(b)) => {
                prop_assert!(is_answer(&re, &g));
                let s: f32 = g.iter().enumerate().map(|(i, &t)| scores[i * n + t as usize]).sum();
                prop_assert!((s - b).abs() < 1e-4, "{} vs {}", s, b);
            }
            (g, b) => prop_assert!(false, "{:?} vs {:?}", g, b),
        }
    }
}
