//! `POST /infill`: llama-server's fill-in-the-middle endpoint, so that editor plugins that
//! speak it (llama.vim, llama.vscode) work unchanged. A masked diffusion model needs no FIM
//! tokens: the canvas is the prefix, `n_predict` masks, then the suffix, and only the middle
//! is denoised (see [`lacuna::GenerateRequest::suffix`]).
//!
//! The request: `input_prefix`, `input_suffix` (strings, default empty), `input_extra`
//! (context chunks `{"filename", "text"}`, laid out before the prefix as `filename\ntext\n`
//! each, since there are no FIM repository tokens), `prompt` (text at the cursor, after the
//! prefix), `n_predict` (the middle's length budget; -1 or absent: the default),
//! `temperature`, `top_k`, `top_p`, `seed`, `stop`, `stream`, `model` (optional; when given
//! it must be the served id) and Lacuna's `diffusion` object. llama.cpp's scheduling hints
//! (`cache_prompt`, `t_max_prompt_ms`, `t_max_predict_ms`, `n_indent`, `samplers`,
//! `response_fields`, `id_slot`) are accepted and have no effect, and `top_k`/`top_p` are
//! dropped for the LLaDA samplers, which have neither: plugins send them by default. Any
//! other field is a 400 naming it.
//!
//! The answer is llama-server's: `{"content", "stop": true, "stop_type", "tokens_predicted",
//! "tokens_evaluated", "model", ...}`; streamed, one `data: {"content": delta, "stop":
//! false}` per settled piece and a last one with `"stop": true`.

use lacuna::Settings;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::params::{ApiRequest, Fields, diffusion, stop_sequences};

/// The fields `/infill` reads.
const FIELDS: &[&str] = &[
    "input_prefix",
    "input_suffix",
    "input_extra",
    "prompt",
    "n_predict",
    "temperature",
    "top_k",
    "top_p",
    "seed",
    "stop",
    "stream",
    "model",
    "diffusion",
];

/// llama.cpp's hints that do not change what is generated.
const IGNORED: &[&str] = &[
    "cache_prompt",
    "t_max_prompt_ms",
    "t_max_predict_ms",
    "n_indent",
    "samplers",
    "response_fields",
    "id_slot",
];

/// Parses an `/infill` body (an object) into the request the completion machinery runs.
pub(crate) fn parse(obj: &Map<String, Value>) -> Result<ApiRequest, ApiError> {
    if let Some(key) = obj
        .keys()
        .find(|k| !FIELDS.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
    {
        return Err(ApiError::invalid(
            key.clone(),
            format!("Unrecognized or unsupported /infill argument: {key}"),
        )
        .with_code("unsupported_parameter"));
    }
    let f = Fields { obj, prefix: "" };
    let mut prefix = extra(obj.get("input_extra"))?;
    prefix.push_str(&f.string("input_prefix")?.unwrap_or_default());
    prefix.push_str(&f.string("prompt")?.unwrap_or_default());
    let suffix = f.string("input_suffix")?.unwrap_or_default();
    let gen_length = match obj.get("n_predict") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64() == Some(-1) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => {
            n.as_u64().and_then(|v| usize::try_from(v).ok())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "n_predict",
                "`n_predict` must be a positive integer (or -1 for the default)",
            ));
        }
    };
    let temperature = f.number("temperature")?;
    if let Some(t) = temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        return Err(ApiError::invalid(
            "temperature",
            format!("`temperature` must be between 0 and 2, got {t}"),
        ));
    }
    let mut g = Settings {
        gen_length,
        temperature,
        top_k: f.usize("top_k")?.filter(|&k| k > 0),
        top_p: f.number("top_p")?.filter(|&p| p > 0.0 && p < 1.0),
        seed: f.usize("seed")?.map(|s| s as u64),
        ..Settings::default()
    };
    if let Some(d) = obj.get("diffusion") {
        diffusion(d, &mut g)?;
    }
    Ok(ApiRequest {
        model: f.string("model")?.unwrap_or_default(),
        prompt: lacuna::Prompt::Text(prefix),
        settings: g,
        stop: stop_sequences(&f)?,
        stream: f.bool("stream")?.unwrap_or(false),
        include_usage: false,
        include_canvas: false,
        suffix: Some(suffix),
        n: 1,
        lenient_sampling: true,
    })
}

/// `input_extra` as text before the prefix: `filename\ntext\n` per chunk.
fn extra(v: Option<&Value>) -> Result<String, ApiError> {
    let list = match v {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(ApiError::invalid(
                "input_extra",
                "`input_extra` must be an array of {\"filename\", \"text\"} objects",
            ));
        }
    };
    let mut out = String::new();
    for (i, chunk) in list.iter().enumerate() {
        let field = |k: &str| match chunk.get(k) {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(ApiError::invalid(
                format!("input_extra[{i}].{k}"),
                format!("`input_extra[{i}].{k}` must be a string"),
            )),
        };
        if !chunk.is_object() {
            return Err(ApiError::invalid(
                format!("input_extra[{i}]"),
                "each `input_extra` chunk must be an object",
            ));
        }
        let (name, text) = (field("filename")?, field("text")?);
        if !name.is_empty() {
            out.push_str(name);
            out.push('\n');
        }
        out.push_str(text);
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
