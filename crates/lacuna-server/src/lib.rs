//! `lacuna serve`: an OpenAI-compatible HTTP server over a [`lacuna::SharedEngine`].
//!
//! A thin shell: `axum`/`tokio` do I/O only. Generations run on their own worker threads
//! (`max_concurrent` of them, interleaved step by step on the one model) fed by a bounded
//! queue; handlers talk to them through channels, so no forward pass ever runs on an I/O
//! thread. Endpoints: `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`,
//! `GET /v1/models/{id}`, `GET /health`, `GET /metrics`, Ollama's API under `/api/`
//! (`chat`, `generate`, `tags`, `show`, `ps`, `version`), and a chat page at `/` that draws
//! the canvas denoising live.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use lacuna::{Engine, EngineOptions, SharedEngine};
//! use lacuna_server::{ServerConfig, serve};
//! let engine = SharedEngine::new(Engine::demo(&EngineOptions::default()).unwrap());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, engine, ServerConfig::new("lacuna-demo"), lacuna_server::shutdown_signal()).await
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use lacuna::SharedEngine;

mod canvas;
mod echo;
mod error;
mod infill;
mod logprobs;
mod metrics;
mod ollama;
mod page;
mod params;
mod respond;
mod routes;
mod scheduler;
mod text;
mod tokenize;

pub use axum::Router;
pub use error::ApiError;
pub use params::{DEFAULT_MAX_TOKENS, generate_request};

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The id clients name in `model` (and `/v1/models` lists).
    pub model_id: String,
    /// When set, every `/v1/` request needs `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Generations running at once (interleaved step by step). Default 4.
    pub max_concurrent: usize,
    /// Requests waiting beyond those; more are 429. Default 16.
    pub queue: usize,
    /// Largest request body in bytes; larger is 413. Default 4 MiB.
    pub max_body: usize,
    /// After a shutdown signal, how long running generations may finish before they are
    /// cancelled. Default 30 s.
    pub shutdown_grace: Duration,
    /// Mask sets per likelihood estimate when an `echo` request names none
    /// (`diffusion.likelihood_samples`). Default [`lacuna::likelihood::DEFAULT_SAMPLES`].
    pub likelihood_samples: usize,
}

impl ServerConfig {
    /// The defaults, serving `model_id`.
    pub fn new(model_id: impl Into<String>) -> Self {
        Self {
            model_id: model_id.into(),
            api_key: None,
            max_concurrent: 4,
            queue: 16,
            max_body: 4 << 20,
            shutdown_grace: Duration::from_secs(30),
            likelihood_samples: lacuna::likelihood::DEFAULT_SAMPLES,
        }
    }
}

/// A server's shared state, made by [`Server::new`]: its router and its scheduler.
pub struct Server {
    app: Arc<routes::App>,
}

impl Server {
    /// Starts the generation workers over `engine`.
    pub fn new(engine: SharedEngine, config: ServerConfig) -> Self {
        let scheduler =
            scheduler::Scheduler::start(Arc::new(engine), config.max_concurrent, config.queue);
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            app: Arc::new(routes::App {
                scheduler,
                config,
                started,
            }),
        }
    }

    /// The routes.
    pub fn router(&self) -> Router {
        let app = Arc::clone(&self.app);
        let v1 = Router::new()
            .route("/chat/completions", post(routes::chat))
            .route("/completions", post(routes::completions))
            .route("/models", get(routes::models))
            .route("/models/{id}", get(routes::model))
            .route_layer(axum::middleware::from_fn_with_state(
                Arc::clone(&app),
                routes::auth,
            ));
        let infill = Router::new()
            .route("/infill", post(routes::infill))
            .route("/tokenize", post(tokenize::tokenize))
            .route("/detokenize", post(tokenize::detokenize))
            .route("/tokenizer_info", get(tokenize::tokenizer_info))
            .route_layer(axum::middleware::from_fn_with_state(
                Arc::clone(&app),
                routes::auth,
            ));
        Router::new()
            .merge(infill)
            .route("/", get(routes::page))
            .route("/health", get(routes::health))
            .route("/metrics", get(routes::metrics))
            .nest("/v1", v1)
            .nest("/api", ollama::router(&app))
            .fallback(routes::not_found)
            .method_not_allowed_fallback(routes::method_not_allowed)
            .layer(DefaultBodyLimit::max(app.config.max_body))
            .layer(axum::middleware::from_fn(routes::request_id))
            .with_state(app)
    }

    /// Stops taking requests (503), lets running ones finish for the grace period, then
    /// cancels what is left. Returns when nothing is in flight.
    pub async fn drain(&self) {
        let s = &self.app.scheduler;
        s.begin_shutdown();
        let deadline = tokio::time::Instant::now() + self.app.config.shutdown_grace;
        while s.in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if s.in_flight() > 0 {
            tracing::warn!(
                in_flight = s.in_flight(),
                "shutdown grace period over; cancelling"
            );
            s.cancel_all();
            while s.in_flight() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Serves `engine` on `listener` until `shutdown` resolves, then drains (see
/// [`Server::drain`]) and returns once every connection has closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: SharedEngine,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = Arc::new(Server::new(engine, config));
    let router = server.router();
    let drainer = Arc::clone(&server);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutdown signal: finishing in-flight requests");
            drainer.drain().await;
        })
        .await
}

/// Serves `router` ([`Server::router`]) on `listener` with no shutdown handling (for
/// embedding the server in a program that stops it by ending).
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
) -> std::io::Result<()> {
    axum::serve(listener, router).await
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
