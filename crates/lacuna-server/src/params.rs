//! The request bodies of `/v1/chat/completions` and `/v1/completions`, read field by field so
//! that every error names its parameter, every field we do not support is a 400 naming it
//! (never accepted and ignored), and diffusion settings come from the `diffusion` extension
//! object. This is syntax only: the fields fill a [`lacuna::Settings`], whose
//! [`request`](lacuna::Settings::request) applies the presets and defaults for the model,
//! exactly as `lacuna run`'s flags do.

use lacuna::models::Arch;
use lacuna::{ChatMessage, GenerateRequest, Prompt, Settings, SettingsError};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Which endpoint a body was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/v1/chat/completions`: `messages` through the chat template.
    Chat,
    /// `/v1/completions`: a raw `prompt`.
    Completion,
    /// `/infill`: llama-server's fill-in-the-middle request (see [`crate::infill`]).
    Infill,
}

/// A parsed request: what to generate and how to answer.
#[derive(Debug, Clone)]
pub(crate) struct ApiRequest {
    /// The `model` field.
    pub(crate) model: String,
    /// The prompt.
    pub(crate) prompt: Prompt,
    /// The generation settings as given (`gen_length` is `max_tokens`; when it is absent the
    /// server may shorten the default to fit the context).
    pub(crate) settings: Settings,
    /// `stop` sequences (at most 4).
    pub(crate) stop: Vec<String>,
    /// `stream`.
    pub(crate) stream: bool,
    /// `stream_options.include_usage`.
    pub(crate) include_usage: bool,
    /// `stream_options.include_canvas` (extension): every step's whole canvas.
    pub(crate) include_canvas: bool,
    /// Completions' `suffix`: infilling, the text after the generated middle.
    pub(crate) suffix: Option<String>,
    /// OpenAI's `n`: choices, each its own canvas with the seed `seed + i`
    /// ([`lacuna::GenerateRequest::for_choice`]), all in one batch.
    pub(crate) n: usize,
    /// `/infill`: `top_k`/`top_p` are dropped for samplers without them (editor plugins send
    /// them by default) instead of refused.
    pub(crate) lenient_sampling: bool,
}

/// Tokens generated when the request gives no `max_tokens` (the library's default).
pub const DEFAULT_MAX_TOKENS: usize = lacuna::settings::DEFAULT_GEN_LENGTH;

/// The fields we read (others are 400).
const COMMON: &[&str] = &[
    "model",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "n",
    "user",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "diffusion",
];
const CHAT_ONLY: &[&str] = &[
    "messages",
    "response_format",
    "parallel_tool_calls",
    "tool_choice",
    "top_logprobs",
];
const COMPLETION_ONLY: &[&str] = &["prompt", "echo", "best_of", "suffix"];
const DIFFUSION: &[&str] = &[
    "steps",
    "block_length",
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
    "infill_lengths",
];

/// Parses a JSON body for `endpoint`.
pub(crate) fn parse(body: &[u8], endpoint: Endpoint) -> Result<ApiRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("The request body is not valid JSON: {e}"))
            .with_code("invalid_json")
    })?;
    let Value::Object(obj) = value else {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object",
        ));
    };
    let only = match endpoint {
        Endpoint::Chat => CHAT_ONLY,
        Endpoint::Completion => COMPLETION_ONLY,
        Endpoint::Infill => return crate::infill::parse(&obj),
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !COMMON.contains(&k.as_str()) && !only.contains(&k.as_str()))
    {
        let known = match endpoint {
            Endpoint::Chat => {
                "(tools, function calling, audio, modalities, logit_bias and \
                               the like are not supported by diffusion models here)"
            }
            Endpoint::Completion | Endpoint::Infill => "",
        };
        return Err(ApiError::invalid(
            key.clone(),
            format!("Unrecognized or unsupported request argument: {key} {known}")
                .trim_end()
                .to_string(),
        )
        .with_code("unsupported_parameter"));
    }
    let f = Fields {
        obj: &obj,
        prefix: "",
    };
    let model = f
        .string("model")?
        .ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let prompt = match endpoint {
        Endpoint::Chat => Prompt::Chat(messages(&obj)?),
        Endpoint::Completion | Endpoint::Infill => completion_prompt(&obj)?,
    };
    unsupported_values(&f, endpoint)?;
    let mut g = Settings::default();
    let max = match f.usize("max_completion_tokens")? {
        Some(n) => Some((n, "max_completion_tokens")),
        None => f.usize("max_tokens")?.map(|n| (n, "max_tokens")),
    };
    if let Some((0, name)) = max {
        return Err(ApiError::invalid(
            name,
            format!("`{name}` must be at least 1"),
        ));
    }
    g.gen_length = max.map(|(n, _)| n);
    if let Some(t) = f.number("temperature")? {
        if !(0.0..=2.0).contains(&t) {
            return Err(ApiError::invalid(
                "temperature",
                format!("`temperature` must be between 0 and 2, got {t}"),
            ));
        }
        g.temperature = Some(t);
    }
    // top_p = 1 keeps every token: the same as not filtering, for either sampler.
    match f.number("top_p")? {
        Some(p) if !(p > 0.0 && p <= 1.0) => {
            return Err(ApiError::invalid(
                "top_p",
                format!("`top_p` must be in (0, 1], got {p}"),
            ));
        }
        Some(p) if p < 1.0 => g.top_p = Some(p),
        _ => {}
    }
    match f.usize("top_k")? {
        Some(0) => return Err(ApiError::invalid("top_k", "`top_k` must be at least 1")),
        k => g.top_k = k,
    }
    g.seed = Some(match f.get("seed") {
        None | Some(Value::Null) => fresh_seed(),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_i64().map(|i| i as u64))
            .ok_or_else(|| ApiError::invalid("seed", "`seed` must be an integer"))?,
        Some(_) => return Err(ApiError::invalid("seed", "`seed` must be an integer")),
    });
    let stop = stop_sequences(&f)?;
    let stream = f.bool("stream")?.unwrap_or(false);
    g.logprobs = logprobs(&f, endpoint)?;
    let (include_usage, include_canvas) = stream_options(&obj, stream)?;
    if let Some(d) = obj.get("diffusion") {
        diffusion(d, &mut g)?;
    }
    let suffix = f.string("suffix")?;
    Ok(ApiRequest {
        model,
        prompt,
        settings: g,
        stop,
        stream,
        include_usage,
        include_canvas,
        suffix,
        n: choices(&f)?,
        lenient_sampling: false,
    })
}

/// `n`: 1 to [`lacuna::settings::MAX_CHOICES`].
fn choices(f: &Fields<'_>) -> Result<usize, ApiError> {
    let max = lacuna::settings::MAX_CHOICES;
    match f.usize("n")? {
        None => Ok(1),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::invalid(
            "n",
            format!("`n` must be between 1 and {max}, got {n}"),
        )),
    }
}

/// A seed for a request that gives none (so repeated requests at temperature > 0 differ).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl ApiRequest {
    /// The generation for a model of `arch`: the settings through the library's presets and
    /// defaults. Errors name the request parameter at fault.
    pub(crate) fn generate_request(&self, arch: Arch) -> Result<GenerateRequest, ApiError> {
        let mut settings = self.settings.clone();
        if self.lenient_sampling && matches!(arch, Arch::Llada | Arch::LladaMoe) {
            settings.top_k = None;
            settings.top_p = None;
        }
        let mut request = settings
            .request(self.prompt.clone(), arch)
            .map_err(settings_error)?;
        request.suffix = self.suffix.clone();
        Ok(request)
    }
}

/// A [`lacuna::Settings`] field as the request body spells it.
fn field_name(setting: &str) -> String {
    match setting {
        "gen_length" => "max_tokens".to_string(),
        "temperature" | "top_p" | "top_k" | "seed" | "logprobs" => setting.to_string(),
        other => format!("diffusion.{other}"),
    }
}

/// A settings error as a 400 naming its parameter (`diffusion` for a combination).
fn settings_error(e: SettingsError) -> ApiError {
    let param = e
        .setting()
        .map_or_else(|| "diffusion".to_string(), field_name);
    let message = e.message(&|n| format!("`{}`", field_name(n)));
    ApiError::invalid(param, message)
}

/// The generation for `body` (a `/v1/completions` request when `chat` is false) on a model
/// of `arch`, as the server computes it: the mapping the CLI's flags must agree with.
pub fn generate_request(body: &[u8], chat: bool, arch: Arch) -> Result<GenerateRequest, ApiError> {
    let endpoint = if chat {
        Endpoint::Chat
    } else {
        Endpoint::Completion
    };
    parse(body, endpoint)?.generate_request(arch)
}

/// Values of known fields that we cannot honour.
fn unsupported_values(f: &Fields<'_>, endpoint: Endpoint) -> Result<(), ApiError> {
    for name in ["presence_penalty", "frequency_penalty"] {
        if f.number(name)?.is_some_and(|v| v != 0.0) {
            return Err(ApiError::invalid(
                name,
                format!("`{name}` is not supported by the diffusion samplers (only 0)"),
            )
            .with_code("unsupported_parameter"));
        }
    }
    if let Some(u) = f.get("user") {
        if !u.is_string() {
            return Err(ApiError::invalid("user", "`user` must be a string"));
        }
    }
    match endpoint {
        Endpoint::Chat => {
            if let Some(rf) = f.get("response_format") {
                let ty = rf.get("type").and_then(Value::as_str);
                if ty != Some("text") {
                    return Err(ApiError::invalid(
                        "response_format",
                        "only `response_format: {\"type\": \"text\"}` is supported",
                    )
                    .with_code("unsupported_parameter"));
                }
            }
            for name in ["parallel_tool_calls", "tool_choice"] {
                match f.get(name) {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                    Some(Value::String(s)) if s == "none" => {}
                    Some(_) => {
                        return Err(ApiError::invalid(name, "tools are not supported")
                            .with_code("unsupported_parameter"));
                    }
                }
            }
        }
        Endpoint::Completion | Endpoint::Infill => {
            if f.bool("echo")? == Some(true) {
                return Err(ApiError::invalid("echo", "`echo` is not supported")
                    .with_code("unsupported_parameter"));
            }
            if f.usize("best_of")?.is_some_and(|b| b != 1) {
                return Err(
                    ApiError::invalid("best_of", "only `best_of` = 1 is supported")
                        .with_code("unsupported_parameter"),
                );
            }
        }
    }
    Ok(())
}

/// The alternatives per token asked for, if any: chat's `logprobs: true` with
/// `top_logprobs` (0 to 20, default 0); completions' `logprobs: N` (0 to 20).
fn logprobs(f: &Fields<'_>, endpoint: Endpoint) -> Result<Option<usize>, ApiError> {
    let max = lacuna::settings::MAX_TOP_LOGPROBS;
    let (k, name) = match endpoint {
        Endpoint::Chat => {
            let on = f.bool("logprobs")?.unwrap_or(false);
            let top = f.usize("top_logprobs")?;
            match (on, top) {
                (false, Some(_)) => {
                    return Err(ApiError::invalid(
                        "top_logprobs",
                        "`top_logprobs` needs `logprobs` set to true",
                    ));
                }
                (false, None) => return Ok(None),
                (true, top) => (top.unwrap_or(0), "top_logprobs"),
            }
        }
        Endpoint::Completion | Endpoint::Infill => match f.usize("logprobs")? {
            None => return Ok(None),
            Some(k) => (k, "logprobs"),
        },
    };
    if k > max {
        return Err(ApiError::invalid(
            name,
            format!("`{name}` must be at most {max}, got {k}"),
        ));
    }
    Ok(Some(k))
}

/// `messages`: role + content (a string, or an array of `{"type": "text", "text"}` parts).
fn messages(obj: &Map<String, Value>) -> Result<Vec<ChatMessage>, ApiError> {
    let Some(list) = obj.get("messages") else {
        return Err(ApiError::invalid("messages", "`messages` is required"));
    };
    let Value::Array(list) = list else {
        return Err(ApiError::invalid("messages", "`messages` must be an array"));
    };
    if list.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must not be empty",
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let param = format!("messages[{i}]");
        let Value::Object(m) = m else {
            return Err(ApiError::invalid(param, "each message must be an object"));
        };
        let role = match m.get("role").and_then(Value::as_str) {
            Some(r @ ("system" | "user" | "assistant")) => r.to_string(),
            // OpenAI's newer name for system messages.
            Some("developer") => "system".to_string(),
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    format!("role `{other}` is not supported (system, developer, user, assistant)"),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    "each message needs a string `role`",
                ));
            }
        };
        let content = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut text = String::new();
                for (j, part) in parts.iter().enumerate() {
                    let p = format!("{param}.content[{j}]");
                    match (
                        part.get("type").and_then(Value::as_str),
                        part.get("text").and_then(Value::as_str),
                    ) {
                        (Some("text"), Some(t)) => text.push_str(t),
                        (Some(ty), _) if ty != "text" => {
                            return Err(ApiError::invalid(
                                p,
                                format!(
                                    "content parts of type `{ty}` are not supported (text only)"
                                ),
                            )
                            .with_code("unsupported_parameter"));
                        }
                        _ => {
                            return Err(ApiError::invalid(
                                p,
                                "a content part needs `type: \"text\"` and a string `text`",
                            ));
                        }
                    }
                }
                text
            }
            _ => {
                return Err(ApiError::invalid(
                    format!("{param}.content"),
                    "each message needs `content`: a string or an array of text parts",
                ));
            }
        };
        if let Some(key) = m
            .keys()
            .find(|k| !["role", "content", "name"].contains(&k.as_str()))
        {
            return Err(ApiError::invalid(
                format!("{param}.{key}"),
                format!("message field `{key}` is not supported"),
            )
            .with_code("unsupported_parameter"));
        }
        out.push(ChatMessage::new(role, content));
    }
    Ok(out)
}

/// `prompt`: a string, an array of one string, or an array of token ids.
fn completion_prompt(obj: &Map<String, Value>) -> Result<Prompt, ApiError> {
    let bad = || {
        ApiError::invalid(
            "prompt",
            "`prompt` must be a string, an array of one string, or an array of token ids",
        )
    };
    match obj.get("prompt") {
        None => Err(ApiError::invalid("prompt", "`prompt` is required")),
        Some(Value::String(s)) => Ok(Prompt::Text(s.clone())),
        Some(Value::Array(a)) => match a.as_slice() {
            [Value::String(s)] => Ok(Prompt::Text(s.clone())),
            [] => Err(bad()),
            ids if ids.iter().all(Value::is_u64) => Ok(Prompt::Tokens(
                ids.iter()
                    .map(|v| {
                        v.as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(bad)
                    })
                    .collect::<Result<_, _>>()?,
            )),
            [_, _, ..] if a.iter().all(Value::is_string) => Err(ApiError::invalid(
                "prompt",
                "only one prompt per request is supported",
            )
            .with_code("unsupported_parameter")),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

pub(crate) fn stop_sequences(f: &Fields<'_>) -> Result<Vec<String>, ApiError> {
    let stops = match f.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::invalid("stop", "`stop` must be a string or an array of strings")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                "stop",
                "`stop` must be a string or an array of strings",
            ));
        }
    };
    if stops.len() > 4 {
        return Err(ApiError::invalid("stop", "at most 4 stop sequences"));
    }
    if stops.iter().any(String::is_empty) {
        return Err(ApiError::invalid(
            "stop",
            "stop sequences must not be empty",
        ));
    }
    Ok(stops)
}

fn stream_options(obj: &Map<String, Value>, stream: bool) -> Result<(bool, bool), ApiError> {
    match obj.get("stream_options") {
        None | Some(Value::Null) => Ok((false, false)),
        Some(Value::Object(o)) => {
            if !stream {
                return Err(ApiError::invalid(
                    "stream_options",
                    "`stream_options` is only allowed with `stream: true`",
                ));
            }
            if let Some(key) = o
                .keys()
                .find(|k| !["include_usage", "include_canvas"].contains(&k.as_str()))
            {
                return Err(ApiError::invalid(
                    format!("stream_options.{key}"),
                    format!("unsupported stream option `{key}`"),
                ));
            }
            let f = Fields {
                obj: o,
                prefix: "stream_options.",
            };
            Ok((
                f.bool("include_usage")?.unwrap_or(false),
                f.bool("include_canvas")?.unwrap_or(false),
            ))
        }
        Some(_) => Err(ApiError::invalid(
            "stream_options",
            "`stream_options` must be an object",
        )),
    }
}

/// The `diffusion` extension object, into `g` (syntax and types only; what the settings
/// mean together is [`Settings::request`]'s).
pub(crate) fn diffusion(d: &Value, g: &mut Settings) -> Result<(), ApiError> {
    let Value::Object(o) = d else {
        return Err(ApiError::invalid(
            "diffusion",
            "`diffusion` must be an object",
        ));
    };
    if let Some(key) = o.keys().find(|k| !DIFFUSION.contains(&k.as_str())) {
        return Err(ApiError::invalid(
            format!("diffusion.{key}"),
            format!(
                "unknown diffusion setting `{key}` (known: {})",
                DIFFUSION.join(", ")
            ),
        ));
    }
    let f = Fields {
        obj: o,
        prefix: "diffusion.",
    };
    g.steps = f.usize("steps")?;
    g.block_length = f.usize("block_length")?;
    g.remasking = f.named("remasking")?;
    g.algorithm = f.named("algorithm")?;
    g.cache = f.named("cache")?;
    g.alg_temp = f.number("alg_temp")?.map(|v| v as f32);
    g.cfg_scale = f.number("cfg_scale")?.map(|v| v as f32);
    g.keep_after_eos = f.bool("keep_after_eos")?.unwrap_or(false);
    g.fast = f.bool("fast")?.unwrap_or(false);
    g.parallel = f.bool("parallel")?.unwrap_or(false);
    g.threshold = f.number("threshold")?;
    g.factor = f.number("factor")?;
    g.entropy_bound = f.number("entropy_bound")?;
    g.editing = f.bool("editing")?.unwrap_or(false);
    g.editing_threshold = f.number("editing_threshold")?;
    g.max_post_steps = f.usize("max_post_steps")?;
    g.infill_lengths = f.usize_list("infill_lengths")?.unwrap_or_default();
    Ok(())
}

/// Typed reads of an object's fields, errors naming `prefix` + key.
pub(crate) struct Fields<'a> {
    pub(crate) obj: &'a Map<String, Value>,
    pub(crate) prefix: &'static str,
}

impl Fields<'_> {
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.obj.get(key)
    }

    fn err(&self, key: &str, what: &str) -> ApiError {
        let param = format!("{}{key}", self.prefix);
        ApiError::invalid(param.clone(), format!("`{param}` {what}"))
    }

    pub(crate) fn usize(&self, key: &str) -> Result<Option<usize>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|v| usize::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| self.err(key, "must be a non-negative integer")),
            Some(_) => Err(self.err(key, "must be a non-negative integer")),
        }
    }

    /// An array of non-negative integers.
    pub(crate) fn usize_list(&self, key: &str) -> Result<Option<Vec<usize>>, ApiError> {
        const WHAT: &str = "must be an array of positive integers";
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|v| usize::try_from(v).ok())
                        .ok_or_else(|| self.err(key, WHAT))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.err(key, WHAT)),
        }
    }

    pub(crate) fn number(&self, key: &str) -> Result<Option<f64>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if v.is_finite() => Ok(Some(v)),
                _ => Err(self.err(key, "must be a finite number")),
            },
            Some(_) => Err(self.err(key, "must be a number")),
        }
    }

    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(key, "must be a boolean")),
        }
    }

    /// A string naming one of a setting's values (its `FromStr` lists the valid names).
    fn named<T>(&self, key: &str) -> Result<Option<T>, ApiError>
    where
        T: std::str::FromStr<Err = lacuna::sampler::UnknownName>,
    {
        self.string(key)?
            .map(|name| name.parse::<T>().map_err(|e| self.err(key, &e.to_string())))
            .transpose()
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }
}

#[cfg(test)]
mod tests;
