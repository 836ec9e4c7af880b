//! Cache policies on a toy model with a cache of the canvas it last saw: every block starts
//! with a fill (skipping that refresh fails here), every generated position is committed
//! exactly once and the prompt never, windows hold the rows asked for, steps that are all
//! fills equal the uncached run bit for bit, infilling keeps prefix and suffix untouched and
//! in view under every policy, and bad combinations are typed errors.

mod common;

use common::ToyModel;
use lacuna_sampler::{
    CachePolicy, Common, ConfigError, Denoiser, DreamConfig, Error, Llada2Config, LladaConfig,
    ParallelConfig, ParallelRule, Pass, Xoshiro256PlusPlus, dream, llada, llada2,
};
use proptest::prelude::*;

const VOCAB: usize = 12;
const MASK: u32 = VOCAB as u32;

/// [`ToyModel`] behind a cache of the canvas: a fill stores the canvas, a window overwrites
/// its range in the stored copy and computes the logits from that copy, so stale positions
/// change the logits as stale keys and values change a real model's.
struct CachingToy {
    toy: ToyModel,
    cached: Vec<u32>,
    passes: Vec<Pass>,
    /// Every canvas a call was given.
    canvases: Vec<Vec<u32>>,
}

#[derive(Debug, thiserror::Error)]
#[error("bad window {0}")]
struct BadWindow(&'static str);

impl CachingToy {
    fn new(seed: u64) -> Self {
        Self {
            toy: ToyModel::new(VOCAB, seed),
            cached: Vec::new(),
            passes: Vec::new(),
            canvases: Vec::new(),
        }
    }
}

impl Denoiser for CachingToy {
    type Error = BadWindow;
    fn vocab_size(&self) -> usize {
        VOCAB
    }
    fn supports_cache(&self) -> bool {
        true
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), BadWindow> {
        self.passes.push(pass.clone());
        self.canvases.push(canvas.to_vec());
        let seen = match pass {
            Pass::Full => canvas.to_vec(),
            Pass::Fill => {
                self.cached = canvas.to_vec();
                canvas.to_vec()
            }
            Pass::Window(w) => {
                if self.cached.len() != canvas.len() {
                    return Err(BadWindow("window before any fill"));
                }
                if w.start >= w.end || w.end > canvas.len() {
                    return Err(BadWindow("empty or out of the canvas"));
                }
                if rows.iter().any(|r| !w.contains(r)) {
                    return Err(BadWindow("a row outside the window"));
                }
                self.cached[w.clone()].copy_from_slice(&canvas[w.clone()]);
                self.cached.clone()
            }
        };
        self.toy.logits(&seen, rows, out).map_err(|e| match e {})
    }
}

fn policy() -> impl Strategy<Value = CachePolicy> {
    prop_oneof![Just(CachePolicy::Prefix), Just(CachePolicy::Dual)]
}

fn rule() -> impl Strategy<Value = Option<ParallelRule>> {
    prop_oneof![
        2 => Just(None),
        1 => (0.2f64..1.0).prop_map(|t| Some(ParallelRule::Threshold(t))),
        1 => (0.0f64..2.0).prop_map(|g| Some(ParallelRule::EntropyBound(g))),
    ]
}

fn prompt() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(0u32..VOCAB as u32, 0..6)
}

/// Checks that each generated position was committed once, the prompt never, and that the
/// first denoiser call of every block (and only that one) filled the cache.
fn check_run(
    prompt_len: usize,
    gen_length: usize,
    views: &[(usize, Vec<usize>)],
    passes: &[Pass],
) -> Result<(), TestCaseError> {
    let mut seen = vec![0u32; prompt_len + gen_length];
    for (_, committed) in views {
        for &p in committed {
            prop_assert!(p >= prompt_len, "prompt position {} committed", p);
            seen[p] += 1;
        }
    }
    prop_assert!(seen[prompt_len..].iter().all(|&n| n == 1), "{:?}", seen);
    prop_assert_eq!(views.len(), passes.len(), "one call per step");
    let mut block = usize::MAX;
    for ((b, _), pass) in views.iter().zip(passes) {
        let first = *b != block;
        block = *b;
        prop_assert_eq!(first, *pass == Pass::Fill, "block {} pass {:?}", b, pass);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn llada_cached_commits_each_position_once_and_refreshes_per_block(
        blocks in 1usize..4, block_length in 1usize..6, spb in 1usize..4,
        temperature in prop_oneof![Just(0.0), Just(1.0)],
        rule in rule(), cache in policy(), prompt in prompt(),
        seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let c = LladaConfig {
            common: Common {
                gen_length: blocks * block_length,
                mask_id: Some(MASK),
                ..Common::default()
            },
            block_length,
            steps: blocks * spb,
            temperature,
            parallel: rule.map(|rule| ParallelConfig { rule }),
            cache,
            ..LladaConfig::default()
        };
        let mut model = CachingToy::new(model_seed);
        let mut views = Vec::new();
        let g = llada::generate(&mut model, &prompt, &c, &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |v| views.push((v.block, v.committed.to_vec()))).expect("runs");
        prop_assert!(!g.canvas.contains(&MASK));
        prop_assert_eq!(&g.canvas[..prompt.len()], &prompt[..]);
        check_run(prompt.len(), c.common.gen_length, &views, &model.passes)?;
        prop_assert_eq!(g.stats.cache_fills, blocks);
    }

    #[test]
    fn dream_cached_commits_each_position_once_and_refreshes_per_block(
        blocks in 1usize..4, block_length in 1usize..6,
        rule in prop_oneof![
            (0.2f64..1.0).prop_map(ParallelRule::Threshold),
            (0.0f64..2.0).prop_map(ParallelRule::EntropyBound),
        ],
        cache in policy(), prompt in prompt(), seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let c = DreamConfig {
            common: Common {
                gen_length: blocks * block_length,
                mask_id: Some(MASK),
                ..Common::default()
            },
            parallel: Some(ParallelConfig { rule }),
            block_length: Some(block_length),
            cache,
            ..DreamConfig::default()
        };
        let mut model = CachingToy::new(model_seed);
        let mut views = Vec::new();
        let g = dream::generate(&mut model, &prompt, &c, &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |v| views.push((v.block, v.committed.to_vec()))).expect("runs");
        prop_assert!(!g.canvas.contains(&MASK));
        check_run(prompt.len(), c.common.gen_length, &views, &model.passes)?;
    }

    /// With one step per block every step is a fill: the cached run is the uncached run.
    #[test]
    fn one_step_per_block_is_exact(
        blocks in 1usize..5, block_length in 1usize..6, cache in policy(), prompt in prompt(),
        seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let mut c = LladaConfig {
            common: Common {
                gen_length: blocks * block_length,
                mask_id: Some(MASK),
                ..Common::default()
            },
            block_length,
            steps: blocks,
            temperature: 1.0,
            ..LladaConfig::default()
        };
        let exact = llada::generate(&mut CachingToy::new(model_seed), &prompt, &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(seed), |_| {}).expect("runs");
        c.cache = cache;
        let cached = llada::generate(&mut CachingToy::new(model_seed), &prompt, &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(seed), |_| {}).expect("runs");
        prop_assert_eq!(&cached.canvas, &exact.canvas);
        prop_assert_eq!(cached.stats.positions_computed, exact.stats.positions_computed);
    }
}

fn any_policy() -> impl Strategy<Value = CachePolicy> {
    prop_oneof![Just(CachePolicy::None), policy()]
}

/// Every call saw `prompt`, then the middle, then `suffix`; the result holds prompt and
/// middle only; the middle has no mask left.
fn check_infill(
    prompt: &[u32],
    gen_length: usize,
    suffix: &[u32],
    g: &lacuna_sampler::Generation,
    model: &CachingToy,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(g.canvas.len(), prompt.len() + gen_length);
    prop_assert_eq!(&g.canvas[..prompt.len()], prompt);
    prop_assert!(!g.canvas.contains(&MASK));
    for c in &model.canvases {
        prop_assert_eq!(c.len(), prompt.len() + gen_length + suffix.len());
        prop_assert_eq!(&c[..prompt.len()], prompt);
        prop_assert_eq!(&c[prompt.len() + gen_length..], suffix);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn llada_infill_keeps_prefix_and_suffix_under_every_policy(
        blocks in 1usize..4, block_length in 1usize..6, spb in 1usize..4,
        rule in rule(), cache in any_policy(), prompt in prompt(),
        suffix in prop::collection::vec(0u32..VOCAB as u32, 1..6),
        seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let c = LladaConfig {
            common: Common {
                gen_length: blocks * block_length,
                mask_id: Some(MASK),
                suffix: suffix.clone(),
                ..Common::default()
            },
            block_length,
            steps: blocks * spb,
            temperature: 1.0,
            parallel: rule.map(|rule| ParallelConfig { rule }),
            cache,
            ..LladaConfig::default()
        };
        let mut model = CachingToy::new(model_seed);
        let mut views = Vec::new();
        let g = llada::generate(&mut model, &prompt, &c, &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |v| views.push((v.block, v.committed.to_vec()))).expect("runs");
        check_infill(&prompt, c.common.gen_length, &suffix, &g, &model)?;
        if cache != CachePolicy::None {
            check_run(prompt.len(), c.common.gen_length, &views, &model.passes)?;
        }
    }

    #[test]
    fn dream_infill_keeps_prefix_and_suffix_under_every_policy(
        blocks in 1usize..4, block_length in 1usize..6,
        cache in any_policy(), prompt in prop::collection::vec(0u32..VOCAB as u32, 1..6),
        suffix in prop::collection::vec(0u32..VOCAB as u32, 1..6),
        seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let c = DreamConfig {
            common: Common {
                gen_length: blocks * block_length,
                mask_id: Some(MASK),
                suffix: suffix.clone(),
                ..Common::default()
            },
            parallel: Some(ParallelConfig { rule: ParallelRule::Threshold(0.5) }),
            block_length: Some(block_length),
            cache,
            ..DreamConfig::default()
        };
        let mut model = CachingToy::new(model_seed);
        let g = dream::generate(&mut model, &prompt, &c, &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |_| {}).expect("runs");
        check_infill(&prompt, c.common.gen_length, &suffix, &g, &model)?;
    }
}

/// The suffix is seen: the same prompt with another suffix fills the middle otherwise.
#[test]
fn the_suffix_changes_the_fill() {
    let fill = |suffix: Vec<u32>| {
        let c = LladaConfig {
            common: Common {
                gen_length: 8,
                mask_id: Some(MASK),
                suffix,
                ..Common::default()
            },
            block_length: 8,
            steps: 8,
            ..LladaConfig::default()
        };
        llada::generate(
            &mut CachingToy::new(3),
            &[1, 2],
            &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(1),
            |_| {},
        )
        .expect("runs")
        .canvas
    };
    let fills: std::collections::BTreeSet<Vec<u32>> =
        (0..6).map(|s| fill(vec![s, s + 1])).collect();
    assert!(fills.len() > 1, "every suffix gave the same fill");
}

/// LLaDA2's block-causal attention never shows the suffix to the middle: a typed error.
#[test]
fn llada2_refuses_to_infill() {
    let c = Llada2Config {
        common: Common {
            gen_length: 8,
            mask_id: Some(MASK),
            suffix: vec![1, 2],
            ..Common::default()
        },
        ..Llada2Config::default()
    };
    let err = llada2::generate(
        &mut CachingToy::new(1),
        &[1],
        &c,
        &mut Xoshiro256PlusPlus::seed_from_u64(1),
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Config(ConfigError::InfillUnsupported { sampler: "LLaDA2" })
        ),
        "{err}"
    );
}

/// Windows recompute less than the canvas, and dual less than prefix.
#[test]
fn windows_shrink_the_work() {
    let prompt = [1u32, 2, 3, 4];
    let work = |cache| {
        let c = LladaConfig {
            common: Common {
                gen_length: 16,
                mask_id: Some(MASK),
                ..Common::default()
            },
            block_length: 4,
            steps: 16,
            cache,
            ..LladaConfig::default()
        };
        let g = llada::generate(
            &mut CachingToy::new(9),
            &prompt,
            &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(1),
            |_| {},
        )
        .expect("runs");
        assert_eq!(g.stats.denoiser_calls, 16);
        g.stats.positions_computed
    };
    let (none, prefix, dual) = (
        work(CachePolicy::None),
        work(CachePolicy::Prefix),
        work(CachePolicy::Dual),
    );
    assert_eq!(none, 16 * 20);
    // 4 fills of 20, then 3 windows per block of 16, 12, 8, 4 positions.
    assert_eq!(prefix, 4 * 20 + 3 * (16 + 12 + 8 + 4));
    assert_eq!(dual, 4 * 20 + 12 * 4);
}

#[test]
fn bad_combinations_are_typed_errors() {
    let c = LladaConfig {
        common: Common {
            gen_length: 4,
            mask_id: Some(MASK),
            ..Common::default()
        },
        block_length: 4,
        steps: 4,
        cache: CachePolicy::Dual,
        ..LladaConfig::default()
    };
    let err = llada::generate(
        &mut ToyModel::new(VOCAB, 1),
        &[],
        &c,
        &mut Xoshiro256PlusPlus::seed_from_u64(1),
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Config(ConfigError::CacheUnsupported { policy: "dual" })
        ),
        "{err}"
    );
    let cfg = LladaConfig {
        cfg_scale: 1.0,
        ..c
    };
    assert_eq!(
        cfg.validate(),
        Err(ConfigError::CacheWithCfg { policy: "dual" })
    );
    let d = DreamConfig {
        common: Common {
            mask_id: Some(MASK),
            ..Common::default()
        },
        cache: CachePolicy::Prefix,
        ..DreamConfig::default()
    };
    assert_eq!(
        d.validate(),
        Err(ConfigError::CacheNeedsBlocks { policy: "prefix" })
    );
}
