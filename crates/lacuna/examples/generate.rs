//! Generates text with the public API only, printing the canvas as it fills in.
//!
//! ```text
//! cargo run --release -p lacuna --example generate -- MODEL.gguf "Your prompt"
//! cargo run --release -p lacuna --example generate -- --demo "Your prompt"
//! ```
//!
//! `--demo` uses the built-in demo model (a tiny LLaDA trained on the King James Bible), so
//! prompts in that style work best; without a prompt it uses [`lacuna::DEMO_PROMPT`].

use lacuna::{Engine, EngineOptions, GenerateRequest, Prompt};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = args
        .next()
        .ok_or("usage: generate (MODEL.gguf | --demo) [PROMPT]")?;
    let prompt = args
        .next()
        .unwrap_or_else(|| lacuna::DEMO_PROMPT.to_string());
    let options = EngineOptions::default();
    let mut engine = if model == "--demo" {
        eprintln!("demo model: a tiny LLaDA trained on the King James Bible");
        Engine::demo(&options)?
    } else {
        Engine::load(&model, &options)?
    };
    let mut request = GenerateRequest::new(if engine.has_chat_template() {
        Prompt::user(prompt)
    } else {
        Prompt::Text(prompt)
    });
    request.gen_length = 64;
    request.steps = 32;
    request.block_length = engine.arch().block_wise().then_some(32);

    let mask = engine.mask_token_id();
    let out = engine.generate(&request, |view| {
        let left = view.canvas[view.prompt_len..]
            .iter()
            .filter(|&&t| t == mask)
            .count();
        eprintln!(
            "step {:>3}/{}: committed {:?}, {left} masks left",
            view.step + 1,
            view.total_steps,
            view.committed
        );
    })?;
    println!("{}", out.text);
    eprintln!(
        "{} tokens in {:.2} s ({:.1} tokens/s, median step {:.1} ms)",
        out.tokens.len(),
        out.timings.total_s,
        out.tokens_per_s(),
        out.timings.step_ms_median()
    );
    Ok(())
}
