//! The one SIMD detection point: which instruction path this process uses for its kernels.
//!
//! Detected once ([`Path::active`]); `LACUNA_CPU_PATH=scalar|avx2|avxvnni|avx512vnni|amx`
//! forces a path (an unavailable one is an error, never a silent downgrade), so tests and
//! benches can run every path the host supports ([`Path::available`]).

use std::sync::OnceLock;

use crate::Error;

/// An instruction path, from the most portable to the fastest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Path {
    /// Portable Rust, no `#[target_feature]`.
    Scalar,
    /// AVX2 + FMA: `vpmaddubsw`/`vpmaddwd` on 256-bit registers.
    Avx2,
    /// AVX-VNNI: 256-bit `vpdpbusd` (Alder Lake and later laptops).
    AvxVnni,
    /// AVX-512 F/BW + VNNI: 512-bit `vpdpbusd`.
    Avx512Vnni,
    /// AMX-INT8 tiles, after Linux granted tile-data permission: `tdpbusd` for the K-quants
    /// and IQ4_XS over canvases of 32 tokens or more, `tdpbssd` for the 32-element formats
    /// (Q8_0, Q4_0, Q5_0, IQ4_NL, ...) from 8 tokens; everything else (float weights,
    /// shorter canvases, the other ops) runs the AVX-512 code.
    Amx,
    /// aarch64 Advanced SIMD: `smull` + `sadalp` int8 products, `fmla` floats.
    Neon,
    /// aarch64 with FEAT_DotProd: `sdot` (Cortex-A76/Neoverse N1, Apple M1 and later).
    NeonDot,
    /// aarch64 with FEAT_I8MM: `smmla`, 2 tokens x 2 rows x 8 products per instruction
    /// (Neoverse V1/N2, Graviton 3/4, Apple M2 and later).
    NeonI8mm,
}

impl Path {
    /// Every path: scalar, then each architecture's paths slowest first.
    pub const ALL: [Path; 8] = [
        Path::Scalar,
        Path::Avx2,
        Path::AvxVnni,
        Path::Avx512Vnni,
        Path::Amx,
        Path::Neon,
        Path::NeonDot,
        Path::NeonI8mm,
    ];

    /// Whether this is one of the aarch64 paths.
    pub(crate) fn is_aarch64(self) -> bool {
        matches!(self, Path::Neon | Path::NeonDot | Path::NeonI8mm)
    }

    /// The paths of the architecture this binary was built for, slowest first (scalar
    /// included): the ones worth reporting as present or missing.
    pub fn of_this_arch() -> Vec<Path> {
        Path::ALL
            .into_iter()
            .filter(|p| match p {
                Path::Scalar => true,
                Path::Avx2 | Path::AvxVnni | Path::Avx512Vnni | Path::Amx => {
                    cfg!(target_arch = "x86_64")
                }
                Path::Neon | Path::NeonDot | Path::NeonI8mm => cfg!(target_arch = "aarch64"),
            })
            .collect()
    }

    /// The name used by `LACUNA_CPU_PATH`.
    pub const fn name(self) -> &'static str {
        match self {
            Path::Scalar => "scalar",
            Path::Avx2 => "avx2",
            Path::AvxVnni => "avxvnni",
            Path::Avx512Vnni => "avx512vnni",
            Path::Amx => "amx",
            Path::Neon => "neon",
            Path::NeonDot => "dotprod",
            Path::NeonI8mm => "i8mm",
        }
    }

    /// Parses a path name (case-insensitive).
    pub fn from_name(name: &str) -> Result<Path, Error> {
        let lower = name.trim().to_ascii_lowercase();
        Path::ALL
            .into_iter()
            .find(|p| p.name() == lower)
            .ok_or_else(|| Error::UnknownPath {
                name: name.to_owned(),
            })
    }

    /// Whether this CPU (and OS) can run the path.
    pub fn is_available(self) -> bool {
        match self {
            Path::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Path::AvxVnni => {
                Path::Avx2.is_available() && std::arch::is_x86_feature_detected!("avxvnni")
            }
            #[cfg(target_arch = "x86_64")]
            Path::Avx512Vnni => {
                Path::Avx2.is_available()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Path::Amx => Path::Avx512Vnni.is_available() && amx_permitted(),
            #[cfg(target_arch = "aarch64")]
            Path::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[cfg(target_arch = "aarch64")]
            Path::NeonDot => {
                Path::Neon.is_available() && std::arch::is_aarch64_feature_detected!("dotprod")
            }
            #[cfg(target_arch = "aarch64")]
            Path::NeonI8mm => {
                Path::NeonDot.is_available() && std::arch::is_aarch64_feature_detected!("i8mm")
            }
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every path this machine can run, slowest first.
    pub fn available() -> Vec<Path> {
        Path::ALL.into_iter().filter(|p| p.is_available()).collect()
    }

    /// The fastest available path.
    pub fn best() -> Path {
        Path::ALL
            .into_iter()
            .rev()
            .find(|p| p.is_available())
            .unwrap_or(Path::Scalar)
    }

    /// The path this process uses: `LACUNA_CPU_PATH` if set, else [`Path::best`]. Decided
    /// once; a bad or unavailable `LACUNA_CPU_PATH` is returned as the error every time.
    pub fn active() -> Result<Path, Error> {
        static ACTIVE: OnceLock<Result<Path, Error>> = OnceLock::new();
        ACTIVE
            .get_or_init(|| match std::env::var("LACUNA_CPU_PATH") {
                Ok(name) if !name.trim().is_empty() => {
                    let path = Path::from_name(&name)?;
                    if path.is_available() {
                        Ok(path)
                    } else {
                        Err(Error::PathUnavailable { path })
                    }
                }
                _ => Ok(Path::best()),
            })
            .clone()
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the CPU's vendor string is AMD's (`AuthenticAMD`): kernels whose best register
/// tile differs between vendors' cores ask this once.
#[cfg(target_arch = "x86_64")]
pub(crate) fn is_amd() -> bool {
    static AMD: OnceLock<bool> = OnceLock::new();
    *AMD.get_or_init(|| {
        // CPUID leaf 0: the vendor string in EBX, EDX, ECX.
        let id = std::arch::x86_64::__cpuid(0);
        [id.ebx, id.edx, id.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163]
    })
}

/// Asks Linux for permission to use the AMX tile data (`arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)`), once per process; `false` when the CPU lacks AMX-INT8 or the
/// kernel refuses.
#[cfg(target_arch = "x86_64")]
fn amx_permitted() -> bool {
    static PERMITTED: OnceLock<bool> = OnceLock::new();
    *PERMITTED.get_or_init(|| {
        // CPUID.(EAX=7,ECX=0):EDX bit 24 = AMX-TILE, bit 25 = AMX-INT8 (std's detection of
        // these is still unstable).
        let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
        if edx & (1 << 24) == 0 || edx & (1 << 25) == 0 {
            return false;
        }
        request_amx_permission()
    })
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_amx_permission() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl(ARCH_REQ_XCOMP_PERM, feature) takes two integers, touches no
    // user memory, and only changes which xstate components this process may use.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    rc == 0
}

#[cfg(all(target_arch = "x86_64", not(target_os = "linux")))]
fn request_amx_permission() -> bool {
    false
}

#[cfg(test)]
mod tests;
