//! The request bodies of `/v1/chat/completions` and `/v1/completions` as typed structs
//! (serde, `deny_unknown_fields`), so that every error names its parameter by its path, every
//! field we do not support is a 400 naming it (never accepted and ignored), and diffusion
//! settings come from the `diffusion` extension object. This is syntax only: the fields fill a [`lacuna::Settings`], whose
//! [`request`](lacuna::Settings::request) applies the presets and defaults for the model,
//! exactly as `lacuna run`'s flags do.

use lacuna::models::Arch;
use lacuna::tools::{ToolCall, ToolUse};
use lacuna::{ChatMessage, GenerateRequest, Prompt, Settings, SettingsError};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

mod fields;
mod structured;

pub(crate) use fields::{
    Count, Counts, Flag, List, ListWhat, LogprobsField, Named, Num, Seed, Stop, Text,
};
pub(crate) use structured::{ToolDef, Tools, tool_use};

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
    /// The field the answer's constraint came from (`response_format.json_schema.schema`,
    /// `tools`, ...), which its compile errors name.
    pub(crate) constraint_param: Option<String>,
    /// The tools, when the answer is a tool call (or, under `auto`, a text in the tool
    /// format).
    pub(crate) tools: Option<std::sync::Arc<ToolUse>>,
    /// Completions' `echo`: the answer starts with the prompt, and with `logprobs` every
    /// prompt token is scored ([`crate::echo`]). `max_tokens` may then be 0.
    pub(crate) echo: bool,
}

/// Tokens generated when the request gives no `max_tokens` (the library's default).
pub const DEFAULT_MAX_TOKENS: usize = lacuna::settings::DEFAULT_GEN_LENGTH;

/// The body of `/v1/chat/completions` and `/v1/completions`: every field either endpoint
/// reads (a field of the other endpoint is refused by [`parse`]); any other field is a 400
/// naming it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
struct Body {
    model: Option<Text>,
    messages: Option<List<Message, Messages>>,
    prompt: Option<Value>,
    max_tokens: Option<Count>,
    max_completion_tokens: Option<Count>,
    temperature: Option<Num>,
    top_p: Option<Num>,
    top_k: Option<Count>,
    seed: Option<Seed>,
    stop: Option<Stop>,
    stream: Option<Flag>,
    stream_options: Option<StreamOptions>,
    n: Option<Count>,
    /// Checked to be a string; not used.
    #[serde(rename = "user")]
    _user: Option<Text>,
    presence_penalty: Option<Num>,
    frequency_penalty: Option<Num>,
    logprobs: Option<LogprobsField>,
    top_logprobs: Option<Count>,
    echo: Option<Flag>,
    best_of: Option<Count>,
    suffix: Option<Text>,
    response_format: Option<structured::ResponseFormat>,
    structured_outputs: Option<structured::StructuredOutputs>,
    guided_json: Option<Value>,
    guided_regex: Option<Text>,
    guided_choice: Option<List<Text, structured::Strings>>,
    guided_grammar: Option<Text>,
    json_schema: Option<Value>,
    grammar: Option<Text>,
    tools: Option<List<structured::ToolDef, structured::Tools>>,
    parallel_tool_calls: Option<Flag>,
    tool_choice: Option<Value>,
    diffusion: Option<Diffusion>,
}

impl Body {
    /// The fields of the other endpoint that this body sets.
    fn foreign_field(&self, endpoint: Endpoint) -> Option<&'static str> {
        let chat = [
            ("messages", self.messages.is_some()),
            ("tools", self.tools.is_some()),
            ("parallel_tool_calls", self.parallel_tool_calls.is_some()),
            ("tool_choice", self.tool_choice.is_some()),
            ("top_logprobs", self.top_logprobs.is_some()),
        ];
        let completion = [
            ("prompt", self.prompt.is_some()),
            ("echo", self.echo.is_some()),
            ("best_of", self.best_of.is_some()),
            ("suffix", self.suffix.is_some()),
        ];
        let foreign: &[(&'static str, bool)] = match endpoint {
            Endpoint::Chat => &completion,
            Endpoint::Completion | Endpoint::Infill => &chat,
        };
        foreign.iter().find(|(_, set)| *set).map(|(name, _)| *name)
    }
}

/// `stream_options`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct StreamOptions {
    include_usage: Option<Flag>,
    /// Extension: every step's whole canvas in the chunks.
    include_canvas: Option<Flag>,
}

/// One chat message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct Message {
    role: Option<Text>,
    content: Option<Content>,
    /// Checked to be a string; not used.
    #[serde(rename = "name")]
    _name: Option<Text>,
    /// A `tool` message: the call it answers.
    tool_call_id: Option<Text>,
    /// An `assistant` message: the calls it made.
    tool_calls: Option<List<CallMsg, Calls>>,
    /// Checked to be a string or null; not used.
    #[serde(rename = "refusal")]
    _refusal: Option<Text>,
}

/// An earlier assistant turn's call: `{"id", "type": "function", "function": {name,
/// arguments}}`, `arguments` a string of JSON.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct CallMsg {
    id: Option<Text>,
    #[serde(rename = "type")]
    kind: Option<Text>,
    function: Option<CallFunction>,
}

/// `tool_calls[j].function`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct CallFunction {
    name: Option<Text>,
    arguments: Option<Text>,
}

/// What a [`List`] of tool calls is.
#[derive(Debug, Clone)]
enum Calls {}

impl ListWhat for Calls {
    const WHAT: &'static str = "an array of tool calls";
}

/// What a [`List`] of messages is.
#[derive(Debug, Clone)]
pub(crate) enum Messages {}

impl ListWhat for Messages {
    const WHAT: &'static str = "an array of messages";
}

/// A message's `content`: a string, or an array of `{"type": "text", "text"}` parts.
#[derive(Debug, Clone)]
struct Content(Vec<Part>);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of text parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content(vec![Part {
                    kind: Some(Text("text".into())),
                    text: Some(Text(s.to_string())),
                }]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut parts = Vec::new();
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content(parts))
            }
        }
        d.deserialize_any(V)
    }
}

/// A content part (fields besides `type` and `text` are not read).
#[derive(Debug, Clone, Deserialize)]
#[serde(expecting = "an object")]
struct Part {
    #[serde(rename = "type")]
    kind: Option<Text>,
    text: Option<Text>,
}

/// The `diffusion` extension object: the diffusion settings, by their names in the one
/// request vocabulary ([`lacuna::Settings`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct Diffusion {
    steps: Option<Count>,
    block_length: Option<Count>,
    remasking: Option<Named<lacuna::Remasking>>,
    algorithm: Option<Named<lacuna::DreamAlg>>,
    alg_temp: Option<Num>,
    cfg_scale: Option<Num>,
    cache: Option<Named<lacuna::CachePolicy>>,
    parallel: Option<Flag>,
    threshold: Option<Num>,
    factor: Option<Num>,
    entropy_bound: Option<Num>,
    fast: Option<Flag>,
    editing: Option<Flag>,
    editing_threshold: Option<Num>,
    max_post_steps: Option<Count>,
    keep_after_eos: Option<Flag>,
    infill_lengths: Option<Counts>,
    likelihood_samples: Option<Count>,
}

impl Diffusion {
    /// The settings into `g` (syntax and types only; what they mean together is
    /// [`Settings::request`]'s).
    pub(crate) fn apply(self, g: &mut Settings) {
        let flag = |f: Option<Flag>| f.is_some_and(|f| f.0);
        g.steps = self.steps.map(|c| c.0);
        g.block_length = self.block_length.map(|c| c.0);
        g.remasking = self.remasking.map(|n| n.0);
        g.algorithm = self.algorithm.map(|n| n.0);
        g.cache = self.cache.map(|n| n.0);
        g.alg_temp = self.alg_temp.map(|v| v.0 as f32);
        g.cfg_scale = self.cfg_scale.map(|v| v.0 as f32);
        g.keep_after_eos = flag(self.keep_after_eos);
        g.fast = flag(self.fast);
        g.parallel = flag(self.parallel);
        g.threshold = self.threshold.map(|v| v.0);
        g.factor = self.factor.map(|v| v.0);
        g.entropy_bound = self.entropy_bound.map(|v| v.0);
        g.editing = flag(self.editing);
        g.editing_threshold = self.editing_threshold.map(|v| v.0);
        g.max_post_steps = self.max_post_steps.map(|c| c.0);
        g.infill_lengths = self.infill_lengths.map(|c| c.0).unwrap_or_default();
        g.likelihood_samples = self.likelihood_samples.map(|c| c.0);
    }
}

/// Deserializes a request body as `T`, every error a 400: malformed JSON as
/// `invalid_json`, a body that is not an object, and a field's error naming the field's path
/// (`messages[0].role`, `diffusion.steps`); an unknown field is `unsupported_parameter`,
/// at the top level in `unknown_top`'s words ("Unrecognized or unsupported request
/// argument").
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    body: &[u8],
    unknown_top: &str,
) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T =
        serde_path_to_error::deserialize(&mut de).map_err(|e| field_error(e, unknown_top))?;
    de.end().map_err(|e| json_error(&e))?;
    Ok(value)
}

fn json_error(e: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("The request body is not valid JSON: {e}"))
        .with_code("invalid_json")
}

/// A deserialization error as the 400 that names its field.
fn field_error(e: serde_path_to_error::Error<serde_json::Error>, unknown_top: &str) -> ApiError {
    use serde_json::error::Category;
    let inner = e.inner();
    if matches!(
        inner.classify(),
        Category::Syntax | Category::Eof | Category::Io
    ) {
        return json_error(inner);
    }
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    // serde's data errors carry " at line L column C"; the field's path says where.
    let full = inner.to_string();
    let msg = full
        .rfind(" at line ")
        .map_or(full.as_str(), |i| &full[..i]);
    let quoted = |m: &str| m.split('`').nth(1).map(str::to_string);
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        let key = quoted(rest).unwrap_or_default();
        // The path already ends with the unknown key.
        let parent = path
            .strip_suffix(key.as_str())
            .map_or(path.as_str(), |p| p.trim_end_matches('.'));
        let param = if parent.is_empty() {
            key.clone()
        } else {
            format!("{parent}.{key}")
        };
        let message = if parent.is_empty() {
            format!("{unknown_top}: {key}")
        } else {
            let known = rest.split_once(", expected ").map(|(_, k)| k);
            match known {
                Some(k) => format!("unknown field `{param}` (expected {k})"),
                None => format!("unknown field `{param}`"),
            }
        };
        return ApiError::invalid(param, message).with_code("unsupported_parameter");
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        let param = join(&quoted(rest).unwrap_or_default());
        return ApiError::invalid(param.clone(), format!("`{param}` is required"));
    }
    if path.is_empty() {
        return ApiError::bad_request("The request body must be a JSON object");
    }
    let what = match msg.split_once(", expected ") {
        Some((head, expected))
            if head.starts_with("invalid type") || head.starts_with("invalid value") =>
        {
            format!("must be {expected}")
        }
        _ => msg.to_string(),
    };
    ApiError::invalid(path.clone(), format!("`{path}` {what}"))
}

/// Parses a JSON body for `endpoint`.
pub(crate) fn parse(body: &[u8], endpoint: Endpoint) -> Result<ApiRequest, ApiError> {
    if endpoint == Endpoint::Infill {
        return crate::infill::parse(body);
    }
    let unknown = match endpoint {
        Endpoint::Chat => {
            "Unrecognized or unsupported request argument (audio, modalities, logit_bias \
             and the like are not supported by diffusion models here)"
        }
        Endpoint::Completion | Endpoint::Infill => "Unrecognized or unsupported request argument",
    };
    let b: Body = decode(body, unknown)?;
    if let Some(key) = b.foreign_field(endpoint) {
        return Err(ApiError::invalid(
            key,
            format!("Unrecognized or unsupported request argument: {key}"),
        )
        .with_code("unsupported_parameter"));
    }
    let model = b
        .model
        .clone()
        .map(|t| t.0)
        .ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let tools = structured::tool_use(
        b.tools.clone(),
        b.tool_choice.as_ref(),
        b.parallel_tool_calls,
    )?;
    let prompt = match endpoint {
        Endpoint::Chat => {
            let m = messages(b.messages.clone())?;
            Prompt::Chat(match &tools {
                Some(t) => t.messages(m),
                None => m,
            })
        }
        Endpoint::Completion | Endpoint::Infill => completion_prompt(b.prompt.as_ref())?,
    };
    unsupported_values(&b, endpoint)?;
    let sources = structured::Sources {
        response_format: b.response_format.clone(),
        structured_outputs: b.structured_outputs.clone(),
        guided_json: b.guided_json.clone(),
        guided_regex: b.guided_regex.clone(),
        guided_choice: b.guided_choice.clone(),
        guided_grammar: b.guided_grammar.clone(),
        json_schema: b.json_schema.clone(),
        grammar: b.grammar.clone(),
    };
    let mut constraint = sources.constraint()?;
    let tools = tools.filter(ToolUse::active);
    if let Some(t) = &tools {
        if let Some(c) = &constraint {
            return Err(ApiError::invalid(
                c.param.clone(),
                format!(
                    "`{}` cannot be combined with `tools`: a tool call's answer is constrained \
                     to the tool format (set `tool_choice: \"none\"` to use `{}`)",
                    c.param, c.param
                ),
            )
            .with_code("unsupported_parameter"));
        }
        constraint = t.constraint().map(|spec| structured::Sourced {
            spec,
            param: "tools".to_string(),
        });
    }
    if let (Some(c), Some(_)) = (&constraint, &b.stop) {
        return Err(ApiError::invalid(
            "stop",
            format!(
                "`stop` cannot be combined with `{}`: a stop sequence would cut the answer \
                 short of the constraint",
                c.param
            ),
        )
        .with_code("unsupported_parameter"));
    }
    let mut g = Settings::default();
    let max = match b.max_completion_tokens {
        Some(n) => Some((n.0, "max_completion_tokens")),
        None => b.max_tokens.map(|n| (n.0, "max_tokens")),
    };
    let echo = endpoint == Endpoint::Completion && b.echo.is_some_and(|f| f.0);
    if let Some((0, name)) = max.filter(|_| !echo) {
        return Err(ApiError::invalid(
            name,
            format!("`{name}` must be at least 1"),
        ));
    }
    g.gen_length = max.map(|(n, _)| n);
    if let Some(Num(t)) = b.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ApiError::invalid(
                "temperature",
                format!("`temperature` must be between 0 and 2, got {t}"),
            ));
        }
        g.temperature = Some(t);
    }
    // top_p = 1 keeps every token: the same as not filtering, for either sampler.
    match b.top_p {
        Some(Num(p)) if !(p > 0.0 && p <= 1.0) => {
            return Err(ApiError::invalid(
                "top_p",
                format!("`top_p` must be in (0, 1], got {p}"),
            ));
        }
        Some(Num(p)) if p < 1.0 => g.top_p = Some(p),
        _ => {}
    }
    match b.top_k {
        Some(Count(0)) => return Err(ApiError::invalid("top_k", "`top_k` must be at least 1")),
        k => g.top_k = k.map(|k| k.0),
    }
    g.seed = Some(b.seed.map_or_else(fresh_seed, |s| s.0));
    let stop = stop_sequences(b.stop.clone())?;
    let stream = b.stream.is_some_and(|f| f.0);
    g.logprobs = logprobs(&b, endpoint)?;
    let (include_usage, include_canvas) = match &b.stream_options {
        None => (false, false),
        Some(_) if !stream => {
            return Err(ApiError::invalid(
                "stream_options",
                "`stream_options` is only allowed with `stream: true`",
            ));
        }
        Some(o) => (
            o.include_usage.is_some_and(|f| f.0),
            o.include_canvas.is_some_and(|f| f.0),
        ),
    };
    let n = choices(b.n)?;
    let suffix = b.suffix.map(|t| t.0);
    if let Some(d) = b.diffusion {
        d.apply(&mut g);
    }
    if echo {
        crate::echo::check(stream, n, suffix.is_some(), constraint.is_some())?;
    }
    let constraint_param = constraint.as_ref().map(|c| c.param.clone());
    g.constraint = constraint.map(|c| c.spec);
    Ok(ApiRequest {
        echo,
        constraint_param,
        tools: tools.map(std::sync::Arc::new),
        model,
        prompt,
        settings: g,
        stop,
        stream,
        include_usage,
        include_canvas,
        suffix,
        n,
        lenient_sampling: false,
    })
}

/// `n`: 1 to [`lacuna::settings::MAX_CHOICES`].
fn choices(n: Option<Count>) -> Result<usize, ApiError> {
    let max = lacuna::settings::MAX_CHOICES;
    match n {
        None => Ok(1),
        Some(Count(n)) if (1..=max).contains(&n) => Ok(n),
        Some(Count(n)) => Err(ApiError::invalid(
            "n",
            format!("`n` must be between 1 and {max}, got {n}"),
        )),
    }
}

/// A seed for a request that gives none (so repeated requests at temperature > 0 differ).
pub(crate) fn fresh_seed() -> u64 {
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
    /// A request for `model` generating from `prompt` with `settings`: one choice, answered
    /// whole, no stop sequences, no suffix, no constraint, no tools.
    pub(crate) fn new(model: String, prompt: Prompt, settings: Settings) -> Self {
        Self {
            model,
            prompt,
            settings,
            stop: Vec::new(),
            stream: false,
            include_usage: false,
            include_canvas: false,
            suffix: None,
            n: 1,
            lenient_sampling: false,
            constraint_param: None,
            tools: None,
            echo: false,
        }
    }

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
fn unsupported_values(b: &Body, endpoint: Endpoint) -> Result<(), ApiError> {
    for (name, v) in [
        ("presence_penalty", b.presence_penalty),
        ("frequency_penalty", b.frequency_penalty),
    ] {
        if v.is_some_and(|v| v.0 != 0.0) {
            return Err(ApiError::invalid(
                name,
                format!("`{name}` is not supported by the diffusion samplers (only 0)"),
            )
            .with_code("unsupported_parameter"));
        }
    }
    match endpoint {
        Endpoint::Chat => {}
        Endpoint::Completion | Endpoint::Infill => {
            if endpoint == Endpoint::Infill && b.echo.is_some_and(|f| f.0) {
                return Err(
                    ApiError::invalid("echo", "`echo` is not supported on /infill")
                        .with_code("unsupported_parameter"),
                );
            }
            if b.best_of.is_some_and(|c| c.0 != 1) {
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
fn logprobs(b: &Body, endpoint: Endpoint) -> Result<Option<usize>, ApiError> {
    let max = lacuna::settings::MAX_TOP_LOGPROBS;
    let (k, name) = match endpoint {
        Endpoint::Chat => {
            let on = match b.logprobs {
                None => false,
                Some(LogprobsField::Flag(on)) => on,
                Some(_) => {
                    return Err(ApiError::invalid(
                        "logprobs",
                        "`logprobs` must be a boolean",
                    ));
                }
            };
            match (on, b.top_logprobs) {
                (false, Some(_)) => {
                    return Err(ApiError::invalid(
                        "top_logprobs",
                        "`top_logprobs` needs `logprobs` set to true",
                    ));
                }
                (false, None) => return Ok(None),
                (true, top) => (top.map_or(0, |c| c.0), "top_logprobs"),
            }
        }
        Endpoint::Completion | Endpoint::Infill => match b.logprobs {
            None => return Ok(None),
            Some(LogprobsField::Count(k)) => (k, "logprobs"),
            Some(_) => {
                return Err(ApiError::invalid(
                    "logprobs",
                    "`logprobs` must be a non-negative integer",
                ));
            }
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
pub(crate) fn messages(
    list: Option<List<Message, Messages>>,
) -> Result<Vec<ChatMessage>, ApiError> {
    let Some(list) = list.map(|l| l.0) else {
        return Err(ApiError::invalid("messages", "`messages` is required"));
    };
    if list.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must not be empty",
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    // Earlier calls' names by id, for the tool results that answer them.
    let mut call_names: Vec<(String, String)> = Vec::new();
    for (i, m) in list.into_iter().enumerate() {
        let param = format!("messages[{i}]");
        let role = match m.role.as_ref().map(|r| r.0.as_str()) {
            Some(r @ ("system" | "user" | "assistant" | "tool")) => r.to_string(),
            // OpenAI's newer name for system messages.
            Some("developer") => "system".to_string(),
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    format!(
                        "role `{other}` is not supported (system, developer, user, assistant, \
                         tool)"
                    ),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    "each message needs a string `role`",
                ));
            }
        };
        if m.tool_calls.is_some() && role != "assistant" {
            return Err(ApiError::invalid(
                format!("{param}.tool_calls"),
                "only assistant messages have `tool_calls`",
            ));
        }
        if m.tool_call_id.is_some() && role != "tool" {
            return Err(ApiError::invalid(
                format!("{param}.tool_call_id"),
                "only tool messages have `tool_call_id`",
            ));
        }
        let text = match m.content {
            Some(Content(parts)) => Some(content_text(parts, &param)?),
            None if m.tool_calls.is_some() => None,
            None => {
                return Err(ApiError::invalid(
                    format!("{param}.content"),
                    "each message needs `content`: a string or an array of text parts",
                ));
            }
        };
        if let Some(calls) = m.tool_calls {
            let calls = past_calls(calls.0, &param, &mut call_names)?;
            out.push(lacuna::tools::calls_message(text.as_deref(), &calls));
            continue;
        }
        let text = text.unwrap_or_default();
        if role == "tool" {
            let Some(Text(id)) = m.tool_call_id else {
                return Err(ApiError::invalid(
                    format!("{param}.tool_call_id"),
                    "a tool message needs `tool_call_id`: the id of the call it answers",
                ));
            };
            let name = call_names
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, n)| n.as_str());
            out.push(lacuna::tools::result_message(&id, name, &text));
            continue;
        }
        out.push(ChatMessage::new(role, text));
    }
    Ok(out)
}

/// A message's text parts, joined.
fn content_text(parts: Vec<Part>, param: &str) -> Result<String, ApiError> {
    let mut text = String::new();
    for (j, part) in parts.into_iter().enumerate() {
        let p = format!("{param}.content[{j}]");
        match (part.kind.map(|t| t.0), part.text) {
            (Some(ty), Some(Text(t))) if ty == "text" => text.push_str(&t),
            (Some(ty), _) if ty != "text" => {
                return Err(ApiError::invalid(
                    p,
                    format!("content parts of type `{ty}` are not supported (text only)"),
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
    Ok(text)
}

/// What every past tool call must have, whichever API wrote it (`p` is its place, e.g.
/// `messages[2].tool_calls[0]`): `type` `function` when given, a `function` and its `name`.
/// Gives the name.
pub(crate) fn past_call_name(
    p: &str,
    kind: Option<&Text>,
    function_name: Option<&Option<Text>>,
) -> Result<String, ApiError> {
    if kind.is_some_and(|k| k.0 != "function") {
        return Err(ApiError::invalid(
            format!("{p}.type"),
            "only `function` tool calls are supported",
        ));
    }
    let Some(name) = function_name else {
        return Err(ApiError::invalid(
            format!("{p}.function"),
            format!("`{p}.function` is required"),
        ));
    };
    let Some(Text(name)) = name else {
        return Err(ApiError::invalid(
            format!("{p}.function.name"),
            format!("`{p}.function.name` is required"),
        ));
    };
    Ok(name.clone())
}

/// An assistant message's `tool_calls`, their arguments parsed; each id and name is noted
/// in `names`.
fn past_calls(
    calls: Vec<CallMsg>,
    param: &str,
    names: &mut Vec<(String, String)>,
) -> Result<Vec<ToolCall>, ApiError> {
    let mut out = Vec::with_capacity(calls.len());
    for (j, c) in calls.into_iter().enumerate() {
        let p = format!("{param}.tool_calls[{j}]");
        let name = past_call_name(&p, c.kind.as_ref(), c.function.as_ref().map(|f| &f.name))?;
        let arguments = match c.function.and_then(|f| f.arguments) {
            None => serde_json::json!({}),
            Some(Text(a)) => serde_json::from_str(&a).map_err(|e| {
                ApiError::invalid(
                    format!("{p}.function.arguments"),
                    format!("`{p}.function.arguments` must be a string of JSON: {e}"),
                )
            })?,
        };
        if let Some(Text(id)) = c.id {
            names.push((id, name.clone()));
        }
        out.push(ToolCall { name, arguments });
    }
    Ok(out)
}

/// `prompt`: a string, an array of token ids, or an array of one of either (the batch form
/// clients such as lm-evaluation-harness send with one prompt in it).
fn completion_prompt(prompt: Option<&Value>) -> Result<Prompt, ApiError> {
    let bad = || {
        ApiError::invalid(
            "prompt",
            "`prompt` must be a string, an array of token ids, or an array of one of either",
        )
    };
    let tokens = |ids: &[Value]| -> Result<Prompt, ApiError> {
        ids.iter()
            .map(|v| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()
            .map(Prompt::Tokens)
    };
    match prompt {
        None | Some(Value::Null) => Err(ApiError::invalid("prompt", "`prompt` is required")),
        Some(Value::String(s)) => Ok(Prompt::Text(s.clone())),
        Some(Value::Array(a)) => match a.as_slice() {
            [Value::String(s)] => Ok(Prompt::Text(s.clone())),
            [Value::Array(ids)] if !ids.is_empty() && ids.iter().all(Value::is_u64) => tokens(ids),
            [] => Err(bad()),
            ids if ids.iter().all(Value::is_u64) => tokens(ids),
            [_, _, ..] if a.iter().all(|v| v.is_string() || v.is_array()) => {
                Err(ApiError::invalid(
                    "prompt",
                    "only one prompt per request is supported: send each prompt as its own \
                     request (they are batched on the server)",
                )
                .with_code("unsupported_parameter"))
            }
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

/// `stop`: at most 4 sequences, none empty.
pub(crate) fn stop_sequences(stop: Option<Stop>) -> Result<Vec<String>, ApiError> {
    let stops = stop.map(|s| s.0).unwrap_or_default();
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

#[cfg(test)]
mod tests;
