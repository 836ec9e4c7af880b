//! The demo models, embedded with the `demo` feature so that [`Engine::demo`] (and `lacuna
//! run --demo`) needs no download. All three are tiny models trained by `tools/train-tiny`
//! (Q8_0 matrices):
//!
//! - [`Demo::Kjv`] (`models/lacuna-tiny-kjv.gguf`, the default): a 4-layer LLaDA, 5.5 M
//!   parameters, trained on the King James Bible. It writes KJV-style English and knows
//!   nothing else.
//! - [`Demo::Tasks`] (`models/lacuna-tiny-tasks.gguf`): a 4-layer LLaDA, 3.5 M parameters,
//!   trained on three checkable tasks (`add: 3472+918=` → `4390`, `sort: 41 7 93 7 0 =` →
//!   ` 0 7 7 41 93`, `rev: lantern =` → ` nretnal`), so decoding modes can be judged by the
//!   answers they get right. Prompts are raw text (no chat template).
//! - [`Demo::TasksLlada2`] (`models/lacuna-tiny-tasks-llada2.gguf`): the same tasks as a tiny
//!   `llada2` (block-causal attention over blocks of 8, four sigmoid-routed experts and a
//!   shared one), for LLaDA2's threshold sampler, its exact block cache and LLaDA2.1 editing.
//!
//! Their accuracy per decoding mode is in `docs/decoding.md`; how each was trained in
//! `tools/train-tiny/README.md`.

use std::fmt;
use std::str::FromStr;

use lacuna_gguf::GgufFile;

use crate::{Engine, EngineOptions, Result, Settings};

/// The bytes of the KJV demo GGUF (about 6 MB).
pub const DEMO_GGUF: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/lacuna-tiny-kjv.gguf"
));

/// The bytes of the task demo GGUF (about 6 MB).
pub const DEMO_TASKS_GGUF: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/lacuna-tiny-tasks.gguf"
));

/// The bytes of the task model's `llada2` twin (about 5 MB).
pub const DEMO_TASKS_LLADA2_GGUF: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/lacuna-tiny-tasks-llada2.gguf"
));

/// Transformer blocks of the KJV demo model.
pub const DEMO_LAYERS: usize = 4;

/// A prompt in the style of the KJV demo model's corpus, for examples and docs.
pub const DEMO_PROMPT: &str = "And God said,";

/// One of the demo models built into the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Demo {
    /// The King James Bible model (the default).
    #[default]
    Kjv,
    /// The task model: addition, sorting and string reversal, with exact answers.
    Tasks,
    /// The task model's block-diffusion twin (`llada2`).
    TasksLlada2,
}

impl Demo {
    /// Every demo model, the default first.
    pub const ALL: [Demo; 3] = [Demo::Kjv, Demo::Tasks, Demo::TasksLlada2];

    /// The name the CLI and the server use (`kjv`, `tasks`, `tasks-llada2`).
    pub fn name(self) -> &'static str {
        match self {
            Demo::Kjv => "kjv",
            Demo::Tasks => "tasks",
            Demo::TasksLlada2 => "tasks-llada2",
        }
    }

    /// The GGUF bytes.
    pub fn gguf(self) -> &'static [u8] {
        match self {
            Demo::Kjv => DEMO_GGUF,
            Demo::Tasks => DEMO_TASKS_GGUF,
            Demo::TasksLlada2 => DEMO_TASKS_LLADA2_GGUF,
        }
    }

    /// Transformer blocks.
    pub fn layers(self) -> usize {
        match self {
            Demo::Kjv => DEMO_LAYERS,
            Demo::Tasks | Demo::TasksLlada2 => 4,
        }
    }

    /// A prompt that shows what the model does (raw text).
    pub fn prompt(self) -> &'static str {
        match self {
            Demo::Kjv => DEMO_PROMPT,
            Demo::Tasks | Demo::TasksLlada2 => "rev: lantern =",
        }
    }

    /// One line on what the model is and what it knows.
    pub fn describe(self) -> &'static str {
        match self {
            Demo::Kjv => {
                "a 4-layer LLaDA (5.5 M parameters) trained on the King James Bible; it writes \
                 KJV-style English and knows nothing else"
            }
            Demo::Tasks => {
                "a 4-layer LLaDA (3.5 M parameters) trained on three tasks, as raw prompts: \
                 `rev: lantern =`, `sort: 41 7 93 7 0 =` and `add: 3472+918=` (97-99% of \
                 held-out problems exact)"
            }
            Demo::TasksLlada2 => {
                "the task model's llada2 twin (block-causal attention, 4 experts + 1 shared, \
                 4.7 M parameters), trained with block diffusion: `rev: lantern =` (97% of \
                 held-out problems exact), `sort: 41 7 93 7 0 =` (94%), `add: 3472+918=` (84%)"
            }
        }
    }
}

impl Demo {
    /// `settings` with the schedule this model was trained for filled in where they give
    /// none. The task model's canvases are short (a prompt and 32 answer positions; its
    /// context is 128 tokens), so it decodes 32 tokens, one per step, in blocks of 8; the KJV
    /// model takes the library's defaults.
    pub fn defaults(self, settings: Settings) -> Settings {
        match self {
            Demo::Kjv => settings,
            Demo::Tasks => Settings {
                gen_length: settings.gen_length.or(Some(32)),
                steps: settings.steps.or(settings.gen_length.or(Some(32))),
                block_length: settings.block_length.or(Some(8)),
                ..settings
            },
            // LLaDA2 counts steps per block: 8 steps for a block of 8 (at least one token a
            // step, more above its threshold); its attention block is the block length.
            Demo::TasksLlada2 => Settings {
                gen_length: settings.gen_length.or(Some(32)),
                steps: settings.steps.or(Some(8)),
                block_length: settings.block_length.or(Some(8)),
                ..settings
            },
        }
    }
}

impl fmt::Display for Demo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A demo name that is not one of [`Demo::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDemo(pub String);

impl fmt::Display for UnknownDemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Demo::ALL.iter().map(|d| d.name()).collect();
        write!(
            f,
            "unknown demo model {:?}: expected one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownDemo {}

impl FromStr for Demo {
    type Err = UnknownDemo;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Demo::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDemo(s.to_string()))
    }
}

impl Engine {
    /// An engine over the KJV demo model ([`DEMO_GGUF`]): a tiny LLaDA trained on the King
    /// James Bible, built into the library.
    pub fn demo(options: &EngineOptions) -> Result<Engine> {
        Engine::demo_model(Demo::Kjv, options)
    }

    /// An engine over one of the demo models built into the library.
    pub fn demo_model(demo: Demo, options: &EngineOptions) -> Result<Engine> {
        let start = std::time::Instant::now();
        let file = GgufFile::from_vec(demo.gguf().to_vec())?;
        let mut engine = Engine::from_gguf(file, options)?;
        engine.set_load_s(start.elapsed().as_secs_f64());
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for d in Demo::ALL {
            assert_eq!(d.name().parse::<Demo>(), Ok(d));
        }
        let e = "bible".parse::<Demo>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown demo model \"bible\": expected one of kjv, tasks, tasks-llada2"
        );
    }

    #[test]
    fn the_task_model_schedule_fills_only_what_is_not_given() {
        let s = Demo::Tasks.defaults(Settings::default());
        assert_eq!(
            (s.gen_length, s.steps, s.block_length),
            (Some(32), Some(32), Some(8))
        );
        let given = Settings {
            gen_length: Some(16),
            block_length: Some(16),
            ..Settings::default()
        };
        let s = Demo::Tasks.defaults(given);
        assert_eq!(
            (s.gen_length, s.steps, s.block_length),
            (Some(16), Some(16), Some(16))
        );
        assert_eq!(Demo::Kjv.defaults(Settings::default()), Settings::default());
    }
}
