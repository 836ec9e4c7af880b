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
        "Forward passes run.",
        engine.forwards as f64,
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
