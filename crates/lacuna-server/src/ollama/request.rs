//! Ollama's `/api/chat`, `/api/generate` and `/api/show` bodies as typed structs, read into
//! the one request vocabulary of the OpenAI endpoints ([`ApiRequest`], whose settings are a
//! [`lacuna::Settings`]). Every field of Ollama's requests is read: mapped, accepted where it
//! cannot change the answer (resource hints such as `keep_alive`, `num_thread`, `num_gpu`),
//! or refused with the reason; a field Ollama does not define is a 400 naming it.
//!
//! Defaults are Lacuna's, not Ollama's: temperature 0 (greedy), 128 tokens shortened to what
//! the context leaves, a fresh seed per request.

use std::sync::Arc;

use lacuna::structured::Spec;
use lacuna::tools::{ToolCall, ToolUse};
use lacuna::{ChatMessage, Prompt, Settings};
use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::Value;

use crate::error::ApiError;
use crate::params::{
    self, ApiRequest, Count, Diffusion, Flag, List, ListWhat, Num, Stop, Text, ToolDef, Tools,
};

/// Which generation endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `/api/chat`: `messages` through the chat template.
    Chat,
    /// `/api/generate`: a `prompt` (through the chat template unless `raw`).
    Generate,
}

/// A signed integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Int(pub(crate) i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(n) => n.as_i64().map(Int),
            _ => None,
        }
        .ok_or_else(|| serde::de::Error::custom("must be an integer"))
    }
}

/// `keep_alive`: a number of seconds or a duration string ("5m"); how long Ollama keeps a
/// model loaded. Checked and not used: the served model stays loaded.
#[derive(Debug, Clone, Copy)]
struct KeepAlive;

impl<'de> Deserialize<'de> for KeepAlive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(_) | Value::String(_) => Ok(KeepAlive),
            _ => Err(serde::de::Error::custom(
                "must be a number of seconds or a duration string such as \"5m\"",
            )),
        }
    }
}

/// The `/api/chat` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub(crate) struct ChatBody {
    model: Option<Text>,
    messages: Option<List<Message, Messages>>,
    tools: Option<List<ToolDef, Tools>>,
    /// Lacuna's extension (Ollama has none): OpenAI's `tool_choice`, `auto` by default.
    tool_choice: Option<Value>,
    stream: Option<Flag>,
    format: Option<Value>,
    options: Option<Options>,
    think: Option<Value>,
    logprobs: Option<Flag>,
    top_logprobs: Option<Count>,
    #[serde(rename = "_debug_render_only")]
    debug_render_only: Option<Flag>,
    /// Checked and not used: the model stays loaded.
    #[serde(rename = "keep_alive")]
    _keep_alive: Option<KeepAlive>,
    /// Checked and not used: a prompt that does not fit the context is refused, never cut.
    #[serde(rename = "truncate")]
    _truncate: Option<Flag>,
    /// Checked and not used: a canvas's length is fixed, so it never runs into the context.
    #[serde(rename = "shift")]
    _shift: Option<Flag>,
}

/// The `/api/generate` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub(crate) struct GenerateBody {
    model: Option<Text>,
    prompt: Option<Text>,
    suffix: Option<Text>,
    system: Option<Text>,
    template: Option<Text>,
    context: Option<Value>,
    raw: Option<Flag>,
    images: Option<Value>,
    stream: Option<Flag>,
    format: Option<Value>,
    options: Option<Options>,
    think: Option<Value>,
    logprobs: Option<Flag>,
    top_logprobs: Option<Count>,
    #[serde(rename = "_debug_render_only")]
    debug_render_only: Option<Flag>,
    /// Checked and not used: the model stays loaded.
    #[serde(rename = "keep_alive")]
    _keep_alive: Option<KeepAlive>,
    /// Checked and not used: a prompt that does not fit the context is refused, never cut.
    #[serde(rename = "truncate")]
    _truncate: Option<Flag>,
    /// Checked and not used: a canvas's length is fixed, so it never runs into the context.
    #[serde(rename = "shift")]
    _shift: Option<Flag>,
}

/// The fields both generation endpoints share, as they are used.
#[derive(Debug, Default)]
struct Common {
    stream: Option<Flag>,
    format: Option<Value>,
    options: Option<Options>,
    think: Option<Value>,
    logprobs: Option<Flag>,
    top_logprobs: Option<Count>,
    debug_render_only: Option<Flag>,
}

/// [`Common`] from a body of either endpoint.
macro_rules! common {
    ($b:expr) => {
        Common {
            stream: $b.stream,
            format: $b.format,
            options: $b.options,
            think: $b.think,
            logprobs: $b.logprobs,
            top_logprobs: $b.top_logprobs,
            debug_render_only: $b.debug_render_only,
        }
    };
}

/// `options`: Ollama's model parameters. Those a diffusion sampler has map onto
/// [`Settings`]; resource hints are accepted with no effect; the autoregressive samplers'
/// options are accepted only at the value that turns them off.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct Options {
    num_predict: Option<Int>,
    temperature: Option<Num>,
    seed: Option<Int>,
    top_k: Option<Count>,
    top_p: Option<Num>,
    stop: Option<Stop>,
    num_ctx: Option<Count>,
    diffusion: Option<Diffusion>,
    min_p: Option<Num>,
    typical_p: Option<Num>,
    tfs_z: Option<Num>,
    repeat_penalty: Option<Num>,
    presence_penalty: Option<Num>,
    frequency_penalty: Option<Num>,
    mirostat: Option<Int>,
    // Options that cannot change the answer, checked for their type and not used: how
    // Ollama places and runs a model, and the parameters of samplers that are off.
    #[serde(rename = "num_keep")]
    _num_keep: Option<Int>,
    #[serde(rename = "num_batch")]
    _num_batch: Option<Int>,
    #[serde(rename = "num_gpu")]
    _num_gpu: Option<Int>,
    #[serde(rename = "main_gpu")]
    _main_gpu: Option<Int>,
    #[serde(rename = "num_thread")]
    _num_thread: Option<Int>,
    #[serde(rename = "draft_num_predict")]
    _draft_num_predict: Option<Int>,
    #[serde(rename = "use_mmap")]
    _use_mmap: Option<Flag>,
    #[serde(rename = "use_mlock")]
    _use_mlock: Option<Flag>,
    #[serde(rename = "numa")]
    _numa: Option<Flag>,
    #[serde(rename = "low_vram")]
    _low_vram: Option<Flag>,
    #[serde(rename = "f16_kv")]
    _f16_kv: Option<Flag>,
    #[serde(rename = "logits_all")]
    _logits_all: Option<Flag>,
    #[serde(rename = "vocab_only")]
    _vocab_only: Option<Flag>,
    #[serde(rename = "embedding_only")]
    _embedding_only: Option<Flag>,
    /// The window of the repetition penalties, which are off.
    #[serde(rename = "repeat_last_n")]
    _repeat_last_n: Option<Int>,
    /// Part of the repetition penalties, which are off.
    #[serde(rename = "penalize_newline")]
    _penalize_newline: Option<Flag>,
    /// Mirostat's target, with mirostat off.
    #[serde(rename = "mirostat_tau")]
    _mirostat_tau: Option<Num>,
    /// Mirostat's learning rate, with mirostat off.
    #[serde(rename = "mirostat_eta")]
    _mirostat_eta: Option<Num>,
}

/// One chat message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct Message {
    role: Option<Text>,
    content: Option<Text>,
    /// An earlier turn's thinking: dropped, as chat templates drop it.
    #[serde(rename = "thinking")]
    _thinking: Option<Text>,
    images: Option<Value>,
    tool_calls: Option<List<Call, Calls>>,
    tool_name: Option<Text>,
    tool_call_id: Option<Text>,
}

/// An earlier assistant turn's call: `{"function": {"name", "arguments": {...}}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct Call {
    id: Option<Text>,
    #[serde(rename = "type")]
    kind: Option<Text>,
    function: Option<CallFunction>,
}

/// `tool_calls[j].function`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct CallFunction {
    /// The call's place in its answer: not needed, the list is in order.
    #[serde(rename = "index")]
    _index: Option<Count>,
    name: Option<Text>,
    arguments: Option<Value>,
}

#[derive(Debug, Clone)]
enum Messages {}

impl ListWhat for Messages {
    const WHAT: &'static str = "an array of messages";
}

#[derive(Debug, Clone)]
enum Calls {}

impl ListWhat for Calls {
    const WHAT: &'static str = "an array of tool calls";
}

/// The `/api/show` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
struct ShowBody {
    model: Option<Text>,
    /// Ollama's older name for `model`.
    name: Option<Text>,
    verbose: Option<Flag>,
}

/// A decoded body of one of the generation endpoints.
#[derive(Debug)]
pub(crate) enum Decoded {
    Chat(ChatBody),
    Generate(GenerateBody),
}

/// What the request runs on: the model as the client named it, its context length and
/// whether it has a chat template.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served<'a> {
    pub(crate) name: &'a str,
    pub(crate) context: usize,
    pub(crate) chat_template: bool,
}

/// Decodes the body of `kind`'s endpoint (types only; what the fields mean together is
/// [`Decoded::request`]'s).
pub(crate) fn decode(body: &[u8], kind: Kind) -> Result<Decoded, ApiError> {
    Ok(match kind {
        Kind::Chat => Decoded::Chat(params::decode(
            body,
            "unknown field (not part of Ollama's /api/chat request)",
        )?),
        Kind::Generate => Decoded::Generate(params::decode(
            body,
            "unknown field (not part of Ollama's /api/generate request)",
        )?),
    })
}

/// The `/api/show` body's model name and `verbose`.
pub(crate) fn show(body: &[u8]) -> Result<(String, bool), ApiError> {
    let b: ShowBody = params::decode(
        body,
        "unknown field (not part of Ollama's /api/show request)",
    )?;
    let name = b
        .model
        .or(b.name)
        .map(|t| t.0)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::invalid("model", "model is required"))?;
    Ok((name, b.verbose.is_some_and(|f| f.0)))
}

fn unsupported(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, message).with_code("unsupported_parameter")
}

impl Decoded {
    /// The `model` field (required, as Ollama requires it).
    pub(crate) fn model(&self) -> Result<String, ApiError> {
        let model = match self {
            Decoded::Chat(b) => &b.model,
            Decoded::Generate(b) => &b.model,
        };
        model
            .as_ref()
            .map(|t| t.0.clone())
            .filter(|m| !m.is_empty())
            .ok_or_else(|| ApiError::invalid("model", "model is required"))
    }

    /// The request to run on `served`; `None` when there is nothing to generate (no
    /// messages, or an empty prompt without a suffix), which Ollama answers by loading the
    /// model.
    pub(crate) fn request(self, served: &Served<'_>) -> Result<Option<ApiRequest>, ApiError> {
        match self {
            Decoded::Chat(b) => chat(b, served),
            Decoded::Generate(b) => generate(b, served),
        }
    }
}

fn chat(b: ChatBody, served: &Served<'_>) -> Result<Option<ApiRequest>, ApiError> {
    let list = b.messages.map(|l| l.0).unwrap_or_default();
    if list.is_empty() {
        return Ok(None);
    }
    let tools = params::tool_use(b.tools, b.tool_choice.as_ref(), None)?.filter(ToolUse::active);
    let messages = messages(list)?;
    let messages = match &tools {
        Some(t) => t.messages(messages),
        None => messages,
    };
    let tools = tools.map(Arc::new);
    common(common!(b), Prompt::Chat(messages), None, tools, served).map(Some)
}

fn generate(b: GenerateBody, served: &Served<'_>) -> Result<Option<ApiRequest>, ApiError> {
    let text = |t: Option<Text>| t.map(|t| t.0).unwrap_or_default();
    if b.template.as_ref().is_some_and(|t| !t.0.is_empty()) {
        return Err(unsupported(
            "template",
            "`template` is not supported: Lacuna renders the model's own chat template (the \
             Jinja template of its GGUF file), not an Ollama Go template; send `raw: true` \
             with a prompt already formatted instead",
        ));
    }
    if b.context.as_ref().is_some_and(|c| !is_empty(c)) {
        return Err(unsupported(
            "context",
            "`context` is not supported: diffusion models have no left-to-right KV context to \
             resume; send the conversation to /api/chat as `messages` instead",
        ));
    }
    if b.images.as_ref().is_some_and(|i| !is_empty(i)) {
        return Err(images("images"));
    }
    let prompt = text(b.prompt);
    let suffix = text(b.suffix);
    let system = text(b.system);
    let raw = b.raw.is_some_and(|f| f.0);
    if prompt.is_empty() && suffix.is_empty() {
        return Ok(None);
    }
    if raw && !system.is_empty() {
        return Err(ApiError::invalid(
            "system",
            "raw mode does not support template, system, or context",
        ));
    }
    let prompt = if !suffix.is_empty() {
        if !system.is_empty() {
            return Err(unsupported(
                "system",
                "`system` cannot be combined with `suffix`: an infill is the prompt, the \
                 middle and the suffix as raw text, with no chat template",
            ));
        }
        Prompt::Text(prompt)
    } else if raw {
        Prompt::Text(prompt)
    } else if served.chat_template {
        let mut m = Vec::with_capacity(2);
        if !system.is_empty() {
            m.push(ChatMessage::new("system", system));
        }
        m.push(ChatMessage::new("user", prompt));
        Prompt::Chat(m)
    } else if system.is_empty() {
        // A model without a chat template reads the prompt as it is (Ollama's template for
        // such models is the prompt alone).
        Prompt::Text(prompt)
    } else {
        return Err(unsupported(
            "system",
            "`system` needs a chat template to place it, and the served model has none",
        ));
    };
    let suffix = (!suffix.is_empty()).then_some(suffix);
    common(common!(b), prompt, suffix, None, served).map(Some)
}

/// Whether a JSON value is "not given": null, an empty array, an empty string.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn images(param: &str) -> ApiError {
    unsupported(
        param,
        format!("`{param}` is not supported: the served diffusion language model reads text only"),
    )
}

/// The request from the fields both endpoints share, around `prompt`.
fn common(
    c: Common,
    prompt: Prompt,
    suffix: Option<String>,
    tools: Option<Arc<ToolUse>>,
    served: &Served<'_>,
) -> Result<ApiRequest, ApiError> {
    think(c.think.as_ref(), served.name)?;
    if c.debug_render_only.is_some_and(|f| f.0) {
        return Err(unsupported(
            "_debug_render_only",
            "`_debug_render_only` is not supported",
        ));
    }
    let (mut settings, stop) = c.options.unwrap_or_default().settings(served.context)?;
    settings.logprobs = match (c.logprobs.is_some_and(|f| f.0), c.top_logprobs) {
        (false, Some(_)) => {
            return Err(ApiError::invalid(
                "top_logprobs",
                "`top_logprobs` needs `logprobs: true`",
            ));
        }
        (false, None) => None,
        (true, top) => {
            let k = top.map_or(0, |c| c.0);
            let max = lacuna::settings::MAX_TOP_LOGPROBS;
            if k > max {
                return Err(ApiError::invalid(
                    "top_logprobs",
                    format!("top_logprobs must be between 0 and {max}"),
                ));
            }
            Some(k)
        }
    };
    let mut constraint = format(c.format)?.map(|spec| (spec, "format"));
    if let Some(t) = &tools {
        if constraint.is_some() {
            return Err(unsupported(
                "format",
                "`format` cannot be combined with `tools`: a tool call's answer is \
                 constrained to the tool format",
            ));
        }
        constraint = t.constraint().map(|spec| (spec, "tools"));
    }
    if let (Some((_, from)), false) = (&constraint, stop.is_empty()) {
        return Err(unsupported(
            "options.stop",
            format!(
                "`options.stop` cannot be combined with `{from}`: a stop sequence would cut \
                 the answer short of the constraint"
            ),
        ));
    }
    let mut request = ApiRequest::new(served.name.to_string(), prompt, settings);
    request.stream = c.stream.is_none_or(|f| f.0);
    request.stop = stop;
    request.suffix = suffix;
    request.tools = tools;
    if let Some((spec, from)) = constraint {
        request.settings.constraint = Some(spec);
        request.constraint_param = Some(from.to_string());
    }
    Ok(request)
}

/// `think`: the served models have no thinking mode, so only `false` is accepted (Ollama
/// refuses `true` or a level for such models in these words).
fn think(think: Option<&Value>, model: &str) -> Result<(), ApiError> {
    match think {
        None | Some(Value::Null | Value::Bool(false)) => Ok(()),
        Some(Value::Bool(true)) => Err(ApiError::invalid(
            "think",
            format!("\"{model}\" does not support thinking"),
        )),
        Some(Value::String(s)) if matches!(s.as_str(), "low" | "medium" | "high" | "max") => Err(
            ApiError::invalid("think", format!("\"{model}\" does not support thinking")),
        ),
        Some(_) => Err(ApiError::invalid(
            "think",
            "`think` must be a boolean or one of \"low\", \"medium\", \"high\", \"max\"",
        )),
    }
}

/// `format`: `"json"` (any JSON object) or a JSON Schema; `""` or null: none.
fn format(format: Option<Value>) -> Result<Option<Spec>, ApiError> {
    match format {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if s == "json" => Ok(Some(Spec::JsonObject)),
        Some(v @ Value::Object(_)) => Ok(Some(Spec::JsonSchema(v))),
        Some(_) => Err(ApiError::invalid(
            "format",
            "`format` must be \"json\" or a JSON Schema object",
        )),
    }
}

/// An option of an autoregressive sampler: accepted at `off`, its value that turns it off,
/// refused at any other value (`why` says why a diffusion sampler cannot honour it).
fn off(name: &str, value: Option<f64>, off: f64, why: &str) -> Result<(), ApiError> {
    match value {
        Some(v) if v != off => Err(unsupported(
            format!("options.{name}"),
            format!("`options.{name}` = {v} is not supported: {why}; only {off} (off) is accepted"),
        )),
        _ => Ok(()),
    }
}

impl Options {
    /// The settings and stop sequences these options give, on a model of `context`
    /// positions.
    fn settings(self, context: usize) -> Result<(Settings, Vec<String>), ApiError> {
        const PENALTY: &str = "a repetition penalty needs the text before each token, and a \
                               diffusion model commits tokens in any order";
        off(
            "min_p",
            self.min_p.map(|n| n.0),
            0.0,
            "min-p filtering is not part of the diffusion samplers",
        )?;
        off(
            "typical_p",
            self.typical_p.map(|n| n.0),
            1.0,
            "locally typical sampling is not part of the diffusion samplers",
        )?;
        off(
            "tfs_z",
            self.tfs_z.map(|n| n.0),
            1.0,
            "tail-free sampling is not part of the diffusion samplers",
        )?;
        off(
            "repeat_penalty",
            self.repeat_penalty.map(|n| n.0),
            1.0,
            PENALTY,
        )?;
        off(
            "presence_penalty",
            self.presence_penalty.map(|n| n.0),
            0.0,
            PENALTY,
        )?;
        off(
            "frequency_penalty",
            self.frequency_penalty.map(|n| n.0),
            0.0,
            PENALTY,
        )?;
        off(
            "mirostat",
            self.mirostat.map(|n| n.0 as f64),
            0.0,
            "mirostat steers the surprise of each next token, and a diffusion model has no \
             next token",
        )?;
        if let Some(Count(n)) = self.num_ctx.filter(|n| n.0 > context) {
            return Err(unsupported(
                "options.num_ctx",
                format!(
                    "`options.num_ctx` = {n} is larger than the model's context length \
                     {context}: the canvas (prompt and answer) cannot grow past it"
                ),
            ));
        }
        let gen_length = match self.num_predict {
            None | Some(Int(-1)) => None,
            Some(Int(n)) if n >= 1 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(Int(-2)) => {
                return Err(unsupported(
                    "options.num_predict",
                    "`options.num_predict` = -2 (fill the context) is not supported: a \
                     diffusion canvas has a length set before it denoises; give a length",
                ));
            }
            Some(Int(n)) => {
                return Err(ApiError::invalid(
                    "options.num_predict",
                    format!(
                        "`options.num_predict` must be at least 1 (or -1 for the default), \
                         got {n}"
                    ),
                ));
            }
        };
        let mut g = Settings {
            gen_length,
            ..Settings::default()
        };
        if let Some(Num(t)) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return Err(ApiError::invalid(
                    "options.temperature",
                    format!("`options.temperature` must be between 0 and 2, got {t}"),
                ));
            }
            g.temperature = Some(t);
        }
        // top_p = 1 keeps every token, and top_k = 0 is Ollama's "off".
        match self.top_p {
            Some(Num(p)) if !(p > 0.0 && p <= 1.0) => {
                return Err(ApiError::invalid(
                    "options.top_p",
                    format!("`options.top_p` must be in (0, 1], got {p}"),
                ));
            }
            Some(Num(p)) if p < 1.0 => g.top_p = Some(p),
            _ => {}
        }
        g.top_k = self.top_k.map(|k| k.0).filter(|&k| k > 0);
        // A negative seed is Ollama's "random".
        g.seed = Some(match self.seed {
            Some(Int(s)) if s >= 0 => s as u64,
            _ => params::fresh_seed(),
        });
        let stop = self.stop.map(|s| s.0).unwrap_or_default();
        if stop.iter().any(String::is_empty) {
            return Err(ApiError::invalid(
                "options.stop",
                "stop sequences must not be empty",
            ));
        }
        if let Some(d) = self.diffusion {
            d.apply(&mut g);
        }
        Ok((g, stop))
    }
}

/// `messages`: each role's message in the one chat vocabulary; earlier tool calls and their
/// results in the format [`lacuna::tools`] writes them.
fn messages(list: Vec<Message>) -> Result<Vec<ChatMessage>, ApiError> {
    let mut out = Vec::with_capacity(list.len());
    // Earlier calls' names by id, for the results that answer them by id.
    let mut call_names: Vec<(String, String)> = Vec::new();
    for (i, m) in list.into_iter().enumerate() {
        let param = format!("messages[{i}]");
        let role = m.role.map(|r| r.0.to_lowercase());
        let role = match role.as_deref() {
            Some(r @ ("system" | "user" | "assistant" | "tool")) => r.to_string(),
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    format!("role `{other}` is not supported (system, user, assistant, tool)"),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    format!("{param}.role"),
                    "each message needs a string `role`",
                ));
            }
        };
        if m.images.as_ref().is_some_and(|v| !is_empty(v)) {
            return Err(images(&format!("{param}.images")));
        }
        if m.tool_calls.is_some() && role != "assistant" {
            return Err(ApiError::invalid(
                format!("{param}.tool_calls"),
                "only assistant messages have `tool_calls`",
            ));
        }
        if (m.tool_name.is_some() || m.tool_call_id.is_some()) && role != "tool" {
            let f = if m.tool_name.is_some() {
                "tool_name"
            } else {
                "tool_call_id"
            };
            return Err(ApiError::invalid(
                format!("{param}.{f}"),
                format!("only tool messages have `{f}`"),
            ));
        }
        let content = m.content.map(|t| t.0).unwrap_or_default();
        if let Some(calls) = m.tool_calls.filter(|c| !c.0.is_empty()) {
            let calls = past_calls(calls.0, &param, &mut call_names)?;
            out.push(lacuna::tools::calls_message(Some(&content), &calls));
            continue;
        }
        if role == "tool" {
            let id = m.tool_call_id.map(|t| t.0).unwrap_or_default();
            let name = m.tool_name.map(|t| t.0).or_else(|| {
                call_names
                    .iter()
                    .find(|(i, _)| !id.is_empty() && *i == id)
                    .map(|(_, n)| n.clone())
            });
            out.push(lacuna::tools::result_message(
                &id,
                name.as_deref(),
                &content,
            ));
            continue;
        }
        out.push(ChatMessage::new(role, content));
    }
    Ok(out)
}

/// An assistant message's `tool_calls` (`arguments` an object, as Ollama writes them); each
/// id and name is noted in `names`.
fn past_calls(
    calls: Vec<Call>,
    param: &str,
    names: &mut Vec<(String, String)>,
) -> Result<Vec<ToolCall>, ApiError> {
    let mut out = Vec::with_capacity(calls.len());
    for (j, c) in calls.into_iter().enumerate() {
        let p = format!("{param}.tool_calls[{j}]");
        let name =
            params::past_call_name(&p, c.kind.as_ref(), c.function.as_ref().map(|f| &f.name))?;
        let arguments = match c.function.and_then(|f| f.arguments) {
            None | Some(Value::Null) => serde_json::json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => {
                return Err(ApiError::invalid(
                    format!("{p}.function.arguments"),
                    format!("`{p}.function.arguments` must be an object"),
                ));
            }
        };
        if let Some(Text(id)) = c.id {
            names.push((id, name.clone()));
        }
        out.push(ToolCall { name, arguments });
    }
    Ok(out)
}
