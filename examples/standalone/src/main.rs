//! Embedding Lacuna: load a GGUF (or, without an argument, a random-weight fixture), generate
//! with the model's official sampler, watch the canvas step by step, then run two requests at
//! once through a `SharedEngine`.
//!
//! ```text
//! cargo run --release --manifest-path examples/standalone/Cargo.toml -- [model.gguf]
//! ```

use std::sync::Arc;

use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{CancelToken, Engine, EngineOptions, GenerateRequest, Prompt, Settings, SharedEngine};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = EngineOptions {
        threads: Some(2),
        ..Default::default()
    };
    let mut engine = match std::env::args().nth(1) {
        Some(path) => Engine::load(path, &options)?,
        None => {
            // A one-layer LLaDA with random weights: it runs every code path a real model
            // does, and its text is noise.
            let spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 1, QuantMix::F32);
            let bytes = fixture::build(&spec)?.to_vec()?;
            Engine::from_gguf(GgufFile::from_vec(bytes)?, &options)?
        }
    };
    println!(
        "{} ({:?}), {} threads, loaded in {:.2} s",
        engine.name(),
        engine.arch(),
        engine.threads(),
        engine.load_s()
    );

    // Settings are the one request vocabulary the CLI and the server share: say what you
    // want, and `request` fills in the architecture's defaults.
    let settings = Settings {
        gen_length: Some(32),
        steps: Some(16),
        block_length: Some(16),
        ..Settings::default()
    };
    let request = settings.request(Prompt::Text("Once upon a time".into()), engine.arch())?;
    let mask = engine.mask_token_id();
    let out = engine.generate(&request, |view| {
        let masked = view.canvas[view.prompt_len..]
            .iter()
            .filter(|&&t| t == mask)
            .count();
        println!(
            "step {:>2}/{}: committed {:?}, {masked} masks left",
            view.step + 1,
            view.total_steps,
            view.committed
        );
    })?;
    println!(
        "{} tokens in {} forwards ({:.1} tokens/s): {:?}",
        out.tokens.len(),
        out.stats.denoiser_calls,
        out.tokens_per_s(),
        out.text
    );

    // Several generations on one model: each has its own cache, their passes are batched.
    let shared = Arc::new(SharedEngine::new(engine));
    let fast = GenerateRequest {
        seed: 7,
        temperature: 0.7,
        ..request.clone().fast(shared.arch())
    };
    let threads: Vec<_> = [request, fast]
        .into_iter()
        .map(|r| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || -> lacuna::Result<String> {
                let prepared = shared.prepare(&r)?;
                Ok(shared.generate(&prepared, &CancelToken::new(), |_| {})?.text)
            })
        })
        .collect();
    for t in threads {
        println!("concurrent: {:?}", t.join().expect("generation thread")?);
    }
    Ok(())
}
