use super::*;
use crate::Error;
use crate::ops::attention::attention_masked;
use crate::testing::Rng;
use proptest::prelude::*;
use std::cell::Cell;

thread_local! {
    /// Level forced by [`on_level`] for the current thread.
    pub(crate) static FORCED: Cell<Option<Level>> = const { Cell::new(None) };
}

fn on_level<R>(path: crate::Path, f: impl FnOnce() -> R) -> R {
    FORCED.with(|c| c.set(Some(level_for(path))));
    let r = f();
    FORCED.with(|c| c.set(None));
    r
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn every_level_gives_the_same_bits() {
    let mut rng = Rng(0x1e7e1);
    // 37 rows leave a ragged 6-row register tile in attention.
    let (t, nh, nkv, hd) = (37, 4, 2, 128);
    let q = vec(&mut rng, t * nh * hd, 2.0);
    let k = vec(&mut rng, t * nkv * hd, 2.0);
    let v = vec(&mut rng, t * nkv * hd, 2.0);
    let x = vec(&mut rng, 3 * 100, 20.0);
    let w = vec(&mut rng, 100, 1.0);
    // A one-thread pool on this thread, so that the thread-local level applies inside.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .unwrap();
    let run = || {
        let mut att = vec![0.0; t * nh * hd];
        pool.install(|| {
            attention(
                &q,
                &k,
                &v,
                shape(t, nh, nkv, hd, 0.2),
                &mut att,
                &mut crate::Workspace::new(),
            )
            .unwrap()
        });
        let mut masked = vec![0.0; t * nh * hd];
        let vis = block_causal(t, 8);
        pool.install(|| {
            attention_masked(
                &q,
                &k,
                &v,
                shape(t, nh, nkv, hd, 0.2),
                Some(&vis),
                &mut masked,
                &mut crate::Workspace::new(),
            )
            .unwrap()
        });
        let mut norm = vec![0.0; x.len()];
        rms_norm(&x, &w, 1e-6, &mut norm).unwrap();
        let mut sw = vec![0.0; x.len()];
        swiglu(&x, &x, &mut sw).unwrap();
        let mut sm = x.clone();
        softmax(&mut sm);
        let mut lsm = x.clone();
        log_softmax(&mut lsm);
        let mut capped = x.clone();
        pool.install(|| softcap(&mut capped, 3.0));
        let mut sums = vec![0.0; 100];
        let mut scattered = x.clone();
        scatter_scaled(&x[..200], &[2, 0], &[0.5, -3.0], &mut scattered, 100).unwrap();
        sum_slots(&scattered, 3, 100, &mut sums).unwrap();
        add(&mut sums, &w).unwrap();
        add_bias(&mut scattered, &w).unwrap();
        [
            bits(&att),
            bits(&masked),
            bits(&norm),
            bits(&sw),
            bits(&sm),
            bits(&lsm),
            bits(&sums),
            bits(&scattered),
            bits(&capped),
        ]
    };
    let want = on_level(crate::Path::Scalar, run);
    for path in crate::Path::available() {
        let got = on_level(path, run);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "op {i} on {path}");
        }
    }
}

/// Keys visible to each of `t` rows under block-causal attention with blocks of `block`.
fn block_causal(t: usize, block: usize) -> Vec<usize> {
    (0..t).map(|i| ((i / block + 1) * block).min(t)).collect()
}

fn vec(rng: &mut Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.f32() * scale).collect()
}

#[allow(clippy::too_many_arguments)]
fn naive_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    t: usize,
    nh: usize,
    nkv: usize,
    hd: usize,
    scale: f32,
    visible: Option<&[usize]>,
) -> Vec<f64> {
    let mut out = vec![0.0f64; t * nh * hd];
    for h in 0..nh {
        let kvh = h / (nh / nkv);
        for i in 0..t {
            let seen = visible.map_or(t, |v| v[i]);
            let s: Vec<f64> = (0..seen)
                .map(|j| {
                    (0..hd)
                        .map(|d| {
                            f64::from(q[(i * nh + h) * hd + d])
                                * f64::from(k[(j * nkv + kvh) * hd + d])
                        })
                        .sum::<f64>()
                        * f64::from(scale)
                })
                .collect();
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
            for d in 0..hd {
                out[(i * nh + h) * hd + d] = (0..seen)
                    .map(|j| (s[j] - m).exp() / z * f64::from(v[(j * nkv + kvh) * hd + d]))
                    .sum();
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn attention_matches_naive((t, nkv, group, hd, seed) in (1usize..150, 1usize..3, 1usize..3, 1usize..40, any::<u64>())) {
        if let Err(e) = check_attention(t, nkv, group, hd, seed) {
            prop_assert!(false, "{e}");
        }
    }

    #[test]
    fn masked_attention_matches_naive((t, nkv, group, hd, block, seed) in (1usize..150, 1usize..3, 1usize..3, 1usize..40, 1usize..40, any::<u64>())) {
        let vis = block_causal(t, block);
        if let Err(e) = check_masked_attention(t, nkv, group, hd, seed, Some(&vis)) {
            prop_assert!(false, "block {block}: {e}");
        }
    }

    #[test]
    fn softmax_and_log_softmax_match_f64((n, seed, scale) in (1usize..300, any::<u64>(), prop_oneof![Just(0.1f32), Just(10.0), Just(80.0)])) {
        let mut rng = Rng(seed | 1);
        let x = vec(&mut rng, n, scale);
        let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let z: f64 = x.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        let mut p = x.clone();
        softmax(&mut p);
        let mut lp = x.clone();
        log_softmax(&mut lp);
        for i in 0..n {
            let want = (f64::from(x[i]) - m).exp() / z;
            // exp is within 2 ulp; x - max rounds in f32 (an error growing with |x - max|).
            let tol = want * 2.4e-7 * (8.0 + (f64::from(x[i]) - m).abs()) + 1e-30;
            prop_assert!((f64::from(p[i]) - want).abs() <= tol, "{} vs {want}", p[i]);
            let lwant = f64::from(x[i]) - m - z.ln();
            prop_assert!((f64::from(lp[i]) - lwant).abs() <= 1e-5 * (1.0 + lwant.abs()));
        }
        let total: f32 = p.iter().sum();
        prop_assert!((total - 1.0).abs() < 1e-4);
    }

    #[test]
    fn top_k_and_top2_match_sorting((n, k, seed) in (2usize..200, 0usize..10, any::<u64>())) {
        let mut rng = Rng(seed | 1);
        // Few distinct values, so ties are common.
        let x: Vec<f32> = (0..n).map(|_| (rng.next() % 17) as f32).collect();
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by(|&a, &b| x[b].total_cmp(&x[a]).then(a.cmp(&b)));
        let k = k.min(n);
        let want: Vec<(usize, f32)> = idx[..k].iter().map(|&i| (i, x[i])).collect();
        prop_assert_eq!(top_k(&x, k).unwrap(), want);
        prop_assert_eq!(top2(&x), Some([(idx[0], x[idx[0]]), (idx[1], x[idx[1]])]));
        prop_assert_eq!(argmax(&x), Some((idx[0], x[idx[0]])));
    }

    #[test]
    fn argmax_is_the_first_largest_on_every_path(
        (n, seed) in (0usize..140, any::<u64>())
    ) {
        let mut rng = Rng(seed | 1);
        let pick = [f32::NAN, f32::NEG_INFINITY, f32::INFINITY, -0.0, 0.0, 1.0, -1.0, 2.0];
        // Mostly few distinct values (ties), some NaN and infinities; some rows all NaN or -inf.
        let only = rng.next() % 8;
        let x: Vec<f32> = (0..n)
            .map(|_| match only {
                0 => f32::NAN,
                1 => f32::NEG_INFINITY,
                _ if rng.next().is_multiple_of(3) => pick[(rng.next() % 8) as usize],
                _ => (rng.next() % 5) as f32,
            })
            .collect();
        let m = x.iter().copied().filter(|v| !v.is_nan()).fold(None, |b: Option<f32>, v| Some(b.map_or(v, |b| b.max(v))));
        let want = m.and_then(|m| x.iter().position(|&v| v == m)).map(|i| (i, x[i].to_bits()));
        let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        let want64 = want.map(|(i, _)| (i, x64[i].to_bits()));
        for path in crate::Path::available() {
            let got = on_level(path, || argmax(&x)).map(|(i, v)| (i, v.to_bits()));
            prop_assert_eq!(got, want, "{}", path);
            let got = on_level(path, || argmax_f64(&x64)).map(|(i, v)| (i, v.to_bits()));
            prop_assert_eq!(got, want64, "f64 on {}", path);
        }
    }

    #[test]
    fn rms_norm_matches_f64((rows, dim, seed) in (1usize..5, 1usize..300, any::<u64>())) {
        let mut rng = Rng(seed | 1);
        let x = vec(&mut rng, rows * dim, 5.0);
        let w = vec(&mut rng, dim, 2.0);
        let mut out = vec![0.0; rows * dim];
        rms_norm(&x, &w, 1e-5, &mut out).unwrap();
        for r in 0..rows {
            let xr = &x[r * dim..][..dim];
            let ms: f64 = xr.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / dim as f64;
            let sc = 1.0 / (ms + 1e-5).sqrt();
            for i in 0..dim {
                let want = f64::from(xr[i]) * sc * f64::from(w[i]);
                prop_assert!((f64::from(out[r * dim + i]) - want).abs() <= 1e-6 * (1.0 + want.abs()));
            }
        }
    }
}

#[test]
fn swiglu_matches_formula() {
    let g = [-20.0f32, -1.0, 0.0, 0.5, 3.0, 90.0];
    let u = [1.0f32, 2.0, 3.0, -4.0, 5.0, 0.5];
    let mut out = [0.0; 6];
    swiglu(&g, &u, &mut out).unwrap();
    for i in 0..6 {
        let gi = f64::from(g[i]);
        let want = gi / (1.0 + (-gi).exp()) * f64::from(u[i]);
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{i}: {} vs {want}",
            out[i]
        );
    }
    assert!(matches!(
        swiglu(&g, &u[..5], &mut out),
        Err(Error::BadLength { .. })
    ));
}

#[test]
fn bad_shapes_are_errors() {
    let mut out = vec![0.0; 8];
    assert!(matches!(
        attention(
            &[0.0; 8],
            &[0.0; 8],
            &[0.0; 8],
            shape(2, 3, 2, 4, 1.0),
            &mut out,
            &mut crate::Workspace::new()
        ),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        attention(
            &[0.0; 8],
            &[0.0; 7],
            &[0.0; 8],
            shape(2, 1, 1, 4, 1.0),
            &mut out,
            &mut crate::Workspace::new()
        ),
        Err(Error::BadLength {
            what: "attention k",
            ..
        })
    ));
    assert!(matches!(
        rms_norm(&[0.0; 5], &[1.0; 2], 1e-5, &mut [0.0; 5]),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(top_k(&[1.0], 2), Err(Error::BadShape { .. })));
    assert_eq!(top2(&[1.0, f32::NAN]), None);
    assert_eq!(argmax(&[f32::NAN]), None);
    assert_eq!(argmax(&[]), None);
}

fn shape(t: usize, n_head: usize, n_head_kv: usize, head_dim: usize, scale: f32) -> AttnShape {
    AttnShape {
        queries: t,
        keys: t,
        n_head,
        n_head_kv,
        head_dim,
        scale,
    }
}

/// Attention on random data against the f64 naive reference: the first mismatch, if any.
fn check_attention(t: usize, nkv: usize, group: usize, hd: usize, seed: u64) -> Result<(), String> {
    check_masked_attention(t, nkv, group, hd, seed, None)
}

fn check_masked_attention(
    t: usize,
    nkv: usize,
    group: usize,
    hd: usize,
    seed: u64,
    visible: Option<&[usize]>,
) -> Result<(), String> {
    let mut rng = Rng(seed | 1);
    let nh = nkv * group;
    let q = vec(&mut rng, t * nh * hd, 2.0);
    let k = vec(&mut rng, t * nkv * hd, 2.0);
    let v = vec(&mut rng, t * nkv * hd, 3.0);
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![f32::NAN; t * nh * hd];
    attention_masked(
        &q,
        &k,
        &v,
        shape(t, nh, nkv, hd, scale),
        visible,
        &mut out,
        &mut crate::Workspace::new(),
    )
    .unwrap();
    let want = naive_attention(&q, &k, &v, t, nh, nkv, hd, scale, visible);
    match out
        .iter()
        .zip(&want)
        .find(|&(g, w)| (f64::from(*g) - w).abs() > 2e-5 * (1.0 + w.abs()))
    {
        Some((g, w)) => Err(format!("t={t} hd={hd}: {g} vs {w}")),
        None => Ok(()),
    }
}

/// Head sizes of real models at ragged lengths, GQA; canvases past one key block (512)
/// take the online-softmax rescaling.
#[test]
fn attention_matches_naive_at_model_head_sizes() {
    for (t, hd) in [
        (1, 128),
        (17, 64),
        (100, 128),
        (131, 128),
        (600, 64),
        (1100, 16),
    ] {
        check_attention(t, 2, 2, hd, 0xa77).unwrap();
    }
}

/// Causal (blocks of 1) and block-causal masks past one key block of 512 (online softmax,
/// skipped blocks) and with single rows.
#[test]
fn masked_attention_matches_naive_across_key_blocks() {
    for (t, block) in [(1, 1), (600, 1), (700, 32), (1100, 512), (1030, 1030)] {
        let vis = block_causal(t, block);
        check_masked_attention(t, 2, 2, 16, 0xb10c, Some(&vis)).unwrap();
    }
}

/// Masking and the visible-keys checks.
#[test]
fn masked_attention_rejects_bad_visible_counts() {
    let (t, nh, hd) = (4, 1, 8);
    let z = vec![0.5f32; t * nh * hd];
    let mut out = vec![0.0; t * nh * hd];
    let mut ws = crate::Workspace::new();
    for vis in [vec![1, 2, 3], vec![0, 1, 2, 3], vec![1, 2, 3, 5]] {
        let r = attention_masked(
            &z,
            &z,
            &z,
            shape(t, nh, nh, hd, 1.0),
            Some(&vis),
            &mut out,
            &mut ws,
        );
        assert!(r.is_err(), "{vis:?}");
    }
}

/// A subset of the query rows gives the same bits as those rows of the full call, on every
/// level, with one and several key blocks.
#[test]
fn attention_rows_are_independent() {
    let mut rng = Rng(0x5e1ec7);
    let (nh, nkv, hd) = (4, 2, 32);
    // One workspace throughout: buffers left by a larger call must not leak into a smaller.
    let mut ws = crate::Workspace::new();
    for t in [700, 70] {
        let q = vec(&mut rng, t * nh * hd, 2.0);
        let k = vec(&mut rng, t * nkv * hd, 2.0);
        let v = vec(&mut rng, t * nkv * hd, 2.0);
        let mut all = vec![0.0; t * nh * hd];
        attention(&q, &k, &v, shape(t, nh, nkv, hd, 0.3), &mut all, &mut ws).unwrap();
        let rows = [t - 1, 3, 0, t / 2];
        let w = nh * hd;
        let qs: Vec<f32> = rows
            .iter()
            .flat_map(|&r| q[r * w..][..w].to_vec())
            .collect();
        let mut some = vec![0.0; rows.len() * w];
        let s = AttnShape {
            queries: rows.len(),
            ..shape(t, nh, nkv, hd, 0.3)
        };
        attention(&qs, &k, &v, s, &mut some, &mut ws).unwrap();
        for (i, &r) in rows.iter().enumerate() {
            assert_eq!(
                bits(&some[i * w..][..w]),
                bits(&all[r * w..][..w]),
                "t={t} row {r}"
            );
        }
    }
}

/// One query row against the first `seen` keys, in f64: `[n_head][head_dim]`.
#[allow(clippy::too_many_arguments)]
fn naive_row(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    seen: usize,
    nh: usize,
    nkv: usize,
    hd: usize,
    scale: f32,
) -> Vec<f64> {
    let mut out = vec![0.0f64; nh * hd];
    for h in 0..nh {
        let kvh = h / (nh / nkv);
        let s: Vec<f64> = (0..seen)
            .map(|j| {
                (0..hd)
                    .map(|d| f64::from(q[h * hd + d]) * f64::from(k[(j * nkv + kvh) * hd + d]))
                    .sum::<f64>()
                    * f64::from(scale)
            })
            .collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
        for d in 0..hd {
            out[h * hd + d] = (0..seen)
                .map(|j| (s[j] - m).exp() / z * f64::from(v[(j * nkv + kvh) * hd + d]))
                .sum();
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Chosen query rows of a window of a longer canvas (cached keys before and after it),
    /// bidirectional or block-causal: each row against the f64 reference, and bit for bit
    /// the same row of the call over every query row.
    #[test]
    fn attention_rows_match_naive_and_the_full_call(
        (t, before, after, nkv, group, hd, seed) in
            (1usize..60, 0usize..40, 0usize..40, 1usize..3, 1usize..3, 1usize..40, any::<u64>()),
        block in prop_oneof![Just(None), (1usize..40).prop_map(Some)],
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut rng = Rng(seed | 1);
        let (nh, keys, pos0) = (nkv * group, before + t + after, before);
        let q = vec(&mut rng, t * nh * hd, 2.0);
        let k = vec(&mut rng, keys * nkv * hd, 2.0);
        let v = vec(&mut rng, keys * nkv * hd, 3.0);
        let s = AttnShape { keys, ..shape(t, nh, nkv, hd, 1.0 / (hd as f32).sqrt()) };
        let mask = block.map_or(Mask::All, |block| Mask::BlockCausal { block, pos0 });
        let rows: Vec<usize> = picks.iter().map(|i| i.index(t)).collect();
        let mut ws = crate::Workspace::new();
        let w = nh * hd;
        let mut all = vec![f32::NAN; t * w];
        attention_rows(&q, &k, &v, s, mask, None, &mut all, &mut ws).unwrap();
        let mut some = vec![f32::NAN; rows.len() * w];
        attention_rows(&q, &k, &v, s, mask, Some(&rows), &mut some, &mut ws).unwrap();
        for (i, &r) in rows.iter().enumerate() {
            prop_assert_eq!(bits(&some[i * w..][..w]), bits(&all[r * w..][..w]), "row {}", r);
        }
        for r in 0..t {
            let seen = block.map_or(keys, |b| ((pos0 + r) / b + 1) * b).min(keys);
            let want = naive_row(&q[r * w..][..w], &k, &v, seen, nh, nkv, hd, s.scale);
            for (g, x) in all[r * w..][..w].iter().zip(&want) {
                prop_assert!((f64::from(*g) - x).abs() <= 2e-5 * (1.0 + x.abs()), "row {r}: {g} vs {x}");
            }
        }
    }
}

/// Bad rows, a zero block and a short `q` are errors, and leave the workspace usable.
#[test]
fn attention_rows_rejects_bad_arguments() {
    let (t, nh, hd) = (4, 2, 8);
    let z = vec![0.5f32; t * nh * hd];
    let s = shape(t, nh, nh, hd, 1.0);
    let mut out = vec![0.0; nh * hd];
    let mut ws = crate::Workspace::new();
    let zero = Mask::BlockCausal { block: 0, pos0: 0 };
    assert!(matches!(
        attention_rows(&z, &z, &z, s, zero, Some(&[1]), &mut out, &mut ws),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        attention_rows(&z, &z, &z, s, Mask::All, Some(&[4]), &mut out, &mut ws),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        attention_rows(&z[1..], &z, &z, s, Mask::All, Some(&[0]), &mut out, &mut ws),
        Err(Error::BadLength { .. })
    ));
    assert!(matches!(
        attention_rows(&z, &z, &z, s, Mask::All, Some(&[0, 1]), &mut out, &mut ws),
        Err(Error::BadLength { .. })
    ));
    let causal = Mask::BlockCausal { block: 1, pos0: 0 };
    attention_rows(&z, &z, &z, s, causal, Some(&[3]), &mut out, &mut ws).unwrap();
    assert!(out.iter().all(|&x| (x - 0.5).abs() < 1e-6), "{out:?}");
}
