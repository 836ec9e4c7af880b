//! Finding and loading the two shared libraries the backend needs, before any other call:
//! cudarc's driver loader panics when the library is missing, so every entry point checks
//! here first and returns [`Error::NoDriver`] instead; NVRTC is loaded and called here
//! (CUDA 12 and 13 checked; 11's soname is tried too), returning [`Error::NoNvrtc`] when none is found.

use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Error, Result};

/// NVRTC's entry points, resolved from the library this module loaded itself: cudarc's own
/// loader only tries the names of the CUDA version it was built for (`libnvrtc.so`,
/// `libnvrtc.so.12`, ...), so a machine with CUDA 13 alone (`libnvrtc.so.13`, as the
/// toolkit and PyTorch's wheels install it) was refused; seen on an H200 machine.
pub(crate) struct Nvrtc {
    /// `nvrtcVersion(int*, int*)`.
    pub version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    /// `nvrtcCreateProgram(prog*, src, name, n_headers, headers, include_names)`.
    pub create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    /// `nvrtcCompileProgram(prog, n_options, options)`.
    pub compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    /// `nvrtcGetProgramLogSize(prog, size*)`.
    pub log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    /// `nvrtcGetProgramLog(prog, buf)`.
    pub log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    /// `nvrtcGetCUBINSize(prog, size*)`.
    pub cubin_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    /// `nvrtcGetCUBIN(prog, buf)`.
    pub cubin: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    /// `nvrtcDestroyProgram(prog*)`.
    pub destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    /// Where the library came from (`None`: the loader's search path, by name).
    pub path: Option<PathBuf>,
}

/// An NVRTC program handle (`nvrtcProgram`).
pub(crate) type Program = *mut c_void;

/// NVRTC's success code (`NVRTC_SUCCESS`).
pub(crate) const NVRTC_SUCCESS: c_int = 0;

/// The loaded NVRTC, or the explicit path that was tried and failed.
static NVRTC: OnceLock<Result<Nvrtc, Option<PathBuf>>> = OnceLock::new();

/// Names the dynamic loader is asked for, newest CUDA first.
const NVRTC_NAMES: [&str; 4] = [
    "libnvrtc.so",
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so.11",
];

/// Toolkit folders searched when no name is on the loader's path.
const TOOLKIT_DIRS: [&str; 3] = [
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/local/cuda/targets/sbsa-linux/lib",
];

/// The newest `libnvrtc.so*` in `dir` (`libnvrtc.so.13` over `libnvrtc.so.12` over
/// `libnvrtc.so`; not the `.alt` or `-builtins` libraries).
fn newest_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so") && !n.contains("alt"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// The NVRTC library file inside a PyPI install under `site`: `nvidia-cuda-nvrtc-cu12`
/// (`nvidia/cuda_nvrtc/lib`) or CUDA 13's `nvidia-cuda-nvrtc` (`nvidia/cu13/lib`).
fn in_site_packages(site: &Path) -> Option<PathBuf> {
    [
        "nvidia/cu13/lib",
        "nvidia/cuda_nvrtc/lib",
        "nvidia/cu12/lib",
    ]
    .iter()
    .find_map(|d| newest_in(&site.join(d)))
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

/// Resolves NVRTC's entry points in `lib`, which is kept mapped for the process's life.
fn resolve(lib: libloading::Library, path: Option<PathBuf>) -> Option<Nvrtc> {
    // SAFETY: each symbol is NVRTC's C function of that name, whose signature (stable since
    // CUDA 11) the field's type spells; the library is leaked below, so the pointers stay
    // valid for the process's life.
    let table = unsafe {
        Nvrtc {
            version: *lib.get(b"nvrtcVersion\0").ok()?,
            create: *lib.get(b"nvrtcCreateProgram\0").ok()?,
            compile: *lib.get(b"nvrtcCompileProgram\0").ok()?,
            log_size: *lib.get(b"nvrtcGetProgramLogSize\0").ok()?,
            log: *lib.get(b"nvrtcGetProgramLog\0").ok()?,
            cubin_size: *lib.get(b"nvrtcGetCUBINSize\0").ok()?,
            cubin: *lib.get(b"nvrtcGetCUBIN\0").ok()?,
            destroy: *lib.get(b"nvrtcDestroyProgram\0").ok()?,
            path,
        }
    };
    std::mem::forget(lib);
    Some(table)
}

/// Opens `name` (a path, or a name for the loader's search path).
fn open(name: &std::ffi::OsStr) -> Option<libloading::Library> {
    // SAFETY: loading NVRTC runs only its initialisers, which have no preconditions.
    unsafe { libloading::Library::new(name) }.ok()
}

/// Loads NVRTC once: the explicit candidate (`LACUNA_NVRTC`, the PyPI package), else
/// `libnvrtc.so` / `.so.13` / `.so.12` / `.so.11` on the loader's path, else the newest in
/// the toolkit's usual folders. CUDA 12's (CI) and 13's (an H200) were checked; the kernels
/// are compiled to a cubin for the device's own architecture.
pub(crate) fn nvrtc() -> Result<&'static Nvrtc> {
    NVRTC
        .get_or_init(|| {
            if let Some(path) = nvrtc_candidate() {
                return open(path.as_os_str())
                    .and_then(|lib| resolve(lib, Some(path.clone())))
                    .ok_or(Some(path));
            }
            for name in NVRTC_NAMES {
                if let Some(t) = open(name.as_ref()).and_then(|lib| resolve(lib, None)) {
                    return Ok(t);
                }
            }
            for dir in TOOLKIT_DIRS {
                if let Some(path) = newest_in(Path::new(dir)) {
                    if let Some(t) = open(path.as_os_str()).and_then(|l| resolve(l, Some(path))) {
                        return Ok(t);
                    }
                }
            }
            Err(None)
        })
        .as_ref()
        .map_err(|tried| Error::NoNvrtc {
            tried: tried.clone(),
        })
}

/// Loads NVRTC (see [`nvrtc`]) and returns the path it came from (`None`: the loader's
/// search path).
pub fn load_nvrtc() -> Result<Option<PathBuf>> {
    nvrtc().map(|n| n.path.clone())
}

/// Whether the CUDA driver library loads.
pub fn load_driver() -> Result<()> {
    static DRIVER: OnceLock<bool> = OnceLock::new();
    // SAFETY: cudarc's probe only tries to open the library by its usual names.
    let ok = *DRIVER.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if ok { Ok(()) } else { Err(Error::NoDriver) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUDA 13's wheel (`nvidia/cu13/lib`) and 12's (`nvidia/cuda_nvrtc/lib`) are both
    /// found, the newest soname is taken, and the `.alt` and builtins libraries never are.
    #[test]
    fn site_packages_layouts_of_cuda_12_and_13() {
        let root = std::env::temp_dir().join(format!("lacuna-nvrtc-{}", std::process::id()));
        let touch = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
        };
        touch("a/nvidia/cu13/lib/libnvrtc.so.13");
        touch("a/nvidia/cu13/lib/libnvrtc.alt.so.13");
        touch("a/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
        touch("b/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
        touch("b/nvidia/cuda_nvrtc/lib/libnvrtc.so");
        touch("c/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9");
        let found = |d: &str| {
            in_site_packages(&root.join(d)).map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
        };
        assert_eq!(
            found("a"),
            Some(PathBuf::from("a/nvidia/cu13/lib/libnvrtc.so.13"))
        );
        assert_eq!(
            found("b"),
            Some(PathBuf::from("b/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
        );
        assert_eq!(found("c"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
