//! The HTTP routes: handlers parse and check, hand the generation to the scheduler, and
//! turn its events into OpenAI responses or SSE chunks.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use lacuna::{CancelToken, Prepared};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::ServerConfig;
use crate::error::ApiError;
use crate::params::{self, ApiRequest, Endpoint};
use crate::respond::Envelope;
use crate::scheduler::{Event, Job, Scheduler};

/// What every handler shares.
pub(crate) struct App {
    /// The queue and workers.
    pub(crate) scheduler: Arc<Scheduler>,
    /// The settings.
    pub(crate) config: ServerConfig,
    /// When the server started (Unix seconds), for `/v1/models`.
    pub(crate) started: u64,
}

/// The request id of a request: the client's `X-Request-ID` or a fresh one.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub String);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Echoes `X-Request-ID` (or makes one) on every response.
pub(crate) async fn request_id(mut req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string);
    let id = given.unwrap_or_else(|| {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        format!("{pid:x}{n:08x}")
    });
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut resp = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// `Authorization: Bearer KEY` on `/v1/` when the server has a key.
pub(crate) async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    if let Some(key) = &app.config.api_key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), key.as_bytes())) {
            return ApiError::unauthorized().into_response();
        }
    }
    next.run(req).await
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 404 for unknown routes, as an OpenAI error.
pub(crate) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::unknown_route(method.as_str(), uri.path())
}

/// 405 for a known route with another method.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), uri.path())
}

/// `GET /health`: 200 while serving, 503 once shutdown began.
pub(crate) async fn health(State(app): State<Arc<App>>) -> Response {
    let s = &app.scheduler;
    let m = &s.metrics;
    let body = json!({
        "status": if s.shutting_down() { "shutting_down" } else { "ok" },
        "model": app.config.model_id,
        "active": m.active.load(Ordering::Acquire),
        "queued": m.queued.load(Ordering::Acquire),
    });
    let status = if s.shutting_down() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

fn model_object(app: &App) -> serde_json::Value {
    let e = app.scheduler.engine();
    json!({
        "id": app.config.model_id,
        "object": "model",
        "created": app.started,
        "owned_by": "lacuna",
        "architecture": e.arch().name(),
        "name": e.name(),
        "context_length": e.context_length(),
        "chat_template": e.has_chat_template(),
    })
}

/// `GET /v1/models`.
pub(crate) async fn models(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({"object": "list", "data": [model_object(&app)]}))
}

/// `GET /v1/models/{id}`.
pub(crate) async fn model(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    if id == app.config.model_id {
        Json(model_object(&app)).into_response()
    } else {
        ApiError::unknown_model(&id, &app.config.model_id).into_response()
    }
}

/// `GET /metrics`: Prometheus text.
pub(crate) async fn metrics(State(app): State<Arc<App>>) -> Response {
    let text = crate::metrics::render(&app.scheduler);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `GET /`: the chat page.
pub(crate) async fn page() -> Html<&'static str> {
    Html(crate::page::INDEX_HTML)
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat(
    State(app): State<Arc<App>>,
    Extension(id): Extension<RequestId>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    completion(app, id, body, Endpoint::Chat).await
}

/// `POST /v1/completions`.
pub(crate) async fn completions(
    State(app): State<Arc<App>>,
    Extension(id): Extension<RequestId>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    completion(app, id, body, Endpoint::Completion).await
}

/// `POST /infill`: llama-server's fill-in-the-middle request (see [`crate::infill`]).
pub(crate) async fn infill(
    State(app): State<Arc<App>>,
    Extension(id): Extension<RequestId>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    completion(app, id, body, Endpoint::Infill).await
}

/// Cancels the generation when dropped: the handler's future (or the stream) is dropped
/// when the client goes away. Cancelling a finished generation does nothing.
pub(crate) struct CancelOnDrop(pub(crate) CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

async fn completion(
    app: Arc<App>,
    id: RequestId,
    body: Result<Bytes, BytesRejection>,
    endpoint: Endpoint,
) -> Response {
    match start(&app, &id, body, endpoint).await {
        Ok(response) => response,
        Err(e) => {
            if e.status.is_server_error() {
                tracing::warn!(request_id = %id.0, error = %e, "request failed");
            } else {
                tracing::debug!(request_id = %id.0, error = %e, "request refused");
            }
            e.into_response()
        }
    }
}

/// The body, or the error that says why it could not be read (413 over the limit).
pub(crate) fn read_body(app: &App, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(app.config.max_body)
        } else {
            ApiError::bad_request(format!("cannot read the request body: {}", r.body_text()))
        }
    })
}

async fn start(
    app: &Arc<App>,
    id: &RequestId,
    body: Result<Bytes, BytesRejection>,
    endpoint: Endpoint,
) -> Result<Response, ApiError> {
    let body = read_body(app, body)?;
    if app.scheduler.shutting_down() {
        return Err(ApiError::shutting_down());
    }
    let request = params::parse(&body, endpoint)?;
    let unnamed = endpoint == Endpoint::Infill && request.model.is_empty();
    if !unnamed && request.model != app.config.model_id {
        return Err(ApiError::unknown_model(
            &request.model,
            &app.config.model_id,
        ));
    }
    let mut request = request;
    let bos = crate::echo::add_bos(app, &mut request.prompt);
    if request.echo {
        return crate::echo::respond(app, id, request, bos).await;
    }
    let prompt_param = match endpoint {
        Endpoint::Chat => "messages",
        Endpoint::Completion => "prompt",
        Endpoint::Infill => "input_prefix",
    };
    let Submitted {
        request,
        events,
        guard,
    } = submit(app, request, prompt_param).await?;
    let envelope =
        Envelope::new(endpoint, &app.config.model_id, &id.0).with_tools(request.tools.clone());
    if request.stream {
        Ok(stream(envelope, request, events, guard).into_response())
    } else {
        collect(envelope, request.n, events, guard).await
    }
}

/// A generation handed to the scheduler.
pub(crate) struct Submitted {
    /// The request as prepared (a default `max_tokens` may have shrunk to fit the context).
    pub(crate) request: ApiRequest,
    /// The workers' events: per choice, steps then its `Done`, or one `Failed`.
    pub(crate) events: mpsc::Receiver<Event>,
    /// Cancels the generation when dropped (the client went away).
    pub(crate) guard: CancelOnDrop,
}

/// Prepares every choice of `request` off the I/O threads and queues the job. The engine's
/// refusals name `prompt_param` for the prompt and the request's constraint parameter.
pub(crate) async fn submit(
    app: &App,
    request: ApiRequest,
    prompt_param: &str,
) -> Result<Submitted, ApiError> {
    let engine = Arc::clone(app.scheduler.engine());
    let constraint_param = request
        .constraint_param
        .clone()
        .unwrap_or_else(|| "response_format".to_string());
    // Tokenizing a long prompt and compiling a constraint are CPU work: off the I/O threads.
    let (request, prepared) =
        tokio::task::spawn_blocking(move || prepare_choices(&engine, request))
            .await
            .map_err(|e| ApiError::internal(format!("preparing the request panicked: {e}")))?
            .map_err(|e| match e {
                Rejected::Settings(e) => e,
                Rejected::Engine(e) => ApiError::from_prepare(&e, prompt_param, &constraint_param),
            })?;
    let cancel = CancelToken::new();
    let (tx, rx) = mpsc::channel(64);
    app.scheduler.submit(Job {
        prepared,
        stop: request.stop.clone(),
        include_canvas: request.include_canvas,
        cancel: cancel.clone(),
        events: tx,
    })?;
    Ok(Submitted {
        request,
        events: rx,
        guard: CancelOnDrop(cancel),
    })
}

/// [`prepare`], then every further choice of `n` (its seed `seed + i`).
fn prepare_choices(
    engine: &lacuna::SharedEngine,
    request: ApiRequest,
) -> Result<(ApiRequest, Vec<Prepared>), Rejected> {
    let (request, first) = prepare(engine, request)?;
    let mut all = vec![first];
    if request.n > 1 {
        let generate = request.generate_request(engine.arch())?;
        for i in 1..request.n {
            all.push(engine.prepare(&generate.for_choice(i))?);
        }
    }
    Ok((request, all))
}

/// Checks the request; a default `max_tokens` shrinks to what the context leaves.
fn prepare(
    engine: &lacuna::SharedEngine,
    mut request: ApiRequest,
) -> Result<(ApiRequest, Prepared), Rejected> {
    let arch = engine.arch();
    let generate = request.generate_request(arch)?;
    match engine.prepare(&generate) {
        Err(e) => match (given_tokens(&e), request.settings.gen_length) {
            (Some((given, context)), None) if given < context => {
                request.settings.gen_length =
                    Some((context - given).min(params::DEFAULT_MAX_TOKENS));
                let generate = request.generate_request(arch)?;
                let prepared = engine.prepare(&generate)?;
                Ok((request, prepared))
            }
            _ => Err(e.into()),
        },
        Ok(prepared) => Ok((request, prepared)),
    }
}

/// The tokens a request fixes (prompt, and an infill suffix) and the context, when the
/// generation length is what overflowed it.
fn given_tokens(e: &lacuna::Error) -> Option<(usize, usize)> {
    match *e {
        lacuna::Error::ContextOverflow {
            prompt, context, ..
        } => Some((prompt, context)),
        lacuna::Error::InfillContextOverflow {
            prompt,
            suffix,
            context,
            ..
        } => Some((prompt + suffix, context)),
        _ => None,
    }
}

/// Why [`prepare`] refused a request: its settings, or the engine.
enum Rejected {
    Settings(ApiError),
    Engine(lacuna::Error),
}

impl From<ApiError> for Rejected {
    fn from(e: ApiError) -> Self {
        Rejected::Settings(e)
    }
}

impl From<lacuna::Error> for Rejected {
    fn from(e: lacuna::Error) -> Self {
        Rejected::Engine(e)
    }
}

/// The whole response, once every one of the `n` choices is done.
async fn collect(
    envelope: Envelope,
    n: usize,
    mut rx: mpsc::Receiver<Event>,
    _guard: CancelOnDrop,
) -> Result<Response, ApiError> {
    let mut done: Vec<Box<crate::scheduler::Finished>> = Vec::with_capacity(n);
    while let Some(event) = rx.recv().await {
        match event {
            Event::Step { .. } => {}
            Event::Done(f) => {
                done.push(f);
                if done.len() == n {
                    done.sort_by_key(|f| f.index);
                    return Ok(Json(envelope.response(&done)).into_response());
                }
            }
            Event::Failed(e) => return Err(e),
        }
    }
    Err(ApiError::internal(
        "the generation worker stopped without an answer",
    ))
}

fn sse(value: &serde_json::Value) -> Result<SseEvent, Infallible> {
    Ok(SseEvent::default().data(value.to_string()))
}

/// The SSE response: chunks as steps settle text, the finish chunk, usage, `[DONE]`.
fn stream(
    envelope: Envelope,
    request: ApiRequest,
    mut events: mpsc::Receiver<Event>,
    guard: CancelOnDrop,
) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let _guard = guard; // dropped (cancelling) when this task ends, e.g. client gone
        let n = request.n;
        // Per choice: whether its first chunk went out, its log-probability offsets.
        let mut first = vec![true; n];
        let mut offsets: Vec<crate::logprobs::Offsets> =
            (0..n).map(|_| Default::default()).collect();
        let mut done = Vec::with_capacity(n);
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = tx.closed() => return, // client gone
            };
            let Some(event) = event else { return };
            let chunks = match event {
                Event::Step {
                    index,
                    delta,
                    canvas,
                    logprobs,
                } => {
                    // A tool-format answer goes out whole at the end (its text is not the
                    // message's content): only canvases stream.
                    let tools = envelope.tools.is_some();
                    if tools && canvas.is_none() {
                        continue;
                    }
                    let (delta, logprobs) = if tools {
                        (String::new(), None)
                    } else {
                        (delta, logprobs)
                    };
                    let text = (!delta.is_empty() || first[index]).then_some(delta.as_str());
                    let lp = logprobs.as_deref().map(|l| offsets[index].next(l));
                    let c = envelope.chunk(index, text, first[index], None, canvas, lp);
                    first[index] = false;
                    vec![sse(&c)]
                }
                Event::Done(f) => {
                    let i = f.index;
                    let mut out = Vec::new();
                    let mut finish_reason = f.finish_reason;
                    if envelope.tools.is_some() {
                        let a = envelope.answer(&f);
                        finish_reason = a.finish_reason;
                        out.push(sse(&envelope.answer_chunk(i, first[i], &a)));
                    } else {
                        let rest = f
                            .logprobs
                            .as_deref()
                            .map(|l| l.get(f.logprobs_sent..).unwrap_or_default())
                            .filter(|l| !l.is_empty());
                        if !f.delta.is_empty() || first[i] || rest.is_some() {
                            let lp = rest.map(|l| offsets[i].next(l));
                            out.push(sse(&envelope.chunk(
                                i,
                                Some(&f.delta),
                                first[i],
                                None,
                                None,
                                lp,
                            )));
                        }
                    }
                    first[i] = false;
                    out.push(sse(&envelope.chunk(
                        i,
                        None,
                        false,
                        Some(finish_reason),
                        None,
                        None,
                    )));
                    done.push(f);
                    if done.len() == n {
                        done.sort_by_key(|f| f.index);
                        if request.include_usage {
                            out.push(sse(&envelope.usage_chunk(&done)));
                        }
                        if let Some(last) = envelope.infill_last(&done[0]) {
                            // llama-server's stream ends with its `stop: true` object, no
                            // [DONE].
                            out.truncate(out.len().saturating_sub(1));
                            out.push(sse(&last));
                        } else {
                            out.push(Ok(SseEvent::default().data("[DONE]")));
                        }
                    }
                    let end = done.len() == n;
                    for c in out {
                        if tx.send(c).await.is_err() {
                            return;
                        }
                    }
                    if end {
                        return;
                    }
                    continue;
                }
                Event::Failed(e) => {
                    let _ = tx.send(sse(&e.body())).await;
                    let _ = tx.send(Ok(SseEvent::default().data("[DONE]"))).await;
                    return;
                }
            };
            for c in chunks {
                if tx.send(c).await.is_err() {
                    return;
                }
            }
        }
    });
    Sse::new(ReceiverStream::new(rx)).keep_alive(KeepAlive::new().interval(Duration::from_secs(5)))
}
