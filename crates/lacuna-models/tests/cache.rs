//! The key/value cache behind `Pass::Fill` and `Pass::Window`: a fill gives the full pass's
//! logits bit for bit; a window over an unchanged canvas gives them too (every row's
//! arithmetic is independent, and the cached keys are the ones the full pass computes); a
//! window over a canvas changed since the fill reads stale keys outside it (and so differs
//! from the exact pass) until the next fill; bad windows are typed errors.

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Error, KvCache, Model, PassSpec, Result};
use lacuna_sampler::Pass;

/// A model with the cache of the one canvas these tests run.
struct Cached {
    model: Model,
    cache: KvCache,
}

impl Cached {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn mask_token_id(&self) -> Option<u32> {
        self.model.mask_token_id()
    }

    fn forward_pass(
        &mut self,
        t: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<()> {
        let spec = PassSpec::new(pass);
        self.model.forward_pass(&mut self.cache, spec, t, rows, out)
    }

    fn cache_bytes(&self) -> usize {
        self.cache.bytes::<CpuBackend>()
    }
}

fn tiny(arch: Arch, quant: QuantMix) -> Cached {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    let model = Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap();
    Cached {
        model,
        cache: KvCache::new(),
    }
}

fn canvas(len: usize, mask: u32) -> Vec<u32> {
    (0..len)
        .map(|i| {
            if i % 3 == 1 {
                mask
            } else {
                (i * 131 % 500) as u32
            }
        })
        .collect()
}

fn logits(m: &mut Cached, tokens: &[u32], pass: &Pass, rows: &[usize]) -> Vec<f32> {
    let mut out = vec![f32::NAN; rows.len() * m.vocab_size()];
    m.forward_pass(tokens, pass, rows, &mut out).unwrap();
    out
}

#[test]
fn fill_and_unchanged_windows_are_the_full_pass() {
    for arch in Arch::MASKED {
        for quant in [QuantMix::Q4KM, QuantMix::F32] {
            let mut m = tiny(arch, quant);
            // 40 positions, and 600 (past one 512-key attention block).
            for len in [40usize, 600] {
                let c = canvas(len, m.mask_token_id().unwrap());
                let all: Vec<usize> = (0..len).collect();
                let full = logits(&mut m, &c, &Pass::Full, &all);
                assert_eq!(logits(&mut m, &c, &Pass::Fill, &all), full, "{arch} fill");
                let v = m.vocab_size();
                for w in [len / 2..len, len / 4..len / 2, 0..len] {
                    let rows: Vec<usize> = w.clone().step_by(3).collect();
                    let got = logits(&mut m, &c, &Pass::Window(w.clone()), &rows);
                    for (i, &r) in rows.iter().enumerate() {
                        assert_eq!(
                            &got[i * v..(i + 1) * v],
                            &full[r * v..(r + 1) * v],
                            "{arch} {quant:?} len {len} window {w:?} row {r}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_window_sees_fresh_tokens_inside_and_cached_ones_outside() {
    for arch in Arch::MASKED {
        let mut m = tiny(arch, QuantMix::Q4KM);
        let v = m.vocab_size();
        let before = canvas(48, m.mask_token_id().unwrap());
        let mut after = before.clone();
        for p in [20usize, 22, 25] {
            after[p] = 7 + p as u32;
        }
        let rows = [18usize, 20, 21, 30];
        let all: Vec<usize> = (0..48).collect();
        logits(&mut m, &before, &Pass::Fill, &all);
        let windowed = logits(&mut m, &after, &Pass::Window(16..32), &rows);
        let exact = logits(&mut m, &after, &Pass::Full, &rows);
        // Outside the window the keys and values are `before`'s, which attended to the old
        // tokens: stale, so the rows differ from the exact pass.
        assert_ne!(
            windowed, exact,
            "{arch}: outside the window the keys are stale"
        );
        // After a refresh with `after`, the same window is exact again.
        logits(&mut m, &after, &Pass::Fill, &all);
        let refreshed = logits(&mut m, &after, &Pass::Window(16..32), &rows);
        assert_eq!(
            refreshed, exact,
            "{arch}: after a refresh the window is exact"
        );
        assert!(windowed.iter().all(|x| x.is_finite()));
        assert_eq!(windowed.len(), rows.len() * v);
    }
}

#[test]
fn bad_windows_are_typed_errors() {
    let mut m = tiny(Arch::Llada, QuantMix::F32);
    let v = m.vocab_size();
    let c = canvas(12, 511);
    let mut out = vec![0.0; v];
    assert!(matches!(
        m.forward_pass(&c, &Pass::Window(2..6), &[3], &mut out),
        Err(Error::CacheNotFilled { len: 12, cached: 0 })
    ));
    let mut all = vec![0.0; 12 * v];
    let rows: Vec<usize> = (0..12).collect();
    m.forward_pass(&c, &Pass::Fill, &rows, &mut all).unwrap();
    assert!(matches!(
        m.forward_pass(&c, &Pass::Window(2..6), &[7], &mut out),
        Err(Error::BadWindow { row: 7, .. })
    ));
    assert!(matches!(
        m.forward_pass(&c, &Pass::Window(6..6), &[], &mut []),
        Err(Error::BadWindow { .. })
    ));
    assert!(matches!(
        m.forward_pass(&c, &Pass::Window(6..13), &[7], &mut out),
        Err(Error::BadWindow { end: 13, .. })
    ));
    // A canvas of another length is not the one cached.
    assert!(matches!(
        m.forward_pass(&c[..10], &Pass::Window(2..6), &[3], &mut out),
        Err(Error::CacheNotFilled {
            len: 10,
            cached: 12
        })
    ));
    assert!(m.cache_bytes() > 0);
}
