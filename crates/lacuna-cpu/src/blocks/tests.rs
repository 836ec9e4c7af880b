use super::*;
use crate::testing::{Rng, weights};
use lacuna_quant::GgmlType;

/// Weight `i` of a decoded block, in ggml's dequantize operation order.
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
                QuantKind::Q2K => dec.d * dec.sc[i / 16] as f32 * q + dec.aff[i / 16],
                QuantKind::Q3K | QuantKind::Q6K | QuantKind::IQ4XS => {
                    dec.d * dec.sc[i / kind.sub()] as f32 * q
                }
                QuantKind::Q4_1 | QuantKind::Q5_1 => q * dec.d + dec.aff[0],
                QuantKind::Q8_0
                | QuantKind::Q4_0
                | QuantKind::Q5_0
                | QuantKind::IQ4NL
                | QuantKind::MXFP4 => q * dec.d,
            }
        })
        .collect()
}

#[test]
fn decode_matches_lacuna_quant_dequantize_bitwise() {
    let mut rng = Rng(0xdec0de);
    for kind in QuantKind::ALL {
        let ty = kind.ty();
        for scale in [1e-3, 1.0, 300.0] {
            for _ in 0..100 {
                let raw = weights(ty, 1, kind.block(), &mut rng, scale);
                let mut want = vec![0.0f32; kind.block()];
                lacuna_quant::dequantize_row(ty, &raw, &mut want).unwrap();
                let got = dequant(kind, &decode(kind, &raw));
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.to_bits(), w.to_bits(), "{ty}: {got:?} vs {want:?}");
                }
            }
        }
    }
}

#[test]
fn kind_table() {
    assert_eq!(QuantKind::of(GgmlType::IQ2_XXS), None);
    assert_eq!(QuantKind::of(GgmlType::F16), None);
    for kind in QuantKind::ALL {
        let ty = kind.ty();
        assert_eq!(QuantKind::of(ty), Some(kind));
        assert_eq!(kind.block() % kind.sub(), 0);
        assert!(kind.block() / kind.sub() <= 16);
        if let Some(g) = kind.affine_group() {
            assert!(kind.block() / g <= 16 && !kind.has_mins());
        }
    }
    assert!(QuantKind::Q4K.has_mins() && !QuantKind::Q6K.has_mins());
    assert!(!QuantKind::Q8_0.has_scales() && QuantKind::Q6K.has_scales());
}

/// `wide()` is exactly "some weight exceeds 32 in magnitude" over random blocks.
#[test]
fn wide_kinds_are_the_ones_with_large_weights() {
    let mut rng = Rng(0x31de);
    for kind in QuantKind::ALL {
        let mut max = 0i32;
        for _ in 0..200 {
            let raw = weights(kind.ty(), 1, kind.block(), &mut rng, 1.0);
            let dec = decode(kind, &raw);
            max = max.max(
                dec.q[..kind.block()]
                    .iter()
                    .map(|&q| i32::from(q).abs())
                    .max()
                    .unwrap(),
            );
        }
        assert_eq!(kind.wide(), max > 32, "{kind:?}: max |q| {max}");
    }
}
