//! Log-probabilities are those of the step that committed each token: every record is
//! checked against a log-softmax recomputed from the logits the denoiser returned on the
//! call before that commit, for each sampler family (Dream and RND1 read row `p - 1`).

mod common;

use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;

use common::ToyModel;
use lacuna_sampler::{
    Common, Denoiser, DreamAlg, DreamConfig, Generation, Llada2Config, LladaConfig, ParallelConfig,
    Pass, Rnd1Config, StepView, TokenLogprob, Xoshiro256PlusPlus, dream, llada, llada2, rnd1,
};

const VOCAB: usize = 12;
const MASK: u32 = VOCAB as u32;
const TOP: usize = 4;

/// The rows and logits of the last call.
#[derive(Default)]
struct Last {
    rows: Vec<usize>,
    logits: Vec<f32>,
}

/// The toy model, remembering its last answer.
struct Recorder {
    toy: ToyModel,
    last: Rc<RefCell<Last>>,
}

impl Denoiser for Recorder {
    type Error = Infallible;
    fn vocab_size(&self) -> usize {
        VOCAB
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Infallible> {
        self.toy.logits(canvas, rows, out)?;
        let mut last = self.last.borrow_mut();
        last.rows = rows.to_vec();
        last.logits = out.to_vec();
        Ok(())
    }
}

fn log_softmax(row: &[f32]) -> Vec<f64> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = row
        .iter()
        .map(|&l| (f64::from(l) - max).exp())
        .sum::<f64>()
        .ln()
        + max;
    row.iter().map(|&l| f64::from(l) - lse).collect()
}

/// Checks one record against the recomputation from `row`.
fn check(record: &TokenLogprob, token: u32, row: &[f32]) {
    let want = log_softmax(row);
    assert_eq!(record.token, token);
    assert!(record.logprob <= 0.0);
    assert!((f64::from(record.logprob) - want[token as usize]).abs() < 1e-5);
    assert_eq!(record.top.len(), TOP);
    assert!(record.top.windows(2).all(|w| w[0].logprob >= w[1].logprob));
    for t in &record.top {
        assert!((f64::from(t.logprob) - want[t.token as usize]).abs() < 1e-5);
    }
    // Nothing outside the top beats its last entry.
    let floor = record.top[TOP - 1].logprob as f64;
    let better = want.iter().filter(|&&w| w > floor + 1e-6).count();
    assert!(better < TOP);
    if want[token as usize] > floor + 1e-6 {
        assert!(record.top.iter().any(|t| t.token == token));
    }
}

/// Runs `generate` with a recorder and checks every commit's record at its step and in the
/// result; returns how many were checked.
fn run_and_check(
    shifted: bool,
    generate: impl FnOnce(&mut Recorder, &mut dyn FnMut(&StepView<'_>)) -> Generation,
) -> usize {
    let last = Rc::new(RefCell::new(Last::default()));
    let mut model = Recorder {
        toy: ToyModel::new(VOCAB, 7),
        last: Rc::clone(&last),
    };
    let mut checked = 0;
    let mut at_step: Vec<Option<TokenLogprob>> = Vec::new();
    let mut on_step = |view: &StepView<'_>| {
        let records = view.logprobs.expect("logprobs were requested");
        let last = last.borrow();
        for &p in view.committed {
            // LLaDA2 decodes whole blocks: padding past the canvas is not reported.
            if p >= view.canvas.len() {
                continue;
            }
            let g = p - view.prompt_len;
            let row = if shifted { p - 1 } else { p };
            let r = last.rows.binary_search(&row).expect("row fetched");
            let logits = &last.logits[r * VOCAB..(r + 1) * VOCAB];
            let record = records[g].as_ref().expect("recorded at commit");
            check(record, view.canvas[p], logits);
            checked += 1;
        }
        at_step = records.to_vec();
    };
    let out = generate(&mut model, &mut on_step);
    let logprobs = out.logprobs.expect("logprobs were requested");
    assert_eq!(logprobs.len(), out.tokens.len());
    for (i, (r, &t)) in logprobs.iter().zip(&out.tokens).enumerate() {
        let r = r.as_ref().expect("every returned token was committed");
        assert_eq!(r.token, t);
        assert_eq!(Some(r), at_step[i].as_ref());
    }
    checked
}

fn common(gen_length: usize) -> Common {
    Common {
        gen_length,
        mask_id: Some(MASK),
        logprobs: Some(TOP),
        ..Common::default()
    }
}

const PROMPT: [u32; 3] = [1, 2, 3];

#[test]
fn llada_records_match_the_committing_step() {
    for (temperature, parallel) in [
        (0.0, None),
        (0.7, None),
        (0.0, Some(ParallelConfig::default())),
    ] {
        let config = LladaConfig {
            common: common(8),
            block_length: 4,
            steps: 8,
            temperature,
            parallel,
            ..LladaConfig::default()
        };
        let n = run_and_check(false, |m, on_step| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
            llada::generate(m, &PROMPT, &config, &mut rng, on_step).unwrap()
        });
        assert!(n >= 8);
    }
}

#[test]
fn dream_records_read_the_shifted_row() {
    for alg in [DreamAlg::Origin, DreamAlg::TopkMargin] {
        let config = DreamConfig {
            common: common(6),
            steps: 6,
            alg,
            temperature: 0.5,
            ..DreamConfig::default()
        };
        let n = run_and_check(true, |m, on_step| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
            dream::generate(m, &PROMPT, &config, &mut rng, on_step).unwrap()
        });
        assert!(n >= 6);
    }
}

#[test]
fn llada2_records_match_the_committing_step() {
    let config = Llada2Config {
        common: common(8),
        block_length: 4,
        steps: 4,
        ..Llada2Config::default()
    };
    let n = run_and_check(false, |m, on_step| {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        llada2::generate(m, &PROMPT, &config, &mut rng, on_step).unwrap()
    });
    assert!(n >= 8);
}

#[test]
fn rnd1_records_read_the_shifted_row() {
    let config = Rnd1Config {
        common: common(6),
        steps: 4,
        ..Rnd1Config::default()
    };
    let n = run_and_check(true, |m, on_step| {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        rnd1::generate(m, &PROMPT, &config, &mut rng, on_step).unwrap()
    });
    assert!(n >= 6);
}

#[test]
fn off_by_default_and_capped_at_twenty() {
    let mut config = LladaConfig {
        common: Common {
            gen_length: 4,
            mask_id: Some(MASK),
            ..Common::default()
        },
        block_length: 4,
        steps: 4,
        ..LladaConfig::default()
    };
    let mut toy = ToyModel::new(VOCAB, 1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    let out = llada::generate(&mut toy, &PROMPT, &config, &mut rng, |v| {
        assert!(v.logprobs.is_none())
    })
    .unwrap();
    assert!(out.logprobs.is_none());
    config.common.logprobs = Some(21);
    let err = llada::generate(&mut toy, &PROMPT, &config, &mut rng, |_| {}).unwrap_err();
    assert!(err.to_string().contains("logprobs"), "{err}");
}

#[test]
fn recording_changes_nothing_else() {
    let on = LladaConfig {
        common: common(8),
        block_length: 4,
        steps: 8,
        temperature: 0.7,
        ..LladaConfig::default()
    };
    let mut off = on.clone();
    off.common.logprobs = None;
    let run = |config: &LladaConfig| {
        let mut toy = ToyModel::new(VOCAB, 2);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        llada::generate(&mut toy, &PROMPT, config, &mut rng, |_| {}).unwrap()
    };
    let (a, b) = (run(&on), run(&off));
    assert!(a.logprobs.is_some() && b.logprobs.is_none());
    assert_eq!((a.tokens, a.canvas, a.stats), (b.tokens, b.canvas, b.stats));
}
