//! The shipped demo model (`models/lacuna-tiny-kjv.gguf`, a 4-layer LLaDA trained on the
//! King James Bible by `tools/train-tiny`), sampled greedily with a fixed seed, writes exactly
//! the text committed in `tools/train-tiny/results/lacuna-greedy.tsv` at 16, 32 and 64 steps.
//!
//! After retraining or a deliberate numerical change, rewrite the file with
//! `LACUNA_BLESS=1 cargo test -p lacuna --test tiny_model_regression` and commit it.

use std::path::PathBuf;

use lacuna::{Engine, EngineOptions, GenerateRequest, Prompt};

const PROMPTS: [&str; 5] = [
    "In the beginning God created",
    "And the LORD spake unto Moses, saying,",
    "The LORD is my shepherd;",
    "Blessed are the",
    "And Jesus answered and said unto them,",
];
const STEPS: [usize; 3] = [16, 32, 64];
const GEN_LENGTH: usize = 64;
const BLOCK_LENGTH: usize = 32;
const SEED: u64 = 42;

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Tabs, newlines and backslashes escaped so one sample is one line of three fields.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
}

/// One line per (steps, prompt): `steps \t prompt \t generated tokens \t text`.
fn generate_all(engine: &mut Engine) -> String {
    let mut out = String::from(
        "# steps\tprompt\tgenerated_tokens\ttext (LLaDA sampler, greedy, low-confidence remasking, gen_length 64, block_length 32, seed 42)\n",
    );
    for steps in STEPS {
        for prompt in PROMPTS {
            let mut r = GenerateRequest::new(Prompt::Text(prompt.to_string()));
            r.gen_length = GEN_LENGTH;
            r.block_length = Some(BLOCK_LENGTH);
            r.steps = steps;
            r.temperature = 0.0;
            r.seed = SEED;
            let o = engine.generate(&r, |_| {}).expect("generation runs");
            out.push_str(&format!(
                "{steps}\t{}\t{}\t{}\n",
                escape(prompt),
                o.tokens.len(),
                escape(&o.text)
            ));
        }
    }
    out
}

#[test]
fn demo_model_greedy_text_matches_committed_samples() {
    let model = repo_path("models/lacuna-tiny-kjv.gguf");
    let expected_path = repo_path("tools/train-tiny/results/lacuna-greedy.tsv");
    let mut engine = Engine::load(&model, &EngineOptions { threads: Some(2) })
        .expect("the shipped demo model loads");
    assert_eq!(engine.name(), "lacuna-tiny-kjv");
    let got = generate_all(&mut engine);
    if std::env::var_os("LACUNA_BLESS").is_some() {
        std::fs::write(&expected_path, &got).expect("write the samples");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).expect("committed samples exist");
    for (g, e) in got.lines().zip(expected.lines()) {
        assert_eq!(
            g, e,
            "greedy output changed; if intended, rerun with LACUNA_BLESS=1 and commit"
        );
    }
    assert_eq!(got.lines().count(), expected.lines().count());
}

#[test]
fn demo_model_writes_english_and_stops() {
    let model = repo_path("models/lacuna-tiny-kjv.gguf");
    let mut engine = Engine::load(&model, &EngineOptions { threads: Some(2) }).unwrap();
    let mut texts = Vec::new();
    for prompt in PROMPTS {
        let mut r = GenerateRequest::new(Prompt::Text(prompt.to_string()));
        r.gen_length = GEN_LENGTH;
        r.block_length = Some(BLOCK_LENGTH);
        r.steps = 64;
        let o = engine.generate(&r, |_| {}).unwrap();
        // Every generation ends with an end token (the model learned EOS padding).
        assert!(
            o.canvas.iter().any(|t| engine.eos_ids().contains(t)),
            "no end token after {prompt:?}: {:?}",
            o.text
        );
        texts.push(o.text);
    }
    // Some output holds the corpus' frequent words (the model is weak: most greedy outputs
    // are a few tokens long, see tools/train-tiny/README.md).
    let common = ["the", "and", "of", "unto", "LORD"];
    assert!(
        texts
            .iter()
            .any(|t| t.split_whitespace().any(|w| common.contains(&w))),
        "no common KJV word in {texts:?}"
    );
}
