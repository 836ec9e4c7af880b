use super::*;
use crate::gemm::tests::Rng;

/// `d * sc * q - dmin * min`, in ggml's dequantize operation order, from a decoded block.
fn dequant(kind: QuantKind, dec: &Decoded) -> Vec<f32> {
    (0..kind.block())
        .map(|i| {
            let q = f32::from(dec.q[i]);
            match kind {
                QuantKind::Q4K | QuantKind::Q5K => {
                    let d1 = dec.d * dec.sc[i / 32] as f32;
                    let m1 = dec.dmin * f32::from(dec.mins[i / 32]);
                    d1 * q - m1
                }
                QuantKind::Q6K => dec.d * dec.sc[i / 16] as f32 * q,
                QuantKind::Q8_0 => q * dec.d,
                QuantKind::Q4_0 => q * dec.d,
            }
        })
        .collect()
}

#[test]
fn decode_matches_lacuna_quant_dequantize_bitwise() {
    let mut rng = Rng(0xdec0de);
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
    ] {
        let kind = QuantKind::of(ty).unwrap();
        for _ in 0..200 {
            let mut raw: Vec<u8> = (0..ty.type_size()).map(|_| rng.next() as u8).collect();
            // Finite f16 scales (random bytes could be NaN or infinite).
            let at = if ty == GgmlType::Q6_K { 208 } else { 0 };
            raw[at + 1] &= 0x3f;
            if kind.has_mins() {
                raw[3] &= 0x3f;
            }
            let mut want = vec![0.0f32; kind.block()];
            lacuna_quant::dequantize_row(ty, &raw, &mut want).unwrap();
            let got = dequant(kind, &decode(kind, &raw));
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_bits(), w.to_bits(), "{ty}: {got:?} vs {want:?}");
            }
        }
    }
}

#[test]
fn kind_table() {
    assert_eq!(QuantKind::of(GgmlType::Q2_K), None);
    assert_eq!(QuantKind::of(GgmlType::F16), None);
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
    ] {
        let kind = QuantKind::of(ty).unwrap();
        assert_eq!(kind.ty(), ty);
        assert_eq!(kind.block() % kind.sub(), 0);
        assert!(kind.block() / kind.sub() <= 16);
    }
    assert!(QuantKind::Q4K.has_mins() && !QuantKind::Q6K.has_mins());
    assert!(!QuantKind::Q8_0.has_scales() && QuantKind::Q6K.has_scales());
}
