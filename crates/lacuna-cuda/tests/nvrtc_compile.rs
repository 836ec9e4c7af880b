//! Every kernel source compiles through NVRTC for sm_80, sm_89 and sm_90, and ptxas reports
//! no register spills in the GEMM and attention kernels. Runs wherever an NVRTC library is
//! found (`LACUNA_NVRTC`, the PyPI package `nvidia-cuda-nvrtc-cu12`, or the loader's path);
//! CI sets `LACUNA_REQUIRE_NVRTC=1` so that a missing library fails instead of skipping.

use lacuna_cuda::{Error, kernels, nvrtc};

fn nvrtc_or_skip() -> bool {
    match nvrtc::version() {
        Ok(_) => true,
        Err(e @ Error::NoNvrtc { .. }) => {
            assert!(
                std::env::var_os("LACUNA_REQUIRE_NVRTC").is_none(),
                "LACUNA_REQUIRE_NVRTC is set but: {e}"
            );
            eprintln!("skipped: {e}");
            false
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn every_kernel_compiles_for_every_ci_arch_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    // A fresh cache directory: this test is about compiling, not about the cache.
    let dir = std::env::temp_dir().join(format!("lacuna-nvrtc-test-{}", std::process::id()));
    // SAFETY: no other thread of this test binary reads the environment meanwhile (one
    // test in this file).
    unsafe { std::env::set_var("LACUNA_CUDA_CACHE", &dir) };
    for src in kernels::ALL {
        for arch in kernels::CI_ARCHES {
            let c = nvrtc::compile(&src, arch).unwrap_or_else(|e| panic!("{e}"));
            assert!(!c.cached);
            assert!(c.cubin.len() > 64, "{} sm_{arch}: empty cubin", src.name);
            assert_eq!(
                &c.cubin[..4],
                b"\x7fELF",
                "{} sm_{arch}: not a cubin",
                src.name
            );
            let reports = nvrtc::function_reports(&c.log);
            for entry in src.entries {
                let r = reports
                    .iter()
                    .find(|r| r.name == *entry)
                    .unwrap_or_else(|| {
                        panic!(
                            "{} sm_{arch}: no ptxas report for {entry}:\n{}",
                            src.name, c.log
                        )
                    });
                if src.no_spills {
                    assert_eq!(
                        (r.spill_stores, r.spill_loads, r.stack_frame),
                        (0, 0, 0),
                        "{} sm_{arch}: {entry} spills or uses local memory:\n{}",
                        src.name,
                        c.log
                    );
                }
                eprintln!(
                    "{} sm_{arch} {entry}: {:?} registers",
                    src.name, r.registers
                );
            }
            // The second compile comes from the disk cache, byte for byte.
            let again = nvrtc::compile(&src, arch).unwrap();
            assert!(again.cached);
            assert_eq!(again.cubin, c.cubin);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_source_is_a_typed_error_with_the_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let bad = kernels::Source::for_test("broken", "extern \"C\" __global__ void f() { nope; }");
    match nvrtc::compile(&bad, 80) {
        Err(Error::Compile { kernel, arch, log }) => {
            assert_eq!(kernel, "broken");
            assert_eq!(arch, "sm_80");
            assert!(log.contains("nope"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
