//! Load a model and generate: `cargo run --release -p lacuna-examples --example embed --
//! [model.gguf] [prompt]` (no model: the built-in demo model).

use lacuna::{Engine, EngineOptions, GenerateRequest, Prompt};

fn main() -> Result<(), lacuna::Error> {
    let mut args = std::env::args().skip(1);
    let model = args.next();
    let options = EngineOptions::default();
    let mut engine = match &model {
        Some(path) => Engine::load(path, &options)?,
        None => Engine::demo(&options)?,
    };
    let text = args
        .next()
        .unwrap_or_else(|| "Who made the heaven and the earth?".to_string());
    let prompt = if engine.has_chat_template() {
        Prompt::user(text)
    } else {
        Prompt::Text(text)
    };
    // LLaDA's official schedule: 64 tokens in blocks of 32, 2 tokens per step.
    let mut request = GenerateRequest::new(prompt);
    request.gen_length = 64;
    request.steps = 32;
    request.block_length = Some(32);
    let out = engine.generate(&request, |_| {})?;
    println!("{}", out.text.trim());
    eprintln!(
        "{} ({}): {} tokens in {:.2} s, median step {:.1} ms",
        engine.name(),
        engine.arch(),
        out.tokens.len(),
        out.timings.total_s,
        out.timings.step_ms_median()
    );
    // The fast mode: dual K/V cache + threshold parallel decoding.
    let fast = engine.generate(&request.clone().fast(engine.arch()), |_| {})?;
    eprintln!(
        "fast mode: {:.2} s, {:.2} tokens per forward",
        fast.timings.total_s,
        fast.tokens_per_forward()
    );
    Ok(())
}
