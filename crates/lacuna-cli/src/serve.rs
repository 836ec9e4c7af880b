//! `lacuna serve`: the OpenAI-compatible HTTP server (crate `lacuna-server`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use lacuna::SharedEngine;
use lacuna_server::{ServerConfig, serve, shutdown_signal};

use crate::run::ModelArgs;

/// Arguments of `lacuna serve`.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Address to bind (loopback by default; use 0.0.0.0 to serve the network, with
    /// --api-key).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Require `Authorization: Bearer KEY` on every /v1/ request (default: $LACUNA_API_KEY).
    #[arg(long, env = "LACUNA_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Generations running at once; their forward passes run in batches.
    #[arg(long, default_value_t = 4)]
    max_concurrent: usize,
    /// Canvases' passes per batched forward (1: one pass at a time, in arrival order).
    #[arg(long, default_value_t = lacuna::batch::DEFAULT_MAX_PASSES)]
    max_batch: usize,
    /// Positions run through the layers per batched forward (default: as many as the
    /// batch's quantized activations fit in this CPU's L2 cache, 64 to 1024).
    #[arg(long)]
    max_batch_tokens: Option<usize>,
    /// Requests that may wait for a free slot; beyond that, 429.
    #[arg(long, default_value_t = 16)]
    queue: usize,
    /// The model id clients send in `model` (default: the file name without .gguf, or
    /// lacuna-demo).
    #[arg(long)]
    alias: Option<String>,
    /// Largest request body in bytes (larger is 413).
    #[arg(long, default_value_t = 4 << 20)]
    max_body: usize,
    /// Seconds running generations may take to finish after SIGINT/SIGTERM before they are
    /// cancelled.
    #[arg(long, default_value_t = 30)]
    shutdown_grace: u64,
    /// Mask sets per estimate when scoring an `echo` prompt names none (fewer: faster, more
    /// sampling error; estimates with no more sets than this are exact).
    #[arg(long, default_value_t = lacuna::likelihood::DEFAULT_SAMPLES)]
    likelihood_samples: usize,
}

/// The id a model is served under.
fn model_id(a: &ServeArgs) -> String {
    if let Some(alias) = &a.alias {
        return alias.clone();
    }
    match &a.model.model {
        Some(m) if a.model.demo.is_none() => {
            let s = m.to_string_lossy();
            match s.strip_prefix("hf:") {
                Some(reference) => reference.to_string(),
                None => m
                    .file_stem()
                    .map_or_else(|| s.to_string(), |f| f.to_string_lossy().into_owned()),
            }
        }
        _ => match a.model.demo.unwrap_or_default() {
            lacuna::Demo::Kjv => "lacuna-demo".to_string(),
            other => format!("lacuna-demo-{other}"),
        },
    }
}

/// Loads the model and serves until SIGINT/SIGTERM.
pub(crate) fn run(a: ServeArgs) -> Result<()> {
    if a.max_concurrent == 0 {
        bail!("--max-concurrent must be at least 1");
    }
    if a.max_batch == 0 || a.max_batch_tokens == Some(0) {
        bail!("--max-batch and --max-batch-tokens must be at least 1");
    }
    if !(1..=lacuna::likelihood::MAX_SAMPLES).contains(&a.likelihood_samples) {
        bail!(
            "--likelihood-samples must be between 1 and {}",
            lacuna::likelihood::MAX_SAMPLES
        );
    }
    let engine = a.model.load().context("loading the model")?;
    let mut limits = lacuna::BatchLimits::for_width(engine.model().config().n_embd);
    limits.max_passes = a.max_batch;
    if let Some(t) = a.max_batch_tokens {
        limits.max_tokens = t;
    }
    let mut config = ServerConfig::new(model_id(&a));
    config.api_key = a.api_key.clone().filter(|k| !k.is_empty());
    config.max_concurrent = a.max_concurrent;
    config.queue = a.queue;
    config.max_body = a.max_body;
    config.shutdown_grace = Duration::from_secs(a.shutdown_grace);
    config.likelihood_samples = a.likelihood_samples;
    let addr = format!("{}:{}", a.host, a.port);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        // I/O only: the forwards run on the engine's own threads.
        .worker_threads(2)
        .thread_name("lacuna-io")
        .enable_all()
        .build()
        .context("starting the I/O runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local: SocketAddr = listener.local_addr()?;
        let ip = local.ip();
        if !ip.is_loopback() && config.api_key.is_none() {
            eprintln!(
                "warning: serving on {ip} without --api-key: anyone who can reach this port can \
                 use the model"
            );
        }
        eprintln!(
            "lacuna serve: {} ({}, {} threads, up to {} concurrent, queue {}, batches of up to {} \
             passes / {} positions) on http://{local}/  (OpenAI API at http://{local}/v1; Ctrl-C \
             stops)",
            config.model_id,
            engine.arch().name(),
            engine.threads(),
            config.max_concurrent,
            config.queue,
            limits.max_passes,
            limits.max_tokens,
        );
        serve(
            listener,
            SharedEngine::with_limits(engine, limits),
            config,
            shutdown_signal(),
        )
        .await
        .context("serving")?;
        eprintln!("lacuna serve: stopped");
        Ok(())
    })
}
