//! `lacuna doctor`: what this machine offers Lacuna, and what is missing for the rest.

use anyhow::Result;
use lacuna::cpu::Path;

/// Arguments of `lacuna doctor`.
#[derive(clap::Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// CPU flags (as `/proc/cpuinfo` spells them) each kernel path needs: its own and those of
/// the path it builds on.
pub(crate) fn required_flags(path: Path) -> Vec<&'static str> {
    let (base, own): (Option<Path>, &[&str]) = match path {
        Path::Scalar => (None, &[]),
        Path::Avx2 => (None, &["avx2", "fma"]),
        Path::AvxVnni => (Some(Path::Avx2), &["avx_vnni"]),
        Path::Avx512Vnni => (
            Some(Path::Avx2),
            &["avx512f", "avx512bw", "avx512vl", "avx512_vnni"],
        ),
        Path::Amx => (Some(Path::Avx512Vnni), &["amx_tile", "amx_int8"]),
        // aarch64's /proc/cpuinfo "Features" spelling.
        Path::Neon => (None, &["asimd"]),
        Path::NeonDot => (Some(Path::Neon), &["asimddp"]),
        Path::NeonI8mm => (Some(Path::NeonDot), &["i8mm"]),
    };
    let mut flags = base.map(required_flags).unwrap_or_default();
    flags.extend_from_slice(own);
    flags
}

/// SIMD flags worth reporting, in `/proc/cpuinfo` spelling.
const SIMD_FLAGS: &[&str] = &[
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx512vbmi",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
];

/// The first value of `key` in `/proc/cpuinfo`-style `text`.
pub(crate) fn cpuinfo_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then_some(v.trim())
    })
}

/// A `/proc/meminfo` value in bytes.
pub(crate) fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    let v = cpuinfo_value(text, key)?;
    let kib: u64 = v.trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Why `path` cannot run here, in words (`None` when it can).
pub(crate) fn missing(path: Path, flags: &[&str]) -> Option<String> {
    if path.is_available() {
        return None;
    }
    let absent: Vec<&str> = required_flags(path)
        .into_iter()
        .filter(|f| !flags.contains(f))
        .collect();
    Some(if absent.is_empty() {
        match path {
            Path::Amx => {
                "the OS did not grant AMX tile-data permission (Linux 5.16+ needed)".into()
            }
            _ => "the OS does not enable these registers (XSAVE state)".into(),
        }
    } else {
        format!("CPU lacks {}", absent.join(", "))
    })
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// What this machine offers for CUDA: the device, its memory and compute capability, the
/// driver and NVRTC versions, and whether a test kernel compiled and ran (against its host
/// twin), which `--device auto` also requires before it picks the GPU.
fn cuda_status() -> (bool, String) {
    let engine =
        "the CUDA backend matched the CPU backend on an H200 but is far from a GPU's speed";
    let nvrtc = match lacuna::cuda::nvrtc::version() {
        Ok((a, b)) => format!("NVRTC {a}.{b}"),
        Err(e) => e.to_string(),
    };
    if lacuna::cuda::device_count() == 0 {
        return (
            false,
            format!("no usable NVIDIA GPU (no driver or no device); {nvrtc}; {engine}"),
        );
    }
    match lacuna::cuda::Gpu::open(0) {
        Err(e) => (false, format!("GPU 0 unusable: {e}; {engine}")),
        Ok(mut gpu) => {
            let i = gpu.info().clone();
            let test = match gpu.self_test() {
                Ok(e) if e < 1e-4 => {
                    format!("test kernel compiled and ran (relative error {e:.1e})")
                }
                Ok(e) => format!(
                    "test kernel ran but disagrees with its host twin (relative error {e:.1e})"
                ),
                Err(e) => format!("test kernel failed: {e}"),
            };
            (
                true,
                format!("{i}, {} free, {nvrtc}; {test}; {engine}", gib(i.free_mem)),
            )
        }
    }
}

/// The floors a pass is measured against: memory read bandwidth and the active path's int8
/// peak, on one thread and on `cores` threads (one entry when `cores` is 1).
pub(crate) struct Floors {
    /// (threads, GB/s).
    pub(crate) read_gb_s: Vec<(usize, f64)>,
    /// (threads, TOP/s) of the active path's int8 dot instruction.
    pub(crate) int8_tops: Vec<(usize, f64)>,
}

/// Measures [`Floors`] (about a second).
pub(crate) fn floors(cores: usize, path: Option<Path>) -> Floors {
    let mut counts = vec![1];
    if cores > 1 {
        counts.push(cores);
    }
    let probe = lacuna::cpu::peak::DEFAULT_PROBE_BYTES;
    let read_gb_s = counts
        .iter()
        .filter_map(|&t| {
            let bw = lacuna::cpu::peak::read_bandwidth(t, probe, 5).ok()?;
            Some((t, bw.gb_per_s()))
        })
        .collect();
    let int8_tops = path
        .map(|p| {
            counts
                .iter()
                .filter_map(|&t| Some((t, lacuna::cpu::peak::int8_peak(p, t).ok()? / 1e12)))
                .collect()
        })
        .unwrap_or_default();
    Floors {
        read_gb_s,
        int8_tops,
    }
}

fn per_threads(v: &[(usize, f64)], unit: &str, digits: usize) -> String {
    v.iter()
        .map(|(t, x)| format!("{x:.digits$} {unit} ({t} thr)"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints the report.
pub(crate) fn run(a: DoctorArgs) -> Result<()> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let cpu_model = cpuinfo_value(&cpuinfo, "model name").unwrap_or("unknown");
    // x86 says "flags", aarch64 "Features".
    let flags: Vec<&str> = cpuinfo_value(&cpuinfo, "flags")
        .or_else(|| cpuinfo_value(&cpuinfo, "Features"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let simd: Vec<&str> = SIMD_FLAGS
        .iter()
        .copied()
        .filter(|f| flags.contains(f))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let active = Path::active();
    let env = std::env::var("LACUNA_CPU_PATH").ok();
    let paths: Vec<(Path, Option<String>)> = Path::of_this_arch()
        .into_iter()
        .map(|p| (p, missing(p, &flags)))
        .collect();
    let total = meminfo_bytes(&meminfo, "MemTotal");
    let avail = meminfo_bytes(&meminfo, "MemAvailable");
    let (cuda_ok, cuda) = cuda_status();
    let fl = floors(cores, active.as_ref().ok().copied());
    if a.json {
        let doc = serde_json::json!({
            "cpu_model": cpu_model,
            "logical_cores": cores,
            "simd": simd,
            "paths": paths.iter().map(|(p, m)| serde_json::json!({
                "name": p.name(),
                "available": m.is_none(),
                "missing": m,
            })).collect::<Vec<_>>(),
            "active_path": active.as_ref().map(|p| p.name()).ok(),
            "active_path_error": active.as_ref().err().map(ToString::to_string),
            "lacuna_cpu_path_env": env,
            "default_threads": cores,
            "ram_total_bytes": total,
            "ram_available_bytes": avail,
            "cuda_driver": cuda_ok,
            "cuda": cuda,
            "memory_read_gb_s": fl.read_gb_s.iter()
                .map(|(t, x)| serde_json::json!({"threads": t, "gb_s": x}))
                .collect::<Vec<_>>(),
            "int8_peak_tops": fl.int8_tops.iter()
                .map(|(t, x)| serde_json::json!({"threads": t, "tops": x}))
                .collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!("CPU      {cpu_model}");
    println!("cores    {cores} logical");
    println!(
        "SIMD     {}",
        if simd.is_empty() {
            "none detected".to_string()
        } else {
            simd.join(" ")
        }
    );
    println!("kernel paths (slowest first):");
    for (p, m) in &paths {
        let note = match m {
            Some(why) => format!("missing: {why}"),
            None => "available".to_string(),
        };
        println!("  {:<11} {note}", p.name());
    }
    match &active {
        Ok(p) => println!(
            "active   {} ({})",
            p.name(),
            match &env {
                Some(v) => format!("forced by LACUNA_CPU_PATH={v}"),
                None => "fastest available; LACUNA_CPU_PATH=<name> forces a lower one".into(),
            }
        ),
        Err(e) => println!("active   none: {e}"),
    }
    println!("threads  {cores} by default (one per logical core); --threads N to change");
    match (total, avail) {
        (Some(t), Some(a)) => println!("memory   {} total, {} available", gib(t), gib(a)),
        _ => println!("memory   unknown (/proc/meminfo unreadable)"),
    }
    println!(
        "read     {} streaming from memory (the floor of a step is the bytes it reads over this)",
        per_threads(&fl.read_gb_s, "GB/s", 1)
    );
    if let Ok(p) = &active {
        println!(
            "int8     {} on {} (the compute floor: a step's operations over this)",
            per_threads(&fl.int8_tops, "TOP/s", 2),
            p.name()
        );
    }
    println!("CUDA     {cuda}");
    Ok(())
}

#[cfg(test)]
mod tests;
