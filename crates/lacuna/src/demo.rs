//! The demo model: `models/lacuna-tiny-kjv.gguf`, a 4-layer LLaDA (5.5 M parameters, Q8_0
//! matrices) trained here on the King James Bible by `tools/train-tiny`, compiled into the
//! library so that [`Engine::demo`] (and `lacuna run --demo`) needs no download. It writes
//! KJV-style English and knows nothing else; see `tools/train-tiny/README.md` for how it was
//! trained and how good it is.

use lacuna_gguf::GgufFile;

use crate::{Engine, EngineOptions, Result};

/// The bytes of the demo GGUF (about 6 MB).
pub const DEMO_GGUF: &[u8] = include_bytes!("../../../models/lacuna-tiny-kjv.gguf");

/// Transformer blocks of the demo model.
pub const DEMO_LAYERS: usize = 4;

/// A prompt in the style of the demo model's corpus, for examples and docs.
pub const DEMO_PROMPT: &str = "And God said,";

impl Engine {
    /// An engine over the demo model ([`DEMO_GGUF`]): a tiny LLaDA trained on the King
    /// James Bible, built into the library.
    pub fn demo(options: &EngineOptions) -> Result<Engine> {
        let start = std::time::Instant::now();
        let file = GgufFile::from_vec(DEMO_GGUF.to_vec())?;
        let mut engine = Engine::from_gguf(file, options)?;
        engine.set_load_s(start.elapsed().as_secs_f64());
        Ok(engine)
    }
}
