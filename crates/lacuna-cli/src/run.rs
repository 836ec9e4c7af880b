//! `lacuna run`: one generation from the command line, with a live canvas view
//! (`--visual`), a progress bar, or JSON output.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lacuna::models::{Arch, Device, WeightLayout};
use lacuna::{
    CachePolicy, DreamAlg, Engine, EngineOptions, Finish, GenerateRequest, Output, Prompt,
    Remasking, Settings, StepView,
};

use crate::canvas_view::CanvasView;

/// Which model to load: a GGUF file or the built-in demo model.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ModelArgs {
    /// GGUF model file, or hf:OWNER/REPO:QUANT (hf:OWNER/REPO/FILE.gguf) from the Hugging Face cache, downloaded when missing.
    #[arg(short = 'm', long, required_unless_present = "demo")]
    pub(crate) model: Option<PathBuf>,
    /// Use a demo model shipped inside the binary: `kjv` (the default when no name is given),
    /// a 4-layer LLaDA trained on the King James Bible that writes KJV-style English and knows
    /// nothing else (try `--raw -p "And God said,"`), `tasks`, a 4-layer LLaDA trained on
    /// addition, sorting and reversal (try `--demo tasks --raw -p "add: 12+30="`), or
    /// `tasks-llada2`, its block-diffusion twin (a tiny LLaDA2).
    #[arg(long, conflicts_with = "model", num_args = 0..=1, default_missing_value = "kjv", value_name = "NAME")]
    pub(crate) demo: Option<lacuna::Demo>,
    /// Worker threads (default: one per logical core).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Quantized weights: fast (repacked to int8, about 8.6 bits per weight, fastest; on
    /// AVX-512 VNNI and AVX2 a small form: Q4_K two weights a byte, 4.9 bits, Q6_K 8.75),
    /// compact (ggml's blocks, the file's size; slower, most on few tokens) or auto (fast,
    /// unless that would take more than three quarters of the available memory: then the
    /// experts, and if still needed the dense weights, go compact where this CPU has the
    /// kernel: Q4_K, Q6_K, Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 on x86-64; a model without
    /// experts goes compact only past nine tenths).
    #[arg(long, default_value = "auto")]
    pub(crate) weights: WeightLayout,
    /// Where the model runs: cpu, cuda, cuda:N, or auto (a usable CUDA GPU whose test
    /// kernel passes, else the CPU). The CUDA backend matched the CPU on an H200 but is slow.
    #[arg(long, default_value = "auto")]
    pub(crate) device: Device,
}

impl ModelArgs {
    /// `settings` with the demo model's schedule filled in where they give none.
    pub(crate) fn settings(&self, settings: Settings) -> Settings {
        match self.demo {
            Some(demo) => demo.defaults(settings),
            None => settings,
        }
    }

    /// Loads the engine (the demo model or the file).
    pub(crate) fn load(&self) -> Result<Engine> {
        let options = EngineOptions {
            threads: self.threads,
            weights: self.weights,
            device: self.device,
        };
        match (&self.model, self.demo) {
            (_, Some(demo)) => Engine::demo_model(demo, &options).map_err(flat),
            (Some(path), None) => {
                let path = &crate::pull::resolve_model(path)?;
                tracing::info!(path = %path.display(), "loading model");
                Engine::load(path, &options).map_err(flat)
            }
            (None, None) => bail!("give a model with -m FILE, or --demo"),
        }
    }
}

/// An engine error as one line: its message already names every cause, so the chain
/// is not repeated after it.
pub(crate) fn flat(e: lacuna::Error) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Sampler settings shared by `run` and `chat`: clap syntax only. What each setting means,
/// its default and the presets are [`lacuna::Settings`]'s.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SamplingArgs {
    /// Tokens to generate [default: 128].
    #[arg(long)]
    pub(crate) gen_length: Option<usize>,
    /// Denoising steps in total, per block for LLaDA2 [default: 4 tokens per step (32 for
    /// 128 tokens), a multiple of the blocks; LLaDA2: 32]. Unused with --parallel.
    #[arg(long)]
    pub(crate) steps: Option<usize>,
    /// Block length of semi-autoregressive decoding [default: 32 (or the whole length when it
    /// is not a multiple of 32) for LLaDA models and for --parallel; Dream's official sampler
    /// has no blocks].
    #[arg(long)]
    pub(crate) block_length: Option<usize>,
    /// LLaDA remasking: low_confidence or random.
    #[arg(long)]
    pub(crate) remasking: Option<Remasking>,
    /// Dream remasking algorithm: origin, maskgit_plus, topk_margin or entropy.
    #[arg(long)]
    pub(crate) algorithm: Option<DreamAlg>,
    /// Token temperature [default: 0, greedy].
    #[arg(long)]
    pub(crate) temperature: Option<f64>,
    /// Dream, LLaDA2, RND1: nucleus sampling threshold.
    #[arg(long)]
    pub(crate) top_p: Option<f64>,
    /// Dream, LLaDA2, RND1: top-k filter.
    #[arg(long)]
    pub(crate) top_k: Option<usize>,
    /// Dream: temperature of the position draw.
    #[arg(long)]
    pub(crate) alg_temp: Option<f32>,
    /// LLaDA: classifier-free guidance scale (0 = off).
    #[arg(long)]
    pub(crate) cfg_scale: Option<f32>,
    /// Seed of the sampler's random draws [default: 0].
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Fast-dLLM parallel decoding: commit every position whose confidence reaches the
    /// threshold (default 0.9) instead of a fixed count per step.
    #[arg(long)]
    pub(crate) parallel: bool,
    /// Confidence threshold of --parallel (LLaDA2: of its own threshold sampler).
    #[arg(long)]
    pub(crate) threshold: Option<f64>,
    /// Use Fast-dLLM's factor rule with this factor in --parallel mode.
    #[arg(long)]
    pub(crate) factor: Option<f64>,
    /// Use EB-Sampler's entropy-bounded rule in --parallel mode: commit the most confident
    /// positions while their summed entropy minus the largest stays within this bound (nats).
    #[arg(long)]
    pub(crate) entropy_bound: Option<f64>,
    /// Key/value cache between steps: none (exact), prefix or dual (Fast-dLLM's caches,
    /// refreshed at every block start; approximate for bidirectional models, exact for
    /// LLaDA2's finished blocks).
    #[arg(long)]
    pub(crate) cache: Option<CachePolicy>,
    /// The fast preset: Fast-dLLM's dual cache and parallel decoding with threshold 0.9 in
    /// blocks of 32 (each of these can still be set on its own); LLaDA2: its exact block
    /// cache.
    #[arg(long)]
    pub(crate) fast: bool,
    /// LLaDA2.1's token-to-token editing: committed tokens of the current block are replaced
    /// by surer predictions.
    #[arg(long)]
    pub(crate) editing: bool,
    /// Confidence above which --editing replaces a committed token [default: 0.9].
    #[arg(long, requires = "editing")]
    pub(crate) editing_threshold: Option<f64>,
    /// Editing-only steps once a block has no mask (--editing) [default: 16].
    #[arg(long, requires = "editing")]
    pub(crate) max_post_steps: Option<usize>,
    /// Report each token's log-probability and this many alternatives (0 to 20) in --json,
    /// from the denoising step that committed it.
    #[arg(long)]
    pub(crate) logprobs: Option<usize>,
    /// Structured output: JSON valid under this JSON Schema (a file, or the schema itself).
    #[arg(long, value_name = "FILE|JSON", value_parser = json_schema_arg, group = "structured")]
    pub(crate) json_schema: Option<serde_json::Value>,
    /// Structured output: any JSON object.
    #[arg(long, group = "structured")]
    pub(crate) json_object: bool,
    /// Structured output: text this regex matches whole.
    #[arg(long, value_name = "REGEX", group = "structured")]
    pub(crate) regex: Option<String>,
    /// Structured output: exactly one of these comma-separated strings.
    #[arg(
        long,
        value_name = "A,B,...",
        value_delimiter = ',',
        group = "structured"
    )]
    pub(crate) choice: Option<Vec<String>>,
    /// Structured output: text of this GBNF grammar's `root` rule (a file, or the grammar
    /// itself; grammars without recursion only).
    #[arg(long, value_name = "FILE|GBNF", value_parser = grammar_arg, group = "structured")]
    pub(crate) grammar: Option<String>,
}

/// `--json-schema`: a file's contents or the argument itself, as JSON.
fn json_schema_arg(arg: &str) -> Result<serde_json::Value, String> {
    let text = match std::fs::read_to_string(arg) {
        Ok(text) => text,
        Err(_) if arg.trim_start().starts_with(['{', '[']) || arg == "true" || arg == "false" => {
            arg.to_string()
        }
        Err(e) => return Err(format!("cannot read the schema file {arg}: {e}")),
    };
    serde_json::from_str(&text).map_err(|e| format!("the schema is not valid JSON: {e}"))
}

/// `--grammar`: a file's contents or the argument itself.
fn grammar_arg(arg: &str) -> Result<String, String> {
    if arg.contains("::=") {
        return Ok(arg.to_string());
    }
    std::fs::read_to_string(arg).map_err(|e| format!("cannot read the grammar file {arg}: {e}"))
}

/// A [`lacuna::Settings`] field as the CLI spells it (`cfg_scale` is `--cfg-scale`).
pub(crate) fn flag_name(setting: &str) -> String {
    format!("--{}", setting.replace('_', "-"))
}

impl SamplingArgs {
    /// The settings the flags give.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            gen_length: self.gen_length,
            steps: self.steps,
            block_length: self.block_length,
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
            seed: self.seed,
            remasking: self.remasking,
            algorithm: self.algorithm,
            alg_temp: self.alg_temp,
            cfg_scale: self.cfg_scale,
            cache: self.cache,
            parallel: self.parallel,
            threshold: self.threshold,
            factor: self.factor,
            entropy_bound: self.entropy_bound,
            fast: self.fast,
            editing: self.editing,
            editing_threshold: self.editing_threshold,
            max_post_steps: self.max_post_steps,
            keep_after_eos: false,
            logprobs: self.logprobs,
            infill_lengths: Vec::new(),
            constraint: self.constraint(),
            likelihood_samples: None,
        }
    }

    /// The structured-output constraint the flags ask for.
    fn constraint(&self) -> Option<lacuna::structured::Spec> {
        use lacuna::structured::Spec;
        if let Some(s) = &self.json_schema {
            return Some(Spec::JsonSchema(s.clone()));
        }
        if self.json_object {
            return Some(Spec::JsonObject);
        }
        if let Some(r) = &self.regex {
            return Some(Spec::Regex(r.clone()));
        }
        if let Some(c) = &self.choice {
            return Some(Spec::Choice(c.clone()));
        }
        self.grammar.clone().map(Spec::Grammar)
    }

    /// The request for `prompt` on a model of `arch` (`model` fills in a demo's schedule).
    pub(crate) fn request(
        &self,
        model: &ModelArgs,
        prompt: Prompt,
        arch: Arch,
    ) -> Result<GenerateRequest> {
        model
            .settings(self.settings())
            .request(prompt, arch)
            .map_err(|e| anyhow::anyhow!(e.message(&flag_name)))
    }
}

/// Arguments of `lacuna run`.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The prompt.
    #[arg(short = 'p', long)]
    pub(crate) prompt: String,
    /// Use the prompt as is, without the model's chat template.
    #[arg(long)]
    pub(crate) raw: bool,
    /// Infilling: text after the generated middle. The canvas is the prompt (the prefix),
    /// --gen-length masks, then this; only the middle is generated and printed (cut at its
    /// first end token). Bidirectional models only (not LLaDA2). Implies --raw.
    #[arg(long)]
    pub(crate) suffix: Option<String>,
    /// Infilling: try these middle lengths instead of --gen-length (comma-separated, e.g.
    /// 4,8,16) and print the fill the model scores highest (the mean log-probability of the
    /// suffix's first 32 tokens, masked, after the fill: one extra forward per length);
    /// --json lists every candidate. --steps is scaled to each length.
    #[arg(long, requires = "suffix", value_delimiter = ',')]
    pub(crate) infill_lengths: Vec<usize>,
    #[command(flatten)]
    pub(crate) sampling: SamplingArgs,
    /// Redraw the canvas in the terminal after every step.
    #[arg(long)]
    pub(crate) visual: bool,
    /// Print JSON: tokens, text and timings.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The prompt of `text` for `engine`: through the chat template unless `raw` (or the model
/// has none, which is said on stderr).
pub(crate) fn prompt_for(engine: &Engine, text: &str, raw: bool) -> Prompt {
    if raw {
        Prompt::Text(text.to_string())
    } else if engine.has_chat_template() {
        Prompt::user(text)
    } else {
        tracing::warn!("the model has no chat template; using the prompt as raw text");
        eprintln!("note: the model has no chat template; the prompt is used as raw text");
        Prompt::Text(text.to_string())
    }
}

/// Progress on stderr: a bar (hidden when stderr is not a terminal).
fn progress_bar(total: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} step {pos}/{len} [{bar:30}] {elapsed_precise} ({per_sec}) {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Generates with a canvas view or a progress bar, as asked.
pub(crate) fn generate_shown(
    engine: &mut Engine,
    request: &GenerateRequest,
    visual: bool,
) -> Result<Output> {
    if visual {
        let mut view = CanvasView::stderr(engine.shared_tokenizer(), engine.mask_token_id());
        let out = engine.generate(request, |step: &StepView<'_>| view.draw(step));
        view.finish();
        out.map_err(flat)
    } else {
        let bar = progress_bar(request.steps);
        let out = engine.generate(request, |step: &StepView<'_>| {
            bar.set_length(step.total_steps as u64);
            bar.set_position(step.step as u64 + 1);
        });
        bar.finish_and_clear();
        out.map_err(flat)
    }
}

fn finish_name(f: Finish) -> String {
    match f {
        Finish::Completed => "completed".to_string(),
        Finish::Eos { index, token } => format!("eos {token} at {index}"),
    }
}

/// The `--json` document of a run.
pub(crate) fn json_output(
    engine: &Engine,
    demo: bool,
    request_cache: CachePolicy,
    out: &Output,
) -> serde_json::Value {
    let t = &out.timings;
    let mut doc = serde_json::json!({
        "model": engine.name(),
        "architecture": engine.arch().name(),
        "demo_model": demo,
        "threads": engine.threads(),
        "prompt_tokens": out.prompt_tokens,
        "tokens": out.tokens,
        "text": out.text,
        "finish": finish_name(out.stats.finish),
        "steps": out.stats.steps,
        "cache": request_cache.name(),
        "forwards": out.stats.denoiser_calls,
        "cache_fills": out.stats.cache_fills,
        "tokens_per_forward": out.tokens_per_forward(),
        "positions_per_forward": out.positions_per_forward(),
        "timings": {
            "load_s": engine.load_s(),
            "prepare_s": t.prepare_s,
            "step_ms": t.step_ms,
            "step_ms_median": t.step_ms_median(),
            "total_s": t.total_s,
            "tokens_per_s": out.tokens_per_s(),
        },
    });
    if let Some(records) = &out.logprobs {
        doc["logprobs"] = crate::logprobs::json(engine.tokenizer(), records);
    }
    if let Some(search) = &out.infill {
        doc["infill_length"] = serde_json::json!(search.chosen().length);
        doc["infill_candidates"] = search
            .candidates
            .iter()
            .map(|c| {
                serde_json::json!({
                    "length": c.length,
                    "score": c.score.is_finite().then_some(c.score),
                    "tokens": c.tokens,
                    "text": c.text,
                })
            })
            .collect();
    }
    doc
}

/// Runs one generation and prints it.
pub(crate) fn run(a: RunArgs) -> Result<()> {
    if a.visual && a.json {
        bail!("--visual and --json cannot be combined");
    }
    if a.sampling.logprobs.is_some() && !a.json {
        bail!("--logprobs is reported in --json only; add --json");
    }
    let mut engine = a.model.load().context("loading the model")?;
    if let Some(demo) = a.model.demo {
        eprintln!("demo model: {}", demo.describe());
    }
    let prompt = prompt_for(&engine, &a.prompt, a.raw || a.suffix.is_some());
    let mut request = a.sampling.request(&a.model, prompt, engine.arch())?;
    request.suffix = a.suffix.clone();
    if a.infill_lengths.contains(&0) {
        bail!("--infill-lengths must be at least 1");
    }
    request.infill_lengths = a.infill_lengths.clone();
    let out = generate_shown(&mut engine, &request, a.visual)?;
    if a.json {
        let doc = json_output(&engine, a.model.demo.is_some(), request.cache, &out);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{}", out.text);
        eprintln!(
            "{} tokens, {} steps in {:.2} s ({:.1} tokens/s, median step {:.1} ms; load {:.2} s; \
             cache {}, {:.2} tokens and {:.0} positions per forward)",
            out.tokens.len(),
            out.stats.steps,
            out.timings.total_s,
            out.tokens_per_s(),
            out.timings.step_ms_median(),
            engine.load_s(),
            request.cache,
            out.tokens_per_forward(),
            out.positions_per_forward(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
