//! Completions' `echo`: the answer's text starts with the prompt, and with `logprobs` every
//! prompt token gets a log-likelihood value (what lm-evaluation-harness's
//! loglikelihood and multiple-choice tasks read, with `max_tokens` 1 or 0).
//!
//! A masked diffusion model has no left-to-right factorisation. Prompt token `i`'s value
//! is `est(i) − est(i + 1)`, where `est(c)` is the LLaDA paper's estimate of
//! `log p(prompt[c..] | prompt[..c])` ([`lacuna::likelihood`]): whatever split a client
//! makes into context and continuation, the continuation's values sum to that estimate
//! (`diffusion.likelihood_samples` mask sets per estimate, exact where there are no more
//! sets than that; seeded by `seed`). The first token's value is null, as OpenAI's is. Its
//! alternatives (`top_logprobs`) are the model's prediction of that position with every
//! later one masked; the prompt's own token, when among them, carries its value, so a
//! client's "was the given token the top one" check holds exactly when the model would
//! have guessed it left to right. Generated tokens that follow keep their commit-time
//! figures ([`crate::logprobs`]).

use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::response::{IntoResponse, Response};
use lacuna::CancelToken;
use lacuna::likelihood::EchoLogprobs;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::error::ApiError;
use crate::logprobs::{self, Piece};
use crate::params::{ApiRequest, Endpoint};
use crate::respond::Envelope;
use crate::routes::{App, CancelOnDrop, RequestId, Submitted, submit};
use crate::scheduler::{Event, Finished};

/// `echo` combined with what it cannot serve: a 400 naming the other parameter.
pub(crate) fn check(
    stream: bool,
    n: usize,
    suffix: bool,
    constrained: bool,
) -> Result<(), ApiError> {
    let clash = [
        (stream, "stream"),
        (n > 1, "n"),
        (suffix, "suffix"),
        (constrained, "response_format"),
    ];
    match clash.into_iter().find(|(on, _)| *on) {
        Some((_, name)) => Err(ApiError::invalid(
            name,
            format!("`echo` cannot be combined with `{name}` here"),
        )
        .with_code("unsupported_parameter")),
        None => Ok(()),
    }
}

/// A token-id prompt is read as the text it encodes: where the vocabulary starts text with
/// BOS and the ids do not, BOS goes first (so `prompt: ids` answers as `prompt: text` does,
/// and clients that send `add_special_tokens: false` encodings, as lm-evaluation-harness
/// does, condition the model as it was trained). Returns how many tokens were put before the
/// given ones (0 or 1).
pub(crate) fn add_bos(app: &App, prompt: &mut lacuna::Prompt) -> usize {
    let lacuna::Prompt::Tokens(ids) = prompt else {
        return 0;
    };
    let tokenizer = app.scheduler.engine().tokenizer();
    let vocab = tokenizer.vocab();
    match vocab.special().bos {
        Some(bos) if vocab.add_bos() && ids.first() != Some(&bos) => {
            ids.insert(0, bos);
            1
        }
        _ => 0,
    }
}

/// Scorings running at once, across servers of this process (each holds a blocking thread
/// for its whole run; their forward passes batch with the generations'). Set from the first
/// server's `max_concurrent`.
static SCORING: OnceLock<Semaphore> = OnceLock::new();

/// Answers an `echo` request: the prompt scored when `logprobs` asks, then the generation
/// (none when `max_tokens` is 0), as one completion.
pub(crate) async fn respond(
    app: &Arc<App>,
    id: &RequestId,
    mut request: ApiRequest,
    added: usize,
) -> Result<Response, ApiError> {
    let engine = Arc::clone(app.scheduler.engine());
    let prompt = request.prompt.clone();
    let mut scoring = request.settings.scoring();
    if request.settings.likelihood_samples.is_none() {
        scoring.samples = app.config.likelihood_samples;
    }
    let wants_logprobs = request.settings.logprobs.is_some();
    let cancel = CancelToken::new();
    let _guard = CancelOnDrop(cancel.clone());
    let permits = SCORING.get_or_init(|| Semaphore::new(app.config.max_concurrent.max(1)));
    let (tokens, scored) = {
        let _permit = if wants_logprobs {
            Some(
                permits
                    .acquire()
                    .await
                    .map_err(|_| ApiError::shutting_down())?,
            )
        } else {
            None
        };
        let cancel = cancel.clone();
        tokio::task::spawn_blocking(move || {
            let tokens = engine.prompt_tokens(&prompt)?;
            let scored = if wants_logprobs {
                Some(engine.score(&tokens, &scoring, &cancel)?)
            } else {
                None
            };
            Ok::<_, lacuna::Error>((tokens, scored))
        })
        .await
        .map_err(|e| ApiError::internal(format!("scoring the prompt panicked: {e}")))?
        .map_err(|e| ApiError::from_prepare(&e, "prompt", "response_format"))?
    };
    let tokenizer = Arc::clone(app.scheduler.engine().tokenizer());
    let pieces: Vec<Piece> = tokens
        .iter()
        .map(|&t| logprobs::piece(&tokenizer, t, 0.0))
        .collect();
    let prompt_text = match &request.prompt {
        lacuna::Prompt::Text(t) => t.clone(),
        _ => pieces[added..].iter().map(|p| p.text.as_str()).collect(),
    };
    let envelope = Envelope::new(Endpoint::Completion, &app.config.model_id, &id.0);
    let finished = if request.settings.gen_length == Some(0) {
        Box::new(Finished {
            index: 0,
            delta: String::new(),
            text: String::new(),
            finish_reason: "length",
            prompt_tokens: tokens.len(),
            completion_tokens: 0,
            output: None,
            logprobs: wants_logprobs.then(Vec::new),
            logprobs_sent: 0,
        })
    } else {
        request.echo = false;
        let Submitted {
            mut events,
            guard: _cancel_on_drop,
            ..
        } = submit(app, request, "prompt").await?;
        loop {
            match events.recv().await {
                Some(Event::Step { .. }) => {}
                Some(Event::Done(f)) => break f,
                Some(Event::Failed(e)) => return Err(e),
                None => {
                    return Err(ApiError::internal(
                        "the generation worker stopped without an answer",
                    ));
                }
            }
        }
    };
    let mut body = envelope.response(std::slice::from_ref(&finished));
    let choice = &mut body["choices"][0];
    choice["text"] = json!(format!("{prompt_text}{}", finished.text));
    if let Some(scored) = &scored {
        let generated = finished.logprobs.as_deref().unwrap_or_default();
        choice["logprobs"] = render(
            &tokenizer,
            &tokens,
            &pieces,
            added,
            scored,
            generated,
            prompt_text.len(),
        );
    }
    Ok(Json(body).into_response())
}

/// The legacy `logprobs` object over the prompt's tokens (less the `added` BOS) then the
/// generated ones (`text_offset` of the generated ones from the end of the echoed text).
fn render(
    tokenizer: &lacuna::tokenizer::Tokenizer,
    ids: &[u32],
    pieces: &[Piece],
    added: usize,
    scored: &EchoLogprobs,
    generated: &[logprobs::Entry],
    prompt_len: usize,
) -> Value {
    let mut tokens = Vec::new();
    let mut values = Vec::new();
    let mut top = Vec::new();
    let mut offsets = Vec::new();
    let mut at = 0;
    for (i, p) in pieces.iter().enumerate().skip(added) {
        tokens.push(json!(p.text));
        offsets.push(json!(at));
        at += p.text.len();
        let value = scored.logprobs.get(i).copied().flatten();
        values.push(value.map_or(Value::Null, finite));
        let alternatives = scored.top.get(i).filter(|t| !t.is_empty());
        top.push(match (alternatives, value) {
            (Some(alts), Some(v)) => {
                let mut m = serde_json::Map::new();
                for &(t, lp) in alts {
                    let text = logprobs::piece(tokenizer, t, 0.0).text;
                    m.entry(text)
                        .or_insert(finite(if ids[i] == t { v } else { lp }));
                }
                Value::Object(m)
            }
            _ => Value::Null,
        });
    }
    let rest = logprobs::render(Endpoint::Completion, generated, prompt_len);
    for (key, out) in [
        ("tokens", &mut tokens),
        ("token_logprobs", &mut values),
        ("top_logprobs", &mut top),
        ("text_offset", &mut offsets),
    ] {
        if let Some(items) = rest[key].as_array() {
            out.extend(items.iter().cloned());
        }
    }
    json!({
        "tokens": tokens,
        "token_logprobs": values,
        "top_logprobs": top,
        "text_offset": offsets,
    })
}

/// A finite number as JSON (the lowest f64 stands for −∞).
fn finite(v: f64) -> Value {
    json!(if v.is_finite() { v } else { f64::MIN })
}
