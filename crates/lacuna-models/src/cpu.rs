//! The CPU backend: `lacuna-cpu`'s kernels (GEMM over weights repacked once at load,
//! flash-style attention, RMSNorm, SwiGLU, softmax), the row-wise ones split over rayon
//! tasks here, and RoPE written here (rayon-parallel over positions, with `freq_scale`,
//! which `lacuna-cpu`'s single-threaded `rope_*` lacks; same arithmetic as ggml's rope
//! cache).

use std::ops::Range;

use lacuna_cpu::{PackedWeight, Workspace};
use lacuna_quant::GgmlType;
use rayon::prelude::*;

use crate::backend::{AttnShape, Backend, RopeParams, WeightPlan};
use crate::{Error, Result, RopeStyle};

/// How quantized matrix weights are kept: repacked to int8 panels (fast at every canvas
/// length, about 8.6 bits per weight) or compact (ggml's blocks, the file's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightLayout {
    /// Repacked, unless that would not fit in the memory available at load
    /// (`MemAvailable`, with a tenth kept free): then the mixture-of-experts weights go
    /// compact first, and the dense ones too when repacking them still would not fit;
    /// compact only where this CPU has a vectorised compact kernel for the type (Q4_K and
    /// Q6_K with AVX2).
    #[default]
    Auto,
    /// Every weight compact when the type allows it (slow where the kernel is portable).
    Compact,
    /// Every weight repacked to int8 panels.
    Fast,
}

impl WeightLayout {
    /// The layout named `auto`, `compact` or `fast`.
    pub fn from_name(name: &str) -> Option<WeightLayout> {
        match name {
            "auto" => Some(WeightLayout::Auto),
            "compact" => Some(WeightLayout::Compact),
            "fast" => Some(WeightLayout::Fast),
            _ => None,
        }
    }
}

/// Runs a graph on the host CPU with the best instruction path `lacuna-cpu` detects.
#[derive(Debug, Default)]
pub struct CpuBackend {
    /// How weights are kept.
    layout: WeightLayout,
    /// `Auto` resolved for the file being loaded: whether experts go compact.
    compact_experts: bool,
    /// `Auto` resolved for the file being loaded: whether dense weights go compact.
    compact_dense: bool,
    ws: Workspace,
    /// The query rows asked for, when not all.
    q_rows: Vec<f32>,
    /// Keys visible to each computed query row (block-causal attention).
    visible: Vec<usize>,
}

impl CpuBackend {
    /// A backend with empty reusable buffers.
    pub fn new() -> CpuBackend {
        CpuBackend::default()
    }

    /// Whether expert weights are (to be) kept compact: the layout asked for, with `Auto`
    /// resolved against the memory available when the model was loaded.
    pub fn experts_compact(&self) -> bool {
        self.goes_compact(self.compact_experts)
    }

    /// Whether dense weights (attention, dense FFN, LM head) are (to be) kept compact, as
    /// [`CpuBackend::experts_compact`] resolves it.
    pub fn dense_compact(&self) -> bool {
        self.goes_compact(self.compact_dense)
    }

    fn goes_compact(&self, auto: bool) -> bool {
        match self.layout {
            WeightLayout::Fast => false,
            WeightLayout::Auto => auto,
            WeightLayout::Compact => true,
        }
    }

    /// A backend keeping weights as `layout` says.
    pub fn with_layout(layout: WeightLayout) -> CpuBackend {
        CpuBackend {
            layout,
            ..CpuBackend::default()
        }
    }

    /// Compact when asked for (`Auto` only where the type has a vectorised compact kernel)
    /// and the type allows it, else repacked.
    fn prepare(
        &self,
        compact: bool,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        let compact =
            compact && (self.layout == WeightLayout::Compact || PackedWeight::compact_is_fast(ty));
        if compact {
            match PackedWeight::compact(ty, n, k, bytes) {
                Err(lacuna_cpu::Error::UnsupportedType { .. }) => {}
                other => return Ok(other?),
            }
        }
        Ok(PackedWeight::new(ty, n, k, bytes)?)
    }
}

/// The CPU's embedding table: read from the file's bytes row by row at each pass.
#[derive(Debug, Clone, Copy)]
pub struct CpuTable {
    ty: GgmlType,
    rows: usize,
    width: usize,
    row_bytes: usize,
}

impl Backend for CpuBackend {
    type Weight = PackedWeight;
    type Vector = Vec<f32>;
    type Table = CpuTable;
    type Buf = Vec<f32>;
    type View<'a> = &'a [f32];
    type ViewMut<'a> = &'a mut [f32];

    fn name(&self) -> String {
        match lacuna_cpu::Path::active() {
            Ok(p) => format!("cpu-{p:?}").to_lowercase(),
            Err(_) => "cpu".to_string(),
        }
    }

    fn prepare_weight(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        self.prepare(self.dense_compact(), ty, n, k, bytes)
    }

    fn plan_weights(&mut self, plan: WeightPlan) -> Result<()> {
        // Repacked quantized weights take about 8.6 bits each (see lacuna-cpu's `packed`).
        let repacked = |elements: u64| elements.saturating_mul(43) / 40;
        let Some(budget) = mem_available().map(|avail| avail / 10 * 9) else {
            return Ok(());
        };
        let dense = repacked(plan.dense_elements);
        self.compact_experts = repacked(plan.expert_elements).saturating_add(dense) > budget;
        self.compact_dense = plan.expert_bytes.saturating_add(dense) > budget;
        Ok(())
    }

    fn prepare_expert(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        self.prepare(self.experts_compact(), ty, n, k, bytes)
    }

    fn weight_bytes(&self, w: &PackedWeight) -> usize {
        w.packed_bytes()
    }

    fn prepare_vector(&self, v: Vec<f32>) -> Result<Vec<f32>> {
        Ok(v)
    }

    fn prepare_table(
        &self,
        ty: GgmlType,
        rows: usize,
        width: usize,
        bytes: &[u8],
    ) -> Result<CpuTable> {
        let row_bytes = ty.row_bytes(width as u64).unwrap_or(0) as usize;
        if !lacuna_quant::can_dequantize(ty) || rows.checked_mul(row_bytes) != Some(bytes.len()) {
            return Err(Error::Cpu(lacuna_cpu::Error::BadShape {
                what: "embedding table",
                detail: "type or length does not match rows x width",
            }));
        }
        Ok(CpuTable {
            ty,
            rows,
            width,
            row_bytes,
        })
    }

    fn ensure(&mut self, buf: &mut Vec<f32>, len: usize) -> Result<()> {
        if buf.len() < len {
            buf.resize(len, 0.0);
        }
        Ok(())
    }

    fn buf_len(buf: &Vec<f32>) -> usize {
        buf.len()
    }

    fn view(buf: &Vec<f32>, range: Range<usize>) -> &[f32] {
        &buf[range]
    }

    fn view_mut(buf: &mut Vec<f32>, range: Range<usize>) -> &mut [f32] {
        &mut buf[range]
    }

    fn reborrow<'a>(view: &'a mut &mut [f32]) -> &'a mut [f32] {
        view
    }

    fn vector_to_host(&mut self, v: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(v.clone())
    }

    fn embed(
        &mut self,
        table: &CpuTable,
        bytes: &[u8],
        tokens: &[u32],
        out: &mut [f32],
    ) -> Result<()> {
        let d = table.width;
        for (xr, &tok) in out.chunks_exact_mut(d).zip(tokens) {
            if tok as usize >= table.rows {
                return Err(Error::TokenOutOfRange {
                    token: tok,
                    position: 0,
                    vocab: table.rows,
                });
            }
            let at = tok as usize * table.row_bytes;
            // ggml get_rows: dequantized to f32 by lacuna-quant, bit-exact.
            lacuna_quant::dequantize_row(table.ty, &bytes[at..at + table.row_bytes], xr).map_err(
                |source| Error::Decode {
                    name: format!("token_embd.weight (row {tok})"),
                    source,
                },
            )?;
        }
        Ok(())
    }

    fn matmul(&mut self, x: &[f32], t: usize, w: &PackedWeight, y: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::matmul(x, t, w, y, &mut self.ws)?)
    }

    fn matmul_to_host(
        &mut self,
        x: &[f32],
        t: usize,
        w: &PackedWeight,
        y: &mut [f32],
    ) -> Result<()> {
        Ok(lacuna_cpu::matmul(x, t, w, y, &mut self.ws)?)
    }

    fn rms_norm(&mut self, x: &[f32], weight: &Vec<f32>, eps: f32, out: &mut [f32]) -> Result<()> {
        let chunk = weight.len() * ROWS_PER_TASK;
        out.par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk))
            .try_for_each(|(o, x)| lacuna_cpu::rms_norm(x, weight, eps, o))?;
        Ok(())
    }

    fn rope(
        &mut self,
        x: &mut [f32],
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
    ) -> Result<()> {
        if params.n_rot == 0 || params.n_rot % 2 != 0 || params.n_rot > head_dim {
            return Err(Error::Cpu(lacuna_cpu::Error::BadShape {
                what: "rope",
                detail: "need n_rot even, positive and at most head_dim",
            }));
        }
        rope(x, t, pos0, head_dim, params);
        Ok(())
    }

    fn attention(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        shape: AttnShape,
        rows: Option<&[usize]>,
        out: &mut [f32],
    ) -> Result<()> {
        let s = lacuna_cpu::AttnShape {
            queries: shape.queries,
            keys: shape.keys,
            n_head: shape.n_head,
            n_head_kv: shape.n_head_kv,
            head_dim: shape.head_dim,
            scale: shape.scale,
        };
        // Keys visible to each computed query row (block-causal attention).
        let vis = &mut self.visible;
        vis.clear();
        if shape.block.is_some() {
            match rows {
                None => vis.extend((0..s.queries).map(|i| shape.visible(shape.pos0 + i))),
                Some(rows) => vis.extend(rows.iter().map(|&r| shape.visible(shape.pos0 + r))),
            }
        }
        let vis = shape.block.is_some().then_some(&vis[..]);
        let Some(rows) = rows else {
            return Ok(lacuna_cpu::attention_masked(
                q,
                k,
                v,
                s,
                vis,
                out,
                &mut self.ws,
            )?);
        };
        // Only the requested query rows: each row's arithmetic is independent of the others
        // in `lacuna_cpu::attention`, so these are the bits a full pass would give.
        let width = s.n_head * s.head_dim;
        let qr = &mut self.q_rows;
        qr.clear();
        for &r in rows {
            qr.extend_from_slice(&q[r * width..(r + 1) * width]);
        }
        let s = lacuna_cpu::AttnShape {
            queries: rows.len(),
            ..s
        };
        Ok(lacuna_cpu::attention_masked(
            qr,
            k,
            v,
            s,
            vis,
            out,
            &mut self.ws,
        )?)
    }

    fn swiglu(&mut self, gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<()> {
        const CHUNK: usize = 1 << 14;
        out.par_chunks_mut(CHUNK)
            .zip(gate.par_chunks(CHUNK).zip(up.par_chunks(CHUNK)))
            .try_for_each(|(o, (g, u))| lacuna_cpu::swiglu(g, u, o))?;
        Ok(())
    }

    fn add(&mut self, x: &mut [f32], y: &[f32]) -> Result<()> {
        for (a, &b) in x.iter_mut().zip(y) {
            *a += b;
        }
        Ok(())
    }

    fn add_bias(&mut self, x: &mut [f32], bias: &Vec<f32>) -> Result<()> {
        for row in x.chunks_exact_mut(bias.len()) {
            self.add(row, bias)?;
        }
        Ok(())
    }

    fn copy_rows(
        &mut self,
        src: &[f32],
        src_width: usize,
        col0: usize,
        rows: Option<&[usize]>,
        dst: &mut [f32],
        cols: usize,
    ) -> Result<()> {
        for (r, out) in dst.chunks_exact_mut(cols).enumerate() {
            let from = rows.map_or(r, |rows| rows[r]) * src_width + col0;
            out.copy_from_slice(&src[from..from + cols]);
        }
        Ok(())
    }

    fn scatter_scaled(
        &mut self,
        src: &[f32],
        to: &[usize],
        scale: &[f32],
        dst: &mut [f32],
        width: usize,
    ) -> Result<()> {
        for ((row, &to), &w) in src.chunks_exact(width).zip(to).zip(scale) {
            for (o, &v) in dst[to * width..][..width].iter_mut().zip(row) {
                *o = v * w;
            }
        }
        Ok(())
    }

    fn sum_slots(&mut self, slots: &[f32], k: usize, width: usize, out: &mut [f32]) -> Result<()> {
        for (ti, o) in out.chunks_exact_mut(width).enumerate() {
            o.copy_from_slice(&slots[ti * k * width..][..width]);
            for slot in 1..k {
                self.add(o, &slots[(ti * k + slot) * width..][..width])?;
            }
        }
        Ok(())
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (Linux; `None` elsewhere).
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Rows per rayon task of the row-wise operations.
const ROWS_PER_TASK: usize = 8;

/// ggml's `rope_ext` (no YaRN): row `p` of the `t` rows is at position `pos0 + p`;
/// `theta_i = p * freq_scale * base^(-2i/d)`, the powers built by repeated multiplication
/// as ggml's rope cache does.
pub(crate) fn rope(x: &mut [f32], t: usize, pos0: usize, head_dim: usize, params: RopeParams) {
    if t == 0 {
        return;
    }
    let width = x.len() / t;
    // ggml rotates the first n_rot elements (theta from n_rot, NeoX pairs i and
    // i + n_rot/2) and copies the rest of each head unchanged.
    let half = params.n_rot / 2;
    let theta_scale = params.freq_base.powf(-2.0 / params.n_rot as f32);
    x.par_chunks_mut(width).enumerate().for_each_init(
        || vec![0.0f32; params.n_rot],
        |cache, (p, row)| {
            let mut theta = (pos0 + p) as f32;
            for i in 0..half {
                let th = theta * params.freq_scale;
                cache[2 * i] = th.cos();
                cache[2 * i + 1] = th.sin();
                theta *= theta_scale;
            }
            for head in row.chunks_exact_mut(head_dim) {
                for i in 0..half {
                    let (c, s) = (cache[2 * i], cache[2 * i + 1]);
                    let (a, b) = match params.style {
                        RopeStyle::Normal => (2 * i, 2 * i + 1),
                        RopeStyle::Neox => (i, i + half),
                    };
                    let (x0, x1) = (head[a], head[b]);
                    head[a] = x0 * c - x1 * s;
                    head[b] = x0 * s + x1 * c;
                }
            }
        },
    );
}
