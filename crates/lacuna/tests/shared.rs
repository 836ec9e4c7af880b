//! `SharedEngine`: generations on several threads at once, each exactly what it is alone.

mod common;

use std::sync::Arc;

use lacuna::models::Arch;
use lacuna::{
    CachePolicy, CancelToken, Engine, EngineOptions, GenerateRequest, Prompt, SharedEngine,
};

fn demo() -> Engine {
    Engine::demo(&EngineOptions {
        threads: Some(1),
        ..Default::default()
    })
    .unwrap()
}

fn requests() -> Vec<GenerateRequest> {
    let mut out = Vec::new();
    for (i, (text, cache)) in [
        ("And God said,", CachePolicy::None),
        ("In the beginning", CachePolicy::Dual),
        ("And the LORD spake", CachePolicy::Prefix),
        ("Blessed are the", CachePolicy::Dual),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = GenerateRequest::new(Prompt::Text(text.into()));
        r.gen_length = 64;
        r.steps = 64;
        r.block_length = Some(32);
        r.cache = cache;
        r.temperature = if i % 2 == 0 { 0.0 } else { 0.7 };
        r.seed = i as u64;
        out.push(r);
    }
    out
}

/// Runs every request on its own thread at once; the outputs in request order.
fn at_once(shared: &Arc<SharedEngine>, requests: Vec<GenerateRequest>) -> Vec<lacuna::Output> {
    let handles: Vec<_> = requests
        .into_iter()
        .map(|r| {
            let shared = Arc::clone(shared);
            std::thread::spawn(move || {
                let p = shared.prepare(&r).unwrap();
                shared.generate(&p, &CancelToken::new(), |_| {}).unwrap()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn concurrent_generations_equal_their_runs_alone() {
    let mut engine = demo();
    let alone: Vec<_> = requests()
        .iter()
        .map(|r| engine.generate(r, |_| {}).unwrap())
        .collect();
    let shared = Arc::new(SharedEngine::new(demo()));
    for (got, want) in at_once(&shared, requests()).into_iter().zip(&alone) {
        assert_eq!(got.canvas, want.canvas);
        assert_eq!(got.tokens, want.tokens);
        assert_eq!(got.stats.cache_fills, want.stats.cache_fills);
    }
    let stats = shared.stats();
    assert_eq!(stats.active, 0);
    assert_eq!(
        stats.passes,
        alone
            .iter()
            .map(|o| o.stats.denoiser_calls as u64)
            .sum::<u64>()
    );
    // Four canvases of 64 steps each at once: passes waiting together ran as one forward.
    assert!(stats.forwards < stats.passes, "{stats:?}");
    assert_eq!(stats.batch_passes.count, stats.forwards);
    assert_eq!(stats.batch_passes.sum, stats.passes);
    assert!(
        stats.batch_passes.counts[1..].iter().sum::<u64>() > 0,
        "{stats:?}"
    );
}

/// One long generation among many short ones, with batches of at most two passes: every
/// generation finishes (arrival order: none starves) and equals its run alone; batching
/// off (one pass at a time) gives the same.
#[test]
fn no_canvas_starves_and_batching_off_is_the_same() {
    let mut reqs = Vec::new();
    let mut long = GenerateRequest::new(Prompt::Text("In the beginning".into()));
    long.gen_length = 128;
    long.steps = 128;
    long.block_length = Some(32);
    long.cache = CachePolicy::Dual;
    reqs.push(long);
    for i in 0..6 {
        let mut r = GenerateRequest::new(Prompt::Text("And God said,".into()));
        r.gen_length = 8;
        r.steps = 4;
        r.temperature = 0.5;
        r.seed = i;
        reqs.push(r);
    }
    let mut engine = demo();
    let alone: Vec<_> = reqs
        .iter()
        .map(|r| engine.generate(r, |_| {}).unwrap())
        .collect();
    for limits in [
        lacuna::BatchLimits {
            max_passes: 2,
            max_tokens: 1024,
        },
        lacuna::BatchLimits::off(),
    ] {
        let shared = Arc::new(SharedEngine::with_limits(demo(), limits));
        for (i, (got, want)) in at_once(&shared, reqs.clone())
            .into_iter()
            .zip(&alone)
            .enumerate()
        {
            assert_eq!(got.canvas, want.canvas, "{limits:?} request {i}");
        }
        let stats = shared.stats();
        assert_eq!(
            stats.batch_passes.counts[2..].iter().sum::<u64>(),
            0,
            "{stats:?}"
        );
        if limits.max_passes == 1 {
            assert_eq!(stats.forwards, stats.passes);
        }
    }
}

#[test]
fn a_cancelled_generation_stops_at_its_next_step() {
    let shared = SharedEngine::new(demo());
    let p = shared.prepare(&requests()[0]).unwrap();
    let cancel = CancelToken::new();
    let mut steps = 0;
    let err = shared
        .generate(&p, &cancel, |_| {
            steps += 1;
            if steps == 3 {
                cancel.cancel();
            }
        })
        .unwrap_err();
    assert!(matches!(err, lacuna::Error::Cancelled), "{err}");
    assert_eq!(steps, 3);
    assert_eq!(shared.stats().forwards, 3);
    // Bad requests are refused before any forward pass.
    let mut r = requests()[0].clone();
    r.gen_length = 1000;
    assert!(matches!(
        shared.prepare(&r),
        Err(lacuna::Error::ContextOverflow { .. })
    ));
}

/// Every architecture (Dream's block-wise parallel mode with its caches, LLaDA-MoE's expert
/// FFN on window rows): interleaved generations equal their runs alone.
#[test]
fn every_architecture_interleaves_exactly() {
    for arch in [Arch::Llada, Arch::Dream, Arch::LladaMoe] {
        let reqs: Vec<GenerateRequest> =
            [CachePolicy::None, CachePolicy::Dual, CachePolicy::Prefix]
                .into_iter()
                .enumerate()
                .map(|(i, cache)| {
                    let prompt: Vec<u32> = (0..8).map(|t| 3 + t * 5 + i as u32).collect();
                    let mut r = GenerateRequest::new(Prompt::Tokens(prompt));
                    r.gen_length = 32;
                    r.steps = 32;
                    r.block_length = Some(16);
                    r.cache = cache;
                    r.keep_after_eos = true;
                    r.seed = i as u64;
                    if arch == Arch::Dream {
                        r.parallel = Some(lacuna::ParallelConfig {
                            rule: lacuna::ParallelRule::Threshold(0.5),
                        });
                    }
                    r
                })
                .collect();
        interleaved_equals_alone(arch, reqs);
    }
}

/// LLaDA2 generations with different block lengths (so different attention masks on the
/// one model) and caches, and RND1's whole-canvas sampler: interleaved equals alone.
#[test]
fn llada2_and_rnd1_interleave_exactly() {
    let llada2: Vec<GenerateRequest> = [
        (CachePolicy::None, 16),
        (CachePolicy::Prefix, 8),
        (CachePolicy::Prefix, 16),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (cache, block))| {
        let prompt: Vec<u32> = (0..7).map(|t| 3 + t * 5 + i as u32).collect();
        let mut r = GenerateRequest::new(Prompt::Tokens(prompt));
        r.gen_length = 24;
        r.steps = 8;
        r.block_length = Some(block);
        r.cache = cache;
        r.keep_after_eos = true;
        r
    })
    .collect();
    let rnd1: Vec<GenerateRequest> = (0..2)
        .map(|i| {
            let mut r = GenerateRequest::new(Prompt::Tokens(vec![4, 9, 2 + i]));
            r.gen_length = 12;
            r.steps = 6;
            r.temperature = 0.5 * f64::from(i);
            r.seed = 7;
            r.keep_after_eos = true;
            r
        })
        .collect();
    for (arch, reqs) in [(Arch::Llada2, llada2), (Arch::Rnd1, rnd1)] {
        interleaved_equals_alone(arch, reqs);
    }
}

/// Runs `reqs` one after another on a fresh engine of `arch`, then all at once on a shared
/// one, and asserts each interleaved canvas equals its run alone.
fn interleaved_equals_alone(arch: Arch, reqs: Vec<GenerateRequest>) {
    let mut engine = common::tiny_engine(arch);
    let alone: Vec<_> = reqs
        .iter()
        .map(|r| engine.generate(r, |_| {}).unwrap())
        .collect();
    let shared = Arc::new(SharedEngine::new(common::tiny_engine(arch)));
    for (i, (got, want)) in at_once(&shared, reqs).into_iter().zip(&alone).enumerate() {
        assert_eq!(got.canvas, want.canvas, "{arch} request {i}");
    }
}

/// Constrained canvases (a JSON Schema, a regex) and free ones in the same batches: each
/// equals its run alone bit for bit, and each constrained answer is in its language.
#[test]
fn constrained_and_free_canvases_batch_exactly() {
    use lacuna::structured::Spec;
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 10}, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
        "required": ["name", "n"],
        "additionalProperties": false,
    });
    let mut reqs = requests();
    reqs[0].constraint = Some(Spec::JsonSchema(schema.clone()));
    reqs[2].constraint = Some(Spec::Regex("[A-Z][a-z]{2,8}( [a-z]{2,8}){1,4}\\.".into()));
    let mut engine = demo();
    let alone: Vec<_> = reqs
        .iter()
        .map(|r| engine.generate(r, |_| {}).unwrap())
        .collect();
    let shared = Arc::new(SharedEngine::new(demo()));
    for (got, want) in at_once(&shared, reqs).into_iter().zip(&alone) {
        assert_eq!(got.canvas, want.canvas);
        assert_eq!(got.text, want.text);
    }
    let v: serde_json::Value = serde_json::from_str(&alone[0].text).unwrap();
    assert!(
        v["name"].is_string() && v["n"].as_u64().is_some_and(|n| n <= 99),
        "{v}"
    );
    let words: Vec<&str> = alone[2].text.trim_end_matches('.').split(' ').collect();
    assert!(
        alone[2].text.ends_with('.') && (2..=5).contains(&words.len()),
        "{:?}",
        alone[2].text
    );
    assert!(shared.stats().forwards < shared.stats().passes);
}
