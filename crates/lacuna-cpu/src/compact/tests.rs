use proptest::prelude::*;

use crate::blocks::QuantKind;
use crate::testing::{Rng, weights};
use crate::{PackedWeight, Path, Workspace, matmul_on};

fn acts(t: usize, k: usize, rng: &mut Rng, scale: f32) -> Vec<f32> {
    (0..t * k).map(|_| rng.f32() * scale).collect()
}

fn run(path: Path, w: &PackedWeight, x: &[f32], t: usize) -> Vec<u32> {
    let mut y = vec![f32::NAN; t * w.n()];
    matmul_on(path, x, t, w, &mut y, &mut Workspace::new()).unwrap();
    y.iter().map(|v| v.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The compact layout, copied or held in place, gives the repacked layout's bits, for
    /// every type it takes, on every path, over random shapes (ragged panels; few tokens on the compact kernels,
    /// both sides of the 32-token switch to decoded panels, and many) and data.
    #[test]
    fn compact_matches_repacked_bitwise(
        (t, n, kb, seed, scale) in (prop_oneof![1usize..12, 28usize..36, 126usize..132], 1usize..40, 1usize..4, any::<u64>(),
            prop_oneof![Just(0.01f32), Just(1.0), Just(30.0)])
    ) {
        for kind in QuantKind::ALL.into_iter().filter(|&k| k.affine_group().is_none()) {
            let ty = kind.ty();
            let k = kb * 256;
            let mut rng = Rng(seed | 1);
            let bytes = weights(ty, n, k, &mut rng, scale);
            let x = acts(t, k, &mut rng, scale);
            let packed = PackedWeight::new(ty, n, k, &bytes).unwrap();
            let compact = PackedWeight::compact(ty, n, k, &bytes).unwrap();
            prop_assert!(compact.is_compact());
            prop_assert_eq!(compact.packed_bytes(), bytes.len());
            let want = run(Path::Scalar, &packed, &x, t);
            for path in Path::available() {
                prop_assert_eq!(&run(path, &compact, &x, t), &want, "{:?} on {}", ty, path);
            }
            // Held in place (a file's bytes behind a handle): the same bytes, the same bits.
            let shared =
                PackedWeight::compact_shared(ty, n, k, std::sync::Arc::new(bytes.clone())).unwrap();
            prop_assert_eq!(shared.file_bytes(), Some(&bytes[..]));
            prop_assert_eq!(&run(Path::best(), &shared, &x, t), &want, "{:?} shared", ty);
        }
    }
}

#[test]
fn compact_refuses_offset_and_float_types_and_bad_sizes() {
    use lacuna_quant::GgmlType;
    for ty in [
        GgmlType::Q2_K,
        GgmlType::Q4_1,
        GgmlType::Q5_1,
        GgmlType::F16,
        GgmlType::F32,
    ] {
        assert!(PackedWeight::compact(ty, 4, 256, &[]).is_err(), "{ty:?}");
    }
    assert!(PackedWeight::compact(GgmlType::Q4_K, 2, 256, &[0; 144]).is_err());
    assert!(PackedWeight::compact(GgmlType::Q4_K, 2, 200, &[0; 288]).is_err());
    let short = std::sync::Arc::new(vec![0u8; 144]);
    assert!(PackedWeight::compact_shared(GgmlType::Q4_K, 2, 256, short).is_err());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        for ty in [
            GgmlType::Q4_K,
            GgmlType::Q6_K,
            GgmlType::Q8_0,
            GgmlType::Q4_0,
            GgmlType::Q5_0,
            GgmlType::IQ4_NL,
            GgmlType::MXFP4,
        ] {
            assert!(PackedWeight::compact_is_fast(ty), "{ty:?}");
        }
    }
    // Q5_K, Q3_K and IQ4_XS have no vectorised compact kernel yet (the portable loop).
    assert!(!PackedWeight::compact_is_fast(GgmlType::Q5_K));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The vectorised panel decoder writes the portable one's values, array for array, for
    /// every type it takes (whole and ragged panels; the rest of a ragged panel portable).
    #[test]
    fn panel_decoder_matches_portable(
        (kb, seed, scale) in (1usize..4, any::<u64>(),
            prop_oneof![Just(0.01f32), Just(1.0), Just(30.0)])
    ) {
        use crate::packed::QuantPacked;
        let kinds = QuantKind::ALL.into_iter().filter(|&k| k.affine_group().is_none());
        // Two vectorised halves; one and a portable rest; one portable row.
        for (kind, rows) in kinds.flat_map(|k| [16, 13, 1].map(|r| (k, r))) {
            let k = kb * 256;
            let mut rng = Rng(seed | 1);
            let bytes = weights(kind.ty(), rows, k, &mut rng, scale);
            let row_bytes = bytes.len() / rows;
            let (mut fast, mut slow) = (QuantPacked::one_panel(kind, k), QuantPacked::one_panel(kind, k));
            fast.refill(&bytes, row_bytes);
            slow.refill_portable(&bytes, row_bytes);
            prop_assert_eq!(&fast.qs, &slow.qs, "{:?} weights", kind);
            prop_assert_eq!(&fast.scales, &slow.scales, "{:?} scales", kind);
            prop_assert_eq!(&fast.corr, &slow.corr, "{:?} corr", kind);
            prop_assert_eq!(&fast.mins, &slow.mins, "{:?} mins", kind);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&fast.d), bits(&slow.d), "{:?} d", kind);
            prop_assert_eq!(bits(&fast.dmin), bits(&slow.dmin), "{:?} dmin", kind);
        }
    }
}
