//! Building blocks of the languages, as `regex-syntax` HIR (no regex text is written, so
//! nothing needs escaping): JSON's strings, numbers and integer ranges, and the mapping of a
//! pattern over a string's characters to the JSON text that encodes them.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};

use crate::error::{Error, Result};

/// The literal `s`.
pub(crate) fn lit(s: &str) -> Hir {
    Hir::literal(s.as_bytes())
}

/// `parts` one after another.
pub(crate) fn cat(parts: Vec<Hir>) -> Hir {
    Hir::concat(parts)
}

/// One of `alts` (none: matches nothing).
pub(crate) fn alt(alts: Vec<Hir>) -> Hir {
    Hir::alternation(alts)
}

/// `h` repeated `min` to `max` times (`None`: unbounded).
pub(crate) fn rep(h: Hir, min: u32, max: Option<u32>) -> Hir {
    Hir::repetition(Repetition {
        min,
        max,
        greedy: true,
        sub: Box::new(h),
    })
}

/// `h` or nothing.
pub(crate) fn opt(h: Hir) -> Hir {
    rep(h, 0, Some(1))
}

/// One character of the inclusive ranges.
pub(crate) fn chars(ranges: &[(char, char)]) -> Hir {
    let ranges = ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b));
    Hir::class(Class::Unicode(ClassUnicode::new(ranges)))
}

/// One ASCII digit.
pub(crate) fn digit() -> Hir {
    chars(&[('0', '9')])
}

/// The separator JSON values are written with around `:` and `,`: one optional space.
pub(crate) fn ws() -> Hir {
    opt(lit(" "))
}

/// Characters a JSON string holds unescaped: every scalar value but `"`, `\` and the
/// controls U+0000–U+001F.
fn plain_chars() -> ClassUnicode {
    ClassUnicode::new([
        ClassUnicodeRange::new('\u{20}', '\u{21}'),
        ClassUnicodeRange::new('\u{23}', '\u{5b}'),
        ClassUnicodeRange::new('\u{5d}', char::MAX),
    ])
}

/// One character of a JSON string's text: a plain character, a one-letter escape, or a
/// `\uXXXX` escape of a character outside the surrogates (so that each alternative is one
/// character of the decoded string, as `minLength`/`maxLength` count them).
pub(crate) fn json_char() -> Hir {
    let hex = chars(&[('0', '9'), ('a', 'f'), ('A', 'F')]);
    let not_surrogate = alt(vec![
        cat(vec![
            chars(&[('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')]),
            rep(hex.clone(), 3, Some(3)),
        ]),
        cat(vec![
            chars(&[('d', 'd'), ('D', 'D')]),
            chars(&[('0', '7')]),
            rep(hex, 2, Some(2)),
        ]),
    ]);
    alt(vec![
        Hir::class(Class::Unicode(plain_chars())),
        cat(vec![
            lit("\\"),
            chars(&[
                ('"', '"'),
                ('\\', '\\'),
                ('/', '/'),
                ('b', 'b'),
                ('f', 'f'),
                ('n', 'n'),
                ('r', 'r'),
                ('t', 't'),
            ]),
        ]),
        cat(vec![lit("\\u"), not_surrogate]),
    ])
}

/// A JSON string of `min` to `max` characters.
pub(crate) fn json_string(min: u32, max: Option<u32>) -> Hir {
    cat(vec![lit("\""), rep(json_char(), min, max), lit("\"")])
}

/// A JSON number: integer, fraction, exponent (of at most two digits).
pub(crate) fn json_number() -> Hir {
    cat(vec![
        opt(lit("-")),
        int_digits(),
        opt(cat(vec![lit("."), rep(digit(), 1, None)])),
        // An exponent of at most two digits keeps every value a finite double.
        opt(cat(vec![
            chars(&[('e', 'e'), ('E', 'E')]),
            opt(chars(&[('+', '+'), ('-', '-')])),
            rep(digit(), 1, Some(2)),
        ])),
    ])
}

/// The digits of a non-negative integer without leading zeros: `0|[1-9][0-9]*`.
fn int_digits() -> Hir {
    alt(vec![
        lit("0"),
        cat(vec![chars(&[('1', '9')]), rep(digit(), 0, None)]),
    ])
}

/// The JSON text of the integers in `[lo, hi]` (`None`: unbounded on that side), never
/// `-0`; `None` when the range is empty.
pub(crate) fn int_range(lo: Option<i128>, hi: Option<i128>) -> Option<Hir> {
    if let (Some(l), Some(h)) = (lo, hi)
        && l > h
    {
        return None;
    }
    let mut alts = Vec::new();
    // Negative values -y, y in [max(1, -hi), -lo].
    if lo.is_none_or(|l| l < 0) {
        let y_lo = hi.map_or(1, |h| (-h).max(1));
        let y_hi = lo.map(|l| -l);
        if let Some(h) = nonneg_range(y_lo as u128, y_hi.map(|v| v as u128)) {
            alts.push(cat(vec![lit("-"), h]));
        }
    }
    // Non-negative values in [max(0, lo), hi].
    if hi.is_none_or(|h| h >= 0) {
        let a = lo.map_or(0, |l| l.max(0)) as u128;
        if let Some(h) = nonneg_range(a, hi.map(|h| h as u128)) {
            alts.push(h);
        }
    }
    (!alts.is_empty()).then(|| alt(alts))
}

/// The decimal text of the integers in `[a, b]` without leading zeros.
fn nonneg_range(a: u128, b: Option<u128>) -> Option<Hir> {
    if b.is_some_and(|b| a > b) {
        return None;
    }
    let len = |v: u128| v.to_string().len();
    let mut alts = Vec::new();
    let (la, lb) = (len(a), b.map(len));
    for l in la..=lb.unwrap_or(la) {
        let lo = if l == la { a } else { 10u128.pow(l as u32 - 1) };
        let top = 10u128.pow(l as u32) - 1;
        let hi = b.map_or(top, |b| b.min(top));
        if lo <= hi {
            alts.push(same_length(&lo.to_string(), &hi.to_string()));
        }
    }
    if b.is_none() {
        // Every longer number.
        alts.push(cat(vec![
            chars(&[('1', '9')]),
            rep(digit(), la as u32, None),
        ]));
    }
    Some(alt(alts))
}

/// Numbers of `a.len()` digits from `a` to `b` (same length, `a <= b`).
fn same_length(a: &str, b: &str) -> Hir {
    let (a0, b0) = (a.as_bytes()[0] as char, b.as_bytes()[0] as char);
    let n = a.len() - 1;
    if n == 0 {
        return chars(&[(a0, b0)]);
    }
    let (ar, br) = (&a[1..], &b[1..]);
    if a0 == b0 {
        return cat(vec![lit(&a0.to_string()), same_length(ar, br)]);
    }
    let zeros = "0".repeat(n);
    let nines = "9".repeat(n);
    if ar == zeros && br == nines {
        return cat(vec![
            chars(&[(a0, b0)]),
            rep(digit(), n as u32, Some(n as u32)),
        ]);
    }
    let mut alts = vec![cat(vec![lit(&a0.to_string()), same_length(ar, &nines)])];
    let (m0, m1) = ((a0 as u8 + 1) as char, (b0 as u8 - 1) as char);
    if m0 <= m1 {
        alts.push(cat(vec![
            chars(&[(m0, m1)]),
            rep(digit(), n as u32, Some(n as u32)),
        ]));
    }
    alts.push(cat(vec![lit(&b0.to_string()), same_length(&zeros, br)]));
    alt(alts)
}

/// A bound of a number range: an integer value, inclusive or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    pub(crate) value: i128,
    pub(crate) inclusive: bool,
}

/// At most this many fraction digits in a bounded number, so that the value a JSON parser
/// reads as a float (53-bit) is the value written, and the bound check agrees.
const FRACTION_DIGITS: u32 = 12;

/// The JSON text of the numbers (no exponent) between `lo` and `hi`, integer-valued bounds;
/// `None` when the range is empty.
pub(crate) fn number_range(lo: Option<Bound>, hi: Option<Bound>) -> Option<Hir> {
    let mut alts = Vec::new();
    // Negative values -y with y in (max(0, -hi), -lo]: y > 0 always.
    if lo.is_none_or(|l| l.value < 0) {
        let y_lo = match hi {
            Some(h) if h.value < 0 => Bound {
                value: -h.value,
                inclusive: h.inclusive,
            },
            _ => Bound {
                value: 0,
                inclusive: false,
            },
        };
        let y_hi = lo.map(|l| Bound {
            value: -l.value,
            inclusive: l.inclusive,
        });
        if let Some(h) = nonneg_real(y_lo, y_hi) {
            alts.push(cat(vec![lit("-"), h]));
        }
    }
    // Non-negative values.
    if hi.is_none_or(|h| h.value > 0 || (h.value == 0 && h.inclusive)) {
        let a = match lo {
            Some(l) if l.value >= 0 => l,
            _ => Bound {
                value: 0,
                inclusive: true,
            },
        };
        if let Some(h) = nonneg_real(a, hi) {
            alts.push(h);
        }
    }
    (!alts.is_empty()).then(|| alt(alts))
}

/// Non-negative decimals between `a` (`a.value >= 0`) and `b`.
fn nonneg_real(a: Bound, b: Option<Bound>) -> Option<Hir> {
    let frac_any = || opt(cat(vec![lit("."), rep(digit(), 1, Some(FRACTION_DIGITS))]));
    let frac_zero = || opt(cat(vec![lit("."), rep(lit("0"), 1, Some(FRACTION_DIGITS))]));
    // 1 to FRACTION_DIGITS digits, not all zero: k zeros, a nonzero digit, then any digits.
    let frac_nonzero = || {
        let alts = (0..FRACTION_DIGITS)
            .map(|k| {
                cat(vec![
                    rep(lit("0"), k, Some(k)),
                    chars(&[('1', '9')]),
                    rep(digit(), 0, Some(FRACTION_DIGITS - 1 - k)),
                ])
            })
            .collect();
        cat(vec![lit("."), alt(alts)])
    };
    let int = |v: i128| lit(&v.to_string());
    if let Some(b) = b {
        if a.value > b.value {
            return None;
        }
        if a.value == b.value {
            return (a.inclusive && b.inclusive).then(|| cat(vec![int(a.value), frac_zero()]));
        }
    }
    let mut alts = Vec::new();
    // Integer part a: any fraction when a is inclusive, else a nonzero one.
    alts.push(cat(vec![
        int(a.value),
        if a.inclusive {
            frac_any()
        } else {
            frac_nonzero()
        },
    ]));
    // Integer parts strictly between.
    let hi_int = b.map(|b| b.value - 1);
    if hi_int.is_none_or(|h| h > a.value)
        && let Some(h) = nonneg_range((a.value + 1) as u128, hi_int.map(|h| h as u128))
    {
        alts.push(cat(vec![h, frac_any()]));
    }
    // Integer part b: only b itself.
    if let Some(b) = b
        && b.inclusive
    {
        alts.push(cat(vec![int(b.value), frac_zero()]));
    }
    Some(alt(alts))
}

/// The JSON string text (without quotes) of the strings `pattern` matches somewhere (JSON
/// Schema's `pattern` is not anchored; `^` at its start and `$` at its end anchor it).
pub(crate) fn json_pattern(pattern: &str) -> Result<Hir> {
    let hir = parse_regex(pattern)?;
    let (hir, start, end) = strip_anchors(hir)?;
    let body = escape_json(&hir)?;
    let any = || rep(json_char(), 0, None);
    let mut parts = Vec::new();
    if !start {
        parts.push(any());
    }
    parts.push(body);
    if !end {
        parts.push(any());
    }
    Ok(cat(parts))
}

/// A user's regex matched against the whole output (anchors at its ends are allowed and
/// change nothing).
pub(crate) fn full_regex(pattern: &str) -> Result<Hir> {
    let (hir, _, _) = strip_anchors(parse_regex(pattern)?)?;
    check_plain(&hir)?;
    Ok(hir)
}

fn parse_regex(pattern: &str) -> Result<Hir> {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|e| Error::Regex {
            message: e.to_string(),
        })
}

/// `hir` without a leading `^` and a trailing `$`, and whether each was there; other
/// look-arounds are refused.
fn strip_anchors(hir: Hir) -> Result<(Hir, bool, bool)> {
    let is = |h: &Hir, look: Look| matches!(h.kind(), HirKind::Look(l) if *l == look);
    let mut parts = match hir.kind() {
        HirKind::Concat(parts) => parts.clone(),
        _ => vec![hir.clone()],
    };
    let start = parts.first().is_some_and(|h| is(h, Look::Start));
    if start {
        parts.remove(0);
    }
    let end = parts.last().is_some_and(|h| is(h, Look::End));
    if end {
        parts.pop();
    }
    let hir = cat(parts);
    check_plain(&hir)?;
    Ok((hir, start, end))
}

/// Refuses look-arounds and byte classes anywhere in `hir`.
fn check_plain(hir: &Hir) -> Result<()> {
    match hir.kind() {
        HirKind::Look(l) => Err(Error::RegexFeature {
            feature: format!(
                "the assertion {l:?} (anchors are allowed only at the pattern's ends; \
                 look-arounds and word boundaries are not)"
            ),
        }),
        HirKind::Class(Class::Bytes(_)) => Err(Error::RegexFeature {
            feature: "a byte class (use Unicode classes)".into(),
        }),
        HirKind::Repetition(r) => check_plain(&r.sub),
        HirKind::Capture(c) => check_plain(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().try_for_each(check_plain),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(Class::Unicode(_)) => Ok(()),
    }
}

/// The JSON-encoded form of a language over a string's characters: each character becomes
/// its text inside a JSON string (`"` as `\"`, `\` as `\\`, controls as `\n`, `\t`, ... or
/// `\u00XX`; everything else as itself).
fn escape_json(hir: &Hir) -> Result<Hir> {
    Ok(match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => {
            let s = std::str::from_utf8(&l.0).map_err(|_| Error::RegexFeature {
                feature: "a literal that is not UTF-8".into(),
            })?;
            cat(s.chars().map(|c| lit(&escaped(c))).collect())
        }
        HirKind::Class(Class::Unicode(c)) => {
            let mut plain = c.clone();
            plain.intersect(&plain_chars());
            let mut alts = vec![Hir::class(Class::Unicode(plain))];
            for r in c.ranges() {
                for special in ['"', '\\'].into_iter().chain((0u8..0x20).map(char::from)) {
                    if r.start() <= special && special <= r.end() {
                        alts.push(lit(&escaped(special)));
                    }
                }
            }
            alt(alts)
        }
        HirKind::Class(Class::Bytes(_)) | HirKind::Look(_) => {
            return Err(Error::RegexFeature {
                feature: "a byte class or an assertion inside `pattern`".into(),
            });
        }
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            min: r.min,
            max: r.max,
            greedy: true,
            sub: Box::new(escape_json(&r.sub)?),
        }),
        HirKind::Capture(c) => escape_json(&c.sub)?,
        HirKind::Concat(v) => cat(v.iter().map(escape_json).collect::<Result<_>>()?),
        HirKind::Alternation(v) => alt(v.iter().map(escape_json).collect::<Result<_>>()?),
    })
}

/// `c` as JSON writes it inside a string (serde_json's escapes).
fn escaped(c: char) -> String {
    let quoted = serde_json::to_string(&c.to_string()).unwrap_or_default();
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests;
