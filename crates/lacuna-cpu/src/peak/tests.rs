use super::*;

#[test]
fn op_counts_and_unavailable_paths() {
    for path in Path::ALL {
        match int8_dot_ops(path, 3) {
            Ok(ops) => {
                assert!(path.is_available());
                let per_iter = match path {
                    Path::Scalar => 12 * 4 * 2,
                    Path::Avx2 | Path::AvxVnni => 12 * 64,
                    Path::Avx512Vnni => 12 * 128,
                    Path::Amx => 4 * 16 * 16 * 64 * 2,
                    Path::Neon => 12 * 16,
                    Path::NeonDot => 12 * 32,
                    Path::NeonI8mm => 12 * 64,
                };
                // The result may carry +1 from the anti-elision term.
                assert!(
                    ops == 3 * per_iter || ops == 3 * per_iter + 1,
                    "{path}: {ops}"
                );
            }
            Err(e) => assert_eq!(e, Error::PathUnavailable { path }),
        }
    }
}

#[test]
fn thread_cpu_clock_advances_with_work() {
    let t0 = thread_cpu_time();
    if cfg!(target_os = "linux") {
        assert!(t0.is_some(), "the thread CPU clock exists on Linux");
    }
    let Some(t0) = t0 else { return };
    let mut x = 0u64;
    for i in 0..5_000_000u64 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    assert!(thread_cpu_time().unwrap() > t0, "{x}");
}

#[test]
fn int8_peak_is_positive_on_available_paths_and_typed_elsewhere() {
    for path in Path::ALL {
        match int8_peak(path, 1) {
            Ok(rate) => assert!(path.is_available() && rate > 0.0 && rate.is_finite()),
            Err(e) => assert_eq!(e, Error::PathUnavailable { path }),
        }
    }
    assert!(matches!(
        int8_peak(Path::Scalar, 0),
        Err(Error::BadShape { .. })
    ));
}
