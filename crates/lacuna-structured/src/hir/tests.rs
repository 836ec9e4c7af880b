use super::*;
use crate::dfa::{ByteDfa, DfaLimits};

fn dfa(h: &Hir) -> ByteDfa {
    let limits = DfaLimits {
        nfa_bytes: 1 << 24,
        dfa_bytes: 1 << 24,
    };
    ByteDfa::build(h, limits).unwrap()
}

const EDGES: [i128; 14] = [
    -1000, -101, -100, -99, -10, -9, -1, 0, 1, 9, 10, 99, 100, 999,
];

#[test]
fn integer_ranges_are_exact() {
    let bounds: Vec<Option<i128>> = std::iter::once(None).chain(EDGES.map(Some)).collect();
    for &lo in &bounds {
        for &hi in &bounds {
            let Some(h) = int_range(lo, hi) else {
                assert!(lo.unwrap() > hi.unwrap());
                continue;
            };
            let d = dfa(&h);
            for n in -1200i128..=1200 {
                let want = lo.is_none_or(|l| n >= l) && hi.is_none_or(|h| n <= h);
                assert_eq!(
                    d.matches(n.to_string().as_bytes()),
                    want,
                    "{n} in [{lo:?}, {hi:?}]"
                );
            }
            for bad in ["-0", "01", "-01", "", "-", "+1", "1.0"] {
                assert!(!d.matches(bad.as_bytes()), "{bad} in [{lo:?}, {hi:?}]");
            }
        }
    }
}

#[test]
fn number_ranges_are_exact_on_a_grid() {
    let bounds = [-10i128, -1, 0, 1, 3, 10];
    let values: Vec<String> = (-1200i32..=1200)
        .map(|i| format!("{:.2}", f64::from(i) / 100.0))
        .chain((-12..=12).map(|i| i.to_string()))
        .chain(["0.5", "-0.5", "3.000", "2.999999999999", "10.0", "-10.00"].map(String::from))
        .collect();
    let sides = |v: i128| {
        [
            Bound {
                value: v,
                inclusive: true,
            },
            Bound {
                value: v,
                inclusive: false,
            },
        ]
    };
    let mut los: Vec<Option<Bound>> = vec![None];
    let mut his: Vec<Option<Bound>> = vec![None];
    for &b in &bounds {
        los.extend(sides(b).map(Some));
        his.extend(sides(b).map(Some));
    }
    for &lo in &los {
        for &hi in &his {
            let Some(h) = number_range(lo, hi) else {
                continue;
            };
            let d = dfa(&h);
            for v in &values {
                let x: f64 = v.parse().unwrap();
                let ok_lo = lo.is_none_or(|b| {
                    if b.inclusive {
                        x >= b.value as f64
                    } else {
                        x > b.value as f64
                    }
                });
                let ok_hi = hi.is_none_or(|b| {
                    if b.inclusive {
                        x <= b.value as f64
                    } else {
                        x < b.value as f64
                    }
                });
                // "-0.00" is a valid JSON number equal to 0; the language writes 0 unsigned.
                let negative_zero = v.starts_with('-') && x == 0.0;
                let want = ok_lo && ok_hi && !negative_zero;
                assert_eq!(d.matches(v.as_bytes()), want, "{v} in {lo:?}..{hi:?}");
            }
        }
    }
}

#[test]
fn json_strings_decode_to_the_counted_characters() {
    let d = dfa(&json_string(2, Some(3)));
    for (s, ok) in [
        (r#""ab""#, true),
        (r#""a\nb""#, true),
        (r#""\u00e9\"x""#, true),
        (r#""é😀""#, true),
        (r#""a""#, false),
        (r#""abcd""#, false),
        (r#""a"b""#, false),
        (r#""a\qb""#, false),
        ("\"a\tb\"", false),
        (r#""\ud83d\ude00""#, false),
    ] {
        assert_eq!(d.matches(s.as_bytes()), ok, "{s}");
        if ok {
            let v: String = serde_json::from_str(s).unwrap();
            let n = v.chars().count();
            assert!((2..=3).contains(&n), "{s}: {n}");
        }
    }
}

#[test]
fn patterns_match_the_decoded_string_anywhere_unless_anchored() {
    let quoted = |p: &str| dfa(&cat(vec![lit("\""), json_pattern(p).unwrap(), lit("\"")]));
    let d = quoted("^[a-z]+$");
    assert!(d.matches(br#""abc""#));
    assert!(!d.matches(br#""abc1""#));
    let d = quoted("[0-9]{3}");
    assert!(d.matches(br#""ab123cd""#));
    assert!(!d.matches(br#""ab12cd""#));
    // A quote or a newline in the pattern is written escaped.
    let d = quoted("^a\"b\\nc$");
    assert!(d.matches(br#""a\"b\nc""#));
    assert!(!d.matches(b"\"a\"b\nc\""));
    assert!(matches!(
        json_pattern("a\\bb"),
        Err(Error::RegexFeature { .. })
    ));
    assert!(matches!(json_pattern("(?=a)"), Err(Error::Regex { .. })));
    assert!(matches!(full_regex("a^b"), Err(Error::RegexFeature { .. })));
}
