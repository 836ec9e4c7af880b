//! [`GpuInfo`]: what probing a device finds, and [`device_count`].

use cudarc::driver::CudaContext;

use crate::library;

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
