//! Log-probabilities through the engine, on random-weight fixture models: each generated
//! token's record equals the log-softmax recomputed with one uncached forward over the
//! canvas as it stood before the step that committed it (Dream: row `p - 1`).

mod common;

use common::tiny_engine;
use lacuna::models::Arch;
use lacuna::{DreamAlg, GenerateRequest, Prompt};

fn log_softmax(row: &[f32]) -> Vec<f64> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let ln_sum = row
        .iter()
        .map(|&l| (f64::from(l) - max).exp())
        .sum::<f64>()
        .ln();
    row.iter().map(|&l| f64::from(l) - max - ln_sum).collect()
}

fn check(arch: Arch) {
    let mut engine = tiny_engine(arch);
    let mut r = GenerateRequest::new(Prompt::Tokens(vec![1, 2, 3]));
    r.gen_length = 8;
    r.steps = 4;
    r.block_length = (arch != Arch::Dream).then_some(8);
    r.keep_after_eos = true;
    r.logprobs = Some(4);
    if arch == Arch::Dream {
        r.algorithm = Some(DreamAlg::MaskgitPlus);
    }
    let mask = engine.mask_token_id();
    // (canvas before the step, positions it committed)
    let mut steps: Vec<(Vec<u32>, Vec<usize>)> = Vec::new();
    let mut before: Vec<u32> = vec![1, 2, 3];
    before.resize(11, mask);
    let out = engine
        .generate(&r, |v| {
            steps.push((before.clone(), v.committed.to_vec()));
            before = v.canvas.to_vec();
        })
        .unwrap();
    let records = out.logprobs.clone().expect("asked for");
    assert_eq!(records.len(), out.tokens.len());
    let vocab = engine.model().vocab_size();
    let mut checked = 0;
    for (canvas, committed) in &steps {
        let mut logits = vec![0f32; canvas.len() * vocab];
        engine.logits(canvas, &mut logits).unwrap();
        for &p in committed {
            let row = if arch == Arch::Dream { p - 1 } else { p };
            let want = log_softmax(&logits[row * vocab..(row + 1) * vocab]);
            let rec = records[p - 3].as_ref().expect("committed");
            assert_eq!(rec.token, out.canvas[p]);
            assert!(rec.logprob <= 0.0);
            let got = f64::from(rec.logprob);
            assert!(
                (got - want[rec.token as usize]).abs() < 1e-4,
                "{arch} {p}: {got} vs {}",
                want[rec.token as usize]
            );
            assert!(rec.top.windows(2).all(|w| w[0].logprob >= w[1].logprob));
            for t in &rec.top {
                assert!((f64::from(t.logprob) - want[t.token as usize]).abs() < 1e-4);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 8, "{arch}");
}

#[test]
fn llada_records_are_the_committing_steps_log_softmax() {
    check(Arch::Llada);
}

#[test]
fn dream_records_read_the_shifted_row() {
    check(Arch::Dream);
}
