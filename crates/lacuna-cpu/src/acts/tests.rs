use super::*;
use crate::testing::Rng;
use lacuna_quant::GgmlType;

fn row(rng: &mut Rng, k: usize, scale: f32) -> Vec<f32> {
    (0..k).map(|_| rng.f32() * scale).collect()
}

#[test]
fn q8k_is_bit_exact_with_ggml_reference() {
    let mut rng = Rng(0x8c);
    for scale in [1e-6f32, 1.0, 1e4] {
        let x = row(&mut rng, 1024, scale);
        let mut a = Acts::default();
        a.prepare(ActKind::Q8K, &x, 1, 1024);
        let mut want = vec![0u8; GgmlType::Q8_K.row_bytes(1024).unwrap() as usize];
        lacuna_quant::quantize_row(GgmlType::Q8_K, &x, &mut want).unwrap();
        for (b, blk) in want.chunks_exact(292).enumerate() {
            assert_eq!(a.d[b].to_le_bytes(), blk[0..4], "d of block {b}");
            for i in 0..256 {
                assert_eq!((a.q[b * 256 + i] ^ 0x80) as i8, blk[4 + i] as i8);
            }
            for j in 0..8 {
                let bs = |j: usize| i16::from_le_bytes([blk[260 + 2 * j], blk[261 + 2 * j]]);
                assert_eq!(a.sums[b * 8 + j], bs(2 * j) + bs(2 * j + 1));
            }
        }
    }
}

#[test]
fn q8k_zero_block_has_zero_scale() {
    let mut a = Acts::default();
    a.prepare(ActKind::Q8K, &[0.0; 256], 1, 256);
    assert_eq!(a.d[0], 0.0);
    assert!(a.q[..256].iter().all(|&u| u == 128));
    assert!(a.sums[..8].iter().all(|&s| s == 0));
}

#[test]
fn q8_0_x86_variant_is_within_one_of_reference_with_same_scale() {
    // ggml's x86 quantizer uses `127 / amax` and round-half-even; the portable reference
    // `1 / (amax / 127)` and round-half-away: quants may differ by one on near-ties only.
    let mut rng = Rng(0x80);
    let x = row(&mut rng, 32 * 64, 3.0);
    let mut a = Acts::default();
    a.prepare(ActKind::Q8_0, &x, 1, x.len());
    let mut want = vec![0u8; 34 * 64];
    lacuna_quant::quantize_row(GgmlType::Q8_0, &x, &mut want).unwrap();
    let mut differ = 0;
    for (b, blk) in want.chunks_exact(34).enumerate() {
        assert_eq!(half::f16::from_le_bytes([blk[0], blk[1]]).to_f32(), a.d[b]);
        for i in 0..32 {
            let (g, w) = (
                i32::from((a.q[b * 32 + i] ^ 0x80) as i8),
                i32::from(blk[2 + i] as i8),
            );
            assert!((g - w).abs() <= 1);
            differ += usize::from(g != w);
        }
    }
    assert!(differ < 8, "{differ} quants differ");
}

#[test]
fn q8_0_quants_reconstruct_input() {
    let mut rng = Rng(0x81);
    let x = row(&mut rng, 256, 50.0);
    let mut a = Acts::default();
    a.prepare(ActKind::Q8_0, &x, 1, 256);
    for (i, &v) in x.iter().enumerate() {
        let q = f32::from((a.q[i] ^ 0x80) as i8);
        let d = a.d[i / 32];
        // Half a step, plus the f16 rounding of d times the largest quant.
        assert!(
            (q * d - v).abs() <= 0.5 * d + 127.0 * d / 1024.0,
            "{v} vs {q} * {d}"
        );
        assert!(q.abs() <= 127.0);
    }
}

#[test]
fn float_rounding_modes() {
    let x = [1.0f32 + 1.0 / 1024.0 + 1.0 / 4096.0, -3.3];
    let mut a = Acts::default();
    a.prepare(ActKind::Float(FloatRound::F16), &x, 1, 2);
    assert_eq!(
        a.f[..2],
        [
            half::f16::from_f32(x[0]).to_f32(),
            half::f16::from_f32(-3.3).to_f32()
        ]
    );
    a.prepare(ActKind::Float(FloatRound::Bf16), &x, 1, 2);
    assert_eq!(a.f[0], 1.0);
    a.prepare(ActKind::Float(FloatRound::None), &x, 1, 2);
    assert_eq!(a.f[..2], x);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn q8k_avx512_and_avx2_are_bit_identical_to_scalar() {
    let avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw");
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    let mut rng = Rng(0x8d);
    let mut cases: Vec<Vec<f32>> = Vec::new();
    for scale in [1e-40f32, 1e-6, 1.0, 3e4, 3e38] {
        for _ in 0..40 {
            cases.push(row(&mut rng, 256, scale));
        }
    }
    // Ties in magnitude with both signs, exact halves, and non-finite values.
    let mut tie = row(&mut rng, 256, 1.0);
    tie[3] = 2.0;
    tie[9] = -2.0;
    cases.push(tie.clone());
    tie[3] = -2.0;
    tie[9] = 2.0;
    cases.push(tie.clone());
    cases.push((0..256).map(|i| (i as f32 - 128.0) * 0.5).collect());
    for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut c = row(&mut rng, 256, 1.0);
        c[17] = special;
        cases.push(c);
    }
    cases.push(vec![-0.0; 256]);
    for x in cases {
        let (mut qa, mut qb) = ([0u8; 256], [0u8; 256]);
        let (mut sa, mut sb) = ([0i16; 8], [0i16; 8]);
        let da = quantize_q8k_block(&x, &mut qa, &mut sa);
        if avx512 {
            // SAFETY: features detected above; sizes match.
            let db = unsafe { q8k_x86::quantize_q8k_block(&x, &mut qb, &mut sb) };
            assert_eq!(da.to_bits(), db.to_bits(), "{x:?}");
            assert_eq!((qa, sa), (qb, sb), "{x:?}");
        }
        if avx2 {
            // SAFETY: as above.
            let db = unsafe { q8k_x86::quantize_q8k_block_avx2(&x, &mut qb, &mut sb) };
            assert_eq!(da.to_bits(), db.to_bits(), "avx2 {x:?}");
            assert_eq!((qa, sa), (qb, sb), "avx2 {x:?}");
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn q8_0_avx512_and_avx2_are_bit_identical_to_scalar() {
    let avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw");
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    let mut rng = Rng(0x80);
    let mut cases: Vec<Vec<f32>> = Vec::new();
    // Subnormal blocks (127 / amax overflows to infinity), tiny, ordinary and huge ones.
    for scale in [1e-44f32, 1e-40, 1e-6, 1.0, 3e4, 3e38] {
        for _ in 0..200 {
            cases.push(row(&mut rng, 32, scale));
        }
    }
    // Exact halves (ties to even), both signs of the maximum, and non-finite values.
    cases.push((0..32).map(|i| (i as f32 - 16.0) * 0.5).collect());
    cases.push((0..32).map(|i| (i as f32 - 16.0) * 127.0 / 32.0).collect());
    for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut c = row(&mut rng, 32, 1.0);
        c[5] = special;
        cases.push(c.clone());
        c[20] = special;
        c[21] = -special;
        cases.push(c);
    }
    cases.push(vec![f32::NAN; 32]);
    cases.push(vec![-0.0; 32]);
    cases.push(vec![0.0; 32]);
    for x in cases {
        let (mut qa, mut qb) = ([0u8; 32], [0u8; 32]);
        let (da, ma) = quantize_q8_0_scalar(&x, &mut qa);
        let mut twins = Vec::new();
        if avx512 {
            // SAFETY: features detected above; sizes match.
            twins.push((
                "avx512",
                unsafe { q8_0_x86::quantize_q8_0_block(&x, &mut qb) },
                qb,
            ));
        }
        if avx2 {
            // SAFETY: as above.
            let r = unsafe { q8_0_x86::quantize_q8_0_block_avx2(&x, &mut qb) };
            twins.push(("avx2", r, qb));
        }
        for (name, (db, mb), qb) in twins {
            assert_eq!(
                (da.to_bits(), ma.to_bits()),
                (db.to_bits(), mb.to_bits()),
                "{name} {x:?}"
            );
            assert_eq!(qa, qb, "{name} {x:?}");
        }
    }
}
