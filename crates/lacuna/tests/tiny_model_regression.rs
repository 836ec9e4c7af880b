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
    let expected_path = repo_path("tools/train-tiny/results/lacuna-greedy.tsv");
    let mut engine = Engine::demo(&EngineOptions {
        threads: Some(2),
        ..Default::default()
    })
    .expect("the demo model loads");
    assert_eq!(engine.name(), "lacuna-tiny-kjv");
    // The demo is the shipped file, byte for byte.
    let shipped = std::fs::read(repo_path("models/lacuna-tiny-kjv.gguf")).unwrap();
    assert!(
        shipped == lacuna::DEMO_GGUF,
        "Engine::demo is not models/lacuna-tiny-kjv.gguf"
    );
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

/// The 60 most frequent words of the training text (King James Bible, training split), which
/// cover about half of its running words.
const COMMON: [&str; 60] = [
    "the", "and", "of", "to", "And", "that", "in", "shall", "he", "unto", "I", "his", "a", "for",
    "they", "be", "is", "him", "not", "LORD", "them", "with", "it", "all", "thou", "thy", "was",
    "which", "my", "me", "God", "said", "their", "have", "thee", "will", "ye", "from", "as", "are",
    "out", "were", "upon", "you", "man", "Israel", "by", "when", "this", "but", "up", "hath",
    "king", "people", "came", "there", "house", "had", "son", "into",
];

#[test]
fn demo_model_writes_kjv_english_across_the_canvas() {
    let mut engine = Engine::demo(&EngineOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    let (mut words, mut common) = (0usize, 0usize);
    for prompt in PROMPTS {
        for chat in [false, true] {
            let p = if chat {
                Prompt::user(prompt)
            } else {
                Prompt::Text(prompt.to_string())
            };
            let mut r = GenerateRequest::new(p);
            r.gen_length = GEN_LENGTH;
            r.block_length = Some(BLOCK_LENGTH);
            r.steps = 64;
            let o = engine.generate(&r, |_| {}).unwrap();
            let w: Vec<&str> = o
                .text
                .split(|c: char| !c.is_ascii_alphabetic() && c != '\'')
                .filter(|w| !w.is_empty())
                .collect();
            // The canvas fills with text: 64 tokens are about 45 words of KJV English.
            assert!(w.len() >= 20, "{prompt:?} (chat {chat}): only {:?}", o.text);
            words += w.len();
            common += w.iter().filter(|x| COMMON.contains(x)).count();
        }
    }
    // Real words in the corpus' proportions, not byte soup: random tokens of this
    // vocabulary hit these 60 words in well under a tenth of cases.
    let share = common as f64 / words as f64;
    assert!(
        share > 0.4,
        "only {share:.2} of {words} words are common KJV words"
    );
}
