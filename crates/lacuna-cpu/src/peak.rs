//! Microbenchmark support: the throughput of the int8 dot instruction of each path, the
//! peak the GEMM figures are compared with (`benches/peak.rs`).
//!
//! Each loop runs 12 independent accumulator chains (enough to hide the 4-5 cycle latency
//! on 2 ports), so its time measures issue throughput. Operations are counted as in GEMM
//! figures: one multiply and one add per int8 product (`2 * T * N * K` for a matmul).

use crate::{Error, Path};

mod bandwidth;
pub use bandwidth::{Bandwidth, DEFAULT_PROBE_BYTES, read_bandwidth};

/// The int8 dot peak of `path` on `threads` threads at once, in operations per second:
/// [`int8_dot_ops`] on every thread together, sized to about 40 ms a repetition, best of 3.
///
/// # Errors
/// [`Error::PathUnavailable`] when this CPU lacks `path`; [`Error::BadShape`] for 0
/// threads.
pub fn int8_peak(path: Path, threads: usize) -> Result<f64, Error> {
    if threads == 0 {
        return Err(Error::BadShape {
            what: "int8 peak",
            detail: "threads must be at least 1",
        });
    }
    // Calibrate the iterations on one thread.
    let mut iters = 1u64 << 12;
    loop {
        let t0 = std::time::Instant::now();
        int8_dot_ops(path, iters)?;
        let dt = t0.elapsed().as_secs_f64();
        if dt > 0.01 || iters >= 1 << 40 {
            iters = ((iters as f64) * 0.04 / dt.max(1e-9)).max(1.0) as u64;
            break;
        }
        iters *= 4;
    }
    let mut best = 0.0f64;
    for _ in 0..3 {
        let start = std::sync::Barrier::new(threads);
        let t0 = std::time::Instant::now();
        let ops: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        int8_dot_ops(path, iters)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("peak thread panicked"))
                .sum::<Result<u64, Error>>()
        })?;
        best = best.max(ops as f64 / t0.elapsed().as_secs_f64().max(1e-9));
    }
    Ok(best)
}

/// Runs `iters` iterations of the int8 dot instruction of `path` (4 independent full-size
/// `tdpbusd` tiles, 16x16x64, for AMX; `vpdpbusd` zmm for AVX-512 VNNI, `vpdpbusd` ymm for AVX-VNNI, `vpmaddubsw`+`vpmaddwd`+`vpaddd` ymm
/// with one operand loaded per instruction for AVX2; `smmla`, `sdot`, `smull`+`sadalp` on
/// aarch64; a plain loop for scalar) and returns the operations done. The returned value
/// also depends on the results so the loop cannot be optimised away.
pub fn int8_dot_ops(path: Path, iters: u64) -> Result<u64, Error> {
    if !path.is_available() {
        return Err(Error::PathUnavailable { path });
    }
    match path {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the path is available (checked above): AMX permitted.
        Path::Amx => Ok(unsafe { x86::amx_tdpbusd(iters) }),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the path is available (checked above).
        Path::Avx512Vnni => Ok(unsafe { x86::zmm_vnni(iters) }),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Path::AvxVnni => Ok(unsafe { x86::ymm_vnni(iters) }),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Path::Avx2 => Ok(unsafe { x86::ymm_avx2(iters) }),
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        Path::NeonI8mm => Ok(unsafe { arm::smmla(iters) }),
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        Path::NeonDot => Ok(unsafe { arm::sdot(iters) }),
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        Path::Neon => Ok(unsafe { arm::smull(iters) }),
        _ => Ok(scalar(iters)),
    }
}

/// CPU time consumed so far by the calling thread (`CLOCK_THREAD_CPUTIME_ID`): on a
/// machine shared with other jobs, single-threaded benches timed with it are not inflated by
/// time the thread spent descheduled. `None` where the clock is unavailable.
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid, exclusive pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

fn scalar(iters: u64) -> u64 {
    let mut acc = [0i32; 12];
    let mut x = std::hint::black_box([3i8; 4]);
    for _ in 0..iters {
        for (l, a) in acc.iter_mut().enumerate() {
            for &v in &x {
                *a = a.wrapping_add(i32::from(v) * (l as i32 + 1));
            }
        }
        x = std::hint::black_box(x);
    }
    let ops = iters * 12 * 4 * 2;
    ops + u64::from(acc.iter().fold(0i32, |s, &a| s.wrapping_add(a)) == 1)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::arch::x86_64::*;

    /// # Safety
    /// AMX-INT8 with tile-data permission granted.
    pub(super) unsafe fn amx_tdpbusd(iters: u64) -> u64 {
        #[repr(C, align(64))]
        struct Cfg([u8; 64]);
        let mut cfg = Cfg([0; 64]);
        cfg.0[0] = 1;
        for t in 0..6 {
            cfg.0[16 + 2 * t] = 64;
            cfg.0[48 + t] = 16;
        }
        let a = [1u8; 1024];
        let mut c = [[0i32; 16]; 16];
        // SAFETY: AMX permitted (contract); a valid palette-1 config; the loads read 1 KiB
        // from `a`, the store writes 1 KiB to `c`.
        unsafe {
            asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
            asm!(
                "tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3",
                "tileloadd tmm4, [{a} + {s}]", "tileloadd tmm5, [{a} + {s}]",
                a = in(reg) a.as_ptr(), s = in(reg) 64usize, options(nostack, readonly),
            );
            for _ in 0..iters {
                asm!(
                    "tdpbusd tmm0, tmm4, tmm5",
                    "tdpbusd tmm1, tmm4, tmm5",
                    "tdpbusd tmm2, tmm4, tmm5",
                    "tdpbusd tmm3, tmm4, tmm5",
                    options(nostack, nomem),
                );
            }
            asm!("tilestored [{c} + {s}], tmm0", c = in(reg) c.as_mut_ptr(), s = in(reg) 64usize, options(nostack));
            asm!("tilerelease", options(nostack, nomem));
        }
        let c = std::hint::black_box(c);
        iters * 4 * 16 * 16 * 64 * 2 + u64::from(c[0][0] == 1)
    }

    macro_rules! chains {
        ($zero:expr, $step:expr, $ops_per:expr, $iters:expr, $fold:expr) => {{
            let mut acc = [$zero; 12];
            for _ in 0..$iters {
                for a in acc.iter_mut() {
                    *a = $step(*a);
                }
            }
            let acc = std::hint::black_box(acc);
            $iters * 12 * $ops_per + u64::from($fold(acc) == 1)
        }};
    }

    /// # Safety
    /// AVX-512 F/VNNI.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub(super) unsafe fn zmm_vnni(iters: u64) -> u64 {
        let x = std::hint::black_box(_mm512_set1_epi8(3));
        let w = std::hint::black_box(_mm512_set1_epi8(-2));
        chains!(
            _mm512_setzero_si512(),
            |a| _mm512_dpbusd_epi32(a, x, w),
            128,
            iters,
            |acc: [__m512i; 12]| _mm512_reduce_add_epi32(acc[0])
        )
    }

    /// # Safety
    /// AVX2 + AVX-VNNI.
    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn ymm_vnni(iters: u64) -> u64 {
        let x = std::hint::black_box(_mm256_set1_epi8(3));
        let w = std::hint::black_box(_mm256_set1_epi8(-2));
        chains!(
            _mm256_setzero_si256(),
            |a| _mm256_dpbusd_avx_epi32(a, x, w),
            64,
            iters,
            |acc: [__m256i; 12]| _mm256_extract_epi32::<0>(acc[0])
        )
    }

    /// # Safety
    /// AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn ymm_avx2(iters: u64) -> u64 {
        // The operands are reloaded through `black_box` every iteration: with loop-invariant
        // operands the compiler would hoist the multiplies and time only the adds.
        let xs = [[3i8; 32]; 12];
        let w = std::hint::black_box(_mm256_set1_epi8(-2));
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_si256(); 12];
        for _ in 0..iters {
            let xs = std::hint::black_box(&xs);
            for (a, x) in acc.iter_mut().zip(xs) {
                // SAFETY: `x` is 32 readable bytes.
                let xv = unsafe { _mm256_loadu_si256(x.as_ptr().cast()) };
                *a = _mm256_add_epi32(*a, _mm256_madd_epi16(_mm256_maddubs_epi16(xv, w), ones));
            }
        }
        let acc = std::hint::black_box(acc);
        iters * 12 * 64 + u64::from(_mm256_extract_epi32::<0>(acc[0]) == 1)
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;
    use std::arch::asm;

    macro_rules! chains {
        ($insn:literal, $ops_per:expr, $iters:expr) => {{
            let x = std::hint::black_box(vdupq_n_s8(3));
            let w = std::hint::black_box(vdupq_n_s8(-2));
            let mut acc = [vdupq_n_s32(0); 12];
            for _ in 0..$iters {
                for a in acc.iter_mut() {
                    // SAFETY: the instruction only reads and writes these registers; the
                    // caller has its feature.
                    unsafe {
                        asm!(concat!($insn, " {a:v}.4s, {x:v}.16b, {w:v}.16b"),
                             a = inout(vreg) *a, x = in(vreg) x, w = in(vreg) w,
                             options(pure, nomem, nostack, preserves_flags));
                    }
                }
            }
            let acc = std::hint::black_box(acc);
            $iters * 12 * $ops_per + u64::from(vgetq_lane_s32::<0>(acc[0]) == 1)
        }};
    }

    /// # Safety
    /// FEAT_I8MM.
    #[target_feature(enable = "neon,i8mm")]
    pub(super) unsafe fn smmla(iters: u64) -> u64 {
        chains!("smmla", 64, iters)
    }

    /// # Safety
    /// FEAT_DotProd.
    #[target_feature(enable = "neon,dotprod")]
    pub(super) unsafe fn sdot(iters: u64) -> u64 {
        chains!("sdot", 32, iters)
    }

    /// # Safety
    /// NEON.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn smull(iters: u64) -> u64 {
        let x = std::hint::black_box(vdup_n_s8(3));
        let w = std::hint::black_box(vdup_n_s8(-2));
        let mut acc = [vdupq_n_s32(0); 12];
        for _ in 0..iters {
            let x = std::hint::black_box(x);
            for a in acc.iter_mut() {
                *a = vpadalq_s16(*a, vmull_s8(x, w));
            }
        }
        let acc = std::hint::black_box(acc);
        iters * 12 * 16 + u64::from(vgetq_lane_s32::<0>(acc[0]) == 1)
    }
}

#[cfg(test)]
mod tests;
