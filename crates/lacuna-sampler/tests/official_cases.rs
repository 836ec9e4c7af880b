//! Replays the cases that `tools/sampler-ref/make_cases.py` produced by running a numpy
//! transcription of the official samplers (LLaDA `generate.py`, Dream `generation_utils.py`,
//! Fast-dLLM, LLaDA2.0/2.1 `modeling_llada2_moe.py`, RND1 `rnd/sampling.py`) on a toy model, and requires identical commits, draws and final canvas.

mod common;

use common::ToyModel;
use lacuna_sampler::{
    CachePolicy, Common, DreamAlg, DreamConfig, Editing, Finish, Generation, Llada2Config,
    LladaConfig, ParallelConfig, ParallelRule, Remasking, ReplayDraws, Rnd1Config, dream, llada,
    llada2, rnd1,
};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Deserialize)]
struct Config {
    gen_length: usize,
    steps: usize,
    block_length: Option<usize>,
    temperature: f64,
    cfg_scale: Option<f32>,
    remasking: Option<String>,
    threshold: Option<f64>,
    factor: Option<f64>,
    eps: Option<f32>,
    alg: Option<String>,
    alg_temp: Option<f32>,
    top_p: Option<f64>,
    top_k: Option<usize>,
    editing: Option<EditingCase>,
    greedy: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct EditingCase {
    threshold: f64,
    max_post_steps: usize,
    num_to_transfer: usize,
}

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    family: String,
    vocab: usize,
    model_seed: u64,
    mask_id: u32,
    eos_id: u32,
    prompt: Vec<u32>,
    config: Config,
    draws24: Vec<u32>,
    steps: Vec<Vec<usize>>,
    canvas: Vec<u32>,
}

fn load_cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            serde_json::from_str(&std::fs::read_to_string(p).expect("readable"))
                .expect("valid case")
        })
        .collect()
}

fn parallel(c: &Config) -> Option<ParallelConfig> {
    match (c.threshold, c.factor) {
        (Some(t), None) => Some(ParallelConfig {
            rule: ParallelRule::Threshold(t),
        }),
        (None, Some(f)) => Some(ParallelConfig {
            rule: ParallelRule::Factor(f),
        }),
        (None, None) => None,
        _ => panic!("case sets both threshold and factor"),
    }
}

/// Runs a case; returns the result, the commits of each step (sorted) and the draws used.
fn run(case: &Case, keep_after_eos: bool) -> (Generation, Vec<Vec<usize>>, ReplayDraws) {
    let c = &case.config;
    let mut model = ToyModel::new(case.vocab, case.model_seed);
    let mut draws = ReplayDraws::new(
        case.draws24
            .iter()
            .map(|&n| f64::from(n) * 2f64.powi(-24))
            .collect(),
    );
    let mut steps = Vec::new();
    let on_step = |v: &lacuna_sampler::StepView<'_>| {
        let mut p = v.committed.to_vec();
        p.sort_unstable();
        steps.push(p);
    };
    let common = Common {
        gen_length: c.gen_length,
        mask_id: Some(case.mask_id),
        eos_ids: vec![case.eos_id],
        keep_after_eos,
        logprobs: None,
        suffix: Vec::new(),
        constraint: None,
    };
    let generation = match case.family.as_str() {
        "llada" => {
            let config = LladaConfig {
                common: common.clone(),
                block_length: c.block_length.expect("llada case has block_length"),
                steps: c.steps,
                temperature: c.temperature,
                cfg_scale: c.cfg_scale.unwrap_or(0.0),
                remasking: match c.remasking.as_deref() {
                    Some("random") => Remasking::Random,
                    _ => Remasking::LowConfidence,
                },
                parallel: parallel(c),
                cache: CachePolicy::None,
            };
            llada::generate(&mut model, &case.prompt, &config, &mut draws, on_step)
        }
        "dream" => {
            let config = DreamConfig {
                common: common.clone(),
                steps: c.steps,
                eps: c.eps.expect("dream case has eps"),
                alg: match c.alg.as_deref() {
                    Some("maskgit_plus") => DreamAlg::MaskgitPlus,
                    Some("topk_margin") => DreamAlg::TopkMargin,
                    Some("entropy") => DreamAlg::Entropy,
                    _ => DreamAlg::Origin,
                },
                alg_temp: c.alg_temp.unwrap_or(0.0),
                temperature: c.temperature as f32,
                top_p: c.top_p,
                top_k: c.top_k,
                parallel: parallel(c),
                block_length: if c.threshold.is_some() || c.factor.is_some() {
                    c.block_length
                } else {
                    None
                },
                cache: CachePolicy::None,
            };
            dream::generate(&mut model, &case.prompt, &config, &mut draws, on_step)
        }
        "llada2" => {
            let config = Llada2Config {
                common: common.clone(),
                block_length: c.block_length.expect("llada2 case has block_length"),
                steps: c.steps,
                threshold: c.threshold.expect("llada2 case has threshold"),
                temperature: c.temperature,
                top_k: c.top_k,
                top_p: c.top_p,
                editing: c.editing.as_ref().map(|e| Editing {
                    threshold: e.threshold,
                    max_post_steps: e.max_post_steps,
                    num_to_transfer: e.num_to_transfer,
                }),
                cache: CachePolicy::None,
            };
            llada2::generate(&mut model, &case.prompt, &config, &mut draws, on_step)
        }
        "rnd1" => {
            let config = Rnd1Config {
                common: common.clone(),
                steps: c.steps,
                greedy: c.greedy.expect("rnd1 case has greedy"),
                temperature: c.temperature,
                top_k: c.top_k,
                top_p: c.top_p,
            };
            rnd1::generate(&mut model, &case.prompt, &config, &mut draws, on_step)
        }
        other => panic!("unknown family {other}"),
    };
    (generation.expect("case runs"), steps, draws)
}

#[test]
fn the_committed_cases_are_all_present() {
    let cases = load_cases();
    assert_eq!(
        cases.len(),
        42,
        "tools/sampler-ref/make_cases.py writes 42 cases"
    );
    assert!(
        cases.iter().any(|c| !c.draws24.is_empty()),
        "some cases exercise randomness"
    );
}

#[test]
fn every_case_matches_the_transcription_of_the_official_code() {
    for case in load_cases() {
        let (g, steps, draws) = run(&case, true);
        assert_eq!(g.canvas, case.canvas, "{}: final canvas", case.name);
        assert_eq!(steps, case.steps, "{}: commits per step", case.name);
        assert_eq!(
            draws.overrun(),
            0,
            "{}: asked for more draws than the reference",
            case.name
        );
        assert_eq!(
            draws.consumed(),
            case.draws24.len(),
            "{}: draws consumed",
            case.name
        );
        assert_eq!(
            g.tokens,
            case.canvas[case.prompt.len()..],
            "{}: kept tokens",
            case.name
        );
        assert_eq!(g.stats.steps, case.steps.len(), "{}: step count", case.name);
    }
}

/// The samplers spread each step's rows over the rayon pool they run in: the cases give the
/// same tokens, commits and draws on one thread and on several.
#[test]
fn every_case_matches_on_one_thread_and_on_several() {
    for threads in [1, 3, 7] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(every_case_matches_the_transcription_of_the_official_code);
    }
}

#[test]
fn stopping_at_the_first_end_token_gives_the_full_run_cut_there() {
    let mut early = 0;
    for case in load_cases() {
        let generated = &case.canvas[case.prompt.len()..];
        // The first end token counts only once everything before it is committed (prompt
        // masks can use up transfer slots and leave masks in the output, as officially).
        let first_eos = generated
            .iter()
            .position(|&t| t == case.eos_id || t == case.mask_id)
            .filter(|&i| generated[i] == case.eos_id);
        let (g, steps, _) = run(&case, false);
        match first_eos {
            Some(i) => {
                assert_eq!(
                    g.tokens,
                    generated[..i],
                    "{}: cut at the end token",
                    case.name
                );
                assert_eq!(
                    g.stats.finish,
                    Finish::Eos {
                        index: i,
                        token: case.eos_id
                    },
                    "{}",
                    case.name
                );
                assert_eq!(
                    g.canvas[..case.prompt.len() + i],
                    case.canvas[..case.prompt.len() + i]
                );
                assert_eq!(
                    steps[..],
                    case.steps[..steps.len()],
                    "{}: same steps until the stop",
                    case.name
                );
                if steps.len() < case.steps.len() {
                    early += 1;
                }
            }
            None => {
                assert_eq!(g.tokens, generated, "{}", case.name);
                assert_eq!(g.stats.finish, Finish::Completed, "{}", case.name);
            }
        }
    }
    assert!(
        early >= 3,
        "only {early} cases stopped early; the cases no longer exercise EOS stops"
    );
}
