//! What both benchmarks report: layouts, peak memory, dates, the floor of a step.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, Result};
use lacuna::models::{Device, PartTimes, WeightLayout};
use lacuna::{Engine, EngineOptions};

/// Loads `model` for a benchmark, the error naming the file.
pub(crate) fn load_engine(
    model: &Path,
    threads: Option<usize>,
    weights: WeightLayout,
    device: Device,
) -> Result<Engine> {
    let options = EngineOptions {
        threads,
        weights,
        device,
    };
    Engine::load(model, &options)
        .map_err(crate::run::flat)
        .with_context(|| format!("loading {}", model.display()))
}

/// The machine's two limits on the benchmark's threads, measured once the model is loaded:
/// memory read bandwidth and the active path's int8 peak.
pub(crate) struct Probe {
    read_gb_s: f64,
    int8_tops: f64,
}

impl Probe {
    /// Measures both on `threads` threads (about a second); `None` off the CPU backend or
    /// when no path runs here.
    pub(crate) fn measure(threads: usize, cpu: bool) -> Option<Probe> {
        if !cpu {
            return None;
        }
        let path = lacuna::cpu::Path::active().ok()?;
        // The probe reads a buffer of its own (512 MiB): no part of the model's memory, so
        // the peak so far is kept and the kernel's high-water mark reset after it.
        let before = peak_rss_bytes();
        let bw = lacuna::cpu::peak::read_bandwidth(
            threads.max(1),
            lacuna::cpu::peak::DEFAULT_PROBE_BYTES,
            5,
        );
        forget_probe_peak(before);
        let bw = bw.ok()?;
        let ops = lacuna::cpu::peak::int8_peak(path, threads.max(1)).ok()?;
        Some(Probe {
            read_gb_s: bw.gb_per_s(),
            int8_tops: ops / 1e12,
        })
    }

    /// The floor of a step that did the mean work of the passes between `before` and
    /// `after`, and how `step_ms` compares with it (the `figures.floor` object of a
    /// result).
    pub(crate) fn floor(
        &self,
        before: &PartTimes,
        after: &PartTimes,
        step_ms: f64,
    ) -> serde_json::Value {
        let (ops, file_bytes, held_bytes) = after.work_per_pass_since(before);
        let bandwidth_ms = file_bytes / (self.read_gb_s * 1e9) * 1e3;
        let compute_ms = ops / (self.int8_tops * 1e12) * 1e3;
        let floor_ms = bandwidth_ms.max(compute_ms);
        serde_json::json!({
            "read_gb_s": self.read_gb_s,
            "int8_tops": self.int8_tops,
            "ops_per_step": ops,
            "file_bytes_per_step": file_bytes,
            "held_bytes_per_step": held_bytes,
            "bandwidth_ms": bandwidth_ms,
            "compute_ms": compute_ms,
            "floor_ms": floor_ms,
            "binds": if bandwidth_ms >= compute_ms { "bandwidth" } else { "compute" },
            "ratio": step_ms / floor_ms,
        })
    }
}

/// One line of a floor object for the text output.
pub(crate) fn floor_line(f: &serde_json::Value) -> String {
    format!(
        "floor {:.1} ms ({} binds: {:.2} GB of weights at {:.1} GB/s = {:.1} ms, {:.1} GOP at \
         {:.2} TOP/s = {:.1} ms); step is {:.2}x the floor",
        f["floor_ms"].as_f64().unwrap_or(0.0),
        f["binds"].as_str().unwrap_or("?"),
        f["file_bytes_per_step"].as_f64().unwrap_or(0.0) / 1e9,
        f["read_gb_s"].as_f64().unwrap_or(0.0),
        f["bandwidth_ms"].as_f64().unwrap_or(0.0),
        f["ops_per_step"].as_f64().unwrap_or(0.0) / 1e9,
        f["int8_tops"].as_f64().unwrap_or(0.0),
        f["compute_ms"].as_f64().unwrap_or(0.0),
        f["ratio"].as_f64().unwrap_or(0.0),
    )
}

/// The peak resident set size before the bandwidth probe, once the probe's peak was
/// forgotten (0: not forgotten).
static PEAK_BEFORE_PROBE: AtomicU64 = AtomicU64::new(0);

/// Whether the probe's buffer was left out of [`peak_rss_bytes`].
static PROBE_FORGOTTEN: AtomicBool = AtomicBool::new(false);

/// Resets the kernel's high-water mark to the current resident set (the probe's buffer
/// freed), keeping `before`, the peak before the probe, for [`peak_rss_bytes`]. Where the
/// reset is refused (`/proc/self/clear_refs` not writable), the peak keeps the probe in.
fn forget_probe_peak(before: Option<u64>) {
    let Some(before) = before else {
        return;
    };
    // "5" resets the peak RSS to the current RSS (Linux 4.0+, proc(5)).
    if std::fs::write("/proc/self/clear_refs", "5").is_ok() {
        PEAK_BEFORE_PROBE.fetch_max(before, Ordering::Relaxed);
        PROBE_FORGOTTEN.store(true, Ordering::Relaxed);
    }
}

/// Whether [`peak_rss_bytes`] leaves the bandwidth probe's buffer out (it does wherever the
/// kernel lets the high-water mark be reset).
pub(crate) fn peak_excludes_probe() -> bool {
    PROBE_FORGOTTEN.load(Ordering::Relaxed)
}

/// Peak resident set size of this process (`VmHWM`), in bytes: the model's load and run,
/// not the bandwidth probe's buffer (see [`peak_excludes_probe`]).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hwm = crate::doctor::meminfo_bytes(&status, "VmHWM")?;
    Some(hwm.max(PEAK_BEFORE_PROBE.load(Ordering::Relaxed)))
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// RFC 3339 UTC time of `secs` since the epoch.
pub(crate) fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// How a backend keeps weights: compact or repacked on the CPU, repacked for the tensor
/// cores on a GPU.
pub(crate) fn layout_name(cpu_compact: Option<bool>) -> &'static str {
    match cpu_compact {
        Some(true) => "compact",
        Some(false) => "repacked",
        None => "device-repacked",
    }
}

#[cfg(test)]
mod tests;
