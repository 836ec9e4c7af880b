//! Choosing where a model runs: [`Device`], and [`AnyModel`], a model on whichever backend
//! was chosen, behind one type for the engine. What runs a generation matches on it once and
//! works on the typed [`Model`] (and its typed [`KvCache`](crate::KvCache)) from there.

use std::path::Path;

use lacuna_gguf::GgufFile;
use lacuna_sampler::UnknownName;

use crate::{Arch, Config, CpuBackend, CudaBackend, Model, PartTimes, Result, WeightLayout};

/// Where a model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// CUDA device 0 when one is usable (driver, NVRTC, compute capability 8.0+, and its test
    /// kernel agrees with the host), else the CPU.
    #[default]
    Auto,
    /// The host CPU.
    Cpu,
    /// CUDA device `N`.
    Cuda(usize),
}

impl Device {
    /// `auto`, `cpu`, `cuda` (device 0) or `cuda:N`.
    pub fn from_name(name: &str) -> Option<Device> {
        match name {
            "auto" => Some(Device::Auto),
            "cpu" => Some(Device::Cpu),
            "cuda" => Some(Device::Cuda(0)),
            _ => name.strip_prefix("cuda:")?.parse().ok().map(Device::Cuda),
        }
    }

    /// The usable GPU `Auto` picks, if any: device 0 opened, its test kernel passed.
    fn auto_gpu() -> Option<CudaBackend> {
        let mut b = CudaBackend::new(0).ok()?;
        b.self_test().is_ok_and(|e| e < 1e-4).then_some(b)
    }
}

impl std::str::FromStr for Device {
    type Err = UnknownName;

    /// `auto`, `cpu`, `cuda` (device 0) or `cuda:N`.
    fn from_str(s: &str) -> std::result::Result<Device, UnknownName> {
        Device::from_name(s).ok_or_else(|| UnknownName {
            what: "device",
            name: s.to_string(),
            valid: &["auto", "cpu", "cuda", "cuda:N"],
        })
    }
}

impl std::str::FromStr for WeightLayout {
    type Err = UnknownName;

    /// `auto`, `compact` or `fast`.
    fn from_str(s: &str) -> std::result::Result<WeightLayout, UnknownName> {
        lacuna_sampler::names::parse_name(
            "weight layout",
            s,
            WeightLayout::NAMES,
            &[
                WeightLayout::Auto,
                WeightLayout::Compact,
                WeightLayout::Fast,
            ],
        )
    }
}

impl WeightLayout {
    /// Every valid name of a layout.
    pub const NAMES: &'static [&'static str] = &["auto", "compact", "fast"];
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Auto => f.write_str("auto"),
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// A model on the CPU or on a CUDA device. (One per engine, so the variants' sizes do not
/// matter.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyModel {
    /// On the CPU backend.
    Cpu(Model<CpuBackend>),
    /// On the CUDA backend.
    Cuda(Model<CudaBackend>),
}

macro_rules! on {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            AnyModel::Cpu($m) => $e,
            AnyModel::Cuda($m) => $e,
        }
    };
}

impl AnyModel {
    /// Loads `file` on `device` (`Auto` resolved first); `layout` applies to the CPU.
    pub fn load(file: GgufFile, device: Device, layout: WeightLayout) -> Result<AnyModel> {
        let cpu = |file| {
            Ok(AnyModel::Cpu(Model::load(
                file,
                CpuBackend::with_layout(layout),
            )?))
        };
        match device {
            Device::Cpu => cpu(file),
            Device::Cuda(n) => Ok(AnyModel::Cuda(Model::load(file, CudaBackend::new(n)?)?)),
            Device::Auto => match Device::auto_gpu() {
                Some(gpu) => Ok(AnyModel::Cuda(Model::load(file, gpu)?)),
                None => cpu(file),
            },
        }
    }

    /// Memory-maps and loads the GGUF file at `path`.
    pub fn open(path: impl AsRef<Path>, device: Device, layout: WeightLayout) -> Result<AnyModel> {
        Self::load(GgufFile::open(path)?, device, layout)
    }

    /// The CPU model, when it is one.
    pub fn cpu(&self) -> Option<&Model<CpuBackend>> {
        match self {
            AnyModel::Cpu(m) => Some(m),
            AnyModel::Cuda(_) => None,
        }
    }

    /// The device it runs on.
    pub fn device(&self) -> Device {
        match self {
            AnyModel::Cpu(_) => Device::Cpu,
            AnyModel::Cuda(m) => Device::Cuda(m.backend().gpu().info().ordinal),
        }
    }

    /// The GPU it runs on, if any.
    pub fn gpu_info(&self) -> Option<lacuna_cuda::GpuInfo> {
        match self {
            AnyModel::Cpu(_) => None,
            AnyModel::Cuda(m) => Some(m.backend().gpu().info().clone()),
        }
    }

    /// The backend's name (`cpu-amx`, `cuda-sm90`, ...).
    pub fn backend_name(&self) -> String {
        use crate::Backend;
        on!(self, m => m.backend().name())
    }

    /// See [`Model::config`].
    pub fn config(&self) -> &Config {
        on!(self, m => m.config())
    }

    /// See [`Model::arch`].
    pub fn arch(&self) -> Arch {
        on!(self, m => m.arch())
    }

    /// See [`Model::vocab_size`].
    pub fn vocab_size(&self) -> usize {
        on!(self, m => m.vocab_size())
    }

    /// See [`Model::context_length`].
    pub fn context_length(&self) -> usize {
        on!(self, m => m.context_length())
    }

    /// See [`Model::mask_token_id`].
    pub fn mask_token_id(&self) -> Option<u32> {
        on!(self, m => m.mask_token_id())
    }

    /// See [`Model::shift_logits`].
    pub fn shift_logits(&self) -> bool {
        on!(self, m => m.shift_logits())
    }

    /// See [`Model::attention_block`].
    pub fn attention_block(&self) -> Option<usize> {
        on!(self, m => m.attention_block())
    }

    /// See [`Model::file`].
    pub fn file(&self) -> &GgufFile {
        on!(self, m => m.file())
    }

    /// See [`Model::weight_bytes`].
    pub fn weight_bytes(&self) -> usize {
        on!(self, m => m.weight_bytes())
    }

    /// See [`Model::part_times`].
    pub fn part_times(&self) -> PartTimes {
        on!(self, m => m.part_times())
    }

    /// See [`Model::reset_part_times`].
    pub fn reset_part_times(&mut self) {
        on!(self, m => m.reset_part_times())
    }

    /// See [`Model::set_profiling`].
    pub fn set_profiling(&mut self, on: bool) {
        on!(self, m => m.set_profiling(on))
    }

    /// See [`Model::forward_all`].
    pub fn forward_all(&mut self, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        on!(self, m => m.forward_all(tokens, out))
    }

    /// See [`Model::forward`].
    pub fn forward(&mut self, tokens: &[u32], rows: &[usize], out: &mut [f32]) -> Result<()> {
        on!(self, m => m.forward(tokens, rows, out))
    }
}
