//! Bit-exactness against the committed reference vectors (tests/data, made by
//! tools/quant-vectors/gen_vectors.py from gguf-py's numpy code and ggml's C reference).

mod common;

use common::quantized;
use lacuna_quant::{GgmlType, dequantize_row, quantize_row};

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

const DEQUANT: &[GgmlType] = &[
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q8_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
    GgmlType::MXFP4,
    GgmlType::NVFP4,
    GgmlType::Q1_0,
    GgmlType::Q2_0,
];

/// Bytes of block `b` that ggml's output defines: all of them, except for an IQ4_NL block
/// below `GROUP_MAX_EPS`, where ggml packs stale (or uninitialized) indices after `d = 0`.
fn defined_bytes(ty: GgmlType, x: &[f32], b: usize) -> std::ops::Range<usize> {
    let size = ty.type_size();
    let qk = ty.block_size();
    let tiny = x[b * qk..(b + 1) * qk].iter().all(|v| v.abs() < 1e-15);
    if ty == GgmlType::IQ4_NL && tiny {
        b * size..b * size + 2
    } else {
        b * size..(b + 1) * size
    }
}

#[test]
fn dequantize_is_bit_exact_with_reference_vectors() {
    for &ty in DEQUANT {
        let blocks = data(&format!("deq_{ty}.blocks"));
        let expected = f32s(&data(&format!("deq_{ty}.f32")));
        let mut out = vec![0f32; expected.len()];
        dequantize_row(ty, &blocks, &mut out).unwrap();
        for (i, (a, e)) in out.iter().zip(&expected).enumerate() {
            let same = a.to_bits() == e.to_bits() || (a.is_nan() && e.is_nan());
            assert!(
                same,
                "{ty} element {i}: got {a:e} ({:#x}), want {e:e} ({:#x})",
                a.to_bits(),
                e.to_bits()
            );
        }
    }
}

#[test]
fn quantize_is_bit_exact_with_ggml_reference_quantizers() {
    for ty in quantized() {
        let x = f32s(&data(&format!("q_{ty}.in.f32")));
        let expected = data(&format!("q_{ty}.out"));
        let mut out = vec![0u8; expected.len()];
        quantize_row(ty, &x, &mut out).unwrap();
        let size = ty.type_size();
        let bad: Vec<usize> = (0..expected.len() / size)
            .filter(|&b| {
                let r = defined_bytes(ty, &x, b);
                out[r.clone()] != expected[r]
            })
            .collect();
        assert!(bad.is_empty(), "{ty}: blocks {bad:?} differ from ggml");
    }
}

#[test]
fn every_supported_type_has_reference_vectors() {
    // a type gaining a dequantizer or quantizer here must gain vectors (and a row above):
    // run tools/quant-vectors/gen_vectors.py and commit tests/data
    for &ty in GgmlType::ALL {
        if ty == GgmlType::F32 {
            continue; // the identity
        }
        assert_eq!(
            lacuna_quant::can_dequantize(ty),
            DEQUANT.contains(&ty),
            "{ty}: dequantize vectors out of date"
        );
        assert_eq!(
            lacuna_quant::can_quantize(ty),
            quantized().any(|q| q == ty),
            "{ty}: quantize vectors out of date"
        );
    }
    let dir = format!("{}/tests/data", env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(format!("{dir}/MANIFEST.txt")).unwrap();
    for &ty in DEQUANT {
        assert!(
            manifest.contains(&format!("deq {ty} ")),
            "{ty} missing from MANIFEST.txt"
        );
    }
    for ty in quantized() {
        assert!(
            manifest.contains(&format!("q   {ty} ")),
            "{ty} missing from MANIFEST.txt"
        );
    }
}

/// IQ4_NL through the chunk quantizer llama-quantize calls (`quantize_iq4_nl`, no imatrix).
/// Inputs whose every element is tiny or non-finite are skipped: ggml's search then runs on
/// NaN scales, which no weight file holds.
#[test]
fn chunk_quantize_matches_ggml_quantize_iq4_nl() {
    let x = f32s(&data("chunk_iq4_nl.in.f32"));
    let expected = data("chunk_iq4_nl.out");
    let mut out = vec![0u8; expected.len()];
    lacuna_quant::quantize_row_chunk(GgmlType::IQ4_NL, &x, &mut out).unwrap();
    let bad: Vec<usize> = (0..expected.len() / 18)
        .filter(|&b| x[32 * b..32 * b + 32].iter().all(|v| v.is_finite()))
        .filter(|&b| out[18 * b..18 * b + 18] != expected[18 * b..18 * b + 18])
        .collect();
    assert!(
        bad.is_empty(),
        "blocks {bad:?} differ from ggml's quantize_iq4_nl"
    );
    // The other types: the chunk quantizer is the row quantizer.
    let x = f32s(&data("q_q4_K.in.f32"));
    let (mut a, mut b) = (
        vec![0u8; x.len() / 256 * 144],
        vec![0u8; x.len() / 256 * 144],
    );
    lacuna_quant::quantize_row_chunk(GgmlType::Q4_K, &x, &mut a).unwrap();
    quantize_row(GgmlType::Q4_K, &x, &mut b).unwrap();
    assert_eq!(a, b);
}
