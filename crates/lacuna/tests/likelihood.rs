//! Scoring text with the task model (`Demo::Tasks`): the estimator against the exact bound
//! on a real model, the shared engine against the engine, and multiple-choice additions
//! ranked by their scores.

use std::path::PathBuf;

use lacuna::eval::{self, Problem};
use lacuna::likelihood::Scoring;
use lacuna::{CancelToken, Demo, Engine, EngineOptions, Error, Prompt, SharedEngine};

fn engine() -> Engine {
    let options = EngineOptions {
        threads: Some(2),
        ..Default::default()
    };
    Engine::demo_model(Demo::Tasks, &options).expect("the demo model loads")
}

fn problems(task: &str, n: usize) -> Vec<Problem> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/train-tiny/results/tasks/heldout.tsv");
    let text = std::fs::read_to_string(&path).expect("held-out problems are committed");
    eval::parse_problems(&text)
        .expect("well-formed")
        .into_iter()
        .filter(|p| p.task == task)
        .take(n)
        .collect()
}

/// The prompt's tokens and the continuation's (the answer, then the end token the model
/// was trained to write after it).
fn split(e: &Engine, prompt: &str, answer: &str) -> (Vec<u32>, Vec<u32>) {
    let ctx = e.prompt_tokens(&Prompt::Text(prompt.into())).unwrap();
    let mut cont = e.tokenizer().encode(answer, false, false).unwrap();
    cont.push(e.eos_ids()[0]);
    (ctx, cont)
}

/// The continuation's score: the sum of its tokens' values.
fn score(e: &mut Engine, ctx: &[u32], cont: &[u32], scoring: &Scoring) -> f64 {
    let tokens: Vec<u32> = ctx.iter().chain(cont).copied().collect();
    let echo = e.score(&tokens, scoring).unwrap();
    echo.logprobs[ctx.len()..].iter().map(|x| x.unwrap()).sum()
}

#[test]
fn ranks_the_right_sum_first() {
    // Each addition's sum against four wrong ones, each followed by the end token the model
    // writes after an answer (as lm-evaluation-harness sends a choice's text).
    let mut e = engine();
    let scoring = Scoring {
        samples: 16,
        ..Scoring::default()
    };
    let end = "<|endoftext|>";
    let ps = problems("add", 20);
    let mut right = 0;
    for p in &ps {
        let want: i64 = p.answer.parse().unwrap();
        let mut m = p.clone();
        m.answer = format!("{want}{end}");
        m.wrong = [want + 1, (want - 1).abs(), want + 10, want * 10 + 1]
            .iter()
            .map(|w| format!("{w}{end}"))
            .collect();
        let a = e.choose(&m, &scoring).unwrap();
        assert!(a.forwards > 0);
        right += usize::from(a.correct);
    }
    assert!(right >= 18, "{right} of {}", ps.len());
}

#[test]
fn the_estimate_is_the_exact_bound_on_average() {
    // "16" and the end token: three tokens, seven mask sets. Seven samples enumerate them;
    // four sample them, and over seeds their mean is the exact bound within four standard
    // errors.
    let mut e = engine();
    let (ctx, cont) = split(&e, "add: 8+8=", "16");
    assert_eq!(cont.len(), 3);
    let exact = score(
        &mut e,
        &ctx,
        &cont,
        &Scoring {
            samples: 7,
            ..Scoring::default()
        },
    );
    let tokens: Vec<u32> = ctx.iter().chain(&cont).copied().collect();
    assert!(
        e.score(
            &tokens,
            &Scoring {
                samples: 7,
                ..Scoring::default()
            }
        )
        .unwrap()
        .exact[ctx.len()]
    );
    let runs: Vec<f64> = (0..40)
        .map(|seed| {
            score(
                &mut e,
                &ctx,
                &cont,
                &Scoring {
                    samples: 4,
                    seed,
                    top: 0,
                },
            )
        })
        .collect();
    let n = runs.len() as f64;
    let mean = runs.iter().sum::<f64>() / n;
    let se = (runs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    assert!(se > 0.0, "sampling varies");
    assert!(
        (mean - exact).abs() < 4.0 * se,
        "mean {mean} vs exact {exact} (se {se})"
    );
}

#[test]
fn the_shared_engine_scores_as_the_engine_and_bad_input_is_refused() {
    let mut e = engine();
    let (ctx, cont) = split(&e, "add: 2+2=", "4");
    let tokens: Vec<u32> = ctx.iter().chain(&cont).copied().collect();
    let scoring = Scoring {
        samples: 8,
        seed: 3,
        top: 2,
    };
    let solo = e.score(&tokens, &scoring).unwrap();
    assert_eq!(solo.top[1].len(), 2);
    let shared = SharedEngine::new(e);
    let cancel = CancelToken::new();
    assert_eq!(shared.score(&tokens, &scoring, &cancel).unwrap(), solo);
    let err = |t: &[u32], s: Scoring| shared.score(t, &s, &cancel).unwrap_err();
    assert!(matches!(err(&[], scoring), Error::LikelihoodEmpty));
    assert!(matches!(
        err(&[u32::MAX], scoring),
        Error::PromptToken { .. }
    ));
    let zero = Scoring {
        samples: 0,
        ..scoring
    };
    assert!(matches!(
        err(&tokens, zero),
        Error::LikelihoodSamples { .. }
    ));
    let long = vec![tokens[1]; 40];
    let many = Scoring {
        samples: 4096,
        ..scoring
    };
    assert!(matches!(
        err(&long, many),
        Error::LikelihoodTooCostly { .. }
    ));
    cancel.cancel();
    assert!(matches!(
        shared.score(&tokens, &scoring, &cancel),
        Err(Error::Cancelled)
    ));
}
