//! What the cache policies and parallel rules cost in quality, on the trained demo model:
//! for each prompt, the exact (uncached, one token per step) generation is the reference,
//! and every other mode is scored by its token agreement with it and by the pseudo
//! log-likelihood of its text under exact full-canvas forwards; tokens per forward and
//! positions per forward say what it saves.
//!
//! ```text
//! cargo run --release -p lacuna --example cache_quality -- [--prompts 50] [--gen 64] \
//!     [--block 16] [--out FILE.json]
//! ```
//!
//! The pseudo log-likelihood masks every 8th generated position at once (8 forwards per
//! text, each scoring one eighth of the positions, with the prompt and the other 7/8 of the
//! text visible), then averages `ln p(token)` over all generated positions. Random-weight
//! fixtures say nothing here; the demo is a 5.5M-parameter model, so small differences
//! between modes are within what it can resolve only roughly.

use std::time::Instant;

use lacuna::gguf::GgufFile;
use lacuna::models::{CpuBackend, Model};
use lacuna::{
    CachePolicy, DEMO_GGUF, Engine, EngineOptions, GenerateRequest, ParallelConfig, ParallelRule,
    Prompt,
};

/// One way of decoding.
struct Mode {
    name: &'static str,
    cache: CachePolicy,
    rule: Option<ParallelRule>,
}

const MODES: [Mode; 8] = [
    Mode {
        name: "exact",
        cache: CachePolicy::None,
        rule: None,
    },
    Mode {
        name: "prefix",
        cache: CachePolicy::Prefix,
        rule: None,
    },
    Mode {
        name: "dual",
        cache: CachePolicy::Dual,
        rule: None,
    },
    Mode {
        name: "threshold 0.9",
        cache: CachePolicy::None,
        rule: Some(ParallelRule::Threshold(0.9)),
    },
    Mode {
        name: "factor 1.0",
        cache: CachePolicy::None,
        rule: Some(ParallelRule::Factor(1.0)),
    },
    Mode {
        name: "entropy-bound 0.5",
        cache: CachePolicy::None,
        rule: Some(ParallelRule::EntropyBound(0.5)),
    },
    Mode {
        name: "fast (dual + threshold 0.9)",
        cache: CachePolicy::Dual,
        rule: Some(ParallelRule::Threshold(0.9)),
    },
    Mode {
        name: "dual + entropy-bound 0.5",
        cache: CachePolicy::Dual,
        rule: Some(ParallelRule::EntropyBound(0.5)),
    },
];

/// KJV-style openings: 10 subjects x 5 verbs.
fn prompts(n: usize) -> Vec<String> {
    let subjects = [
        "And God",
        "And the LORD",
        "And Moses",
        "Then Jesus",
        "And the people",
        "And David",
        "And the king",
        "And he",
        "And the angel",
        "And Abraham",
    ];
    let verbs = [
        "said unto",
        "went up to",
        "spake unto",
        "came unto",
        "looked upon",
    ];
    let mut out = Vec::new();
    for v in verbs {
        for s in subjects {
            out.push(format!("{s} {v}"));
        }
    }
    out.into_iter().cycle().take(n).collect()
}

/// Mean `ln p(token)` over the generated positions, masking one position in 8 at a time.
fn pseudo_log_likelihood(
    model: &mut Model,
    canvas: &[u32],
    prompt_len: usize,
    mask: u32,
) -> Result<f64, Box<dyn std::error::Error>> {
    const STRIDE: usize = 8;
    let v = model.vocab_size();
    let (mut sum, mut n) = (0.0f64, 0usize);
    let mut logits = Vec::new();
    for phase in 0..STRIDE {
        let rows: Vec<usize> = (prompt_len + phase..canvas.len()).step_by(STRIDE).collect();
        if rows.is_empty() {
            continue;
        }
        let mut masked = canvas.to_vec();
        for &r in &rows {
            masked[r] = mask;
        }
        logits.resize(rows.len() * v, 0.0);
        model.forward(&masked, &rows, &mut logits)?;
        for (row, &r) in logits.chunks_exact(v).zip(&rows) {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = f64::from(max)
                + row
                    .iter()
                    .map(|&x| f64::from(x - max).exp())
                    .sum::<f64>()
                    .ln();
            sum += f64::from(row[canvas[r] as usize]) - lse;
            n += 1;
        }
    }
    Ok(sum / n.max(1) as f64)
}

#[derive(Default)]
struct Tally {
    agree: usize,
    positions: usize,
    pll: f64,
    forwards: usize,
    committed: usize,
    computed: usize,
    seconds: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut n_prompts, mut gen_length, mut block, mut out_path) =
        (50usize, 64usize, 16usize, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--prompts" => n_prompts = value()?.parse()?,
            "--gen" => gen_length = value()?.parse()?,
            "--block" => block = value()?.parse()?,
            "--out" => out_path = Some(value()?),
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let mut engine = Engine::demo(&EngineOptions::default())?;
    let mut scorer = Model::load(GgufFile::from_vec(DEMO_GGUF.to_vec())?, CpuBackend::new())?;
    let mask = engine.mask_token_id();
    let mut tallies: Vec<Tally> = MODES.iter().map(|_| Tally::default()).collect();
    for text in prompts(n_prompts) {
        let mut exact_tokens = Vec::new();
        for (m, tally) in MODES.iter().zip(&mut tallies) {
            let mut r = GenerateRequest::new(Prompt::Text(text.clone()));
            r.gen_length = gen_length;
            r.steps = gen_length;
            r.block_length = Some(block);
            r.keep_after_eos = true;
            r.cache = m.cache;
            r.parallel = m.rule.map(|rule| ParallelConfig { rule });
            let clock = Instant::now();
            let out = engine.generate(&r, |_| {})?;
            tally.seconds += clock.elapsed().as_secs_f64();
            let generated = &out.canvas[out.prompt_tokens.len()..];
            if m.name == "exact" {
                exact_tokens = generated.to_vec();
            }
            tally.agree += generated
                .iter()
                .zip(&exact_tokens)
                .filter(|(a, b)| a == b)
                .count();
            tally.positions += generated.len();
            tally.pll +=
                pseudo_log_likelihood(&mut scorer, &out.canvas, out.prompt_tokens.len(), mask)?;
            tally.forwards += out.stats.denoiser_calls;
            tally.committed += generated.iter().filter(|&&t| t != mask).count();
            tally.computed += out.stats.positions_computed;
        }
    }
    println!(
        "demo model, {n_prompts} prompts, gen {gen_length}, block {block}, greedy\n\
         | mode | agreement with exact | pseudo log-likelihood | tokens/forward | positions/forward | s/generation |\n\
         |---|---|---|---|---|---|"
    );
    let mut rows = Vec::new();
    for (m, t) in MODES.iter().zip(&tallies) {
        let agreement = t.agree as f64 / t.positions as f64;
        let pll = t.pll / n_prompts as f64;
        let tpf = t.committed as f64 / t.forwards as f64;
        let ppf = t.computed as f64 / t.forwards as f64;
        let s = t.seconds / n_prompts as f64;
        println!(
            "| {} | {agreement:.3} | {pll:.3} | {tpf:.2} | {ppf:.1} | {s:.3} |",
            m.name
        );
        rows.push(format!(
            "{{\"mode\": \"{}\", \"agreement\": {agreement}, \"pseudo_log_likelihood\": {pll}, \
             \"tokens_per_forward\": {tpf}, \"positions_per_forward\": {ppf}, \
             \"seconds_per_generation\": {s}}}",
            m.name
        ));
    }
    if let Some(path) = out_path {
        let doc = format!(
            "{{\n  \"what\": \"cache and parallel-decoding quality on the demo model (examples/cache_quality.rs)\",\n  \
             \"prompts\": {n_prompts},\n  \"gen_length\": {gen_length},\n  \"block_length\": {block},\n  \
             \"threads\": {},\n  \"modes\": [\n    {}\n  ]\n}}\n",
            engine.threads(),
            rows.join(",\n    ")
        );
        std::fs::write(&path, doc)?;
        eprintln!("wrote {path}");
    }
    Ok(())
}
