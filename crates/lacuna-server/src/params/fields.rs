//! The value types of request fields: each deserializes from JSON with an error that says
//! what the field must be ("must be a non-negative integer"), which [`super::decode`] prefixes
//! with the field's path (`diffusion.steps`). `null` is "not given" wherever a field is an
//! `Option` of one of these.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::Deserialize;
use serde::de::{self, Deserializer, Error as _};
use serde_json::Value;

/// Deserializes through a [`Value`] and `convert`, whose error text follows the path.
fn via_value<'de, D, T>(
    d: D,
    convert: impl FnOnce(Value) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    convert(Value::deserialize(d)?).map_err(D::Error::custom)
}

/// A non-negative integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count(pub(crate) usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Count)
                .ok_or_else(|| "must be a non-negative integer".to_string())
        })
    }
}

/// A finite number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Num(pub(crate) f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| match v {
            Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() => Ok(Num(x)),
                _ => Err("must be a finite number".to_string()),
            },
            _ => Err("must be a number".to_string()),
        })
    }
}

/// A boolean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag(pub(crate) bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| {
            v.as_bool()
                .map(Flag)
                .ok_or_else(|| "must be a boolean".to_string())
        })
    }
}

/// A string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text(pub(crate) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| match v {
            Value::String(s) => Ok(Text(s)),
            _ => Err("must be a string".to_string()),
        })
    }
}

/// A string naming one of a setting's values; its `FromStr` error lists the valid names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named<T>(pub(crate) T);

impl<'de, T> Deserialize<'de> for Named<T>
where
    T: FromStr<Err = lacuna::sampler::UnknownName>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Text(s) = Text::deserialize(d)?;
        s.parse::<T>()
            .map(Named)
            .map_err(|e| D::Error::custom(e.to_string()))
    }
}

/// An array of non-negative integers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counts(pub(crate) Vec<usize>);

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const WHAT: &str = "must be an array of positive integers";
        via_value(d, |v| match v {
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_u64().and_then(|n| usize::try_from(n).ok()))
                .collect::<Option<Vec<_>>>()
                .map(Counts)
                .ok_or_else(|| WHAT.to_string()),
            _ => Err(WHAT.to_string()),
        })
    }
}

/// A seed: any JSON integer (negative ones wrap to `u64`, as OpenAI's clients send them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seed(pub(crate) u64);

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| {
            v.as_u64()
                .or_else(|| v.as_i64().map(|i| i as u64))
                .map(Seed)
                .ok_or_else(|| "must be an integer".to_string())
        })
    }
}

/// `stop`: a string or an array of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const WHAT: &str = "must be a string or an array of strings";
        via_value(d, |v| match v {
            Value::String(s) => Ok(Stop(vec![s])),
            Value::Array(a) => a
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(Stop)
                .ok_or_else(|| WHAT.to_string()),
            _ => Err(WHAT.to_string()),
        })
    }
}

/// `logprobs`: chat's boolean or completions' integer; which one is allowed is the
/// endpoint's to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogprobsField {
    /// `true` / `false` (chat).
    Flag(bool),
    /// A count of alternatives (completions).
    Count(usize),
    /// Anything else, refused in the endpoint's words.
    Other,
}

impl<'de> Deserialize<'de> for LogprobsField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| {
            Ok(match v {
                Value::Bool(b) => LogprobsField::Flag(b),
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .map_or(LogprobsField::Other, LogprobsField::Count),
                _ => LogprobsField::Other,
            })
        })
    }
}

/// A list whose items are `T`; a value that is not an array is refused as "must be
/// {`W::WHAT`}" (each item's own errors name its index).
pub(crate) struct List<T, W>(pub(crate) Vec<T>, PhantomData<W>);

impl<T: fmt::Debug, W> fmt::Debug for List<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Clone, W> Clone for List<T, W> {
    fn clone(&self) -> Self {
        List(self.0.clone(), PhantomData)
    }
}

/// What a [`List`] holds, for its error: "an array of messages".
pub(crate) trait ListWhat {
    /// The expected value, as "an array of ...".
    const WHAT: &'static str;
}

impl<'de, T: Deserialize<'de>, W: ListWhat> Deserialize<'de> for List<T, W> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, W>(PhantomData<(T, W)>);
        impl<'de, T: Deserialize<'de>, W: ListWhat> de::Visitor<'de> for V<T, W> {
            type Value = List<T, W>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(W::WHAT)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(List(out, PhantomData))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}
