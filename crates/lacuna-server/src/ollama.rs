//! Ollama's API on the same server, so that applications that speak it (Open WebUI,
//! Continue, the `ollama` Python client) use Lacuna as their backend: `POST /api/chat` and
//! `POST /api/generate` (NDJSON streams by default, one JSON object with `"stream": false`),
//! `GET /api/tags`, `POST /api/show`, `GET /api/ps` and `GET /api/version`.
//!
//! A request is read into the same [`crate::params::ApiRequest`] the OpenAI endpoints build
//! (`options.num_predict` is `max_tokens`, `options.diffusion` is the `diffusion` object,
//! `format` a structured-output constraint, `tools` tool calls) and runs through the same
//! scheduler ([`crate::routes::submit`]); only the answer's shape differs. Every error is
//! Ollama's `{"error": "message"}` with the HTTP status the OpenAI endpoints would give, the
//! message naming the Ollama field. What Ollama offers that a diffusion model cannot do
//! (resuming a `context`, autoregressive penalties, images, embeddings, thinking, pulling
//! models) is a 400 that says why. See `docs/ollama.md`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::json;

use crate::error::ApiError;
use crate::routes::{self, App, RequestId, Submitted};

mod model;
mod reply;
mod request;

pub(crate) use request::Kind;

/// The Ollama release whose API (its `docs/api.md`) these endpoints follow, which
/// `/api/version` reports: clients compare it with the least version they need.
pub(crate) const OLLAMA_VERSION: &str = "0.32.15";

/// The `/api` routes (nested under `/api` by [`crate::Server::router`]), behind the API key
/// when the server has one.
pub(crate) fn router(app: &Arc<App>) -> Router<Arc<App>> {
    Router::new()
        .route("/chat", post(chat))
        .route("/generate", post(generate))
        .route("/tags", get(tags))
        .route("/show", post(show))
        .route("/ps", get(ps))
        .route("/version", get(version))
        .route("/embed", post(embeddings))
        .route("/embeddings", post(embeddings))
        .route_layer(axum::middleware::from_fn_with_state(Arc::clone(app), auth))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

/// Ollama's error body, `{"error": message}`, with the error's status; the message names
/// Ollama's fields where the OpenAI request vocabulary has other names.
pub(crate) fn error_response(e: &ApiError) -> Response {
    (e.status, Json(json!({"error": message(e)}))).into_response()
}

/// The error's message in Ollama's field names: `max_tokens` is `options.num_predict`, the
/// sampler settings and the `diffusion` object live in `options`, and `response_format` is
/// `format`. An engine refusal that names no field is prefixed with the field at fault.
fn message(e: &ApiError) -> String {
    let param = e.param.as_deref().map(field);
    if e.code == Some("unsupported_parameter") && e.message.starts_with("unknown field") {
        if let Some(p) = param.as_deref().filter(|p| p.starts_with("options.")) {
            return format!(
                "unknown option `{p}`: not one of Ollama's options (Lacuna's own settings go \
                 in `options.diffusion`)"
            );
        }
    }
    let mut out = String::with_capacity(e.message.len());
    let mut rest = e.message.as_str();
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(&rest[..=open]);
        out.push_str(&field(&rest[open + 1..open + 1 + len]));
        out.push('`');
        rest = &rest[open + 2 + len..];
    }
    out.push_str(rest);
    match param {
        Some(p) if !e.message.contains('`') && e.code == Some("unsupported_parameter") => {
            format!("`{p}`: {out}")
        }
        _ => out,
    }
}

/// A request field of the OpenAI vocabulary as Ollama's request spells it.
fn field(name: &str) -> String {
    match name {
        "max_tokens" | "max_completion_tokens" => "options.num_predict".to_string(),
        "temperature" | "top_p" | "top_k" | "seed" | "stop" => format!("options.{name}"),
        "diffusion" => "options.diffusion".to_string(),
        n if n.starts_with("diffusion.") => format!("options.{n}"),
        n if n.starts_with("response_format") => "format".to_string(),
        n => n.to_string(),
    }
}

/// Whether `name` names the served model: its id, or the id with Ollama's default tag
/// `:latest`.
pub(crate) fn serves(app: &App, name: &str) -> bool {
    let id = app.config.model_id.as_str();
    name == id || name == model::tagged(id)
}

/// 404 in Ollama's words for a model this server does not serve.
fn unknown_model(app: &App, name: &str) -> ApiError {
    let mut e = ApiError::unknown_model(name, &app.config.model_id);
    e.message = format!(
        "model '{name}' not found (this server serves '{}')",
        model::tagged(&app.config.model_id)
    );
    e
}

/// `Authorization: Bearer KEY` as on `/v1/`, the refusal in Ollama's shape (Ollama's clients
/// send `OLLAMA_API_KEY` as that header).
async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let resp = routes::auth(State(app), req, next).await;
    if resp.status() == StatusCode::UNAUTHORIZED {
        let e = ApiError::unauthorized();
        return error_response(&e);
    }
    resp
}

/// 404 for an `/api` path this server does not answer.
async fn not_found(method: Method, uri: Uri) -> Response {
    let path = path(&uri);
    let mut e = ApiError::unknown_route(method.as_str(), &path);
    e.message = format!(
        "{method} {path} is not served: lacuna serve answers /api/chat, /api/generate, \
         /api/tags, /api/show, /api/ps and /api/version, and serves the one model it started \
         with (nothing to pull, push, create, copy or delete)"
    );
    error_response(&e)
}

/// The request's whole path (a nested router sees it without its `/api` prefix).
fn path(uri: &Uri) -> String {
    format!("/api{}", uri.path())
}

/// 405 for an `/api` route with another method.
async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    error_response(&ApiError::method_not_allowed(method.as_str(), &path(&uri)))
}

/// `POST /api/embed` and `/api/embeddings`: refused.
async fn embeddings(uri: Uri) -> Response {
    let e = ApiError::bad_request(format!(
        "{} is not supported: the served model is a diffusion language model, which has no \
         embedding output",
        path(&uri)
    ));
    error_response(&e)
}

/// `POST /api/chat`.
async fn chat(
    State(app): State<Arc<App>>,
    Extension(id): Extension<RequestId>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    generation(&app, &id, body, Kind::Chat).await
}

/// `POST /api/generate`.
async fn generate(
    State(app): State<Arc<App>>,
    Extension(id): Extension<RequestId>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    generation(&app, &id, body, Kind::Generate).await
}

async fn generation(
    app: &Arc<App>,
    id: &RequestId,
    body: Result<Bytes, BytesRejection>,
    kind: Kind,
) -> Response {
    let arrived = Instant::now();
    match start(app, id, body, kind, arrived).await {
        Ok(response) => response,
        Err(e) => {
            if e.status.is_server_error() {
                tracing::warn!(request_id = %id.0, error = %e, "request failed");
            } else {
                tracing::debug!(request_id = %id.0, error = %e, "request refused");
            }
            error_response(&e)
        }
    }
}

async fn start(
    app: &Arc<App>,
    id: &RequestId,
    body: Result<Bytes, BytesRejection>,
    kind: Kind,
    arrived: Instant,
) -> Result<Response, ApiError> {
    let body = routes::read_body(app, body)?;
    if app.scheduler.shutting_down() {
        return Err(ApiError::shutting_down());
    }
    let decoded = request::decode(&body, kind)?;
    let name = decoded.model()?;
    if !serves(app, &name) {
        return Err(unknown_model(app, &name));
    }
    let engine = app.scheduler.engine();
    let served = request::Served {
        name: &name,
        context: engine.context_length(),
        chat_template: engine.has_chat_template(),
    };
    let Some(request) = decoded.request(&served)? else {
        // Nothing to generate: Ollama's answer that the model is loaded (it always is).
        return Ok(Json(reply::loaded(kind, &name)).into_response());
    };
    let prompt_param = match kind {
        Kind::Chat => "messages",
        Kind::Generate => "prompt",
    };
    let Submitted {
        request,
        events,
        guard,
    } = routes::submit(app, request, prompt_param).await?;
    let r = reply::Reply {
        kind,
        model: name,
        request_id: id.0.clone(),
        tools: request.tools.clone(),
        arrived,
        submitted: Instant::now(),
    };
    if request.stream {
        Ok(reply::stream(r, events, guard))
    } else {
        let answer = reply::collect(&r, events, guard).await?;
        Ok(Json(answer).into_response())
    }
}

/// `GET /api/tags`: the served model.
async fn tags(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({"models": [model::listed(&app)]}))
}

/// `GET /api/ps`: the served model, loaded for the server's lifetime.
async fn ps(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({"models": [model::running(&app)]}))
}

/// `GET /api/version`.
async fn version() -> Json<serde_json::Value> {
    Json(json!({"version": OLLAMA_VERSION, "lacuna": env!("CARGO_PKG_VERSION")}))
}

/// `POST /api/show`.
async fn show(State(app): State<Arc<App>>, body: Result<Bytes, BytesRejection>) -> Response {
    let shown = routes::read_body(&app, body).and_then(|body| {
        let (name, verbose) = request::show(&body)?;
        if !serves(&app, &name) {
            return Err(unknown_model(&app, &name));
        }
        Ok(model::shown(&app, verbose))
    });
    match shown {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_response(&e),
    }
}

#[cfg(test)]
mod tests;
