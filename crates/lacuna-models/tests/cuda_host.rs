//! The CUDA backend's host side, checked on any machine: weights repacked for the tensor
//! cores decode to ggml's values bit for bit, and the device kernels' integer plan (run on
//! the host by `Repacked::reference_matmul`) gives the CPU backend's products, for every
//! type the kernels take, on random shapes and data.

use lacuna_cpu::{PackedWeight, Workspace};
use lacuna_cuda::repack::{Layout, Repacked, SUPPORTED, TYPES};
use lacuna_quant::GgmlType;
use proptest::prelude::*;

mod common;
use common::{quantized, rel_l2, values};

/// The kernels' types that lacuna-quant can write (for the fixtures' random weights).
fn types() -> Vec<GgmlType> {
    TYPES
        .into_iter()
        .filter(|&t| lacuna_quant::can_quantize(t))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn repacked_weights_decode_and_multiply_like_the_cpu_backend(
        ti in 0..types().len(),
        n in 1usize..40,
        kb in 1usize..4,
        t in 1usize..7,
        seed in any::<u64>(),
    ) {
        let ty = types()[ti];
        let k = kb * 256;
        let w = values(seed, n * k);
        let bytes = quantized(ty, n, k, &w);
        let r = Repacked::new(ty, n, k, &bytes).unwrap();
        prop_assert_eq!(r.layout, Layout::of(ty).unwrap());
        // Decoding: bit for bit ggml's dequantize_row (the embedding-row kernels).
        let row = ty.row_bytes(k as u64).unwrap() as usize;
        let (mut got, mut want) = (vec![0.0f32; k], vec![0.0f32; k]);
        for i in 0..n {
            r.dequantize_row(i, &mut got);
            lacuna_quant::dequantize_row(ty, &bytes[i * row..(i + 1) * row], &mut want).unwrap();
            prop_assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{ty} row {i} decodes differently");
        }
        // Products: the same integer sums as the CPU kernels; only the float folds' order
        // differs (and the CPU's f32 GEMM sums in another order).
        let x = values(seed ^ 0x9e37_79b9, t * k);
        let dev = r.reference_matmul(&x, t);
        let packed = PackedWeight::new(ty, n, k, &bytes).unwrap();
        let mut cpu = vec![0.0f32; t * n];
        lacuna_cpu::matmul(&x, t, &packed, &mut cpu, &mut Workspace::default()).unwrap();
        let e = rel_l2(&dev, &cpu);
        prop_assert!(e < 1e-5, "{ty} {n}x{k} t={t}: relative L2 {e:e}");
    }
}

#[test]
fn every_listed_type_has_a_kernel_and_is_named_in_errors() {
    for ty in TYPES {
        assert!(Layout::of(ty).is_ok(), "{ty}");
        assert!(
            SUPPORTED.split(", ").any(|n| n == ty.to_string()),
            "{ty} not in {SUPPORTED}"
        );
    }
    assert_eq!(SUPPORTED.split(", ").count(), TYPES.len());
}

#[test]
fn types_without_a_kernel_are_typed_errors() {
    for ty in [
        GgmlType::Q2_K,
        GgmlType::Q4_1,
        GgmlType::Q5_1,
        GgmlType::IQ2_XXS,
    ] {
        let err = Layout::of(ty).unwrap_err();
        assert!(
            matches!(err, lacuna_cuda::Error::UnsupportedType { .. }),
            "{ty}: {err}"
        );
        assert!(err.to_string().contains("q4_K"), "{err}");
    }
    let bad = Repacked::new(GgmlType::Q4_K, 2, 256, &[0u8; 10]).unwrap_err();
    assert!(bad.to_string().contains("needs"), "{bad}");
}

#[test]
fn without_a_driver_the_backend_is_a_typed_error() {
    // CI machines have no NVIDIA driver: opening must say so, not panic.
    if lacuna_cuda::device_count() > 0 {
        return;
    }
    let err = lacuna_models::CudaBackend::new(0).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("no CUDA driver") || msg.contains("no CUDA device") || msg.contains("NVRTC"),
        "{msg}"
    );
}
