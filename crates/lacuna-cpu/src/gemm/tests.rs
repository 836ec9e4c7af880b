use super::*;
use crate::acts::{ActKind, FloatRound};
use crate::blocks::QuantKind;
use lacuna_quant::GgmlType;
use proptest::prelude::*;

use crate::packed::Form;
use crate::testing::{Rng, weights};

/// Every quantized type the GEMM takes.
fn quant_types() -> impl Iterator<Item = GgmlType> {
    QuantKind::ALL.into_iter().map(QuantKind::ty)
}
const FLOAT: [GgmlType; 3] = [GgmlType::F32, GgmlType::F16, GgmlType::BF16];

#[path = "reference.rs"]
mod reference;

fn acts(t: usize, k: usize, rng: &mut Rng, scale: f32) -> Vec<f32> {
    (0..t * k)
        .map(|_| {
            // A few exact zeros and a few outliers, as real activations have.
            match rng.next() % 64 {
                0 => 0.0,
                1 => rng.f32() * scale * 30.0,
                _ => rng.f32() * scale,
            }
        })
        .collect()
}

fn run(path: Path, w: &PackedWeight, x: &[f32], t: usize) -> Vec<f32> {
    let mut y = vec![f32::NAN; t * w.n()];
    matmul_on(path, x, t, w, &mut y, &mut Workspace::new()).unwrap();
    y
}

/// The activation row in ggml's byte format (block_q8_K / block_q8_0 / block_q8_1).
fn ggml_act_bytes(kind: QuantKind, a: &reference::GgmlActs<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    if kind.block() == 256 {
        for (b, q) in a.q.chunks_exact(256).enumerate() {
            out.extend(a.d[b].to_le_bytes());
            out.extend(q.iter().map(|&v| v as u8));
            for c in q.chunks_exact(16) {
                out.extend(c.iter().map(|&v| i16::from(v)).sum::<i16>().to_le_bytes());
            }
        }
    } else {
        for (b, q) in a.q.chunks_exact(32).enumerate() {
            out.extend(half::f16::from_f32(a.d[b]).to_le_bytes());
            if kind.affine_group().is_some() {
                out.extend(half::f16::from_f32(a.s[b]).to_le_bytes());
            }
            out.extend(q.iter().map(|&v| v as u8));
        }
    }
    out
}

fn shape() -> impl Strategy<Value = (usize, usize, usize, u64, f32)> {
    (
        1usize..100,
        1usize..70,
        1usize..4,
        any::<u64>(),
        prop_oneof![Just(1e-3f32), Just(1.0), Just(300.0)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every available path gives bit-identical results to the scalar path.
    #[test]
    fn paths_agree_bitwise((t, n, kb, seed, scale) in shape()) {
        let mut rng = Rng(seed | 1);
        for ty in quant_types().chain(FLOAT) {
            let k = kb * if ty.block_size() == 256 { 256 } else { 64 };
            let w = PackedWeight::new(ty, n, k, &weights(ty, n, k, &mut rng, scale)).unwrap();
            let x = acts(t, k, &mut rng, scale);
            let want = run(Path::Scalar, &w, &x, t);
            for path in Path::available() {
                let got = run(path, &w, &x, t);
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                prop_assert!(same, "{ty} on {path}: t={t} n={n} k={k}\n{got:?}\n{want:?}");
            }
        }
    }

    /// The small form (Q4_K two weights a byte, i8 scales and mins), with and without the
    /// planar forms (Q2_K, Q3_K, Q5_K and Q6_K in bit planes; 16-bit block constants, Q5_0
    /// and Q5_1 then in planes too, Q4_1 two weights a byte and f16 offsets), gives the byte
    /// form's bits for every quantized type on every path (natively on AVX-512 VNNI and AMX,
    /// and AVX2 but for the planar forms; expanded panel by panel elsewhere), over 1..=130
    /// tokens.
    #[test]
    fn small_panels_equal_byte_panels((t, n, kb, seed, scale) in shape(), extra in 0usize..31) {
        let mut rng = Rng(seed | 1);
        let t = t + extra;
        for ty in quant_types() {
            let k = kb * if ty.block_size() == 256 { 256 } else { 64 };
            let bytes = weights(ty, n, k, &mut rng, scale);
            let held = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
            prop_assert!(!held.is_small());
            let x = acts(t, k, &mut rng, scale);
            let want = run(Path::Scalar, &held, &x, t);
            for form in [Form::Small, Form::Planar, Form::Half] {
                let small = PackedWeight::new_with(ty, n, k, &bytes, form).unwrap();
                // Q5_0/Q5_1's planes come with their 16-bit constants.
                let planar = match ty {
                    GgmlType::Q2_K | GgmlType::Q3_K | GgmlType::Q5_K | GgmlType::Q6_K => {
                        form != Form::Small
                    }
                    GgmlType::Q5_0 | GgmlType::Q5_1 => form == Form::Half,
                    _ => false,
                };
                prop_assert_eq!(small.is_planar(), planar, "{:?} {}", form, ty);
                if small.is_small() {
                    prop_assert!(small.packed_bytes() < held.packed_bytes(), "{ty}");
                }
                for path in Path::available() {
                    let got = run(path, &small, &x, t);
                    let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    prop_assert!(same, "{form:?} {ty} on {path}: t={t} n={n} k={k}");
                }
            }
        }
    }

    /// `matmul_rows` writes each row to its own buffer (here in a shuffled order, as a
    /// batch's canvases lie in memory) exactly the bits `matmul` writes to that row, for
    /// every layout (repacked, compact over few and many tokens, float) on every path.
    #[test]
    fn scattered_rows_equal_the_matrix((t, n, kb, seed, scale) in shape(), many in any::<bool>()) {
        let mut rng = Rng(seed | 1);
        // The compact layout decodes panels from 128 tokens on: run that side too.
        let t = if many { t + PANEL_TOKENS } else { t };
        for ty in quant_types().chain(FLOAT) {
            let k = kb * if ty.block_size() == 256 { 256 } else { 64 };
            let bytes = weights(ty, n, k, &mut rng, scale);
            let mut forms = vec![PackedWeight::new(ty, n, k, &bytes).unwrap()];
            if let Ok(c) = PackedWeight::compact(ty, n, k, &bytes) {
                forms.push(c);
            }
            let x = acts(t, k, &mut rng, scale);
            for w in &forms {
                for path in Path::available() {
                    let want = run(path, w, &x, t);
                    // Row i goes to buffer order[i]; the buffers are one allocation each.
                    let mut order: Vec<usize> = (0..t).collect();
                    for i in (1..t).rev() {
                        order.swap(i, rng.next() as usize % (i + 1));
                    }
                    let mut bufs = vec![vec![f32::NAN; n]; t];
                    {
                        let mut slots: Vec<Option<&mut [f32]>> =
                            bufs.iter_mut().map(|b| Some(b.as_mut_slice())).collect();
                        let mut rows: Vec<&mut [f32]> =
                            order.iter().map(|&o| slots[o].take().unwrap()).collect();
                        matmul_rows_on(path, &x, w, &mut rows, &mut Workspace::new()).unwrap();
                    }
                    for (i, &o) in order.iter().enumerate() {
                        let same = bufs[o]
                            .iter()
                            .zip(&want[i * n..(i + 1) * n])
                            .all(|(a, b)| a.to_bits() == b.to_bits());
                        prop_assert!(same, "{ty} compact={} on {path}: row {i} of t={t} n={n} k={k}", w.is_compact());
                    }
                }
            }
        }
    }

    /// The scalar path matches ggml's scalar vec_dot within the documented f32 bound.
    #[test]
    fn quant_matches_ggml_reference((t, n, kb, seed, scale) in shape()) {
        let mut rng = Rng(seed | 1);
        for ty in quant_types() {
            let kind = QuantKind::of(ty).unwrap();
            let k = kb * if ty.block_size() == 256 { 256 } else { 64 };
            let bytes = weights(ty, n, k, &mut rng, scale);
            let w = PackedWeight::new(ty, n, k, &bytes).unwrap();
            let x = acts(t, k, &mut rng, scale);
            let y = run(Path::Scalar, &w, &x, t);
            let mut a = Acts::default();
            a.prepare(w.act_kind(), &x, t, k);
            let q: Vec<i8> = a.q[..t * k].iter().map(|&u| (u ^ 0x80) as i8).collect();
            let nblk = k / kind.block();
            let row_bytes = bytes.len() / n;
            for ti in 0..t {
                let s = if w.act_kind() == ActKind::Q8_1 { &a.g[ti * nblk..][..nblk] } else { &[][..] };
                let ga = reference::GgmlActs { q: &q[ti * k..][..k], d: &a.d[ti * nblk..][..nblk], s };
                for ni in 0..n {
                    let row = &bytes[ni * row_bytes..][..row_bytes];
                    let want = reference::vec_dot(kind, row, &ga);
                    let bound = (8 * nblk + 8) as f64 * 2.0 * f64::from(f32::EPSILON)
                        * reference::abs_terms(kind, row, &ga);
                    let got = y[ti * n + ni];
                    let lq = lacuna_quant::vec_dot(ty, k, row, &ggml_act_bytes(kind, &ga)).unwrap();
                    prop_assert!(
                        (f64::from(got) - f64::from(lq)).abs() <= bound,
                        "{ty} t={ti} n={ni}: got {got} lacuna-quant {lq} bound {bound}"
                    );
                    prop_assert!(
                        (f64::from(got) - f64::from(want)).abs() <= bound,
                        "{ty} t={ti} n={ni}: got {got} ggml {want} bound {bound}"
                    );
                }
            }
        }
    }

    /// Float weights: within `k` roundings of the f64 dot of the rounded activations.
    #[test]
    fn float_matches_f64((t, n, kb, seed, scale) in shape()) {
        let mut rng = Rng(seed | 1);
        for ty in FLOAT {
            let k = kb * 48 + 5;
            let bytes = weights(ty, n, k, &mut rng, scale);
            let w = PackedWeight::new(ty, n, k, &bytes).unwrap();
            let x = acts(t, k, &mut rng, scale);
            let y = run(Path::Scalar, &w, &x, t);
            let Inner::Float(f) = &w.inner else { unreachable!() };
            // The file's values, whatever form packing holds them in.
            let es = ty.type_size();
            let wval = |ni: usize, kk: usize| {
                let e = &bytes[(ni * k + kk) * es..][..es];
                match ty {
                    GgmlType::F16 => half::f16::from_le_bytes([e[0], e[1]]).to_f32(),
                    GgmlType::BF16 => half::bf16::from_le_bytes([e[0], e[1]]).to_f32(),
                    _ => f32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                }
            };
            let round = |v: f32| match f.round {
                FloatRound::None => v,
                FloatRound::F16 => half::f16::from_f32(v).to_f32(),
                FloatRound::Bf16 => half::bf16::from_f32(v).to_f32(),
            };
            for ti in 0..t {
                for ni in 0..n {
                    let (mut exact, mut abs) = (0.0f64, 0.0f64);
                    for kk in 0..k {
                        let wv = f64::from(wval(ni, kk));
                        let p = wv * f64::from(round(x[ti * k + kk]));
                        exact += p;
                        abs += p.abs();
                    }
                    let got = f64::from(y[ti * n + ni]);
                    prop_assert!((got - exact).abs() <= (k as f64 + 1.0) * f64::from(f32::EPSILON) * abs);
                }
            }
        }
    }
}

/// The largest integer partial sums the kernels can meet agree on every path: weights at
/// the extreme of their range for the narrow types (Q6_K's -32, Q5_K's 31, Q4_K's 15,
/// Q5_0's -16) against activations that quantize to +127 (biased 255), where plain AVX2's
/// i16 sum of two `vpmaddubsw` results is closest to overflowing, and the wide types at
/// their largest weights for the sign trick.
#[test]
fn extreme_weights_and_activations_agree_on_every_path() {
    let mut rng = Rng(0xe8);
    let (n, k, t) = (20, 512, 5);
    // Row 0 of every block holds the block's max, +1; the rest -0.999 (quantized +127).
    let x: Vec<f32> = (0..t * k)
        .map(|i| if i % 32 == 0 { 1.0 } else { -0.999 })
        .collect();
    let set = |b: &mut [u8], range: std::ops::Range<usize>, v: u8| b[range].fill(v);
    for ty in quant_types() {
        let mut bytes = weights(ty, n, k, &mut rng, 1.0);
        for b in bytes.chunks_exact_mut(ty.type_size()) {
            match ty {
                GgmlType::Q6_K => set(b, 0..192, 0),     // q = -32
                GgmlType::Q5_K => set(b, 16..176, 0xff), // q = 31
                GgmlType::Q4_K => set(b, 16..144, 0xff), // q = 15
                GgmlType::Q5_0 => set(b, 2..22, 0),      // q = -16
                GgmlType::Q8_0 => set(b, 2..34, 0x81),   // q = -127
                GgmlType::IQ4_NL => set(b, 2..18, 0),    // q = -127
                _ => {}
            }
        }
        let w = PackedWeight::new(ty, n, k, &bytes).unwrap();
        let want = run(Path::Scalar, &w, &x, t);
        for path in Path::available() {
            let got = run(path, &w, &x, t);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{ty:?} on {path}"
            );
        }
    }
}

#[test]
fn thread_count_does_not_change_results() {
    let mut rng = Rng(0x5eed);
    let (t, n, k) = (9, 100, 512);
    for ty in [GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F16] {
        let w = PackedWeight::new(ty, n, k, &weights(ty, n, k, &mut rng, 1.0)).unwrap();
        let x = acts(t, k, &mut rng, 1.0);
        let results: Vec<Vec<f32>> = [1, 3]
            .into_iter()
            .map(|threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| run(Path::best(), &w, &x, t))
            })
            .collect();
        assert!(results[0].iter().all(|v| v.is_finite()));
        assert_eq!(results[0], results[1], "{ty}");
    }
}

#[test]
fn workspace_reuse_across_shapes_gives_fresh_results() {
    let mut rng = Rng(77);
    let mut ws = Workspace::new();
    let big = PackedWeight::new(
        GgmlType::Q6_K,
        40,
        1024,
        &weights(GgmlType::Q6_K, 40, 1024, &mut rng, 1.0),
    )
    .unwrap();
    let small = PackedWeight::new(
        GgmlType::Q6_K,
        17,
        256,
        &weights(GgmlType::Q6_K, 17, 256, &mut rng, 1.0),
    )
    .unwrap();
    let xb = acts(7, 1024, &mut rng, 1.0);
    let xs = acts(3, 256, &mut rng, 1.0);
    let mut yb = vec![0.0; 7 * 40];
    let mut ys = vec![0.0; 3 * 17];
    matmul_on(Path::best(), &xb, 7, &big, &mut yb, &mut ws).unwrap();
    matmul_on(Path::best(), &xs, 3, &small, &mut ys, &mut ws).unwrap();
    assert_eq!(ys, run(Path::best(), &small, &xs, 3));
}

#[test]
fn bad_lengths_are_errors() {
    let w = PackedWeight::new(GgmlType::F32, 2, 3, &[0u8; 24]).unwrap();
    let mut y = vec![0.0; 4];
    let mut ws = Workspace::new();
    assert_eq!(
        matmul_on(Path::Scalar, &[0.0; 5], 2, &w, &mut y, &mut ws),
        Err(Error::BadLength {
            what: "x",
            expected: 6,
            found: 5
        })
    );
    assert_eq!(
        matmul_on(Path::Scalar, &[0.0; 6], 2, &w, &mut y[..3], &mut ws),
        Err(Error::BadLength {
            what: "y",
            expected: 4,
            found: 3
        })
    );
    assert_eq!(
        matmul_on(Path::Scalar, &[], usize::MAX, &w, &mut y, &mut ws),
        Err(Error::BadShape {
            what: "x",
            detail: "t * dimension overflows"
        })
    );
    assert_eq!(
        matmul_on(Path::Scalar, &[], 0, &w, &mut [], &mut ws),
        Ok(())
    );
    let (mut a, mut b, mut c) = ([0.0; 2], [0.0; 3], [0.0; 2]);
    assert_eq!(
        matmul_rows_on(Path::Scalar, &[0.0; 6], &w, &mut [&mut a, &mut b], &mut ws),
        Err(Error::BadLength {
            what: "row of y",
            expected: 2,
            found: 3
        })
    );
    assert_eq!(
        matmul_rows_on(Path::Scalar, &[0.0; 5], &w, &mut [&mut a, &mut c], &mut ws),
        Err(Error::BadLength {
            what: "x",
            expected: 6,
            found: 5
        })
    );
}

#[test]
fn act_kinds_pair_as_ggml() {
    let k = 256;
    let mk = |ty: GgmlType| {
        let bytes = vec![0u8; ty.row_bytes(k as u64).unwrap() as usize];
        PackedWeight::new(ty, 1, k, &bytes).unwrap().act_kind()
    };
    assert_eq!(mk(GgmlType::Q4_K), ActKind::Q8K);
    assert_eq!(mk(GgmlType::Q6_K), ActKind::Q8K);
    assert_eq!(mk(GgmlType::Q8_0), ActKind::Q8_0);
    assert_eq!(mk(GgmlType::Q4_0), ActKind::Q8_0);
    assert_eq!(mk(GgmlType::Q2_K), ActKind::Q8KSums16);
    assert_eq!(mk(GgmlType::Q4_1), ActKind::Q8_1);
    assert_eq!(mk(GgmlType::IQ4_NL), ActKind::Q8_0);
    assert_eq!(mk(GgmlType::IQ4_XS), ActKind::Q8K);
    assert_eq!(mk(GgmlType::BF16), ActKind::Float(FloatRound::Bf16));
}

/// The AMX kernel's K chunks (more than one at this size: 33 blocks at 96 padded tokens)
/// and its 8-panel tasks (10 panels: a full task and a ragged one) give the scalar result.
#[test]
fn amx_chunks_and_tasks_match_scalar() {
    if !Path::Amx.is_available() {
        return;
    }
    let mut rng = Rng(0xa3c);
    let (t, n, k) = (70, 150, 256 * 33);
    for ty in quant_types().filter(|ty| ty.block_size() == 256) {
        let w = PackedWeight::new(ty, n, k, &weights(ty, n, k, &mut rng, 1.0)).unwrap();
        let x = acts(t, k, &mut rng, 1.0);
        assert!(amx_matches_scalar(&w, &x, t), "{ty}");
    }
}

/// The AMX kernel of the 32-element formats over an odd number of blocks (its two-deep
/// block pipeline ends on either tile), ragged panels and token tiles (a partial last tile,
/// its padding rows never stored), at and past its threshold, gives the scalar result.
#[test]
fn amx32_blocks_and_tails_match_scalar() {
    if !Path::Amx.is_available() {
        return;
    }
    let mut rng = Rng(0x32a);
    let n = 150;
    for kb in [1, 2, 67] {
        let k = 32 * kb;
        for ty in quant_types().filter(|ty| ty.block_size() == 32) {
            let w = PackedWeight::new(ty, n, k, &weights(ty, n, k, &mut rng, 1.0)).unwrap();
            for t in [7, 8, 9, 16, 33, 70] {
                let x = acts(t, k, &mut rng, 1.0);
                assert!(amx_matches_scalar(&w, &x, t), "{ty} t={t} k={k}");
            }
        }
    }
}

/// Whether the AMX path gives the scalar path's bits for `w` over `t` rows of `x`.
fn amx_matches_scalar(w: &PackedWeight, x: &[f32], t: usize) -> bool {
    let want = run(Path::Scalar, w, x, t);
    let got = run(Path::Amx, w, x, t);
    got.iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits())
}

/// MXFP4's half form widens the file's E8M0 bytes in the kernels (AVX-512 VNNI's fold and
/// AMX's) to the byte form's `d`, the subnormal scales of bytes 0 and 1 included: every path
/// gives the scalar path's bits on the byte form, at lengths that run either kernel.
#[test]
fn mxfp4_exponent_bytes_fold_as_the_byte_form() {
    let mut rng = Rng(0xe8);
    let (n, k) = (40, 32 * 9);
    let ty = GgmlType::MXFP4;
    let mut bytes = weights(ty, n, k, &mut rng, 1.0);
    // Subnormal, small and ordinary scales side by side in odd rows; only the smallest four
    // in even rows (beside ordinary ones they would vanish from the sums).
    let exps = [0u8, 1, 2, 3, 120, 125, 127, 128, 131];
    let nblk = k / 32;
    for (i, b) in bytes.chunks_exact_mut(17).enumerate() {
        let row = i / nblk;
        b[0] = exps[(i * 5) % if row % 2 == 0 { 4 } else { exps.len() }];
    }
    let held = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
    let half = PackedWeight::new_with(ty, n, k, &bytes, Form::Half).unwrap();
    for t in [1, 8, 16, 33] {
        let x = acts(t, k, &mut rng, 1.0);
        let want = run(Path::Scalar, &held, &x, t);
        assert!(want.iter().all(|v| v.is_finite()));
        for path in Path::available() {
            let got = run(path, &half, &x, t);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{path}: t={t}");
        }
    }
}

/// On aarch64 [`PackedWeight::new`] holds F16 and BF16 weights at the file's size (the NEON
/// float kernel reads them narrow), and [`PackedWeight::repacked_bytes`] says so beforehand.
#[cfg(target_arch = "aarch64")]
#[test]
fn aarch64_holds_half_floats_narrow() {
    let mut rng = Rng(0xa64);
    for ty in [GgmlType::F16, GgmlType::BF16] {
        let (n, k) = (33, 64);
        let bytes = weights(ty, n, k, &mut rng, 1.0);
        let w = PackedWeight::new(ty, n, k, &bytes).unwrap();
        assert_eq!(w.packed_bytes(), 48 * k * 2, "{ty}");
        assert_eq!(
            PackedWeight::repacked_bytes(ty, n, k),
            Some(w.packed_bytes())
        );
    }
}

/// F16 and BF16 weights held as the file's bits (the planar forms, [`crate::packed::FloatPacked::w16`])
/// give on every path the bits of the same weights widened to f32 at packing, over ragged
/// rows and token counts (the AVX-512, AVX2 and NEON kernels read them narrow; the scalar
/// path widens two panels at a time).
#[test]
fn narrow_float_weights_equal_widened_ones() {
    let mut rng = Rng(0xf16);
    for ty in [GgmlType::F16, GgmlType::BF16] {
        for (n, k) in [(17, 37), (40, 64), (3, 130)] {
            let bytes = weights(ty, n, k, &mut rng, 1.0);
            let wide = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
            let narrow = PackedWeight::new_with(ty, n, k, &bytes, Form::Half).unwrap();
            assert_eq!(narrow.packed_bytes() * 2, wide.packed_bytes(), "{ty}");
            let Inner::Float(f) = &narrow.inner else {
                unreachable!()
            };
            assert!(f.w.is_empty() && !f.w16.is_empty(), "{ty}");
            for t in [1, 5, 6, 13] {
                let x = acts(t, k, &mut rng, 1.0);
                let want = run(Path::Scalar, &wide, &x, t);
                for path in Path::available() {
                    let got = run(path, &narrow, &x, t);
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{ty} on {path}: n={n} k={k} t={t}");
                }
            }
        }
    }
}
