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
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::error::ApiError;
use crate::params::{
    ApiRequest, Count, Diffusion, Flag, List, ListWhat, Num, Seed, Stop, Text, decode,
    stop_sequences,
};

/// An `/infill` body. llama.cpp's scheduling hints are accepted and not read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
struct InfillBody {
    input_prefix: Option<Text>,
    input_suffix: Option<Text>,
    input_extra: Option<List<Chunk, Chunks>>,
    prompt: Option<Text>,
    n_predict: Option<Value>,
    temperature: Option<Num>,
    top_k: Option<Count>,
    top_p: Option<Num>,
    seed: Option<Seed>,
    stop: Option<Stop>,
    stream: Option<Flag>,
    model: Option<Text>,
    diffusion: Option<Diffusion>,
    #[serde(rename = "cache_prompt")]
    _cache_prompt: Option<IgnoredAny>,
    #[serde(rename = "t_max_prompt_ms")]
    _t_max_prompt_ms: Option<IgnoredAny>,
    #[serde(rename = "t_max_predict_ms")]
    _t_max_predict_ms: Option<IgnoredAny>,
    #[serde(rename = "n_indent")]
    _n_indent: Option<IgnoredAny>,
    #[serde(rename = "samplers")]
    _samplers: Option<IgnoredAny>,
    #[serde(rename = "response_fields")]
    _response_fields: Option<IgnoredAny>,
    #[serde(rename = "id_slot")]
    _id_slot: Option<IgnoredAny>,
}

/// One `input_extra` chunk (other fields are not read).
#[derive(Debug, Clone, Deserialize)]
#[serde(expecting = "an object")]
struct Chunk {
    filename: Option<Text>,
    text: Option<Text>,
}

#[derive(Debug, Clone)]
enum Chunks {}

impl ListWhat for Chunks {
    const WHAT: &'static str = "an array of {\"filename\", \"text\"} objects";
}

/// Parses an `/infill` body into the request the completion machinery runs.
pub(crate) fn parse(body: &[u8]) -> Result<ApiRequest, ApiError> {
    let b: InfillBody = decode(body, "Unrecognized or unsupported /infill argument")?;
    let text = |t: Option<Text>| t.map(|t| t.0).unwrap_or_default();
    let mut prefix = extra(b.input_extra.map(|l| l.0).unwrap_or_default());
    prefix.push_str(&text(b.input_prefix));
    prefix.push_str(&text(b.prompt));
    let suffix = text(b.input_suffix);
    let gen_length = match &b.n_predict {
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
    let temperature = b.temperature.map(|t| t.0);
    if let Some(t) = temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        return Err(ApiError::invalid(
            "temperature",
            format!("`temperature` must be between 0 and 2, got {t}"),
        ));
    }
    let mut g = Settings {
        gen_length,
        temperature,
        top_k: b.top_k.map(|k| k.0).filter(|&k| k > 0),
        top_p: b.top_p.map(|p| p.0).filter(|&p| p > 0.0 && p < 1.0),
        seed: b.seed.map(|s| s.0),
        ..Settings::default()
    };
    if let Some(d) = b.diffusion {
        d.apply(&mut g);
    }
    Ok(ApiRequest {
        model: text(b.model),
        prompt: lacuna::Prompt::Text(prefix),
        settings: g,
        stop: stop_sequences(b.stop)?,
        stream: b.stream.is_some_and(|f| f.0),
        include_usage: false,
        include_canvas: false,
        suffix: Some(suffix),
        n: 1,
        lenient_sampling: true,
        echo: false,
        constraint_param: None,
        tools: None,
    })
}

/// `input_extra` as text before the prefix: `filename\ntext\n` per chunk.
fn extra(chunks: Vec<Chunk>) -> String {
    let mut out = String::new();
    for chunk in chunks {
        let name = chunk.filename.map(|t| t.0).unwrap_or_default();
        let text = chunk.text.map(|t| t.0).unwrap_or_default();
        if !name.is_empty() {
            out.push_str(&name);
            out.push('\n');
        }
        out.push_str(&text);
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
