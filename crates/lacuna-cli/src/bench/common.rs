//! What both benchmarks report: layouts, peak memory, dates.

/// Peak resident set size of this process (`VmHWM`), in bytes.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    crate::doctor::meminfo_bytes(&status, "VmHWM")
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
