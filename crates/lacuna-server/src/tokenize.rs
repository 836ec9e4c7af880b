//! The tokenizer over HTTP, in the two shapes clients use: vLLM's (`POST /tokenize` with
//! `prompt` or `messages`, `POST /detokenize`, `GET /tokenizer_info`, which
//! lm-evaluation-harness's remote tokenizer reads) and llama-server's (`POST /tokenize` with
//! `content`, `POST /detokenize` answering `content`). A body with `content` is
//! llama-server's; one with `prompt` or `messages` is vLLM's.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use lacuna::Prompt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::params::{self, Flag, List, Message, Messages, Text};
use crate::routes::{App, read_body};

/// Either shape of a `/tokenize` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct TokenizeBody {
    /// vLLM, and accepted from llama-server's clients: the served model's id.
    model: Option<Text>,
    /// vLLM: text to encode.
    prompt: Option<Text>,
    /// vLLM: chat messages, through the chat template.
    messages: Option<List<Message, Messages>>,
    /// vLLM: BOS/EOS as the vocabulary asks (default true for `prompt`, false for
    /// `messages`, whose template writes them).
    add_special_tokens: Option<Flag>,
    /// vLLM: end the chat prompt with the assistant's turn (the chat template always does
    /// here; `false` is refused).
    add_generation_prompt: Option<Flag>,
    /// vLLM: also each token's text.
    return_token_strs: Option<Flag>,
    /// llama-server: text to encode.
    content: Option<Text>,
    /// llama-server: BOS/EOS as the vocabulary asks (default false).
    add_special: Option<Flag>,
    /// llama-server: control-token text becomes the control token (default true).
    parse_special: Option<Flag>,
    /// llama-server: each token as `{id, piece}`.
    with_pieces: Option<Flag>,
}

/// A `/detokenize` body (both shapes).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct DetokenizeBody {
    model: Option<Text>,
    tokens: Option<Vec<Value>>,
}

const UNKNOWN: &str = "Unrecognized request argument";

fn check_model(app: &App, model: Option<&Text>) -> Result<(), ApiError> {
    match model {
        Some(Text(m)) if *m != app.config.model_id => {
            Err(ApiError::unknown_model(m, &app.config.model_id))
        }
        _ => Ok(()),
    }
}

/// `POST /tokenize`.
pub(crate) async fn tokenize(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match run_tokenize(&app, body).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn run_tokenize(
    app: &Arc<App>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    let body = read_body(app, body)?;
    let b: TokenizeBody = params::decode(&body, UNKNOWN)?;
    check_model(app, b.model.as_ref())?;
    let flag = |f: Option<Flag>, default: bool| f.map_or(default, |f| f.0);
    let engine = Arc::clone(app.scheduler.engine());
    let context = engine.context_length();
    if let Some(Text(content)) = b.content {
        if b.prompt.is_some() || b.messages.is_some() {
            return Err(ApiError::invalid(
                "content",
                "give `content` (llama-server) or `prompt`/`messages` (vLLM), not both",
            ));
        }
        let add = flag(b.add_special, false);
        let parse = flag(b.parse_special, true);
        let pieces = flag(b.with_pieces, false);
        let ids = encode(app, content, add, parse).await?;
        let tokenizer = engine.tokenizer();
        let tokens: Vec<Value> = if pieces {
            ids.iter()
                .map(|&id| {
                    let bytes = tokenizer.token_bytes(id, true).unwrap_or_default();
                    let piece = match std::str::from_utf8(bytes) {
                        Ok(s) => json!(s),
                        Err(_) => json!(bytes),
                    };
                    json!({"id": id, "piece": piece})
                })
                .collect()
        } else {
            ids.iter().map(|&id| json!(id)).collect()
        };
        return Ok(json!({"tokens": tokens}));
    }
    let ids = match (b.prompt, b.messages) {
        (Some(Text(prompt)), None) => {
            encode(app, prompt, flag(b.add_special_tokens, true), true).await?
        }
        (None, Some(list)) => {
            if b.add_generation_prompt.is_some_and(|f| !f.0) {
                return Err(ApiError::invalid(
                    "add_generation_prompt",
                    "only `add_generation_prompt: true` is supported: the chat template always \
                     ends with the assistant's turn",
                )
                .with_code("unsupported_parameter"));
            }
            if b.add_special_tokens.is_some_and(|f| f.0) {
                return Err(ApiError::invalid(
                    "add_special_tokens",
                    "`add_special_tokens` is not supported with `messages`: the chat template \
                     writes the special tokens",
                )
                .with_code("unsupported_parameter"));
            }
            let messages = params::messages(Some(list))?;
            let engine = Arc::clone(&engine);
            tokio::task::spawn_blocking(move || engine.prompt_tokens(&Prompt::Chat(messages)))
                .await
                .map_err(|e| ApiError::internal(format!("tokenizing panicked: {e}")))?
                .map_err(|e| ApiError::from_prepare(&e, "messages", "messages"))?
        }
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "messages",
                "give `prompt` or `messages`, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::invalid(
                "prompt",
                "`prompt` (or `messages`, or llama-server's `content`) is required",
            ));
        }
    };
    let token_strs = flag(b.return_token_strs, false).then(|| {
        let tokenizer = engine.tokenizer();
        ids.iter()
            .map(|&id| {
                let bytes = tokenizer.token_bytes(id, true).unwrap_or_default();
                String::from_utf8_lossy(bytes).into_owned()
            })
            .collect::<Vec<_>>()
    });
    Ok(json!({
        "count": ids.len(),
        "max_model_len": context,
        "tokens": ids,
        "token_strs": token_strs,
    }))
}

/// Encodes `text` off the I/O threads (a long text is CPU work).
async fn encode(app: &App, text: String, add: bool, parse: bool) -> Result<Vec<u32>, ApiError> {
    let engine = Arc::clone(app.scheduler.engine());
    tokio::task::spawn_blocking(move || engine.tokenizer().encode(&text, add, parse))
        .await
        .map_err(|e| ApiError::internal(format!("tokenizing panicked: {e}")))?
        .map_err(|e| ApiError::invalid("prompt", e.to_string()))
}

/// `POST /detokenize`: `{prompt}` (vLLM) and `{content}` (llama-server), the same text.
pub(crate) async fn detokenize(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let run = || -> Result<Value, ApiError> {
        let body = read_body(&app, body)?;
        let b: DetokenizeBody = params::decode(&body, UNKNOWN)?;
        check_model(&app, b.model.as_ref())?;
        let Some(list) = b.tokens else {
            return Err(ApiError::invalid("tokens", "`tokens` is required"));
        };
        let tokenizer = app.scheduler.engine().tokenizer();
        let vocab = tokenizer.n_vocab();
        let mut ids = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(id) if (id as usize) < vocab => ids.push(id),
                _ => {
                    return Err(ApiError::invalid(
                        format!("tokens[{i}]"),
                        format!("`tokens[{i}]` must be a token id below {vocab}, got {v}"),
                    ));
                }
            }
        }
        let text = tokenizer
            .detokenize(&ids, false, true)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| ApiError::invalid("tokens", e.to_string()))?;
        Ok(json!({"prompt": text, "content": text}))
    };
    match run() {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /tokenizer_info`: the special tokens (as text `/tokenize` maps back to their ids),
/// the chat template and the context length, as vLLM reports them.
pub(crate) async fn tokenizer_info(State(app): State<Arc<App>>) -> Json<Value> {
    let engine = app.scheduler.engine();
    let tokenizer = engine.tokenizer();
    let vocab = tokenizer.vocab();
    let special = vocab.special();
    let text = |id: Option<u32>| id.and_then(|id| vocab.token_text(id)).map(str::to_string);
    Json(json!({
        "tokenizer_class": "LacunaGGUFTokenizer",
        "eos_token": text(special.eos),
        "bos_token": text(special.bos),
        "pad_token": text(special.pad),
        "unk_token": text(special.unk),
        "mask_token": text(Some(engine.mask_token_id())),
        "add_bos_token": vocab.add_bos(),
        "add_eos_token": vocab.add_eos(),
        "chat_template": vocab.chat_template(),
        "model_max_length": engine.context_length(),
        "vocab_size": tokenizer.n_vocab(),
    }))
}
