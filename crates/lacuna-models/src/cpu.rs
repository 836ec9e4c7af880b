//! The CPU backend: a thin adapter over `lacuna-cpu`'s kernels (GEMM over weights
//! repacked once at load, attention over chosen rows with block-causal masks, RMSNorm,
//! RoPE, SwiGLU, row gathers, scatters and sums), which split their work over rayon tasks
//! themselves; embedding rows are dequantized from the file by `lacuna-quant`. Shapes are
//! the graph's to check (once, see [`crate::backend`]); the kernels' own guards only keep a
//! wrong call from reading out of bounds.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use lacuna_cpu::{Mask, PackedWeight, RopeMode, Workspace};
use lacuna_gguf::SharedBytes;
use lacuna_quant::GgmlType;

use crate::backend::{AttnShape, Backend, Buffers, RopeParams, WeightPlan, Weights};
use crate::{Error, Result, RopeStyle};

/// How quantized matrix weights are kept: repacked to int8 panels (fast at every canvas
/// length; on x86 in a small form within about 1.1x the file, Q4_K two weights a byte,
/// elsewhere about 8.6 bits per weight) or compact (ggml's blocks, the file's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightLayout {
    /// Repacked, unless that would take more than three quarters of the memory available at
    /// load (`MemAvailable`: a quarter is left to everything else, where a tenth left a
    /// 24 GiB machine 2 GB beside an 18 GB model): then the mixture-of-experts weights go
    /// compact first, and the dense ones too when repacking them still would not fit (for a
    /// model without experts: in nine tenths);
    /// compact only where this CPU has a vectorised compact kernel for the type (on x86 with
    /// AVX2: Q4_K, Q6_K, Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4).
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

    /// Whether a matrix of `ty` goes compact: asked for (`compact`; under `Auto` only where
    /// the type has a vectorised compact kernel) and allowed by the type.
    fn keeps_compact(&self, compact: bool, ty: GgmlType) -> bool {
        compact
            && PackedWeight::compact_supports(ty)
            && (self.layout == WeightLayout::Compact || PackedWeight::compact_is_fast(ty))
    }

    /// Compact when [`CpuBackend::keeps_compact`] says, else repacked.
    fn prepare(
        &self,
        compact: bool,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: Cow<'_, [u8]>,
    ) -> Result<PackedWeight> {
        let compact = self.keeps_compact(compact, ty);
        Ok(match bytes {
            Cow::Owned(v) if compact => PackedWeight::compact_owned(ty, n, k, v)?,
            b if compact => PackedWeight::compact(ty, n, k, &b)?,
            b => PackedWeight::new(ty, n, k, &b)?,
        })
    }
}

/// The bytes the plan's expert and dense matrices take repacked on the active path (the
/// small form where its kernel reads it), exactly as [`PackedWeight::new`] will hold them;
/// a type it cannot repack counts its file size times two.
fn repacked_bytes(plan: &WeightPlan) -> (u64, u64) {
    let (mut experts, mut dense) = (0u64, 0u64);
    for m in &plan.matrices {
        let one = usize::try_from(m.rows)
            .ok()
            .zip(usize::try_from(m.cols).ok())
            .and_then(|(n, k)| PackedWeight::repacked_bytes(m.ty, n, k))
            .map_or_else(
                || {
                    m.ty.row_bytes(m.cols)
                        .unwrap_or(u64::MAX / 4)
                        .saturating_mul(2 * m.rows)
                },
                |b| b as u64,
            );
        let all = one.saturating_mul(m.count);
        let sum = if m.expert { &mut experts } else { &mut dense };
        *sum = sum.saturating_add(all);
    }
    (experts, dense)
}

/// What `--weights auto` keeps compact, `(experts, dense)`, given the memory available at
/// load, the experts' bytes repacked and in the file, and the dense matrices' bytes
/// repacked (with what the model holds beside them).
///
/// Repacked weights may take three quarters of `avail`, leaving a quarter to everything
/// else; past that the experts go compact first (at few tokens each their compact kernels
/// cost little), then the dense matrices of a mixture-of-experts model. A dense model's
/// matrices go compact only when repacked they would not fit in nine tenths: its repacked
/// small forms are within 12% of the file's size (F16/BF16 weights held as the file's bits),
/// and compact costs its cached steps 1.3-1.5x (the LM head over few positions), so that
/// trade pays only to fit at all.
fn auto_layout(avail: u64, experts: u64, experts_file: u64, dense: u64) -> (bool, bool) {
    let soft = avail / 4 * 3;
    let hard = avail / 10 * 9;
    let compact_experts = experts_file > 0 && experts.saturating_add(dense) > soft;
    let experts_held = if compact_experts {
        experts_file
    } else {
        experts
    };
    let dense_budget = if experts_file > 0 { soft } else { hard };
    (
        compact_experts,
        experts_held.saturating_add(dense) > dense_budget,
    )
}

/// The CPU's embedding table: read from the file's bytes row by row at each pass.
#[derive(Debug, Clone, Copy)]
pub struct CpuTable {
    ty: GgmlType,
    rows: usize,
    width: usize,
    row_bytes: usize,
}

impl Buffers for CpuBackend {
    type Buf = Vec<f32>;
    type View<'a> = &'a [f32];
    type ViewMut<'a> = &'a mut [f32];

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
}

impl Weights for CpuBackend {
    type Weight = PackedWeight;
    type Vector = Vec<f32>;
    type Table = CpuTable;

    fn prepare_weight(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        self.prepare(self.dense_compact(), ty, n, k, Cow::Borrowed(bytes))
    }

    fn prepare_weight_owned(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: Vec<u8>,
    ) -> Result<PackedWeight> {
        self.prepare(self.dense_compact(), ty, n, k, Cow::Owned(bytes))
    }

    /// A compact matrix holds the file's bytes in place (no copy: the pages are read at
    /// first use, or ahead of it), and says so.
    fn prepare_in_file(
        &self,
        expert: bool,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &SharedBytes,
    ) -> Result<(PackedWeight, bool)> {
        let compact = if expert {
            self.experts_compact()
        } else {
            self.dense_compact()
        };
        if self.keeps_compact(compact, ty) {
            let held: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(bytes.clone());
            Ok((PackedWeight::compact_shared(ty, n, k, held)?, true))
        } else {
            Ok((PackedWeight::new(ty, n, k, bytes)?, false))
        }
    }

    fn file_layout_bytes(w: &PackedWeight) -> Option<&[u8]> {
        w.file_bytes()
    }

    fn plan_weights(&mut self, plan: WeightPlan) -> Result<()> {
        let Some(avail) = mem_available() else {
            return Ok(());
        };
        let (experts, dense) = repacked_bytes(&plan);
        (self.compact_experts, self.compact_dense) = auto_layout(
            avail,
            experts,
            plan.expert_bytes,
            dense.saturating_add(plan.other_bytes),
        );
        Ok(())
    }

    fn prepare_expert(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        self.prepare(self.experts_compact(), ty, n, k, Cow::Borrowed(bytes))
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

    fn vector_to_host(&mut self, v: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(v.clone())
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        match lacuna_cpu::Path::active() {
            Ok(p) => format!("cpu-{p:?}").to_lowercase(),
            Err(_) => "cpu".to_string(),
        }
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
            // The graph checked the ids against the vocabulary (the table's rows); this
            // only keeps a wrong call from reading past the table.
            let at = tok as usize * table.row_bytes;
            let row = bytes
                .get(at..at + table.row_bytes)
                .filter(|_| (tok as usize) < table.rows)
                .ok_or(Error::Cpu(lacuna_cpu::Error::BadShape {
                    what: "embedding rows",
                    detail: "a token id is outside the table",
                }))?;
            // ggml get_rows: dequantized to f32 by lacuna-quant, bit-exact.
            lacuna_quant::dequantize_row(table.ty, row, xr).map_err(|source| Error::Decode {
                name: format!("token_embd.weight (row {tok})"),
                source,
            })?;
        }
        Ok(())
    }

    fn matmul(&mut self, x: &[f32], t: usize, w: &PackedWeight, y: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::matmul(x, t, w, y, &mut self.ws)?)
    }

    fn matmul_to_host_rows(
        &mut self,
        x: &[f32],
        w: &PackedWeight,
        rows: &mut [&mut [f32]],
    ) -> Result<()> {
        Ok(lacuna_cpu::matmul_rows(x, w, rows, &mut self.ws)?)
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
        Ok(lacuna_cpu::rms_norm(x, weight, eps, out)?)
    }

    fn rope(
        &mut self,
        x: &mut [f32],
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
    ) -> Result<()> {
        let params = cpu_rope(params);
        Ok(lacuna_cpu::rope(x, t, pos0, head_dim, params)?)
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
        let mask = shape.block.map_or(Mask::All, |block| Mask::BlockCausal {
            block,
            pos0: shape.pos0,
        });
        Ok(lacuna_cpu::attention_rows(
            q,
            k,
            v,
            s,
            mask,
            rows,
            out,
            &mut self.ws,
        )?)
    }

    fn swiglu(&mut self, gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::swiglu(gate, up, out)?)
    }

    fn geglu(&mut self, gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::geglu(gate, up, out)?)
    }

    fn upload(&mut self, host: &[f32], out: &mut [f32]) -> Result<()> {
        if host.len() != out.len() {
            return Err(lacuna_cpu::Error::BadLength {
                what: "upload",
                expected: out.len(),
                found: host.len(),
            }
            .into());
        }
        out.copy_from_slice(host);
        Ok(())
    }

    fn softmax_rows(&mut self, x: &mut [f32], cols: usize) -> Result<()> {
        if cols == 0 || x.len() % cols != 0 {
            return Err(lacuna_cpu::Error::BadShape {
                what: "softmax rows",
                detail: "the length is not a whole number of non-empty rows",
            }
            .into());
        }
        x.chunks_exact_mut(cols)
            .for_each(crate::model::moe::softmax_row);
        Ok(())
    }

    fn scale(&mut self, x: &mut [f32], s: f32) -> Result<()> {
        lacuna_cpu::scale(x, s);
        Ok(())
    }

    fn rope_factors(
        &mut self,
        x: &mut [f32],
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
        factors: &[f32],
    ) -> Result<()> {
        let params = cpu_rope(params);
        Ok(lacuna_cpu::rope_with_factors(
            x, t, pos0, head_dim, params, factors,
        )?)
    }

    fn add(&mut self, x: &mut [f32], y: &[f32]) -> Result<()> {
        Ok(lacuna_cpu::add(x, y)?)
    }

    fn add_bias(&mut self, x: &mut [f32], bias: &Vec<f32>) -> Result<()> {
        Ok(lacuna_cpu::add_bias(x, bias)?)
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
        Ok(lacuna_cpu::copy_rows(
            src, src_width, col0, rows, dst, cols,
        )?)
    }

    fn scatter_scaled(
        &mut self,
        src: &[f32],
        to: &[usize],
        scale: &[f32],
        dst: &mut [f32],
        width: usize,
    ) -> Result<()> {
        Ok(lacuna_cpu::scatter_scaled(src, to, scale, dst, width)?)
    }

    fn sum_slots(&mut self, slots: &[f32], k: usize, width: usize, out: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::sum_slots(slots, k, width, out)?)
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (Linux; `None` elsewhere).
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The CPU kernel's RoPE parameters.
fn cpu_rope(params: RopeParams) -> lacuna_cpu::RopeParams {
    lacuna_cpu::RopeParams {
        mode: match params.style {
            RopeStyle::Normal => RopeMode::Normal,
            RopeStyle::Neox => RopeMode::Neox,
        },
        n_rot: params.n_rot,
        freq_base: params.freq_base,
        freq_scale: params.freq_scale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::PlannedMatrix;

    /// `--weights auto` on the cases that decide it (GB; `avail` 23.5, a 24 GiB machine).
    #[test]
    fn auto_leaves_a_quarter_free_and_compacts_dense_models_only_to_fit() {
        const G: u64 = 1 << 30;
        let gb = |x: f64| (x * G as f64) as u64;
        let avail = gb(23.5);
        // The 30-layer DiffusionGemma: 17.6 GB experts repacked (16.5 in the file), 3.9 GB
        // dense and buffers. Repacked it would take 21.5 of 23.5: all compact.
        assert_eq!(
            auto_layout(avail, gb(17.6), gb(16.5), gb(3.9)),
            (true, true)
        );
        // A MoE model whose compact experts leave room for repacked dense matrices.
        assert_eq!(
            auto_layout(avail, gb(16.0), gb(14.0), gb(3.0)),
            (true, false)
        );
        // It fits in three quarters repacked: nothing compact.
        assert_eq!(
            auto_layout(avail, gb(12.0), gb(11.0), gb(5.0)),
            (false, false)
        );
        // A dense model at 80% of memory repacked stays repacked (nine tenths for dense)...
        assert_eq!(auto_layout(avail, 0, 0, gb(19.0)), (false, false));
        // ...and goes compact past nine tenths.
        assert_eq!(auto_layout(avail, 0, 0, gb(21.5)), (false, true));
        // Nothing overflows on absurd sizes.
        assert_eq!(
            auto_layout(avail, u64::MAX, u64::MAX, u64::MAX),
            (true, true)
        );
    }

    #[test]
    fn the_plan_is_sized_as_packing_holds_it() {
        let m = |ty, rows, cols, count, expert| PlannedMatrix {
            ty,
            rows,
            cols,
            count,
            expert,
        };
        let plan = WeightPlan {
            matrices: vec![
                m(GgmlType::Q4_K, 40, 512, 1, false),
                m(GgmlType::Q6_K, 100, 256, 1, false),
                m(GgmlType::Q4_K, 24, 256, 8, true),
                // Not repackable: twice its file size.
                m(GgmlType::IQ2_XXS, 2, 256, 3, true),
            ],
            ..WeightPlan::default()
        };
        let one = |ty, n, k| PackedWeight::repacked_bytes(ty, n, k).unwrap() as u64;
        let dense = one(GgmlType::Q4_K, 40, 512) + one(GgmlType::Q6_K, 100, 256);
        let experts = 8 * one(GgmlType::Q4_K, 24, 256) + 3 * 2 * 2 * 66;
        assert_eq!(repacked_bytes(&plan), (experts, dense));
    }
}
