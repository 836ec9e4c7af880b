//! [`Error`]: everything the CUDA backend can fail with, typed, never a panic.

use std::path::PathBuf;

/// A CUDA backend error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CUDA driver library (`libcuda.so.1`) could not be loaded: no NVIDIA driver.
    #[error("no CUDA driver: could not load libcuda (is the NVIDIA driver installed?)")]
    NoDriver,
    /// The NVRTC library could not be loaded.
    #[error(
        "no NVRTC library: could not load libnvrtc{}; install the CUDA toolkit or \
         `pip install nvidia-cuda-nvrtc-cu12`, or set LACUNA_NVRTC to the library's path",
        .tried.as_ref().map(|p| format!(" from {}", p.display())).unwrap_or_default()
    )]
    NoNvrtc {
        /// The explicit path tried (`LACUNA_NVRTC` or the PyPI package), if any.
        tried: Option<PathBuf>,
    },
    /// The driver found no device with this ordinal.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// The device is older than the kernels need.
    #[error(
        "GPU {name} has compute capability {major}.{minor}; Lacuna's CUDA kernels need 8.0 or newer (int8 mma.sync)"
    )]
    TooOld {
        /// Device name.
        name: String,
        /// Compute capability, major.
        major: u32,
        /// Compute capability, minor.
        minor: u32,
    },
    /// A call into the driver failed.
    #[error("CUDA driver: {what}: {source}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// NVRTC rejected a kernel source.
    #[error("NVRTC could not compile {kernel} for {arch}: {log}")]
    Compile {
        /// The kernel source's name.
        kernel: &'static str,
        /// The target, e.g. `sm_90`.
        arch: String,
        /// NVRTC's log.
        log: String,
    },
    /// Device memory would not hold what is asked.
    #[error("out of GPU memory: {what} needs {need} bytes, {free} of {total} are free")]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Bytes needed.
        need: u64,
        /// Bytes free on the device.
        free: u64,
        /// Bytes on the device.
        total: u64,
    },
    /// A weight type the CUDA kernels do not take.
    #[error("the CUDA backend has no kernel for {ty} weights (it takes {supported})")]
    UnsupportedType {
        /// The ggml type name.
        ty: String,
        /// The types it takes.
        supported: &'static str,
    },
    /// Shapes or lengths that do not fit together.
    #[error("bad shape: {0}")]
    Shape(String),
    /// The on-disk kernel cache could not be used (compiling still works).
    #[error("kernel cache {path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn driver(what: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        move |source| Error::Driver { what, source }
    }
}
