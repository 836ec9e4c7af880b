//! `/metrics` in Prometheus' text format: queue depth, active canvases, steps and tokens
//! per second, and counters.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::scheduler::{RATE_WINDOW, Scheduler};

/// The exposition text.
pub(crate) fn render(s: &Scheduler) -> String {
    let m = &s.metrics;
    let (steps_s, tokens_s) = m.rates();
    let engine = s.engine().stats();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(out, "# HELP lacuna_{name} {help}");
        let _ = writeln!(out, "# TYPE lacuna_{name} {kind}");
        let _ = writeln!(out, "lacuna_{name} {value}");
    };
    let window = RATE_WINDOW.as_secs();
    metric(
        "queue_depth",
        "gauge",
        "Requests waiting for a generation worker.",
        m.queued.load(Ordering::Acquire) as f64,
    );
    metric(
        "active_canvases",
        "gauge",
        "Generations running (canvases being denoised).",
        m.active.load(Ordering::Acquire) as f64,
    );
    metric(
        "max_concurrent",
        "gauge",
        "Generation workers (--max-concurrent).",
        s.max_concurrent() as f64,
    );
    metric(
        "steps_per_second",
        "gauge",
        &format!("Denoising steps per second over the last {window} s."),
        steps_s,
    );
    metric(
        "tokens_per_second",
        "gauge",
        &format!("Generated tokens committed per second over the last {window} s."),
        tokens_s,
    );
    metric(
        "steps_total",
        "counter",
        "Denoising steps run.",
        engine.steps as f64,
    );
    metric(
        "generated_tokens_total",
        "counter",
        "Generated tokens committed.",
        engine.committed as f64,
    );
    metric(
        "forwards_total",
        "counter",
        "Forward passes run (a batch of canvases is one).",
        engine.forwards as f64,
    );
    metric(
        "canvas_passes_total",
        "counter",
        "Canvases' passes run, over all batches.",
        engine.passes as f64,
    );
    histogram(
        &mut out,
        "batch_passes",
        "Canvases per batched forward.",
        &lacuna::batch::PASS_BUCKETS,
        &engine.batch_passes,
    );
    histogram(
        &mut out,
        "batch_tokens",
        "Positions run through the layers per batched forward.",
        &lacuna::batch::TOKEN_BUCKETS,
        &engine.batch_tokens,
    );
    let _ = writeln!(
        out,
        "# HELP lacuna_requests_total Generation requests by outcome."
    );
    let _ = writeln!(out, "# TYPE lacuna_requests_total counter");
    for (outcome, v) in [
        ("completed", &m.completed),
        ("cancelled", &m.cancelled),
        ("failed", &m.failed),
        ("rejected", &m.rejected),
    ] {
        let _ = writeln!(
            out,
            "lacuna_requests_total{{outcome=\"{outcome}\"}} {}",
            v.load(Ordering::Relaxed)
        );
    }
    out
}

/// A Prometheus histogram: cumulative `_bucket{le=..}` lines, `_sum`, `_count`.
fn histogram(out: &mut String, name: &str, help: &str, bounds: &[u64], h: &lacuna::Histogram) {
    let _ = writeln!(out, "# HELP lacuna_{name} {help}");
    let _ = writeln!(out, "# TYPE lacuna_{name} histogram");
    let mut cumulative = 0;
    for (i, b) in bounds.iter().enumerate() {
        cumulative += h.counts[i];
        let _ = writeln!(out, "lacuna_{name}_bucket{{le=\"{b}\"}} {cumulative}");
    }
    let _ = writeln!(out, "lacuna_{name}_bucket{{le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(out, "lacuna_{name}_sum {}", h.sum);
    let _ = writeln!(out, "lacuna_{name}_count {}", h.count);
}
