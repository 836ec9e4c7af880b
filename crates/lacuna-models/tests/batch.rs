//! Many canvases, one forward: `Model::forward_batch` gives every pass in a batch exactly
//! the logits (and leaves exactly the cache) that the pass computes alone, bit for bit, for
//! every architecture, weight type and layout, over random batches of full, fill and window
//! passes (stale caches, LLaDA2's block-causal windows), canvases of different lengths and
//! random rows; and on every CPU path (the parent test reruns this binary per path).

use std::process::Command;
use std::sync::{Mutex, OnceLock};

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, BatchPass, CpuBackend, Error, KvCache, Model, PassSpec, WeightLayout};
use lacuna_sampler::Pass;
use proptest::prelude::*;

/// Every architecture, in three weight forms each: Q4_K_M repacked (the 256-element
/// kernels, AMX from 64 rows), Q4_K_M compact (its decode-per-use kernels below 128 rows,
/// panel decoding above) and Q8_0 / F16 (the 32-element and float kernels).
fn models() -> &'static Vec<Mutex<Model>> {
    static MODELS: OnceLock<Vec<Mutex<Model>>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let mut v = Vec::new();
        for arch in Arch::MASKED {
            for (quant, layout) in [
                (QuantMix::Q4KM, WeightLayout::Fast),
                (QuantMix::Q4KM, WeightLayout::Compact),
                (QuantMix::Q8_0, WeightLayout::Fast),
                (QuantMix::F16, WeightLayout::Fast),
            ] {
                let spec = FixtureSpec::new(arch, Shape::Tiny, 2, quant);
                let bytes = build(&spec).unwrap().to_vec().unwrap();
                let file = GgufFile::from_vec(bytes).unwrap();
                let model = Model::load(file, CpuBackend::with_layout(layout)).unwrap();
                v.push(Mutex::new(model));
            }
        }
        v
    })
}

/// One canvas's pass, as the test draws it.
#[derive(Debug, Clone)]
struct Item {
    tokens: Vec<u32>,
    kind: Kind,
    /// `None`: every row of the canvas (full and fill passes only).
    rows: Option<Vec<usize>>,
    /// LLaDA2's attention block (ignored by the other architectures).
    block: Option<usize>,
}

#[derive(Debug, Clone)]
enum Kind {
    Full,
    Fill,
    /// A window over a cache filled from `stale` (the same canvas with other tokens).
    Window {
        start: usize,
        end: usize,
        stale: Vec<u32>,
    },
}

fn item() -> impl Strategy<Value = Item> {
    (1usize..80, any::<u64>(), 0u8..3, 0u8..4, any::<bool>()).prop_map(
        |(len, seed, kind, block, all_rows)| {
            let mut r = seed | 1;
            let mut next = |m: usize| {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                (r % m as u64) as usize
            };
            let tokens: Vec<u32> = (0..len).map(|_| next(500) as u32).collect();
            let kind = match kind {
                0 => Kind::Full,
                1 => Kind::Fill,
                _ => {
                    let start = next(len);
                    let end = start + 1 + next(len - start);
                    let mut stale = tokens.clone();
                    for t in stale.iter_mut() {
                        if next(3) == 0 {
                            *t = next(500) as u32;
                        }
                    }
                    Kind::Window { start, end, stale }
                }
            };
            let (lo, hi) = match &kind {
                Kind::Window { start, end, .. } => (*start, *end),
                _ => (0, len),
            };
            let rows = if all_rows && !matches!(kind, Kind::Window { .. }) {
                None
            } else {
                let mut rows: Vec<usize> = (lo..hi).filter(|_| next(3) != 0).collect();
                if rows.is_empty() {
                    rows.push(lo + next(hi - lo));
                }
                Some(rows)
            };
            let block = [None, Some(1), Some(4), Some(8)][block as usize];
            Item {
                tokens,
                kind,
                rows,
                block,
            }
        },
    )
}

impl Item {
    fn pass(&self) -> Pass {
        match &self.kind {
            Kind::Full => Pass::Full,
            Kind::Fill => Pass::Fill,
            Kind::Window { start, end, .. } => Pass::Window(*start..*end),
        }
    }

    fn spec<'p>(&self, model: &Model, pass: &'p Pass) -> PassSpec<'p> {
        let spec = PassSpec::new(pass);
        match (model.attention_block(), self.block) {
            (Some(_), Some(b)) => spec.with_block(b),
            _ => spec,
        }
    }

    fn n_rows(&self) -> usize {
        self.rows.as_ref().map_or(self.tokens.len(), Vec::len)
    }

    /// The cache this item's pass starts from: empty, or filled from the stale canvas.
    fn start_cache(&self, model: &mut Model) -> KvCache {
        let mut cache = KvCache::new();
        if let Kind::Window { stale, .. } = &self.kind {
            let mut out = vec![0.0; model.vocab_size()];
            let spec = self.spec(model, &Pass::Fill);
            model
                .forward_pass(&mut cache, spec, stale, &[0], &mut out)
                .unwrap();
        }
        cache
    }
}

/// Logits of every position read back through a window over the whole canvas: what the
/// cache holds, as the next pass would see it.
fn read_cache(model: &mut Model, item: &Item, cache: &mut KvCache) -> Vec<u32> {
    let len = item.tokens.len();
    let rows: Vec<usize> = (0..len).collect();
    let mut out = vec![0.0; len * model.vocab_size()];
    let pass = Pass::Window(0..len);
    let spec = item.spec(model, &pass);
    model
        .forward_pass(cache, spec, &item.tokens, &rows, &mut out)
        .unwrap();
    bits(&out)
}

/// The first index where `a` and `b` differ, with both values (or the lengths).
fn first_diff(a: &[u32], b: &[u32]) -> Option<(usize, f32, f32)> {
    if a.len() != b.len() {
        return Some((usize::MAX, a.len() as f32, b.len() as f32));
    }
    let i = a.iter().zip(b).position(|(x, y)| x != y)?;
    Some((i, f32::from_bits(a[i]), f32::from_bits(b[i])))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs `items` alone and as one batch on `model`; asserts equal logits and caches.
fn check(model: &mut Model, items: &[Item]) -> Result<(), TestCaseError> {
    let vocab = model.vocab_size();
    let mut solo = Vec::new();
    let mut solo_caches = Vec::new();
    for it in items {
        let mut cache = it.start_cache(model);
        let pass = it.pass();
        let mut out = vec![f32::NAN; it.n_rows() * vocab];
        let spec = it.spec(model, &pass);
        match &it.rows {
            Some(rows) => model
                .forward_pass(&mut cache, spec, &it.tokens, rows, &mut out)
                .unwrap(),
            None => match pass {
                Pass::Full => model
                    .forward_all_with_block(&it.tokens, spec.attention_block, &mut out)
                    .unwrap(),
                _ => {
                    let all: Vec<usize> = (0..it.tokens.len()).collect();
                    model
                        .forward_pass(&mut cache, spec, &it.tokens, &all, &mut out)
                        .unwrap()
                }
            },
        }
        solo.push(bits(&out));
        solo_caches.push(cache);
    }
    let mut caches: Vec<KvCache> = items.iter().map(|it| it.start_cache(model)).collect();
    let passes: Vec<Pass> = items.iter().map(Item::pass).collect();
    let mut outs: Vec<Vec<f32>> = items
        .iter()
        .map(|it| vec![f32::NAN; it.n_rows() * vocab])
        .collect();
    let specs: Vec<PassSpec<'_>> = items
        .iter()
        .zip(&passes)
        .map(|(it, p)| it.spec(model, p))
        .collect();
    let mut batch: Vec<BatchPass<'_, Vec<f32>>> = items
        .iter()
        .zip(specs)
        .zip(caches.iter_mut().zip(outs.iter_mut()))
        .map(|((it, spec), (cache, out))| BatchPass {
            cache: Some(cache),
            spec,
            tokens: &it.tokens,
            rows: it.rows.as_deref(),
            out,
        })
        .collect();
    let results = model.forward_batch(&mut batch).unwrap();
    drop(batch);
    for (i, r) in results.into_iter().enumerate() {
        prop_assert!(r.is_ok(), "item {i}: {r:?}");
    }
    for (i, it) in items.iter().enumerate() {
        let diff = first_diff(&bits(&outs[i]), &solo[i]);
        prop_assert!(
            diff.is_none(),
            "logits of item {i} of {} differ at {diff:?}",
            items.len()
        );
        if !matches!(it.kind, Kind::Full) {
            let a = read_cache(model, it, &mut solo_caches[i]);
            let b = read_cache(model, it, &mut caches[i]);
            let diff = first_diff(&a, &b);
            prop_assert!(
                diff.is_none(),
                "cache of item {i} of {} differs at {diff:?}",
                items.len()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// The child half (and, run directly, the active path's check).
    #[test]
    fn batch_equals_each_pass_alone(items in prop::collection::vec(item(), 1..6)) {
        for (i, m) in models().iter().enumerate() {
            let mut model = m.lock().unwrap();
            check(&mut model, &items).map_err(|e| TestCaseError::fail(format!("model {i} ({:?}): {e}", model.arch())))?;
        }
    }
}

#[test]
fn a_bad_pass_fails_alone_and_the_others_run() {
    let mut model = models()[0].lock().unwrap();
    let vocab = model.vocab_size();
    let good: Vec<u32> = (0..20).collect();
    let mut want = vec![0.0; 2 * vocab];
    model.forward(&good, &[3, 7], &mut want).unwrap();
    let bad_token = vec![1, 2, u32::MAX];
    let (mut o1, mut o2, mut o3) = (vec![0.0; 2 * vocab], vec![0.0; vocab], vec![0.0; vocab]);
    let (mut c1, mut c2, mut c3) = (KvCache::new(), KvCache::new(), KvCache::new());
    let window = Pass::Window(0..3);
    let mut batch = vec![
        BatchPass {
            cache: Some(&mut c1),
            spec: PassSpec::full(),
            tokens: &good,
            rows: Some(&[3, 7]),
            out: &mut o1,
        },
        BatchPass {
            cache: Some(&mut c2),
            spec: PassSpec::full(),
            tokens: &bad_token,
            rows: Some(&[0]),
            out: &mut o2,
        },
        // A window over an empty cache.
        BatchPass {
            cache: Some(&mut c3),
            spec: PassSpec::new(&window),
            tokens: &good[..3],
            rows: Some(&[0]),
            out: &mut o3,
        },
    ];
    let results = model.forward_batch(&mut batch).unwrap();
    assert!(results[0].is_ok());
    assert!(matches!(
        results[1],
        Err(Error::TokenOutOfRange { position: 2, .. })
    ));
    assert!(matches!(results[2], Err(Error::CacheNotFilled { .. })));
    assert_eq!(bits(&o1), bits(&want));
    // A fill or window pass without a cache is refused too.
    let mut o4 = vec![0.0; vocab];
    let fill = Pass::Fill;
    let mut batch = vec![BatchPass::<Vec<f32>> {
        cache: None,
        spec: PassSpec::new(&fill),
        tokens: &good,
        rows: Some(&[0]),
        out: &mut o4,
    }];
    let results = model.forward_batch(&mut batch).unwrap();
    assert!(matches!(results[0], Err(Error::CacheNotFilled { .. })));
}

/// Reruns [`batch_equals_each_pass_alone`] on every other available CPU path.
#[test]
fn batch_equals_each_pass_alone_on_every_path() {
    if std::env::var_os("LACUNA_CPU_PATH").is_some() {
        return; // a child: the proptest above is its check
    }
    let exe = std::env::current_exe().expect("test binary path");
    // A cross-compiled binary under qemu-user cannot start itself again.
    let reruns = Command::new(&exe)
        .arg("--list")
        .output()
        .is_ok_and(|o| o.status.success());
    if !reruns {
        eprintln!("cannot re-execute {exe:?}: skipped (emulated?)");
        return;
    }
    let best = lacuna_cpu::Path::best();
    for path in lacuna_cpu::Path::available() {
        if path == best {
            continue;
        }
        let out = Command::new(&exe)
            .args([
                "--exact",
                "batch_equals_each_pass_alone",
                "--test-threads=1",
            ])
            .env("LACUNA_CPU_PATH", path.name())
            .output()
            .expect("spawn test binary");
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "{}: {}{}",
            path.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
