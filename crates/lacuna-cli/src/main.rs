//! `lacuna`, the command line of the Lacuna inference engine.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod bench;
mod canvas_view;
mod chat;
mod doctor;
mod eval;
mod fixture;
mod inspect;
mod list;
mod logits;
mod logprobs;
mod pull;
mod quant_summary;
mod quantize;
mod run;
mod serve;
mod tokenize;

/// Local inference engine for diffusion language models.
#[derive(Parser)]
#[command(name = "lacuna", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version of every Lacuna crate this binary was built from.
    Version,
    /// Generate from a prompt (chat template applied unless --raw); --demo needs no model file.
    Run(run::RunArgs),
    /// Chat with a model, multi-turn, through its chat template.
    Chat(chat::ChatArgs),
    /// Serve a model over an OpenAI-compatible HTTP API, with a live canvas page at /.
    Serve(serve::ServeArgs),
    /// Report the CPU, kernel paths, threads, memory and CUDA, and what is missing.
    Doctor(doctor::DoctorArgs),
    /// Exact-match accuracy of a decoding mode on problems with known answers (task, prompt,
    /// answer per line), with forwards and ms per answer.
    Eval(eval::EvalArgs),
    /// Write a deterministic random-weight GGUF fixture (llada, dream, llada-moe, rnd1, llada2).
    Fixture(fixture::FixtureArgs),
    /// Quantize an F32/F16/BF16 GGUF under a llama-quantize preset (no importance matrix).
    Quantize(quantize::QuantizeArgs),
    /// Write raw f32 logits of every position of one non-causal forward pass.
    Logits(logits::LogitsArgs),
    /// Time the forward pass over a canvas.
    Bench(bench::BenchArgs),
    /// Print a GGUF file's version, metadata, tensor table and totals.
    Inspect(inspect::InspectArgs),
    /// Write one tensor of a GGUF file dequantized to f32 little-endian.
    Tensor(inspect::TensorArgs),
    /// Print the token ids of a text, as llama.cpp tokenizes it.
    Tokenize(tokenize::TokenizeArgs),
    /// Download a GGUF from the Hugging Face Hub into its cache: OWNER/REPO[:QUANT | /FILE.gguf].
    Pull(pull::PullArgs),
    /// List the GGUF files in the Hugging Face cache.
    List(list::ListArgs),
}

fn main() {
    // RUST_LOG-style filtering (`RUST_LOG=lacuna=debug`); warnings and errors by default.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(err) = run(Cli::parse()) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    // The kernels' A/B knobs (`LACUNA_TILE_TOKENS` and the like) for benchmark runs.
    lacuna::cpu::tuning::set(lacuna::cpu::Tuning::from_env()?)?;
    match cli.command {
        Command::Version => {
            println!(
                "lacuna {} (commit {})",
                env!("CARGO_PKG_VERSION"),
                env!("LACUNA_BUILD_COMMIT")
            );
            Ok(())
        }
        Command::Run(args) => run::run(args),
        Command::Chat(args) => chat::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Fixture(args) => fixture::run(args),
        Command::Quantize(args) => quantize::run(args),
        Command::Logits(args) => logits::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Inspect(args) => inspect::run_inspect(args),
        Command::Tensor(args) => inspect::run_tensor(args),
        Command::Tokenize(args) => tokenize::run(args),
        Command::Pull(args) => pull::run(args),
        Command::List(args) => list::run(args),
    }
}
