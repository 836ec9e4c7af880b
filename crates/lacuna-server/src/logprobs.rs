//! Log-probabilities in OpenAI's two shapes: `choices[].logprobs.content[]` for chat, and
//! the legacy `{tokens, token_logprobs, top_logprobs, text_offset}` for completions.
//!
//! A diffusion model has no single left-to-right distribution: each token's figures are
//! those of the denoising step that committed it (the log-softmax of that step's raw logits
//! for its position, at temperature 1, before top-k/top-p), and its alternatives are that
//! step's most probable tokens for the same position. See [`lacuna::TokenLogprob`].

use lacuna::TokenLogprob;
use lacuna::tokenizer::Tokenizer;
use serde_json::{Value, json};

use crate::params::Endpoint;

/// One token as a client sees it: its text and bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    /// The token's text (invalid UTF-8 as U+FFFD, control tokens empty).
    pub(crate) text: String,
    /// The token's bytes.
    pub(crate) bytes: Vec<u8>,
    /// Natural-log probability.
    pub(crate) logprob: f32,
}

/// One generated token with its alternatives, decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The generated token.
    pub(crate) token: Piece,
    /// The committing step's most probable tokens, most probable first.
    pub(crate) top: Vec<Piece>,
}

/// Token `id` decoded, with `logprob`.
pub(crate) fn piece(tokenizer: &Tokenizer, id: u32, logprob: f32) -> Piece {
    let bytes = tokenizer
        .token_bytes(id, false)
        .unwrap_or_default()
        .to_vec();
    Piece {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        bytes,
        logprob,
    }
}

/// The first `n` records decoded; stops at a position that was never committed.
pub(crate) fn entries(
    tokenizer: &Tokenizer,
    records: &[Option<TokenLogprob>],
    n: usize,
) -> Vec<Entry> {
    records
        .iter()
        .take(n)
        .map_while(|r| r.as_ref())
        .map(|r| Entry {
            token: piece(tokenizer, r.token, r.logprob),
            top: r
                .top
                .iter()
                .map(|t| piece(tokenizer, t.token, t.logprob))
                .collect(),
        })
        .collect()
}

/// A finite log-probability as JSON (JSON has no -inf: the lowest f32 stands for it).
fn lp(v: f32) -> Value {
    json!(if v.is_finite() { v } else { f32::MIN })
}

/// Per token `{"token", "logprob", "bytes", "top_logprobs"}`: chat's `logprobs.content`,
/// and Ollama's `logprobs`.
pub(crate) fn per_token(entries: &[Entry]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| {
            let top: Vec<Value> = e
                .top
                .iter()
                .map(|t| json!({"token": t.text, "logprob": lp(t.logprob), "bytes": t.bytes}))
                .collect();
            json!({
                "token": e.token.text,
                "logprob": lp(e.token.logprob),
                "bytes": e.token.bytes,
                "top_logprobs": top,
            })
        })
        .collect()
}

/// The `logprobs` object of a choice for `endpoint`; `offset` is where `entries` start in
/// the text already sent (completions' `text_offset`).
pub(crate) fn render(endpoint: Endpoint, entries: &[Entry], offset: usize) -> Value {
    match endpoint {
        Endpoint::Chat => json!({"content": per_token(entries), "refusal": null}),
        Endpoint::Completion | Endpoint::Infill => {
            let mut at = offset;
            let mut text_offset = Vec::with_capacity(entries.len());
            for e in entries {
                text_offset.push(at);
                at += e.token.text.len();
            }
            let top: Vec<Value> = entries
                .iter()
                .map(|e| {
                    let m: serde_json::Map<String, Value> = e
                        .top
                        .iter()
                        .map(|t| (t.text.clone(), lp(t.logprob)))
                        .collect();
                    Value::Object(m)
                })
                .collect();
            json!({
                "tokens": entries.iter().map(|e| e.token.text.as_str()).collect::<Vec<_>>(),
                "token_logprobs": entries.iter().map(|e| lp(e.token.logprob)).collect::<Vec<_>>(),
                "top_logprobs": top,
                "text_offset": text_offset,
            })
        }
    }
}

/// Where the next streamed entries start in the text (completions' `text_offset`).
#[derive(Debug, Default)]
pub(crate) struct Offsets {
    at: usize,
}

impl Offsets {
    /// `entries` with their starting offset; advances past them.
    pub(crate) fn next<'e>(&mut self, entries: &'e [Entry]) -> (&'e [Entry], usize) {
        let start = self.at;
        self.at += entries.iter().map(|e| e.token.text.len()).sum::<usize>();
        (entries, start)
    }
}
