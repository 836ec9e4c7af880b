//! Several generations at once on one loaded model: `SharedEngine` interleaves their forward
//! passes step by step; each result is what it would be alone.
//! `cargo run --release -p lacuna-examples --example concurrent`

use std::sync::Arc;

use lacuna::{CancelToken, Engine, EngineOptions, GenerateRequest, Prompt, SharedEngine};

fn main() -> Result<(), lacuna::Error> {
    let engine = Arc::new(SharedEngine::new(Engine::demo(&EngineOptions::default())?));
    let prompts = ["And God said,", "In the beginning", "Blessed are the meek:"];
    let handles: Vec<_> = prompts
        .into_iter()
        .map(|text| {
            let engine = Arc::clone(&engine);
            std::thread::spawn(move || -> Result<String, lacuna::Error> {
                let mut request = GenerateRequest::new(Prompt::Text(text.to_string()));
                request.gen_length = 32;
                request.steps = 16;
                request.block_length = Some(32);
                let prepared = engine.prepare(&request)?;
                let out = engine.generate(&prepared, &CancelToken::new(), |_| {})?;
                Ok(format!("{text}{}", out.text))
            })
        })
        .collect();
    for h in handles {
        match h.join() {
            Ok(result) => println!("{}\n", result?),
            Err(_) => eprintln!("a generation thread panicked"),
        }
    }
    let stats = engine.stats();
    eprintln!("{} forward passes, {} steps", stats.forwards, stats.steps);
    Ok(())
}
