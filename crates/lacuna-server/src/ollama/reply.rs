//! Ollama's answers: `/api/chat`'s `message` and `/api/generate`'s `response`, streamed as
//! NDJSON (one object per line: each settled piece with `done: false`, then the `done: true`
//! object with the counters) or whole.
//!
//! The counters are Ollama's, in nanoseconds, measured here: `total_duration` from the
//! request's arrival to its answer; `prompt_eval_duration` reading and preparing the request
//! (chat template, tokens, constraint); `eval_duration` the generation (every denoising
//! step); `load_duration` the rest, the wait for a free generation slot (the model itself is
//! loaded once, at start). `prompt_eval_count` and `eval_count` are the prompt's and the
//! answer's tokens.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use lacuna::tools::{ToolAnswer, ToolUse};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::Kind;
use crate::error::ApiError;
use crate::logprobs::{self, Entry};
use crate::routes::CancelOnDrop;
use crate::scheduler::{Event, Finished};

/// What every object of one answer shares.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// Which endpoint.
    pub(crate) kind: Kind,
    /// The model as the client named it (Ollama answers with the name it was given).
    pub(crate) model: String,
    /// The request's id (tool calls' ids end with it).
    pub(crate) request_id: String,
    /// The request's tools, when its answer is in the tool format.
    pub(crate) tools: Option<Arc<ToolUse>>,
    /// When the request arrived.
    pub(crate) arrived: Instant,
    /// When it was prepared and queued.
    pub(crate) submitted: Instant,
}

/// `t` as RFC 3339 in UTC, with as many fraction digits as it needs (Go's `RFC3339Nano`,
/// how Ollama writes `created_at`).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX / 2));
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let nanos = d.subsec_nanos();
    let frac = if nanos == 0 {
        String::new()
    } else {
        let f = format!(".{nanos:09}");
        f.trim_end_matches('0').to_string()
    };
    format!("{y:04}-{m:02}-{day:02}T{h:02}:{mi:02}:{s:02}{frac}Z")
}

/// The proleptic Gregorian date of `z` days after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Ollama's `logprobs`: per token its text, log-probability, bytes and alternatives, as
/// chat's `logprobs.content`.
fn logprobs(entries: &[Entry]) -> Value {
    Value::Array(logprobs::per_token(entries))
}

/// Ollama's answer to a request with nothing to generate: the model is loaded.
pub(crate) fn loaded(kind: Kind, model: &str) -> Value {
    let mut v = json!({"model": model, "created_at": rfc3339(SystemTime::now())});
    match kind {
        Kind::Chat => v["message"] = json!({"role": "assistant", "content": ""}),
        Kind::Generate => v["response"] = json!(""),
    }
    v["done"] = json!(true);
    v["done_reason"] = json!("load");
    v
}

impl Reply {
    /// An object of the answer: `text` as the message's content (chat) or the response
    /// (generate), with the message's tool calls, if any.
    fn object(&self, text: &str, tool_calls: Option<Vec<Value>>, done: bool) -> Map<String, Value> {
        let mut v = Map::new();
        v.insert("model".into(), json!(self.model));
        v.insert("created_at".into(), json!(rfc3339(SystemTime::now())));
        match self.kind {
            Kind::Chat => {
                let mut m = json!({"role": "assistant", "content": text});
                if let Some(calls) = tool_calls {
                    m["tool_calls"] = Value::Array(calls);
                }
                v.insert("message".into(), m);
            }
            Kind::Generate => {
                v.insert("response".into(), json!(text));
            }
        }
        v.insert("done".into(), json!(done));
        v
    }

    /// A streamed piece: settled text and the log-probabilities of its tokens.
    fn piece(&self, text: &str, entries: Option<&[Entry]>) -> Value {
        let mut v = self.object(text, None, false);
        if let Some(e) = entries.filter(|e| !e.is_empty()) {
            v.insert("logprobs".into(), logprobs(e));
        }
        Value::Object(v)
    }

    /// What a finished generation answers: its text, or with tools its calls (each
    /// `{"id", "function": {"index", "name", "arguments": {...}}}`) or the text reply they
    /// wrap.
    fn answer(&self, f: &Finished) -> (String, Option<Vec<Value>>) {
        let Some(tools) = &self.tools else {
            return (f.text.clone(), None);
        };
        match tools.parse(&f.text) {
            ToolAnswer::Calls(calls) => {
                let calls = calls
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        json!({
                            "id": format!("call_{}_{j}", self.request_id),
                            "function": {"index": j, "name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
                (String::new(), Some(calls))
            }
            ToolAnswer::Text(t) => (t, None),
        }
    }

    /// The `done: true` fields: the reason, the counters, Lacuna's `diffusion` report.
    fn finish(&self, v: &mut Map<String, Value>, f: &Finished) {
        let now = Instant::now();
        let total = now - self.arrived;
        let prompt_eval = self.submitted.saturating_duration_since(self.arrived);
        let generating = now.saturating_duration_since(self.submitted);
        let eval = f.output.as_ref().map_or(generating, |o| {
            Duration::try_from_secs_f64(o.timings.total_s)
                .unwrap_or_default()
                .min(generating)
        });
        v.insert("done_reason".into(), json!(f.finish_reason));
        v.insert("total_duration".into(), json!(nanos(total)));
        v.insert("load_duration".into(), json!(nanos(generating - eval)));
        v.insert("prompt_eval_count".into(), json!(f.prompt_tokens));
        v.insert("prompt_eval_duration".into(), json!(nanos(prompt_eval)));
        v.insert("eval_count".into(), json!(f.completion_tokens));
        v.insert("eval_duration".into(), json!(nanos(eval)));
        v.insert("diffusion".into(), crate::respond::diffusion_report(f));
    }

    /// The whole answer, not streamed.
    fn whole(&self, f: &Finished) -> Value {
        let (text, calls) = self.answer(f);
        let mut v = self.object(&text, calls, true);
        if let Some(e) = f.logprobs.as_deref() {
            v.insert("logprobs".into(), logprobs(e));
        }
        self.finish(&mut v, f);
        Value::Object(v)
    }

    /// The stream's last object: no text (it went out in the pieces), the counters.
    fn last(&self, f: &Finished) -> Value {
        let mut v = self.object("", None, true);
        self.finish(&mut v, f);
        Value::Object(v)
    }
}

/// The whole answer once the generation is done.
pub(crate) async fn collect(
    reply: &Reply,
    mut events: mpsc::Receiver<Event>,
    _guard: CancelOnDrop,
) -> Result<Value, ApiError> {
    while let Some(event) = events.recv().await {
        match event {
            Event::Step { .. } => {}
            Event::Done(f) => return Ok(reply.whole(&f)),
            Event::Failed(e) => return Err(e),
        }
    }
    Err(ApiError::internal(
        "the generation worker stopped without an answer",
    ))
}

fn line(v: &Value) -> Result<Bytes, Infallible> {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    Ok(Bytes::from(b))
}

/// The NDJSON answer: a line per settled piece (with tools, the answer whole at the end),
/// then the `done: true` line. An error after the stream began is a line
/// `{"error": message}`, as Ollama sends it.
pub(crate) fn stream(
    reply: Reply,
    mut events: mpsc::Receiver<Event>,
    guard: CancelOnDrop,
) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    tokio::spawn(async move {
        let _guard = guard; // dropped (cancelling) when this task ends, e.g. client gone
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = tx.closed() => return, // client gone
            };
            // The lines this event sends, and whether they end the answer.
            let (lines, end) = match event {
                None => (
                    vec![line(&json!({
                        "error": "the generation worker stopped without an answer"
                    }))],
                    true,
                ),
                Some(Event::Step {
                    delta, logprobs, ..
                }) => {
                    // A tool-format answer goes out whole at the end.
                    if reply.tools.is_some() || (delta.is_empty() && logprobs.is_none()) {
                        continue;
                    }
                    (vec![line(&reply.piece(&delta, logprobs.as_deref()))], false)
                }
                Some(Event::Done(f)) => {
                    let mut out = Vec::with_capacity(2);
                    if reply.tools.is_some() {
                        let (text, calls) = reply.answer(&f);
                        out.push(line(&Value::Object(reply.object(&text, calls, false))));
                    } else {
                        let rest = f
                            .logprobs
                            .as_deref()
                            .map(|l| l.get(f.logprobs_sent..).unwrap_or_default())
                            .filter(|l| !l.is_empty());
                        if !f.delta.is_empty() || rest.is_some() {
                            out.push(line(&reply.piece(&f.delta, rest)));
                        }
                    }
                    out.push(line(&reply.last(&f)));
                    (out, true)
                }
                Some(Event::Failed(e)) => (vec![line(&json!({"error": super::message(&e)}))], true),
            };
            for l in lines {
                if tx.send(l).await.is_err() {
                    return;
                }
            }
            if end {
                return;
            }
        }
    });
    (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(ReceiverStream::new(rx)),
    )
        .into_response()
}
