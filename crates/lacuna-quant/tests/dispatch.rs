//! The byte-level entry points: typed errors for bad input, agreement with the typed API,
//! any alignment accepted.

mod common;

use lacuna_quant::{
    BlockQ4K, BlockQ6K, BlockQ8_0, Error, GgmlType, can_dequantize, cast_blocks, dequantize_blocks,
    dequantize_row, quantize_row, vec_dot, vec_dot_blocks, vec_dot_type,
};

#[test]
fn unsupported_types_are_typed_errors() {
    let mut out = [0f32; 256];
    let src = [0u8; 66];
    assert_eq!(
        dequantize_row(GgmlType::IQ2_XXS, &src, &mut out),
        Err(Error::Unsupported {
            ty: GgmlType::IQ2_XXS,
            op: "dequantize"
        })
    );
    let mut dst = [0u8; 66];
    assert_eq!(
        quantize_row(GgmlType::IQ2_XXS, &[0.0; 256], &mut dst),
        Err(Error::Unsupported {
            ty: GgmlType::IQ2_XXS,
            op: "quantize"
        })
    );
    assert_eq!(
        vec_dot(GgmlType::Q8_K, 256, &[0; 292], &[0; 292]),
        Err(Error::Unsupported {
            ty: GgmlType::Q8_K,
            op: "vec_dot"
        })
    );
    for ty in [
        GgmlType::I8,
        GgmlType::I32,
        GgmlType::F64,
        GgmlType::IQ2_XXS,
        GgmlType::IQ1_S,
    ] {
        assert!(!can_dequantize(ty), "{ty}");
    }
}

#[test]
fn partial_blocks_and_wrong_lengths_are_typed_errors() {
    let mut out = vec![0f32; 100];
    assert_eq!(
        dequantize_row(GgmlType::Q4_K, &[0u8; 144], &mut out),
        Err(Error::PartialBlock {
            ty: GgmlType::Q4_K,
            n: 100,
            block: 256
        })
    );
    let mut out = vec![0f32; 256];
    assert_eq!(
        dequantize_row(GgmlType::Q4_K, &[0u8; 143], &mut out),
        Err(Error::LengthMismatch {
            ty: GgmlType::Q4_K,
            what: "source",
            unit: "bytes",
            expected: 144,
            found: 143
        })
    );
    let mut dst = vec![0u8; 33];
    assert!(matches!(
        quantize_row(GgmlType::Q8_0, &[1.0; 32], &mut dst),
        Err(Error::LengthMismatch {
            what: "destination",
            expected: 34,
            found: 33,
            ..
        })
    ));
    assert!(matches!(
        vec_dot(GgmlType::Q4_0, 64, &[0u8; 36], &[0u8; 34]),
        Err(Error::LengthMismatch {
            ty: GgmlType::Q8_0,
            what: "rhs",
            expected: 68,
            found: 34,
            ..
        })
    ));
    let blocks = [BlockQ8_0 {
        d: half::f16::ONE,
        qs: [1; 32],
    }];
    assert!(matches!(
        vec_dot_blocks(&blocks, &[]),
        Err(Error::LengthMismatch {
            what: "rhs",
            unit: "blocks",
            expected: 1,
            found: 0,
            ..
        })
    ));
}

#[test]
fn empty_rows_are_fine() {
    let mut out: [f32; 0] = [];
    assert_eq!(dequantize_row(GgmlType::Q6_K, &[], &mut out), Ok(()));
    assert_eq!(vec_dot(GgmlType::Q6_K, 0, &[], &[]), Ok(0.0));
}

#[test]
fn misaligned_bytes_work_with_dispatch_and_fail_typed_with_cast() {
    let x: Vec<f32> = (0..512)
        .map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0)
        .collect();
    let q = common::quant(GgmlType::Q6_K, &x);
    let mut shifted = vec![0u8; q.len() + 1];
    shifted[1..].copy_from_slice(&q);
    let a = common::dequant(GgmlType::Q6_K, &q, 512);
    let b = common::dequant(GgmlType::Q6_K, &shifted[1..], 512);
    assert_eq!(a, b);

    // zero-copy view: 2-byte aligned blocks, so an odd start is rejected with a typed error
    let start = if shifted[1..].as_ptr().align_offset(2) == 0 {
        2
    } else {
        1
    };
    let err = cast_blocks::<256, BlockQ6K>(&shifted[start..start + 210]).unwrap_err();
    assert_eq!(
        err,
        Error::Cast {
            ty: GgmlType::Q6_K,
            reason: "misaligned"
        }
    );
    let err = cast_blocks::<256, BlockQ4K>(&[0u8; 145]).unwrap_err();
    assert!(matches!(
        err,
        Error::Cast {
            ty: GgmlType::Q4_K,
            ..
        }
    ));
}

#[test]
fn typed_and_byte_apis_agree() {
    let x: Vec<f32> = (0..512).map(|i| (i as f32 * 0.13).sin() * 3.0).collect();
    let bytes = common::quant(GgmlType::Q4_K, &x);
    let aligned: Vec<BlockQ4K> = bytes
        .chunks_exact(144)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let mut typed = vec![0f32; 512];
    dequantize_blocks(&aligned, &mut typed).unwrap();
    assert_eq!(typed, common::dequant(GgmlType::Q4_K, &bytes, 512));

    let y = common::quant(GgmlType::Q8_K, &x);
    let y_blocks: Vec<lacuna_quant::BlockQ8K> = y
        .chunks_exact(292)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    assert_eq!(
        vec_dot_blocks(&aligned, &y_blocks).unwrap(),
        vec_dot(GgmlType::Q4_K, 512, &bytes, &y).unwrap()
    );
}

#[test]
fn vec_dot_types_follow_ggml() {
    use GgmlType as T;
    for (ty, want) in [
        (T::Q4_0, T::Q8_0),
        (T::Q4_1, T::Q8_1),
        (T::Q5_0, T::Q8_0),
        (T::Q5_1, T::Q8_1),
        (T::Q8_0, T::Q8_0),
        (T::Q2_K, T::Q8_K),
        (T::Q3_K, T::Q8_K),
        (T::Q4_K, T::Q8_K),
        (T::Q5_K, T::Q8_K),
        (T::Q6_K, T::Q8_K),
        (T::IQ4_NL, T::Q8_0),
        (T::IQ4_XS, T::Q8_K),
        (T::F16, T::F16),
        (T::BF16, T::BF16),
        (T::F32, T::F32),
    ] {
        assert_eq!(vec_dot_type(ty), Some(want), "{ty}");
    }
    assert_eq!(vec_dot_type(T::Q8_K), None);
}

#[test]
fn block_structs_match_the_type_table() {
    use GgmlType as T;
    use lacuna_quant::*;
    fn check<const QK: usize, B: QuantBlock<QK>>() {
        assert_eq!(size_of::<B>(), B::TYPE.type_size(), "{}", B::TYPE);
        assert_eq!(QK, B::TYPE.block_size(), "{}", B::TYPE);
    }
    check::<1, f32>();
    check::<1, half::f16>();
    check::<1, half::bf16>();
    check::<32, BlockQ4_0>();
    check::<32, BlockQ4_1>();
    check::<32, BlockQ5_0>();
    check::<32, BlockQ5_1>();
    check::<32, BlockQ8_0>();
    check::<32, BlockQ8_1>();
    check::<256, BlockQ2K>();
    check::<256, BlockQ3K>();
    check::<256, BlockQ4K>();
    check::<256, BlockQ5K>();
    check::<256, BlockQ6K>();
    check::<256, BlockQ8K>();
    check::<32, BlockIQ4NL>();
    check::<256, BlockIQ4XS>();
    check::<256, BlockTQ1_0>();
    check::<256, BlockTQ2_0>();
    check::<32, BlockMXFP4>();
    check::<64, BlockNVFP4>();
    check::<128, BlockQ1_0>();
    check::<64, BlockQ2_0>();
    assert_eq!(T::Q8_1.type_size(), 36); // gguf-py 0.19's table says 40 (stale f32 fields)
}
