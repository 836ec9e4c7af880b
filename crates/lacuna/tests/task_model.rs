//! The shipped task model (`models/lacuna-tiny-tasks.gguf`, `Demo::Tasks`, trained by
//! `tools/train-tiny/train_tasks.py`) still knows what it learned, through Lacuna: on the
//! first 50 held-out problems of each task (`tools/train-tiny/results/tasks/heldout.tsv`,
//! never trained on), exact decoding (one token per step, no cache) gets at least
//! [`FLOOR`] of each task right, and the fast preset (dual cache + parallel decoding at
//! threshold 0.9) stays within [`FAST_DROP`] of it while running fewer forwards. The floors
//! are what the shipped model reaches (six hours of training on 2 cores over five sessions):
//! on these 50 problems every task at 98% or more; on all 300, add 97.7%, rev 97.0%, sort
//! 99.3%. The same holds for the `llada2` twin
//! (`Demo::TasksLlada2`) with LLaDA2's own exact decoding and fast preset, against its own
//! floors. The full table (300 problems per task, every mode) is a benchmark:
//! `tools/bench/tasks.py` (`--twin` for the twin).

use std::path::PathBuf;

use lacuna::eval::{self, Problem, TaskScore};
use lacuna::{Demo, Engine, EngineOptions, Settings};

const PER_TASK: usize = 50;

/// The least exact-match accuracy exact decoding must keep, per task: measured on these 50
/// problems when the model shipped (its seventh run: add 98%, rev 98%, sort 100%), minus 3
/// problems for numerical changes.
const FLOOR: [(&str, f64); 3] = [("add", 0.92), ("rev", 0.92), ("sort", 0.94)];

/// The most the fast preset may lose against exact decoding, per task: the 3 points,
/// but 5 on sort. On these 50 problems the shipped model's fast preset keeps addition and
/// reversal and loses two sorts (100% -> 96%: 4 points; on 300 problems: add -0.7, rev 0,
/// sort -3.6, see the README table), so the 3 points are missed on sort and this
/// bound allows those two problems and no more. A regression past these fails.
const FAST_DROP: [(&str, f64); 3] = [("add", 0.03), ("rev", 0.03), ("sort", 0.05)];

/// The same for the `llada2` twin (`Demo::TasksLlada2`), measured when it shipped (its fourth
/// run: exact add 88%, rev 98%, sort 90%), minus 3 problems; its fast preset lost none.
const TWIN_FLOOR: [(&str, f64); 3] = [("add", 0.82), ("rev", 0.92), ("sort", 0.84)];
const TWIN_FAST_DROP: [(&str, f64); 3] = [("add", 0.03), ("rev", 0.03), ("sort", 0.03)];

fn problems() -> Vec<Problem> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/train-tiny/results/tasks/heldout.tsv");
    let text = std::fs::read_to_string(&path).expect("held-out problems are committed");
    eval::first_per_task(&eval::parse_problems(&text).expect("well-formed"), PER_TASK)
}

/// LLaDA's official schedule on the task canvas: 32 tokens, one per step, blocks of 8.
fn schedule() -> Settings {
    Settings {
        gen_length: Some(32),
        steps: Some(32),
        block_length: Some(8),
        ..Settings::default()
    }
}

fn run(engine: &mut Engine, problems: &[Problem], settings: &Settings) -> Vec<TaskScore> {
    let answers: Vec<_> = problems
        .iter()
        .map(|p| engine.answer(p, settings).expect("generation runs"))
        .collect();
    eval::score(problems, &answers, None)
}

/// Runs `demo` on the problems exactly (`exact`) and with the fast preset, and holds exact
/// decoding to `floor` per task and the fast preset to within `drop` of it with fewer
/// forwards.
fn exact_and_fast(demo: Demo, exact: Settings, floor: &[(&str, f64)], drop: &[(&str, f64)]) {
    let mut engine = Engine::demo_model(demo, &EngineOptions::default()).expect("loads");
    let problems = problems();
    assert_eq!(problems.len(), 3 * PER_TASK);
    let fast = Settings {
        fast: true,
        threshold: None,
        ..exact.clone()
    };
    let exact = run(&mut engine, &problems, &exact);
    let fast = run(&mut engine, &problems, &fast);
    for (e, f) in exact.iter().zip(&fast) {
        eprintln!(
            "{demo}: {}: exact {:.0}% ({:.1} fwd), fast {:.0}% ({:.1} fwd, {:.2} tokens/fwd)",
            e.task,
            100.0 * e.accuracy(),
            e.forwards_per_answer(),
            100.0 * f.accuracy(),
            f.forwards_per_answer(),
            f.tokens_per_forward()
        );
    }
    for (e, f) in exact.iter().zip(&fast) {
        assert_eq!(e.n, PER_TASK);
        let of = |table: &[(&str, f64)]| {
            table
                .iter()
                .find(|(t, _)| *t == e.task)
                .expect("a known task")
                .1
        };
        let (floor, drop) = (of(floor), of(drop));
        assert!(
            e.accuracy() >= floor,
            "{demo}: {}: exact {:.2} < {floor}",
            e.task,
            e.accuracy()
        );
        assert!(
            f.accuracy() >= e.accuracy() - drop - 1e-9,
            "{demo}: {}: fast {:.2} more than {drop} below exact {:.2}",
            e.task,
            f.accuracy(),
            e.accuracy()
        );
        assert!(
            f.forwards_per_answer() < e.forwards_per_answer(),
            "{demo}: {}: the fast preset ran no fewer forwards",
            e.task
        );
    }
}

#[test]
fn the_task_model_answers_held_out_problems_exactly_and_fast() {
    exact_and_fast(Demo::Tasks, schedule(), &FLOOR, &FAST_DROP);
}

/// The twin's exact decoding: LLaDA2's sampler at threshold 1.0 (one token per step: 8 steps
/// per block of 8), no cache; its fast preset is the exact block cache at LLaDA2's own
/// threshold (0.95).
fn twin_schedule() -> Settings {
    Settings {
        gen_length: Some(32),
        steps: Some(8),
        block_length: Some(8),
        threshold: Some(1.0),
        ..Settings::default()
    }
}

#[test]
fn the_llada2_twin_answers_held_out_problems_exactly_and_fast() {
    exact_and_fast(
        Demo::TasksLlada2,
        twin_schedule(),
        &TWIN_FLOOR,
        &TWIN_FAST_DROP,
    );
}

#[test]
fn the_task_model_reverses() {
    let mut engine = Engine::demo_model(Demo::Tasks, &EngineOptions::default()).expect("loads");
    let p = Problem {
        task: "rev".into(),
        prompt: Demo::Tasks.prompt().into(),
        answer: " nretnal".into(),
        wrong: Vec::new(),
    };
    let a = engine.answer(&p, &schedule()).expect("generation runs");
    assert!(a.correct, "{:?} answered {:?}", p.prompt, a.text);
}
