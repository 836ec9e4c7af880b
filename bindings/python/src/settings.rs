//! Keyword arguments onto [`lacuna::Settings`]: the one request vocabulary, each keyword a
//! `Settings` field of the same name. Syntax and types only: what the settings mean together
//! (presets, defaults, checks) is [`lacuna::Settings::request`]'s, as for the CLI's flags
//! and the server's `diffusion` object.

use lacuna::structured::Spec;
use lacuna::{CachePolicy, DreamAlg, Remasking, Settings};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::errors;

/// Every keyword a generation takes: the [`Settings`] fields, but `likelihood_samples`
/// (scoring's, [`crate::engine::Engine::score`]'s `samples`).
pub(crate) const NAMES: &[&str] = &[
    "gen_length",
    "steps",
    "block_length",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "remasking",
    "algorithm",
    "alg_temp",
    "cfg_scale",
    "cache",
    "parallel",
    "threshold",
    "factor",
    "entropy_bound",
    "fast",
    "editing",
    "editing_threshold",
    "max_post_steps",
    "keep_after_eos",
    "logprobs",
    "infill_lengths",
    "constraint",
];

/// `value`'s Python type name, for messages.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// A non-negative int (`bool` refused): a `TypeError` for another type, a `SettingsError`
/// for a negative or too large one.
pub(crate) fn count(name: &str, value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(errors::type_error(format!(
            "`{name}` must be an int, got {}",
            type_name(value)
        )));
    }
    if let Ok(n) = value.extract::<usize>() {
        return Ok(n);
    }
    let negative = value.lt(0)?;
    let message = if negative {
        format!("`{name}` must be at least 0, got {value}")
    } else {
        format!("`{name}` is too large: {value}")
    };
    Err(errors::settings(py, message, Some(name)))
}

/// A seed: any int from 0 to 2**64 - 1.
pub(crate) fn seed(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(errors::type_error(format!(
            "`{name}` must be an int, got {}",
            type_name(value)
        )));
    }
    value.extract::<u64>().map_err(|_| {
        errors::settings(
            py,
            format!("`{name}` must be between 0 and 2**64 - 1, got {value}"),
            Some(name),
        )
    })
}

/// An int or a float (`bool` refused).
fn number(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>() {
        return Err(errors::type_error(format!(
            "`{name}` must be a number, got bool"
        )));
    }
    value.extract::<f64>().map_err(|_| {
        errors::type_error(format!(
            "`{name}` must be a number, got {}",
            type_name(value)
        ))
    })
}

/// `True` or `False`.
fn flag(name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    match value.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(errors::type_error(format!(
            "`{name}` must be a bool, got {}",
            type_name(value)
        ))),
    }
}

/// A `str`.
fn text(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(errors::type_error(format!(
            "`{name}` must be a str, got {}",
            type_name(value)
        ))),
    }
}

/// One of a setting's names (`"dual"`, `"low_confidence"`, ...), parsed as the CLI and the
/// server parse it; an unknown name is a `SettingsError` listing the valid ones.
fn named<T: std::str::FromStr<Err = lacuna::sampler::UnknownName>>(
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    let s = text(name, value)?;
    s.parse::<T>()
        .map_err(|e| errors::settings(value.py(), e.to_string(), Some(name)))
}

/// A list (or tuple) of non-negative ints.
fn counts(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if value.is_instance_of::<PyString>() {
        return Err(errors::type_error(format!(
            "`{name}` must be a list of ints, got str"
        )));
    }
    let items = value.try_iter().map_err(|_| {
        errors::type_error(format!(
            "`{name}` must be a list of ints, got {}",
            type_name(value)
        ))
    })?;
    items
        .map(|item| count(name, &item?))
        .collect::<PyResult<Vec<usize>>>()
}

/// A Python value as JSON, through the standard library's `json.dumps` (so what it accepts
/// is what `json` accepts).
fn json(name: &str, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let py = value.py();
    let dumped = py
        .import("json")?
        .call_method1("dumps", (value,))
        .map_err(|e| {
            errors::type_error(format!(
                "`{name}` must be JSON-serializable: {}",
                e.value(py)
            ))
        })?;
    let s: String = dumped.extract()?;
    serde_json::from_str(&s)
        .map_err(|e| errors::settings(py, format!("`{name}` is not valid JSON: {e}"), Some(name)))
}

/// `constraint`: `{"json_schema": schema}`, `{"regex": str}`, `{"choice": [str, ...]}`,
/// `{"grammar": str}`, or `"json_object"` (also `{"json_object": True}`).
fn constraint(value: &Bound<'_, PyAny>) -> PyResult<Spec> {
    const NAME: &str = "constraint";
    const FORMS: &str = "`constraint` must be \"json_object\" or a dict with one key: \
                         \"json_schema\", \"json_object\", \"regex\", \"choice\" or \"grammar\"";
    let py = value.py();
    if let Ok(s) = value.cast::<PyString>() {
        return match s.to_cow()?.as_ref() {
            "json_object" => Ok(Spec::JsonObject),
            other => Err(errors::settings(
                py,
                format!("{FORMS}, got {other:?}"),
                Some(NAME),
            )),
        };
    }
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(errors::type_error(format!(
            "{FORMS}, got {}",
            type_name(value)
        )));
    };
    if dict.len() != 1 {
        return Err(errors::settings(
            py,
            format!("{FORMS}; it has {} keys", dict.len()),
            Some(NAME),
        ));
    }
    let Some((key, inner)) = dict.iter().next() else {
        return Err(errors::settings(py, FORMS.to_string(), Some(NAME)));
    };
    let key = text("constraint key", &key)?;
    let at = format!("constraint[{key:?}]");
    match key.as_str() {
        "json_schema" => Ok(Spec::JsonSchema(json(&at, &inner)?)),
        "json_object" => match flag(&at, &inner)? {
            true => Ok(Spec::JsonObject),
            false => Err(errors::settings(
                py,
                format!("`{at}` must be True"),
                Some(NAME),
            )),
        },
        "regex" => Ok(Spec::Regex(text(&at, &inner)?)),
        "grammar" => Ok(Spec::Grammar(text(&at, &inner)?)),
        "choice" => {
            if inner.is_instance_of::<PyString>() {
                return Err(errors::type_error(format!(
                    "`{at}` must be a list of str, got str"
                )));
            }
            let items = inner.try_iter().map_err(|_| {
                errors::type_error(format!(
                    "`{at}` must be a list of str, got {}",
                    type_name(&inner)
                ))
            })?;
            Ok(Spec::Choice(
                items
                    .map(|item| text(&at, &item?))
                    .collect::<PyResult<Vec<String>>>()?,
            ))
        }
        other => Err(errors::settings(
            py,
            format!("{FORMS}, got the key {other:?}"),
            Some(NAME),
        )),
    }
}

/// The settings `kwargs` give a call to `method` (its name, for the error on an unknown
/// keyword: a `TypeError` naming it, as Python's own). A keyword given `None` is not said.
pub(crate) fn from_kwargs(method: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Settings> {
    let mut s = Settings::default();
    let Some(kwargs) = kwargs else {
        return Ok(s);
    };
    for (key, value) in kwargs.iter() {
        let key = key.cast::<PyString>()?.to_cow()?.into_owned();
        let k = key.as_str();
        if value.is_none() && NAMES.contains(&k) {
            continue;
        }
        let v = &value;
        match k {
            "gen_length" => s.gen_length = Some(count(k, v)?),
            "steps" => s.steps = Some(count(k, v)?),
            "block_length" => s.block_length = Some(count(k, v)?),
            "temperature" => s.temperature = Some(number(k, v)?),
            "top_p" => s.top_p = Some(number(k, v)?),
            "top_k" => s.top_k = Some(count(k, v)?),
            "seed" => s.seed = Some(seed(k, v)?),
            "remasking" => s.remasking = Some(named::<Remasking>(k, v)?),
            "algorithm" => s.algorithm = Some(named::<DreamAlg>(k, v)?),
            "alg_temp" => s.alg_temp = Some(number(k, v)? as f32),
            "cfg_scale" => s.cfg_scale = Some(number(k, v)? as f32),
            "cache" => s.cache = Some(named::<CachePolicy>(k, v)?),
            "parallel" => s.parallel = flag(k, v)?,
            "threshold" => s.threshold = Some(number(k, v)?),
            "factor" => s.factor = Some(number(k, v)?),
            "entropy_bound" => s.entropy_bound = Some(number(k, v)?),
            "fast" => s.fast = flag(k, v)?,
            "editing" => s.editing = flag(k, v)?,
            "editing_threshold" => s.editing_threshold = Some(number(k, v)?),
            "max_post_steps" => s.max_post_steps = Some(count(k, v)?),
            "keep_after_eos" => s.keep_after_eos = flag(k, v)?,
            "logprobs" => s.logprobs = Some(count(k, v)?),
            "infill_lengths" => s.infill_lengths = counts(k, v)?,
            "constraint" => s.constraint = Some(constraint(v)?),
            _ => {
                return Err(errors::type_error(format!(
                    "{method}() got an unexpected keyword argument '{k}' (the settings are: {})",
                    NAMES.join(", ")
                )));
            }
        }
    }
    Ok(s)
}
