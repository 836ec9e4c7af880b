//! Compiling kernel sources with NVRTC to a cubin for one compute capability (a cubin, not
//! PTX, so an NVRTC newer than the driver still produces something the driver loads),
//! cached on disk by source hash, options and arch.

use std::ffi::{CStr, CString, c_char};
use std::path::PathBuf;

use crate::kernels::Source;
use crate::{Error, Result, library};

/// A compiled kernel source.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The cubin image.
    pub cubin: Vec<u8>,
    /// NVRTC's log, with ptxas's `-v` report (registers, stack, spills per function).
    pub log: String,
    /// Whether it came from the disk cache (then `log` is the one saved with it).
    pub cached: bool,
}

/// One function's line of ptxas's `-v` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionReport {
    /// The (mangled) function name.
    pub name: String,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of local-memory stack frame (arrays the compiler could not keep in registers
    /// show here, not as spills).
    pub stack_frame: u32,
    /// Registers per thread, when reported.
    pub registers: Option<u32>,
}

/// NVRTC's version, `(major, minor)`.
pub fn version() -> Result<(i32, i32)> {
    let nv = library::nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC's entry point; both pointers are valid for one write.
    let r = unsafe { (nv.version)(&mut major, &mut minor) };
    check(r, "nvrtcVersion")?;
    Ok((major, minor))
}

fn check(r: std::ffi::c_int, what: &str) -> Result<()> {
    if r == library::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Compile {
            kernel: "nvrtc",
            arch: String::new(),
            log: format!("{what} failed: nvrtcResult {r}"),
        })
    }
}

/// The options every source is compiled with for `sm_{arch}`: IEEE division and square
/// root, no flush-to-zero and no contraction of `a * b + c` into one FMA (so the kernels round
/// where the CPU backend and the host twins do; explicit `fmaf` still fuses), C++17, and
/// ptxas's `-v`.
pub fn options(arch: u32) -> Vec<String> {
    vec![
        format!("--gpu-architecture=sm_{arch}"),
        "--fmad=false".into(),
        "--std=c++17".into(),
        "--ptxas-options=-v".into(),
        "-default-device".into(),
    ]
}

/// FNV-1a, 64 bits: the cache key of a source and its options (no dependency for a hash
/// whose only job is to tell sources apart).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in *p {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The kernel cache directory: `LACUNA_CUDA_CACHE`, else `$XDG_CACHE_HOME/lacuna/cuda`,
/// else `~/.cache/lacuna/cuda`; `None` disables the cache.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LACUNA_CUDA_CACHE") {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("lacuna").join("cuda"))
}

/// Compiles `src` for `sm_{arch}`, through the disk cache.
pub fn compile(src: &Source, arch: u32) -> Result<Compiled> {
    let (major, minor) = version()?;
    let opts = options(arch);
    let text = src.text();
    let key = fnv1a(&[
        text.as_bytes(),
        opts.join(" ").as_bytes(),
        format!("{major}.{minor}").as_bytes(),
    ]);
    let path = cache_dir().map(|d| d.join(format!("{}-sm_{arch}-{key:016x}.cubin", src.name)));
    if let Some(p) = &path {
        if let (Ok(cubin), Ok(log)) = (
            std::fs::read(p),
            std::fs::read_to_string(p.with_extension("log")),
        ) {
            return Ok(Compiled {
                cubin,
                log,
                cached: true,
            });
        }
    }
    let (cubin, log) = compile_uncached(src.name, &text, arch, &opts)?;
    if let Some(p) = &path {
        // A cache that cannot be written only costs a recompile next time.
        let _ = std::fs::create_dir_all(p.parent().unwrap_or(p))
            .and_then(|()| std::fs::write(p.with_extension("log"), &log))
            .and_then(|()| std::fs::write(p, &cubin));
    }
    Ok(Compiled {
        cubin,
        log,
        cached: false,
    })
}

/// One NVRTC compile, no cache.
fn compile_uncached(
    name: &'static str,
    text: &str,
    arch: u32,
    opts: &[String],
) -> Result<(Vec<u8>, String)> {
    let nv = library::nvrtc()?;
    let bad = |log: String| Error::Compile {
        kernel: name,
        arch: format!("sm_{arch}"),
        log,
    };
    let c_src = CString::new(text).map_err(|_| bad("source holds a NUL byte".into()))?;
    let c_name = CString::new(format!("{name}.cu")).map_err(|_| bad("bad name".into()))?;
    let c_opts: Vec<CString> = opts
        .iter()
        .map(|o| CString::new(o.as_str()).map_err(|_| bad("bad option".into())))
        .collect::<Result<_>>()?;
    let ptrs: Vec<*const c_char> = c_opts.iter().map(|o| o.as_ptr()).collect();
    let mut prog: library::Program = std::ptr::null_mut();
    // SAFETY: the strings are NUL-terminated and outlive the program; no headers are passed
    // (zero count, null arrays), which NVRTC allows.
    let r = unsafe {
        (nv.create)(
            &mut prog,
            c_src.as_ptr(),
            c_name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    check(r, "nvrtcCreateProgram")?;
    let result = (|| {
        // SAFETY: `prog` was created above; `ptrs` holds `ptrs.len()` valid C strings.
        let r = unsafe { (nv.compile)(prog, ptrs.len() as i32, ptrs.as_ptr()) };
        let log = program_log(nv, prog);
        if r != library::NVRTC_SUCCESS {
            return Err(bad(log));
        }
        let mut size = 0usize;
        // SAFETY: `prog` compiled; `size` is valid for one write.
        let r = unsafe { (nv.cubin_size)(prog, &mut size) };
        check(r, "nvrtcGetCUBINSize")?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds exactly the `size` bytes NVRTC reported.
        let r = unsafe { (nv.cubin)(prog, cubin.as_mut_ptr().cast()) };
        check(r, "nvrtcGetCUBIN")?;
        Ok((cubin, log))
    })();
    // SAFETY: `prog` is a live program, destroyed once.
    unsafe { (nv.destroy)(&mut prog) };
    result
}

fn program_log(nv: &library::Nvrtc, prog: library::Program) -> String {
    let mut size = 0usize;
    // SAFETY: `prog` is a live program; `size` is valid for one write.
    if unsafe { (nv.log_size)(prog, &mut size) } != library::NVRTC_SUCCESS || size == 0 {
        return String::new();
    }
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` holds the `size` bytes (NUL included) NVRTC reported.
    if unsafe { (nv.log)(prog, buf.as_mut_ptr().cast()) } != library::NVRTC_SUCCESS {
        return String::new();
    }
    CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Parses ptxas's `-v` report: for each function, its spill bytes and registers.
pub fn function_reports(log: &str) -> Vec<FunctionReport> {
    let mut out: Vec<FunctionReport> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let at = line.find(what)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(at) = line.find("Function properties for ") {
            out.push(FunctionReport {
                name: line[at + "Function properties for ".len()..]
                    .trim()
                    .to_string(),
                spill_stores: 0,
                spill_loads: 0,
                stack_frame: 0,
                registers: None,
            });
        } else if let Some(f) = out.last_mut() {
            if let Some(s) = number_before(line, "bytes spill stores") {
                f.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                f.spill_stores = s;
                f.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if let Some(r) = number_before(line, "registers") {
                f.registers = Some(r);
            }
        }
    }
    out
}
