//! Finding and loading the two shared libraries the backend needs, before any other call:
//! cudarc's loaders panic when a library is missing, so every entry point checks here
//! first and returns [`Error::NoDriver`] / [`Error::NoNvrtc`] instead.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Error, Result};

/// Where NVRTC was found: `LACUNA_NVRTC`, the PyPI package `nvidia-cuda-nvrtc-cu12`, or the
/// loader's search path (`None`).
static NVRTC: OnceLock<Result<Option<PathBuf>, Option<PathBuf>>> = OnceLock::new();

/// The newest `libnvrtc.so*` in `dir` (`libnvrtc.so.12` over `libnvrtc.so`; not the
/// `.alt` or `-builtins` libraries).
fn newest_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// The NVRTC library file inside a PyPI `nvidia-cuda-nvrtc-cu12` install under `site`.
fn in_site_packages(site: &Path) -> Option<PathBuf> {
    newest_in(&site.join("nvidia/cuda_nvrtc/lib"))
}

/// Python's site-packages directories, asked of `python3` (for the PyPI package).
fn site_packages() -> Vec<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import site,sys; print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))",
        ])
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// The NVRTC library to load explicitly: `LACUNA_NVRTC` (a file, or a directory holding
/// `libnvrtc.so.*`), else the PyPI package when `python3` knows one.
pub fn nvrtc_candidate() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LACUNA_NVRTC").map(PathBuf::from) {
        if p.is_dir() {
            return in_site_packages(&p).or_else(|| newest_in(&p)).or(Some(p));
        }
        return Some(p);
    }
    site_packages().iter().find_map(|s| in_site_packages(s))
}

/// Loads NVRTC once. A library named by path is opened first and kept open: the dynamic
/// loader then resolves cudarc's later `dlopen("libnvrtc.so.12")` to it by its soname.
/// Returns the path it came from (`None`: the system search path).
pub fn load_nvrtc() -> Result<Option<PathBuf>> {
    NVRTC
        .get_or_init(|| {
            let explicit = nvrtc_candidate();
            if let Some(path) = &explicit {
                // SAFETY: loading NVRTC runs only its initialisers, which have no
                // preconditions; the handle is leaked so the library stays mapped for the
                // process's life (cudarc keeps its own handle to the same object).
                match unsafe { libloading::Library::new(path) } {
                    Ok(lib) => std::mem::forget(lib),
                    Err(_) => return Err(Some(path.clone())),
                }
            }
            // SAFETY: cudarc's probe only tries to open the library by its usual names.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                Ok(explicit)
            } else {
                Err(explicit)
            }
        })
        .clone()
        .map_err(|tried| Error::NoNvrtc { tried })
}

/// Whether the CUDA driver library loads.
pub fn load_driver() -> Result<()> {
    static DRIVER: OnceLock<bool> = OnceLock::new();
    // SAFETY: cudarc's probe only tries to open the library by its usual names.
    let ok = *DRIVER.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if ok { Ok(()) } else { Err(Error::NoDriver) }
}
