//! The demo model: a small LLaDA-shaped GGUF with random weights, built in memory, so the
//! whole pipeline (tokenizer, chat template, forward pass, sampler, canvas view) runs with
//! no model file. Its output is meaningless by construction.

use lacuna_gguf::GgufFile;
use lacuna_models::Arch;
use lacuna_models::fixture::{self, FixtureSpec, QuantMix, Shape};

use crate::{Engine, EngineOptions, Result};

/// Transformer blocks of the demo model.
pub const DEMO_LAYERS: usize = 2;

/// The chat template written into the demo file (LLaDA-Instruct's turn markers, as plain
/// text: the demo vocabulary has no such control tokens).
pub const DEMO_CHAT_TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

/// The bytes of the demo GGUF: the tiny LLaDA fixture ([`DEMO_LAYERS`] blocks, Q4_K_M-like
/// mix, a 512-token byte-level vocabulary, seed 0) plus [`DEMO_CHAT_TEMPLATE`].
pub fn demo_gguf_bytes() -> Result<Vec<u8>> {
    let spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, DEMO_LAYERS, QuantMix::Q4KM);
    let mut writer = fixture::build(&spec)?;
    writer.add_metadata("tokenizer.chat_template", DEMO_CHAT_TEMPLATE)?;
    Ok(writer.to_vec()?)
}

impl Engine {
    /// An engine over the demo model ([`demo_gguf_bytes`]): random weights, so the text it
    /// generates is noise; it exists to show the pipeline without a download.
    pub fn demo(options: &EngineOptions) -> Result<Engine> {
        let start = std::time::Instant::now();
        let file = GgufFile::from_vec(demo_gguf_bytes()?)?;
        let mut engine = Engine::from_gguf(file, options)?;
        engine.set_load_s(start.elapsed().as_secs_f64());
        Ok(engine)
    }
}
