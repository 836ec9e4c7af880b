//! The CUDA backend: `lacuna-cuda`'s kernels over device-resident activations, caches and
//! weights (repacked for the int8 tensor cores at load). The host sends token ids and row
//! lists and reads back logits and MoE router scores only.
//!
//! Not yet verified on a GPU: every kernel compiles through NVRTC for sm_80/89/90 in CI and
//! the repack and integer plan are checked on the host against the CPU backend, but no
//! session so far has had a GPU to run them (see the CUDA issue's notes).

use std::ops::Range;

use lacuna_cuda::repack::Repacked;
use lacuna_cuda::{AttnArgs, DevBuf, DevView, DevWeight, Gpu};
use lacuna_quant::GgmlType;

use crate::backend::{AttnShape, Backend, Buffers, RopeParams, WeightPlan, Weights};
use crate::{Config, Error, Result, RopeStyle};

/// Runs a graph on one NVIDIA GPU (compute capability 8.0 or newer).
#[derive(Debug)]
pub struct CudaBackend {
    gpu: Gpu,
    /// Device-side output of the matmuls whose result goes to the host (LM head, router).
    host_out: DevBuf,
}

impl CudaBackend {
    /// Opens device `ordinal`: probes the driver and NVRTC (typed errors when either is
    /// missing), compiles the kernels for its compute capability (cached on disk).
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        Ok(CudaBackend {
            gpu: Gpu::open(ordinal)?,
            host_out: DevBuf::default(),
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Runs the device's test kernel (see [`Gpu::self_test`]): the relative error of one
    /// quantized matmul against its host twin.
    pub fn self_test(&mut self) -> Result<f64> {
        Ok(self.gpu.self_test()?)
    }
}

/// Repacked int8 weights take about this many bits per weight on the device (1 byte of
/// weight, a scale and min byte per 16, two floats per 256).
fn repacked_bytes(elements: u64) -> u64 {
    elements.saturating_mul(9) / 8 + elements / 32
}

impl Buffers for CudaBackend {
    type Buf = DevBuf;
    type View<'a> = DevView<'a>;
    type ViewMut<'a> = DevView<'a>;

    fn ensure(&mut self, buf: &mut DevBuf, len: usize) -> Result<()> {
        Ok(self.gpu.ensure_f32(buf, len)?)
    }

    fn buf_len(buf: &DevBuf) -> usize {
        buf.len()
    }

    fn view(buf: &DevBuf, range: Range<usize>) -> DevView<'_> {
        buf.view(range)
    }

    fn view_mut(buf: &mut DevBuf, range: Range<usize>) -> DevView<'_> {
        buf.view(range)
    }

    fn reborrow<'a>(view: &'a mut DevView<'_>) -> DevView<'a> {
        *view
    }
}

impl Weights for CudaBackend {
    type Weight = DevWeight;
    type Vector = DevBuf;
    type Table = DevWeight;

    fn prepare_weight(&self, ty: GgmlType, n: usize, k: usize, bytes: &[u8]) -> Result<DevWeight> {
        Ok(self.gpu.weight(&Repacked::new(ty, n, k, bytes)?)?)
    }

    fn plan_weights(&mut self, plan: WeightPlan) -> Result<()> {
        // The whole model must fit: there is no host fallback per matrix.
        let need = repacked_bytes(plan.dense_elements + plan.expert_elements);
        let (free, total) = self.gpu.mem()?;
        if need > free {
            return Err(lacuna_cuda::Error::OutOfMemory {
                what: format!(
                    "the model's {} weights",
                    plan.dense_elements + plan.expert_elements
                ),
                need,
                free,
                total,
            }
            .into());
        }
        Ok(())
    }

    fn weight_bytes(&self, w: &DevWeight) -> usize {
        w.bytes()
    }

    fn prepare_vector(&self, v: Vec<f32>) -> Result<DevBuf> {
        Ok(self.gpu.vector(&v)?)
    }

    fn prepare_table(
        &self,
        ty: GgmlType,
        rows: usize,
        width: usize,
        bytes: &[u8],
    ) -> Result<DevWeight> {
        Ok(self.gpu.weight(&Repacked::new(ty, rows, width, bytes)?)?)
    }

    fn vector_to_host(&mut self, v: &DevBuf) -> Result<Vec<f32>> {
        let mut out = vec![0.0; v.len()];
        self.gpu.download(v.view(0..v.len()), &mut out)?;
        Ok(out)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        let (major, minor) = self.gpu.info().cc;
        format!("cuda-sm{major}{minor}")
    }

    fn check_config(&self, config: &Config) -> Result<()> {
        if !AttnArgs::supports_head_dim(config.head_dim) {
            return Err(Error::UnsupportedShape {
                backend: self.name(),
                what: "head width",
                value: config.head_dim,
                supported: AttnArgs::HEAD_DIMS,
            });
        }
        Ok(())
    }

    fn embed(
        &mut self,
        table: &DevWeight,
        _bytes: &[u8],
        tokens: &[u32],
        out: DevView<'_>,
    ) -> Result<()> {
        Ok(self.gpu.get_rows(table, tokens, out)?)
    }

    fn matmul(&mut self, x: DevView<'_>, t: usize, w: &DevWeight, y: DevView<'_>) -> Result<()> {
        Ok(self.gpu.matmul(x, t, w, y)?)
    }

    fn matmul_to_host(
        &mut self,
        x: DevView<'_>,
        t: usize,
        w: &DevWeight,
        y: &mut [f32],
    ) -> Result<()> {
        let n = t * w.n;
        self.gpu.ensure_f32(&mut self.host_out, n)?;
        self.gpu.matmul(x, t, w, self.host_out.view(0..n))?;
        Ok(self.gpu.download(self.host_out.view(0..n), y)?)
    }

    fn rms_norm(
        &mut self,
        x: DevView<'_>,
        weight: &DevBuf,
        eps: f32,
        out: DevView<'_>,
    ) -> Result<()> {
        Ok(self
            .gpu
            .rms_norm(x, weight.view(0..weight.len()), eps, out)?)
    }

    fn rope(
        &mut self,
        x: DevView<'_>,
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
    ) -> Result<()> {
        let theta_scale = params.freq_base.powf(-2.0 / params.n_rot as f32);
        let neox = params.style == RopeStyle::Neox;
        Ok(self.gpu.rope(
            x,
            t,
            head_dim,
            params.n_rot,
            pos0,
            params.freq_scale,
            theta_scale,
            neox,
        )?)
    }

    fn attention(
        &mut self,
        q: DevView<'_>,
        k: DevView<'_>,
        v: DevView<'_>,
        shape: AttnShape,
        rows: Option<&[usize]>,
        out: DevView<'_>,
    ) -> Result<()> {
        let a = AttnArgs {
            keys: shape.keys,
            n_head: shape.n_head,
            n_head_kv: shape.n_head_kv,
            head_dim: shape.head_dim,
            scale: shape.scale,
            pos0: shape.pos0,
            block: shape.block.unwrap_or(0),
        };
        let n_rows = rows.map_or(shape.queries, <[usize]>::len);
        Ok(self.gpu.attention(q, k, v, a, n_rows, rows, out)?)
    }

    fn swiglu(&mut self, gate: DevView<'_>, up: DevView<'_>, out: DevView<'_>) -> Result<()> {
        Ok(self.gpu.swiglu(gate, up, out)?)
    }

    fn add(&mut self, x: DevView<'_>, y: DevView<'_>) -> Result<()> {
        Ok(self.gpu.add(x, y)?)
    }

    fn add_bias(&mut self, x: DevView<'_>, bias: &DevBuf) -> Result<()> {
        Ok(self.gpu.add_bias(x, bias.view(0..bias.len()))?)
    }

    fn copy_rows(
        &mut self,
        src: DevView<'_>,
        src_width: usize,
        col0: usize,
        rows: Option<&[usize]>,
        dst: DevView<'_>,
        cols: usize,
    ) -> Result<()> {
        Ok(self.gpu.copy_rows(src, src_width, col0, rows, dst, cols)?)
    }

    fn scatter_scaled(
        &mut self,
        src: DevView<'_>,
        to: &[usize],
        scale: &[f32],
        dst: DevView<'_>,
        width: usize,
    ) -> Result<()> {
        Ok(self.gpu.scatter_scaled(src, to, scale, dst, width)?)
    }

    fn sum_slots(
        &mut self,
        slots: DevView<'_>,
        k: usize,
        width: usize,
        out: DevView<'_>,
    ) -> Result<()> {
        Ok(self.gpu.sum_slots(slots, k, width, out)?)
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(self.gpu.synchronize()?)
    }
}
