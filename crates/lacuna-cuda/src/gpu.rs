//! [`Gpu`]: one device, its stream, the compiled kernels, and the operations a graph runs,
//! over raw device pointers ([`DevView`]) so that views of one buffer are plain values.
//! Every launch is on one stream; the host waits only when it reads results back.
//!
//! This file opens the device and launches kernels; the buffers, the copies and the
//! launchers of each kernel family live in the submodules.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};

use crate::info::GpuInfo;
use crate::kernels::{self, Source};
use crate::{Error, Result, library, nvrtc};

mod attention;
mod buffers;
mod elementwise;
mod matmul;
mod self_test;
mod uploads;

pub use attention::AttnArgs;
pub use buffers::{DevBuf, DevView, DevWeight};

/// One CUDA device with its kernels loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<&'static str, CudaFunction>,
    info: GpuInfo,
    /// Activation quantization workspace.
    xq: Option<CudaSlice<i8>>,
    xd: Option<CudaSlice<f32>>,
    xs: Option<CudaSlice<i32>>,
    xh: Option<CudaSlice<u16>>,
    /// Split-k partial sums of the quantized GEMM (`splits x t x n`).
    part: Option<CudaSlice<f32>>,
    /// Small index uploads (row lists).
    idx: Option<CudaSlice<i32>>,
    fidx: Option<CudaSlice<f32>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

fn drv(what: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    Error::driver(what)
}

fn grid(n: usize) -> u32 {
    n.div_ceil(256).clamp(1, 65535) as u32
}

impl Gpu {
    /// Probes the driver and NVRTC, opens device `ordinal` (compute capability 8.0 or
    /// newer), compiles every kernel for it (through the disk cache) and loads them.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        library::load_driver()?;
        let nvrtc_version = nvrtc::version()?;
        let count = CudaContext::device_count().map_err(drv("cuDeviceGetCount"))? as usize;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(drv("cuCtxCreate"))?;
        // One stream: ordering is the stream's, so cudarc's per-buffer events are not needed.
        // SAFETY: every buffer of this context is used on its one stream only.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(drv("cuDeviceGetName"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(drv("compute capability"))?;
        let (major, minor) = (major as u32, minor as u32);
        if major < 8 {
            return Err(Error::TooOld { name, major, minor });
        }
        let (free, total) = ctx.mem_get_info().map_err(drv("cuMemGetInfo"))?;
        let mut driver_version = 0;
        // SAFETY: the driver is loaded; the pointer is valid for one write.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) };
        let info = GpuInfo {
            ordinal,
            name,
            cc: (major, minor),
            total_mem: total as u64,
            free_mem: free as u64,
            driver_version,
            nvrtc_version,
        };
        let stream = ctx.default_stream();
        let arch = major * 10 + minor;
        let mut funcs = HashMap::new();
        for src in kernels::ALL {
            load(&ctx, &src, arch, &mut funcs)?;
        }
        Ok(Gpu {
            ctx,
            stream,
            funcs,
            info,
            xq: None,
            xd: None,
            xs: None,
            xh: None,
            part: None,
            idx: None,
            fidx: None,
        })
    }

    /// The device.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Waits for every queued kernel.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(drv("synchronize"))
    }

    fn func(&self, name: &str) -> Result<&CudaFunction> {
        self.funcs
            .get(name)
            .ok_or_else(|| Error::Shape(format!("no kernel {name}")))
    }

    fn launch(&self, name: &str, grid: (u32, u32), block: u32, args: &[&dyn Arg]) -> Result<()> {
        // Nothing to do (no rows, no tokens): a zero-sized grid is a launch error in CUDA.
        if grid.0 == 0 || grid.1 == 0 {
            return Ok(());
        }
        let f = self.func(name)?;
        let mut b = self.stream.launch_builder(f);
        let vals: Vec<ArgVal> = args.iter().map(|a| a.val()).collect();
        for v in &vals {
            match v {
                ArgVal::U64(x) => b.arg(x),
                ArgVal::I32(x) => b.arg(x),
                ArgVal::F32(x) => b.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every kernel's parameters are pointers to live device buffers of the
        // sizes its launch computes from the same shapes, and scalars of matching C types
        // (the wrappers below pass them in the kernel's declared order).
        unsafe { b.launch(cfg) }.map_err(drv("kernel launch"))?;
        Ok(())
    }
}

fn load(
    ctx: &Arc<CudaContext>,
    src: &Source,
    arch: u32,
    funcs: &mut HashMap<&'static str, CudaFunction>,
) -> Result<()> {
    let c = nvrtc::compile(src, arch)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(c.cubin))
        .map_err(drv("cuModuleLoadData"))?;
    for e in src.entries {
        let f = module
            .load_function(e)
            .map_err(drv("cuModuleGetFunction"))?;
        funcs.insert(e, f);
    }
    Ok(())
}

/// A kernel argument: a device address or a scalar.
trait Arg {
    fn val(&self) -> ArgVal;
}

enum ArgVal {
    U64(u64),
    I32(i32),
    F32(f32),
}

impl Arg for u64 {
    fn val(&self) -> ArgVal {
        ArgVal::U64(*self)
    }
}
impl Arg for i32 {
    fn val(&self) -> ArgVal {
        ArgVal::I32(*self)
    }
}
impl Arg for f32 {
    fn val(&self) -> ArgVal {
        ArgVal::F32(*self)
    }
}
