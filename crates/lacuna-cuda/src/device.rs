//! [`Gpu`]: one device, its stream, the compiled kernels, and the operations a graph runs,
//! over raw device pointers ([`DevView`]) so that views of one buffer are plain values.
//! Every launch is on one stream; the host waits only when it reads results back.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg, ValidAsZeroBits,
};

use crate::kernels::{self, Source};
use crate::repack::{Layout, Repacked};
use crate::{Error, Result, library, nvrtc};

/// What `lacuna doctor` reports of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability.
    pub cc: (u32, u32),
    /// Device memory, bytes.
    pub total_mem: u64,
    /// Free device memory, bytes, when probed.
    pub free_mem: u64,
    /// CUDA driver version, e.g. 12080.
    pub driver_version: i32,
    /// NVRTC version.
    pub nvrtc_version: (i32, i32),
}

impl std::fmt::Display for GpuInfo {
    /// `NVIDIA H200 (sm_90, 143771 MiB, driver 12.8)`: what benchmark files record.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (sm_{}{}, {} MiB, driver {}.{})",
            self.name,
            self.cc.0,
            self.cc.1,
            self.total_mem >> 20,
            self.driver_version / 1000,
            self.driver_version % 1000 / 10
        )
    }
}

/// Devices the driver sees (0 when there is no driver).
pub fn device_count() -> usize {
    if library::load_driver().is_err() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// An f32 buffer in device memory (empty until first grown).
#[derive(Debug, Default)]
pub struct DevBuf {
    slice: Option<CudaSlice<f32>>,
    ptr: u64,
    len: usize,
}

impl DevBuf {
    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A view of elements `range`.
    pub fn view(&self, range: std::ops::Range<usize>) -> DevView<'_> {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "view out of bounds"
        );
        DevView {
            ptr: self.ptr + 4 * range.start as u64,
            len: range.len(),
            _buf: std::marker::PhantomData,
        }
    }
}

/// A range of a [`DevBuf`]: its device address and length.
#[derive(Debug, Clone, Copy)]
pub struct DevView<'a> {
    ptr: u64,
    len: usize,
    _buf: std::marker::PhantomData<&'a DevBuf>,
}

impl DevView<'_> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A weight in device memory, in [`Repacked`]'s layout.
#[derive(Debug)]
pub struct DevWeight {
    /// The kernel that reads it.
    pub layout: Layout,
    /// Rows.
    pub n: usize,
    /// Columns.
    pub k: usize,
    bytes: usize,
    q: Option<CudaSlice<i8>>,
    sc: Option<CudaSlice<i8>>,
    mn: Option<CudaSlice<i8>>,
    d: Option<CudaSlice<f32>>,
    dmin: Option<CudaSlice<f32>>,
    half: Option<CudaSlice<u16>>,
    full: Option<CudaSlice<f32>>,
}

impl DevWeight {
    /// Device bytes it holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Shape of one attention launch (see the `attention` kernel).
#[derive(Debug, Clone, Copy)]
pub struct AttnArgs {
    /// Key rows.
    pub keys: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Head width (a multiple of 32, at most 256).
    pub head_dim: usize,
    /// Score scale.
    pub scale: f32,
    /// Canvas position of query row 0.
    pub pos0: usize,
    /// Block-causal block length (0: bidirectional).
    pub block: usize,
}

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
            idx: None,
            fidx: None,
        })
    }

    /// The device.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// `(free, total)` device memory now.
    pub fn mem(&self) -> Result<(u64, u64)> {
        let (f, t) = self.ctx.mem_get_info().map_err(drv("cuMemGetInfo"))?;
        Ok((f as u64, t as u64))
    }

    fn check_fits(&self, what: impl FnOnce() -> String, need: u64) -> Result<()> {
        let (free, total) = self.mem()?;
        if need > free {
            return Err(Error::OutOfMemory {
                what: what(),
                need,
                free,
                total,
            });
        }
        Ok(())
    }

    fn upload<T: cudarc::driver::DeviceRepr>(&self, v: &[T]) -> Result<Option<CudaSlice<T>>> {
        if v.is_empty() {
            return Ok(None);
        }
        self.stream.clone_htod(v).map(Some).map_err(drv("upload"))
    }

    /// Copies a repacked weight to the device.
    pub fn weight(&self, r: &Repacked) -> Result<DevWeight> {
        self.check_fits(|| format!("a {} x {} weight", r.n, r.k), r.bytes() as u64)?;
        Ok(DevWeight {
            layout: r.layout,
            n: r.n,
            k: r.k,
            bytes: r.bytes(),
            q: self.upload(&r.q)?,
            sc: self.upload(&r.sc)?,
            mn: self.upload(&r.mn)?,
            d: self.upload(&r.d)?,
            dmin: self.upload(&r.dmin)?,
            half: self.upload(&r.half)?,
            full: self.upload(&r.full)?,
        })
    }

    /// An f32 vector on the device.
    pub fn vector(&self, v: &[f32]) -> Result<DevBuf> {
        let mut b = DevBuf::default();
        self.ensure_f32(&mut b, v.len())?;
        if let Some(s) = &mut b.slice {
            self.stream.memcpy_htod(v, s).map_err(drv("upload"))?;
        }
        Ok(b)
    }

    /// Grows `b` to at least `len` elements, keeping its contents.
    pub fn ensure_f32(&self, b: &mut DevBuf, len: usize) -> Result<()> {
        if b.len >= len {
            return Ok(());
        }
        self.check_fits(
            || format!("an activation buffer of {len} floats"),
            4 * len as u64,
        )?;
        let mut fresh = self.stream.alloc_zeros::<f32>(len).map_err(drv("alloc"))?;
        if let Some(old) = &b.slice {
            let mut head = fresh.slice_mut(0..b.len);
            self.stream
                .memcpy_dtod(old, &mut head)
                .map_err(drv("copy"))?;
        }
        b.ptr = ptr_of(&fresh, &self.stream);
        b.len = len;
        b.slice = Some(fresh);
        Ok(())
    }

    /// Copies `src` to the host.
    pub fn download(&self, src: DevView<'_>, out: &mut [f32]) -> Result<()> {
        if out.len() != src.len {
            return Err(Error::Shape(format!(
                "download of {} floats into {}",
                src.len,
                out.len()
            )));
        }
        self.ctx.bind_to_thread().map_err(drv("bind context"))?;
        // SAFETY: `src` addresses `len` live floats of a buffer of this context, and `out`
        // holds as many; the copy is synchronous on this stream after all queued work.
        let r = unsafe {
            cudarc::driver::result::memcpy_dtoh_async(out, src.ptr, self.stream.cu_stream())
        };
        r.map_err(drv("download"))?;
        self.stream.synchronize().map_err(drv("synchronize"))
    }

    /// Copies host floats into `dst`.
    pub fn upload_into(&self, src: &[f32], dst: DevView<'_>) -> Result<()> {
        if src.len() != dst.len {
            return Err(Error::Shape("upload length".into()));
        }
        self.ctx.bind_to_thread().map_err(drv("bind context"))?;
        // SAFETY: `dst` addresses `len` live floats; `src` stays borrowed until the stream
        // is synchronised below.
        let r = unsafe {
            cudarc::driver::result::memcpy_htod_async(dst.ptr, src, self.stream.cu_stream())
        };
        r.map_err(drv("upload"))?;
        self.stream.synchronize().map_err(drv("synchronize"))
    }

    fn func(&self, name: &str) -> Result<&CudaFunction> {
        self.funcs
            .get(name)
            .ok_or_else(|| Error::Shape(format!("no kernel {name}")))
    }

    /// Uploads row indices (as i32) to the index workspace; returns its device address.
    fn indices(&mut self, rows: &[usize]) -> Result<u64> {
        let v: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
        upload_scratch(&self.stream, &mut self.idx, &v)
    }

    /// Uploads floats (a MoE expert's routing weights) to their workspace.
    fn floats(&mut self, v: &[f32]) -> Result<u64> {
        upload_scratch(&self.stream, &mut self.fidx, v)
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

    /// `y[t x n] = x[t x k] . W^T`.
    pub fn matmul(
        &mut self,
        x: DevView<'_>,
        t: usize,
        w: &DevWeight,
        y: DevView<'_>,
    ) -> Result<()> {
        let (n, k) = (w.n, w.k);
        if x.len != t * k || y.len != t * n {
            return Err(Error::Shape(format!(
                "matmul {t}x{k} . {n}x{k} into {}",
                y.len
            )));
        }
        if t == 0 {
            return Ok(());
        }
        let tiles = ((n.div_ceil(64)) as u32, (t.div_ceil(64)) as u32);
        let st = &self.stream;
        match w.layout {
            Layout::F16 | Layout::BF16 => {
                let need = t * k;
                let xh = scratch(st, &mut self.xh, need)?;
                let round = if w.layout == Layout::F16 {
                    "round_f16"
                } else {
                    "round_bf16"
                };
                self.launch(round, (grid(need), 1), 256, &[&x.ptr, &(need as u64), &xh])?;
                let wh = addr(&w.half, &self.stream);
                self.launch(
                    w.layout.kernel(),
                    tiles,
                    128,
                    &[&wh, &xh, &y.ptr, &(n as i32), &(k as i32), &(t as i32)],
                )
            }
            Layout::F32 => {
                let wf = addr(&w.full, st);
                self.launch(
                    "gemm_f32",
                    tiles,
                    256,
                    &[&wf, &x.ptr, &y.ptr, &(n as i32), &(k as i32), &(t as i32)],
                )
            }
            layout => {
                let kfmt = layout.is_k();
                let (nd, ns) = if kfmt {
                    (t * k / 256, t * k / 16)
                } else {
                    (t * k / 32, 1)
                };
                let xq = scratch(st, &mut self.xq, t * k)?;
                let xd = scratch(st, &mut self.xd, nd)?;
                let xs = scratch(st, &mut self.xs, ns)?;
                if kfmt {
                    self.launch(
                        "quantize_q8k",
                        (t as u32, (k / 256) as u32),
                        32,
                        &[&x.ptr, &(k as i32), &xq, &xd, &xs],
                    )?;
                } else {
                    self.launch(
                        "quantize_q8_0",
                        (t as u32, (k / 32) as u32),
                        32,
                        &[&x.ptr, &(k as i32), &xq, &xd],
                    )?;
                }
                let st = &self.stream;
                let args: [&dyn Arg; 12] = [
                    &addr(&w.q, st),
                    &addr(&w.sc, st),
                    &addr(&w.mn, st),
                    &addr(&w.d, st),
                    &addr(&w.dmin, st),
                    &xq,
                    &xd,
                    &xs,
                    &y.ptr,
                    &(n as i32),
                    &(k as i32),
                    &(t as i32),
                ];
                self.launch(layout.kernel(), tiles, 128, &args)
            }
        }
    }

    /// RMSNorm of each `w`-wide row of `x` times `w`.
    pub fn rms_norm(
        &self,
        x: DevView<'_>,
        w: DevView<'_>,
        eps: f32,
        out: DevView<'_>,
    ) -> Result<()> {
        let rows = x.len / w.len.max(1);
        self.launch(
            "rms_norm",
            (rows as u32, 1),
            256,
            &[&x.ptr, &w.ptr, &out.ptr, &(w.len as i32), &eps],
        )
    }

    /// RoPE in place (see the `rope` kernel).
    #[allow(clippy::too_many_arguments)]
    pub fn rope(
        &self,
        x: DevView<'_>,
        t: usize,
        head_dim: usize,
        n_rot: usize,
        pos0: usize,
        freq_scale: f32,
        theta_scale: f32,
        neox: bool,
    ) -> Result<()> {
        let width = x.len / t.max(1);
        self.launch(
            "rope",
            (t as u32, 1),
            128,
            &[
                &x.ptr,
                &(width as i32),
                &(head_dim as i32),
                &(n_rot as i32),
                &(pos0 as i32),
                &freq_scale,
                &theta_scale,
                &i32::from(neox),
            ],
        )
    }

    /// Attention over the rows `rows` of `q` (all when `None`).
    #[allow(clippy::too_many_arguments)]
    pub fn attention(
        &mut self,
        q: DevView<'_>,
        k: DevView<'_>,
        v: DevView<'_>,
        a: AttnArgs,
        n_rows: usize,
        rows: Option<&[usize]>,
        out: DevView<'_>,
    ) -> Result<()> {
        if a.head_dim % 32 != 0
            || a.head_dim > 256
            || a.n_head_kv == 0
            || a.n_head % a.n_head_kv != 0
        {
            return Err(Error::Shape(format!(
                "attention head_dim {} (multiple of 32, at most 256), heads {}/{}",
                a.head_dim, a.n_head, a.n_head_kv
            )));
        }
        let (qw, kw) = (a.n_head * a.head_dim, a.n_head_kv * a.head_dim);
        let queries = q.len / qw;
        let rows_ok = rows.is_none_or(|r| r.len() == n_rows && r.iter().all(|&i| i < queries));
        if a.keys == 0
            || q.len % qw != 0
            || k.len != a.keys * kw
            || v.len != a.keys * kw
            || out.len != n_rows * qw
            || !rows_ok
            || (rows.is_none() && n_rows != queries)
        {
            return Err(Error::Shape(format!(
                "attention: {} query floats, {} key and {} value floats for {} keys, {} output                  floats for {n_rows} rows",
                q.len, k.len, v.len, a.keys, out.len
            )));
        }
        let rp = match rows {
            Some(r) => self.indices(r)?,
            None => 0,
        };
        self.launch(
            "attention",
            (n_rows.div_ceil(16) as u32, a.n_head as u32),
            128,
            &[
                &q.ptr,
                &k.ptr,
                &v.ptr,
                &out.ptr,
                &rp,
                &(n_rows as i32),
                &(a.keys as i32),
                &(a.n_head as i32),
                &(a.n_head_kv as i32),
                &(a.head_dim as i32),
                &a.scale,
                &(a.pos0 as i32),
                &(a.block as i32),
            ],
        )
    }

    /// `out = silu(gate) * up`.
    pub fn swiglu(&self, g: DevView<'_>, u: DevView<'_>, out: DevView<'_>) -> Result<()> {
        self.launch(
            "swiglu",
            (grid(out.len), 1),
            256,
            &[&g.ptr, &u.ptr, &out.ptr, &(out.len as u64)],
        )
    }

    /// `x += y`.
    pub fn add(&self, x: DevView<'_>, y: DevView<'_>) -> Result<()> {
        self.launch(
            "add",
            (grid(x.len), 1),
            256,
            &[&x.ptr, &y.ptr, &(x.len as u64)],
        )
    }

    /// Each `b`-wide row of `x` += `b`.
    pub fn add_bias(&self, x: DevView<'_>, b: DevView<'_>) -> Result<()> {
        self.launch(
            "add_bias",
            (grid(x.len), 1),
            256,
            &[&x.ptr, &b.ptr, &(b.len as i32), &(x.len as u64)],
        )
    }

    /// `dst[r] = src[rows[r] or r][col0..col0 + cols]`.
    pub fn copy_rows(
        &mut self,
        src: DevView<'_>,
        src_width: usize,
        col0: usize,
        rows: Option<&[usize]>,
        dst: DevView<'_>,
        cols: usize,
    ) -> Result<()> {
        let n = dst.len / cols.max(1);
        if n == 0 {
            return Ok(());
        }
        let rp = match rows {
            Some(r) => self.indices(r)?,
            None => 0,
        };
        self.launch(
            "copy_rows",
            (n as u32, 1),
            256,
            &[
                &src.ptr,
                &(src_width as i32),
                &(col0 as i32),
                &rp,
                &dst.ptr,
                &(cols as i32),
            ],
        )
    }

    /// `dst[to[r]] = scale[r] * src[r]`.
    pub fn scatter_scaled(
        &mut self,
        src: DevView<'_>,
        to: &[usize],
        scale: &[f32],
        dst: DevView<'_>,
        width: usize,
    ) -> Result<()> {
        if to.is_empty() {
            return Ok(());
        }
        let tp = self.indices(to)?;
        let sp = self.floats(scale)?;
        self.launch(
            "scatter_scaled",
            (to.len() as u32, 1),
            256,
            &[&src.ptr, &tp, &sp, &dst.ptr, &(width as i32)],
        )
    }

    /// `out[i] = sum of slots[i*k .. i*k + k]` in order.
    pub fn sum_slots(
        &self,
        slots: DevView<'_>,
        k: usize,
        width: usize,
        out: DevView<'_>,
    ) -> Result<()> {
        let n = out.len / width.max(1);
        self.launch(
            "sum_slots",
            (n as u32, 1),
            256,
            &[&slots.ptr, &(k as i32), &(width as i32), &out.ptr],
        )
    }

    /// Embedding rows of `tokens` from a repacked table into `out`.
    pub fn get_rows(&mut self, table: &DevWeight, tokens: &[u32], out: DevView<'_>) -> Result<()> {
        let ids: Vec<i32> = tokens.iter().map(|&t| t as i32).collect();
        let tp = upload_scratch(&self.stream, &mut self.idx, &ids)?;
        let k = table.k as i32;
        let g = (tokens.len() as u32, 1);
        let st = &self.stream;
        let (p, pf) = (|s| addr::<i8>(s, st), |s| addr::<f32>(s, st));
        match table.layout {
            Layout::F16 | Layout::BF16 => {
                let h = addr(&table.half, st);
                self.launch(
                    "get_rows_f16",
                    g,
                    256,
                    &[
                        &h,
                        &tp,
                        &k,
                        &i32::from(table.layout == Layout::BF16),
                        &out.ptr,
                    ],
                )
            }
            Layout::F32 => self.launch(
                "get_rows_f32",
                g,
                256,
                &[&pf(&table.full), &tp, &k, &out.ptr],
            ),
            Layout::B32 => self.launch(
                "get_rows_b32",
                g,
                256,
                &[&p(&table.q), &pf(&table.d), &tp, &k, &out.ptr],
            ),
            _ => self.launch(
                "get_rows_k",
                g,
                256,
                &[
                    &p(&table.q),
                    &p(&table.sc),
                    &p(&table.mn),
                    &pf(&table.d),
                    &pf(&table.dmin),
                    &tp,
                    &k,
                    &out.ptr,
                ],
            ),
        }
    }

    /// Runs one Q4_K matmul (quantize, int8 mma, min term) on a 70 x 512 weight and 3
    /// tokens against its host twin; returns the relative L2 error (doctor's kernel test).
    pub fn self_test(&mut self) -> Result<f64> {
        let (n, k, t) = (70usize, 512usize, 3usize);
        let vals = |seed: u32, len: usize| -> Vec<f32> {
            (0..len)
                .map(|i| {
                    (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0
                })
                .collect()
        };
        let ty = lacuna_quant::GgmlType::Q4_K;
        let row = k / 256 * ty.type_size();
        let mut bytes = vec![0u8; n * row];
        for (src, dst) in vals(7, n * k)
            .chunks_exact(k)
            .zip(bytes.chunks_exact_mut(row))
        {
            lacuna_quant::quantize_row(ty, src, dst)
                .map_err(|e| Error::Shape(format!("self-test weights: {e}")))?;
        }
        let r = Repacked::new(ty, n, k, &bytes)?;
        let x = vals(11, t * k);
        let want = r.reference_matmul(&x, t);
        let w = self.weight(&r)?;
        let xb = self.vector(&x)?;
        let mut yb = DevBuf::default();
        self.ensure_f32(&mut yb, t * n)?;
        self.matmul(xb.view(0..t * k), t, &w, yb.view(0..t * n))?;
        let mut got = vec![0.0f32; t * n];
        self.download(yb.view(0..t * n), &mut got)?;
        let num: f64 = got
            .iter()
            .zip(&want)
            .map(|(a, b)| f64::from(a - b).powi(2))
            .sum();
        let den: f64 = want.iter().map(|b| f64::from(*b).powi(2)).sum();
        Ok((num / den.max(1e-30)).sqrt())
    }

    /// Waits for every queued kernel.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(drv("synchronize"))
    }
}

fn ptr_of<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The device address of an optional buffer (0, a null pointer, for one a layout lacks).
fn addr<T>(s: &Option<CudaSlice<T>>, stream: &Arc<CudaStream>) -> u64 {
    s.as_ref().map_or(0, |s| ptr_of(s, stream))
}

/// Grows the workspace in `slot` to at least `n` elements (at least 1024, so small uploads
/// do not reallocate); returns its device address.
fn scratch<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    slot: &mut Option<CudaSlice<T>>,
    n: usize,
) -> Result<u64> {
    if slot.as_ref().is_none_or(|s| s.len() < n) {
        *slot = Some(stream.alloc_zeros::<T>(n.max(1024)).map_err(drv("alloc"))?);
    }
    Ok(addr(slot, stream))
}

/// Copies `v` to the start of the workspace in `slot` (grown as needed).
fn upload_scratch<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    slot: &mut Option<CudaSlice<T>>,
    v: &[T],
) -> Result<u64> {
    let at = scratch(stream, slot, v.len())?;
    if let Some(s) = slot {
        let mut head = s.slice_mut(0..v.len());
        stream.memcpy_htod(v, &mut head).map_err(drv("upload"))?;
    }
    Ok(at)
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
