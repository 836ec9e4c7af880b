//! The JSON shapes of OpenAI's responses and stream chunks, for both endpoints.

use std::sync::Arc;

use lacuna::tools::{ToolAnswer, ToolUse};
use serde_json::{Value, json};

use crate::logprobs;
use crate::params::Endpoint;
use crate::scheduler::Finished;

/// What every response of one request shares.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    /// `chatcmpl-…` or `cmpl-…`.
    pub(crate) id: String,
    /// Unix seconds.
    pub(crate) created: u64,
    /// The served model id.
    pub(crate) model: String,
    /// Which endpoint.
    pub(crate) endpoint: Endpoint,
    /// The request's tools, when its answer is in the tool format.
    pub(crate) tools: Option<Arc<ToolUse>>,
}

/// A chat answer as OpenAI's message says it: its content, its tool calls, and the finish
/// reason (`tool_calls` when it calls tools).
pub(crate) struct Answer {
    pub(crate) content: Option<String>,
    pub(crate) tool_calls: Option<Vec<Value>>,
    pub(crate) finish_reason: &'static str,
}

impl Envelope {
    /// A new envelope for `endpoint`, with `request_id` as the id's tail.
    pub(crate) fn new(endpoint: Endpoint, model: &str, request_id: &str) -> Self {
        let prefix = match endpoint {
            Endpoint::Chat => "chatcmpl",
            Endpoint::Completion => "cmpl",
            Endpoint::Infill => "infill",
        };
        Self {
            id: format!("{prefix}-{request_id}"),
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            model: model.to_string(),
            endpoint,
            tools: None,
        }
    }

    /// The same envelope for an answer in `tools`' format.
    pub(crate) fn with_tools(mut self, tools: Option<Arc<ToolUse>>) -> Self {
        self.tools = tools;
        self
    }

    /// What choice `f` answers: with tools, the calls its text holds (ids
    /// `call_<response id>_<choice>_<call>`) or the text reply it wraps.
    pub(crate) fn answer(&self, f: &Finished) -> Answer {
        let Some(tools) = &self.tools else {
            return Answer {
                content: Some(f.text.clone()),
                tool_calls: None,
                finish_reason: f.finish_reason,
            };
        };
        match tools.parse(&f.text) {
            ToolAnswer::Calls(calls) => {
                let tail = self.id.split_once('-').map_or(self.id.as_str(), |(_, t)| t);
                let calls = calls
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        json!({
                            "id": format!("call_{tail}_{}_{j}", f.index),
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments.to_string()},
                        })
                    })
                    .collect();
                Answer {
                    content: None,
                    tool_calls: Some(calls),
                    finish_reason: "tool_calls",
                }
            }
            ToolAnswer::Text(t) => Answer {
                content: Some(t),
                tool_calls: None,
                finish_reason: f.finish_reason,
            },
        }
    }

    fn object(&self, chunk: bool) -> &'static str {
        match (self.endpoint, chunk) {
            (Endpoint::Chat, false) => "chat.completion",
            (Endpoint::Chat, true) => "chat.completion.chunk",
            (Endpoint::Completion | Endpoint::Infill, _) => "text_completion",
        }
    }

    /// `fields` after the fields every response and chunk starts with.
    fn with(&self, chunk: bool, fields: Value) -> Value {
        let mut v = json!({
            "id": self.id,
            "object": self.object(chunk),
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
        });
        if let (Some(head), Value::Object(rest)) = (v.as_object_mut(), fields) {
            head.extend(rest);
        }
        v
    }

    /// The whole (non-streamed) response: one choice per entry of `done` (in index order;
    /// never empty). With several, each choice carries its own `diffusion` report and the
    /// top-level one is the first choice's.
    pub(crate) fn response(&self, done: &[Box<Finished>]) -> Value {
        let f = &done[0];
        if self.endpoint == Endpoint::Infill {
            return self.infill_response(f, &f.text);
        }
        let choices: Vec<Value> = done
            .iter()
            .map(|f| {
                let mut choice = match self.endpoint {
                    Endpoint::Chat => {
                        let a = self.answer(f);
                        let mut message =
                            json!({"role": "assistant", "content": a.content, "refusal": null});
                        if let Some(calls) = a.tool_calls {
                            message["tool_calls"] = Value::Array(calls);
                        }
                        json!({
                            "index": f.index,
                            "message": message,
                            "logprobs": self.logprobs(f),
                            "finish_reason": a.finish_reason,
                        })
                    }
                    Endpoint::Completion | Endpoint::Infill => json!({
                        "index": f.index,
                        "text": f.text,
                        "logprobs": self.logprobs(f),
                        "finish_reason": f.finish_reason,
                    }),
                };
                if done.len() > 1 {
                    choice["diffusion"] = diffusion_report(f);
                }
                choice
            })
            .collect();
        self.with(
            false,
            json!({"choices": choices, "usage": usage(done), "diffusion": diffusion_report(f)}),
        )
    }

    /// The choice's `logprobs`: null unless asked for.
    fn logprobs(&self, f: &Finished) -> Value {
        f.logprobs
            .as_ref()
            .map_or(Value::Null, |e| logprobs::render(self.endpoint, e, 0))
    }

    /// A stream chunk with `delta` text (chat: the first carries the role), an optional
    /// finish reason, an optional canvas, and optional log-probabilities (with the
    /// completions' `text_offset` of the first).
    pub(crate) fn chunk(
        &self,
        index: usize,
        delta: Option<&str>,
        first: bool,
        finish_reason: Option<&str>,
        canvas: Option<Value>,
        logprobs: Option<(&[logprobs::Entry], usize)>,
    ) -> Value {
        if self.endpoint == Endpoint::Infill {
            return json!({"index": 0, "content": delta.unwrap_or(""), "stop": false});
        }
        let mut choice = match self.endpoint {
            Endpoint::Chat => {
                let mut d = serde_json::Map::new();
                if first {
                    d.insert("role".into(), json!("assistant"));
                }
                if let Some(text) = delta {
                    d.insert("content".into(), json!(text));
                }
                json!({"index": index, "delta": d, "logprobs": null, "finish_reason": finish_reason})
            }
            Endpoint::Completion | Endpoint::Infill => json!({
                "index": index,
                "text": delta.unwrap_or(""),
                "logprobs": null,
                "finish_reason": finish_reason,
            }),
        };
        if let Some(c) = canvas {
            choice["canvas"] = c;
        }
        if let Some((entries, offset)) = logprobs {
            choice["logprobs"] = logprobs::render(self.endpoint, entries, offset);
        }
        self.with(true, json!({"choices": [choice]}))
    }

    /// A chat stream chunk with the whole of a tool-format answer: its tool calls (each
    /// call's `index`, `id`, `type` and all of its `arguments` at once) or its text reply.
    pub(crate) fn answer_chunk(&self, index: usize, first: bool, a: &Answer) -> Value {
        let mut d = serde_json::Map::new();
        if first {
            d.insert("role".into(), json!("assistant"));
        }
        if let Some(calls) = &a.tool_calls {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let mut c = c.clone();
                    c["index"] = json!(j);
                    c
                })
                .collect();
            d.insert("tool_calls".into(), Value::Array(calls));
        } else {
            d.insert("content".into(), json!(a.content.as_deref().unwrap_or("")));
        }
        let choice = json!({"index": index, "delta": d, "logprobs": null, "finish_reason": null});
        self.with(true, json!({"choices": [choice]}))
    }

    /// llama-server's answer to `/infill`: `content` (the whole middle, or the stream's last,
    /// empty piece), `stop: true` and its counters.
    fn infill_response(&self, f: &Finished, content: &str) -> Value {
        let stop_type = if f.finish_reason == "length" {
            "limit"
        } else {
            "eos"
        };
        json!({
            "index": 0,
            "content": content,
            "stop": true,
            "stop_type": stop_type,
            "model": self.model,
            "tokens_predicted": f.completion_tokens,
            "tokens_evaluated": f.prompt_tokens,
            "truncated": false,
            "diffusion": diffusion_report(f),
        })
    }

    /// The stream's last object for `/infill` (`None` for the OpenAI endpoints).
    pub(crate) fn infill_last(&self, f: &Finished) -> Option<Value> {
        (self.endpoint == Endpoint::Infill).then(|| self.infill_response(f, ""))
    }

    /// The last chunk of `stream_options.include_usage`: no choices, the usage of all of
    /// them (`done` in index order, never empty).
    pub(crate) fn usage_chunk(&self, done: &[Box<Finished>]) -> Value {
        self.with(
            true,
            json!({"choices": [], "usage": usage(done), "diffusion": diffusion_report(&done[0])}),
        )
    }
}

/// OpenAI's usage of `n` choices: the prompt once, every choice's completion tokens.
fn usage(done: &[Box<Finished>]) -> Value {
    let prompt = done[0].prompt_tokens;
    let completion: usize = done.iter().map(|f| f.completion_tokens).sum();
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    })
}

/// Lacuna's extension: what the sampler did.
pub(crate) fn diffusion_report(f: &Finished) -> Value {
    let Some(out) = &f.output else {
        return Value::Null;
    };
    let mut v = json!({
        "steps": out.stats.steps,
        "forwards": out.stats.denoiser_calls,
        "cache_fills": out.stats.cache_fills,
        "tokens_per_forward": out.tokens_per_forward(),
        "positions_per_forward": out.positions_per_forward(),
        "step_ms_median": out.timings.step_ms_median(),
        "total_s": out.timings.total_s,
    });
    // DiffusionGemma: its encoder's passes (the prompt's, then each commit), apart from the steps.
    if !out.timings.encode_ms.is_empty() {
        v["encode_ms"] = json!(out.timings.encode_ms);
    }
    // An infill length search: the length returned and every candidate's score.
    if let Some(search) = &out.infill {
        v["infill_length"] = json!(search.chosen().length);
        v["infill_candidates"] = search
            .candidates
            .iter()
            .map(|c| json!({"length": c.length, "score": finite(c.score), "tokens": c.tokens, "text": c.text}))
            .collect();
    }
    v
}

/// A score as JSON: `null` for `-inf` (nothing committed), which JSON cannot write.
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}
