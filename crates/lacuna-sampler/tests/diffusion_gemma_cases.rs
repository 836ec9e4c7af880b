//! Replays the DiffusionGemma cases `tools/sampler-ref/make_cases.py` wrote
//! (`tests/data/diffusion_gemma/`) from its numpy transcription of Hugging Face's
//! `generation_diffusion_gemma.py` on the toy model: the same accepted positions at every
//! step, the same number of draws and the same result.

mod common;

use std::convert::Infallible;
use std::path::PathBuf;

use common::ToyModel;
use lacuna_sampler::{
    CanvasDenoiser, Common, Denoiser, EntropyBoundConfig, Error, Finish, Pass, ReplayDraws,
    Xoshiro256PlusPlus, diffusion_gemma,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Config {
    gen_length: usize,
    canvas_length: usize,
    max_steps: usize,
    t_min: f64,
    t_max: f64,
    entropy_bound: f64,
    stability_threshold: usize,
    confidence_threshold: f64,
}

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    vocab: usize,
    model_seed: u64,
    eos_id: u32,
    prompt: Vec<u32>,
    config: Config,
    draws24: Vec<u32>,
    steps: Vec<Vec<usize>>,
    steps_per_canvas: Vec<usize>,
    canvas: Vec<u32>,
}

/// The toy model as an encoder-decoder: the context grows by what is encoded; a canvas's
/// logits are its rows of the toy's logits over context + canvas.
struct Toy {
    model: ToyModel,
    canvas_length: usize,
    context: Vec<u32>,
    decodes: usize,
    /// The previous decode's logits, and each self-conditioned decode's (step within its
    /// canvas, previous logits, signal found in the buffer on entry).
    last: Vec<f32>,
    step_in_canvas: usize,
    signals: Vec<(usize, Vec<f32>, Vec<f32>)>,
}

impl Denoiser for Toy {
    type Error = Infallible;
    fn vocab_size(&self) -> usize {
        self.model.vocab
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Infallible> {
        self.model.logits(canvas, rows, out)
    }
}

impl CanvasDenoiser for Toy {
    fn encode(&mut self, tokens: &[u32]) -> Result<(), Infallible> {
        self.context.extend_from_slice(tokens);
        Ok(())
    }
    fn decode(&mut self, canvas: &[u32], sc: bool, out: &mut [f32]) -> Result<(), Infallible> {
        self.decodes += 1;
        self.step_in_canvas = if sc { self.step_in_canvas + 1 } else { 0 };
        if sc {
            let last = std::mem::take(&mut self.last);
            self.signals.push((self.step_in_canvas, last, out.to_vec()));
        }
        let all: Vec<u32> = self.context.iter().chain(canvas).copied().collect();
        let rows: Vec<usize> = (self.context.len()..all.len()).collect();
        self.model.logits(&all, &rows, out)?;
        self.last = out.to_vec();
        Ok(())
    }
    fn canvas_length(&self) -> usize {
        self.canvas_length
    }
}

/// A case's sampler settings and its toy denoiser.
fn setup(case: &Case) -> (EntropyBoundConfig, Toy) {
    let c = &case.config;
    let config = EntropyBoundConfig {
        common: Common {
            gen_length: c.gen_length,
            eos_ids: vec![case.eos_id],
            ..Common::default()
        },
        max_steps: c.max_steps,
        t_min: c.t_min,
        t_max: c.t_max,
        entropy_bound: c.entropy_bound,
        stability_threshold: c.stability_threshold,
        confidence_threshold: c.confidence_threshold,
    };
    let toy = Toy {
        model: ToyModel::new(case.vocab, case.model_seed),
        canvas_length: c.canvas_length,
        context: Vec::new(),
        decodes: 0,
        last: Vec::new(),
        step_in_canvas: 0,
        signals: Vec::new(),
    };
    (config, toy)
}

fn cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/diffusion_gemma");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/diffusion_gemma exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

#[test]
fn every_case_replays_step_for_step() {
    let cases = cases();
    assert!(cases.len() >= 6, "cases missing");
    for case in &cases {
        let (config, mut toy) = setup(case);
        let draws = case
            .draws24
            .iter()
            .map(|&n| f64::from(n) * 2f64.powi(-24))
            .collect();
        let mut rng = ReplayDraws::new(draws);
        let mut steps = Vec::new();
        let g = diffusion_gemma::generate(&mut toy, &case.prompt, &config, &mut rng, |v| {
            steps.push(v.committed.to_vec());
        })
        .unwrap();
        let name = &case.name;
        assert_eq!(steps, case.steps, "{name}: accepted positions per step");
        assert_eq!(
            toy.decodes,
            case.steps_per_canvas.iter().sum::<usize>(),
            "{name}"
        );
        assert_eq!(g.canvas, case.canvas, "{name}: canvas");
        assert_eq!(rng.consumed(), case.draws24.len(), "{name}: draws");
        assert_eq!(rng.overrun(), 0, "{name}");
        let generated = &case.canvas[case.prompt.len()..];
        match generated.iter().position(|&t| t == case.eos_id) {
            Some(i) => {
                assert_eq!(
                    g.stats.finish,
                    Finish::Eos {
                        index: i,
                        token: case.eos_id
                    },
                    "{name}"
                );
                assert_eq!(g.tokens, generated[..i], "{name}");
            }
            None => assert_eq!(g.tokens, generated, "{name}"),
        }
    }
}

/// The decoder is handed one buffer: on a self-conditioned step it must hold the previous
/// step's logits over that step's temperature (Hugging Face's processed logits), and the
/// first step of each canvas is not conditioned.
/// Each step's rows run on the rayon pool's threads: the replay holds on one and on several.
#[test]
fn every_case_replays_on_one_thread_and_on_several() {
    for threads in [1, 3, 7] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(every_case_replays_step_for_step);
        pool.install(the_self_conditioning_signal_is_the_last_logits_over_their_temperature);
    }
}

#[test]
fn the_self_conditioning_signal_is_the_last_logits_over_their_temperature() {
    let mut checked = 0;
    for case in &cases() {
        let (config, mut toy) = setup(case);
        let draws = case.draws24.iter().map(|&n| f64::from(n) * 2f64.powi(-24));
        let mut rng = ReplayDraws::new(draws.collect());
        diffusion_gemma::generate(&mut toy, &case.prompt, &config, &mut rng, |_| {}).unwrap();
        let conditioned: usize = case.steps_per_canvas.iter().map(|n| n - 1).sum();
        assert_eq!(toy.signals.len(), conditioned, "{}", case.name);
        for (k, last, signal) in &toy.signals {
            // Step k of a canvas (from 0) follows step k - 1, whose temperature is that of
            // `s = max_steps - (k - 1)` counting down.
            let t = config.temperature(config.max_steps - (k - 1));
            let want: Vec<f32> = last.iter().map(|&x| (f64::from(x) / t) as f32).collect();
            assert_eq!(signal, &want, "{}: step {k}", case.name);
            checked += 1;
        }
    }
    assert!(checked > 0, "no case has a self-conditioned step");
}

#[test]
fn settings_are_checked_by_name() {
    let ok = EntropyBoundConfig {
        common: Common {
            gen_length: 4,
            ..Common::default()
        },
        ..EntropyBoundConfig::default()
    };
    assert!(ok.validate().is_ok());
    for (bad, name) in [
        (
            EntropyBoundConfig {
                t_min: 0.0,
                ..ok.clone()
            },
            "t_min",
        ),
        (
            EntropyBoundConfig {
                t_max: f64::NAN,
                ..ok.clone()
            },
            "t_max",
        ),
        (
            EntropyBoundConfig {
                entropy_bound: -1.0,
                ..ok.clone()
            },
            "entropy_bound",
        ),
        (
            EntropyBoundConfig {
                confidence_threshold: -0.1,
                ..ok.clone()
            },
            "confidence_threshold",
        ),
        (
            EntropyBoundConfig {
                max_steps: 0,
                ..ok.clone()
            },
            "steps",
        ),
    ] {
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(name), "{e} should name {name}");
    }
    // The schedule: t_max at the first step, t_min at the last.
    let d = EntropyBoundConfig::default();
    assert_eq!(d.temperature(48), 0.8);
    assert!((d.temperature(0) - 0.4).abs() < 1e-12);
}

/// A decoder whose logits hold one bad value (`value` at row `row`, token `token`).
struct Bad {
    vocab: usize,
    row: usize,
    token: usize,
    value: f32,
}

impl Denoiser for Bad {
    type Error = Infallible;
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn forward(
        &mut self,
        _: &[u32],
        _pass: &Pass,
        _: &[usize],
        _: &mut [f32],
    ) -> Result<(), Infallible> {
        unreachable!("DiffusionGemma's sampler decodes")
    }
}

impl CanvasDenoiser for Bad {
    fn encode(&mut self, _: &[u32]) -> Result<(), Infallible> {
        Ok(())
    }
    fn decode(&mut self, _: &[u32], _: bool, out: &mut [f32]) -> Result<(), Infallible> {
        for (i, o) in out.iter_mut().enumerate() {
            *o = (i % 7) as f32;
        }
        out[self.row * self.vocab + self.token] = self.value;
        Ok(())
    }
    fn canvas_length(&self) -> usize {
        8
    }
}

/// The rows run on the pool's threads; a NaN or +inf is still reported with its row and
/// token (the first bad row's), on one thread and on several.
#[test]
fn a_bad_logit_is_a_typed_error_naming_its_row_and_token() {
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        for (row, token, value) in [(0, 0, f32::NAN), (5, 17, f32::INFINITY), (7, 39, f32::NAN)] {
            let mut d = Bad {
                vocab: 40,
                row,
                token,
                value,
            };
            let config = EntropyBoundConfig {
                common: Common {
                    gen_length: 8,
                    ..Common::default()
                },
                ..EntropyBoundConfig::default()
            };
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
            let err = pool
                .install(|| diffusion_gemma::generate(&mut d, &[1, 2], &config, &mut rng, |_| {}))
                .expect_err("a bad logit");
            match err {
                Error::InvalidLogit {
                    row: r,
                    token: t,
                    value: v,
                } => {
                    assert_eq!((r, t), (row, token), "{threads} threads");
                    assert_eq!(v.to_bits(), value.to_bits());
                }
                other => panic!("expected InvalidLogit, got {other:?}"),
            }
        }
    }
}
