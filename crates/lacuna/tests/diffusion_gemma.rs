//! DiffusionGemma through the library: a generation runs its encoder and decoder passes
//! under the entropy-bound sampler (the encoder's timed apart), is reproducible per seed, equal on the shared engine
//! (the server's) interleaved with others, and every masked-diffusion setting is refused
//! by name.

mod common;

use std::sync::Arc;

use lacuna::models::Arch;
use lacuna::{CachePolicy, CancelToken, GenerateRequest, Prompt, SharedEngine};

fn request(seed: u64, prompt: Vec<u32>) -> GenerateRequest {
    let mut r = GenerateRequest::new(Prompt::Tokens(prompt));
    // The tiny fixture's canvas is 32 tokens: two canvases, the second over the first's
    // commit pass.
    r.gen_length = 40;
    r.steps = 6;
    r.seed = seed;
    r.keep_after_eos = true;
    r
}

#[test]
fn generation_runs_whole_canvases_and_is_reproducible() {
    let mut engine = common::tiny_engine(Arch::DiffusionGemma);
    let r = request(3, vec![5, 9, 300, 41]);
    let mut steps = 0;
    let a = engine.generate(&r, |_| steps += 1).unwrap();
    assert_eq!(a.tokens.len(), 40);
    assert_eq!(a.canvas.len(), 44);
    // At most `steps` decoder passes per canvas, one commit pass between the two canvases.
    assert!(
        a.stats.denoiser_calls <= 12 && a.stats.denoiser_calls >= 2,
        "{:?}",
        a.stats
    );
    assert_eq!(a.stats.cache_fills, 1);
    assert_eq!(steps, a.stats.denoiser_calls);
    // The encoder's passes are timed apart from the steps: the prompt's, then one commit.
    assert_eq!(a.timings.encode_ms.len(), 2, "{:?}", a.timings);
    assert_eq!(a.timings.step_ms.len(), steps);
    assert!(a.timings.encode_ms.iter().all(|&ms| ms > 0.0));
    let steps_s: f64 = a
        .timings
        .step_ms
        .iter()
        .chain(&a.timings.encode_ms)
        .sum::<f64>()
        / 1e3;
    assert!(steps_s <= a.timings.total_s, "{:?}", a.timings);
    let b = engine.generate(&r, |_| {}).unwrap();
    assert_eq!(a.canvas, b.canvas);
    let c = engine
        .generate(&request(4, vec![5, 9, 300, 41]), |_| {})
        .unwrap();
    assert_ne!(a.canvas, c.canvas, "the seed changed nothing");
}

#[test]
fn shared_engine_interleaves_exactly() {
    let reqs: Vec<GenerateRequest> = (0..3)
        .map(|i| request(i, vec![7 + i as u32, 2, 99]))
        .collect();
    let mut engine = common::tiny_engine(Arch::DiffusionGemma);
    let alone: Vec<_> = reqs
        .iter()
        .map(|r| engine.generate(r, |_| {}).unwrap())
        .collect();
    let shared = Arc::new(SharedEngine::new(common::tiny_engine(Arch::DiffusionGemma)));
    let handles: Vec<_> = reqs
        .into_iter()
        .map(|r| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let p = shared.prepare(&r).unwrap();
                shared.generate(&p, &CancelToken::new(), |_| {}).unwrap()
            })
        })
        .collect();
    for (h, want) in handles.into_iter().zip(&alone) {
        assert_eq!(h.join().unwrap().canvas, want.canvas);
    }
}

/// A change to a request.
type Edit = Box<dyn Fn(&mut GenerateRequest)>;

#[test]
fn masked_diffusion_settings_are_refused_by_name() {
    let engine = common::tiny_engine(Arch::DiffusionGemma);
    let base = request(0, vec![1, 2, 3]);
    let cases: Vec<(&str, Edit)> = vec![
        ("cache", Box::new(|r| r.cache = CachePolicy::Dual)),
        ("block_length", Box::new(|r| r.block_length = Some(8))),
        ("top_k", Box::new(|r| r.top_k = Some(4))),
        ("cfg_scale", Box::new(|r| r.cfg_scale = Some(1.0))),
        ("temperature", Box::new(|r| r.temperature = 0.7)),
        ("logprobs", Box::new(|r| r.logprobs = Some(2))),
        (
            "threshold",
            Box::new(|r| {
                r.parallel = Some(lacuna::ParallelConfig {
                    rule: lacuna::ParallelRule::Threshold(0.9),
                })
            }),
        ),
    ];
    for (name, set) in cases {
        let mut r = base.clone();
        set(&mut r);
        let e = engine.prepare(&r).unwrap_err().to_string();
        assert!(e.contains(name), "{name}: {e}");
    }
    // The entropy bound is DiffusionGemma's own rule.
    let mut r = base.clone();
    r.parallel = Some(lacuna::ParallelConfig {
        rule: lacuna::ParallelRule::EntropyBound(0.5),
    });
    engine.prepare(&r).unwrap();
}
