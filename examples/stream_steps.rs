//! Watch the canvas denoise: the step callback sees the whole canvas after every step.
//! `cargo run -p lacuna-examples --example stream_steps`

use lacuna::{DEMO_PROMPT, Engine, EngineOptions, GenerateRequest, Prompt, StepView};

fn main() -> Result<(), lacuna::Error> {
    let mut engine = Engine::demo(&EngineOptions::default())?;
    let tokenizer = engine.shared_tokenizer();
    let mask = engine.mask_token_id();
    let mut request = GenerateRequest::new(Prompt::Text(DEMO_PROMPT.to_string()));
    request.gen_length = 32;
    request.steps = 8;
    request.block_length = Some(32);
    let out = engine.generate(&request, |view: &StepView<'_>| {
        // Masks as '_', committed tokens as their text.
        let line: String = view.canvas[view.prompt_len..]
            .iter()
            .map(|&t| {
                if t == mask {
                    "_".to_string()
                } else {
                    tokenizer.decode(&[t]).unwrap_or_default()
                }
            })
            .collect();
        println!(
            "step {:>2}/{} (+{}): {line}",
            view.step + 1,
            view.total_steps,
            view.committed.len()
        );
    })?;
    println!("\n{DEMO_PROMPT}{}", out.text);
    Ok(())
}
