//! `llama-oracle`: llama.cpp (through `llama-cpp-sys-2`) as the reference Lacuna is checked
//! against. Five subcommands: `tokenize` (token ids and detokenized text), `logits` (one
//! non-causal forward pass, all positions), `bench` (timing of that forward pass),
//! `generate` (end-to-end timing of `llama-diffusion-cli`'s uncached loop) and `quantize`
//! (`llama-quantize` without an importance matrix: the presets people publish).
//!
//! This is a tool, not a library: it talks to the raw FFI and keeps every `unsafe` call in
//! the small wrappers of `ffi.rs`.

mod ffi;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::ffi::{Model, Session};

/// llama.cpp as a reference oracle.
#[derive(Parser)]
#[command(name = "llama-oracle", version, about)]
struct Cli {
    /// Show llama.cpp's own log on stderr.
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Token ids llama.cpp produces for each string of a JSON array, plus detokenized text.
    Tokenize {
        /// GGUF file (a vocab-only file is enough).
        #[arg(long)]
        model: PathBuf,
        /// JSON file holding an array of strings.
        #[arg(long)]
        input: PathBuf,
        /// Where to write the JSON result.
        #[arg(long)]
        out: PathBuf,
        /// Treat special-token text as plain text (parse_special = false).
        #[arg(long)]
        no_special: bool,
        /// Do not add BOS/EOS even when the vocabulary asks for them.
        #[arg(long)]
        no_add_special: bool,
    },
    /// One non-causal forward pass; writes raw f32 LE logits [positions x n_vocab].
    Logits {
        /// GGUF model file.
        #[arg(long)]
        model: PathBuf,
        /// Comma-separated token ids, e.g. `1,2,3`.
        #[arg(long, value_delimiter = ',', required = true)]
        tokens: Vec<i32>,
        /// Where to write the logits.
        #[arg(long)]
        out: PathBuf,
        /// Threads for the forward pass.
        #[arg(long, default_value_t = 2)]
        threads: i32,
        /// Keep causal attention (default: non-causal, as diffusion models use).
        #[arg(long)]
        causal: bool,
    },
    /// Times the all-position forward pass: one warm-up, then `runs` timed passes.
    Bench {
        /// GGUF model file.
        #[arg(long)]
        model: PathBuf,
        /// Canvas length in tokens.
        #[arg(long)]
        seq_len: usize,
        /// Threads for the forward pass.
        #[arg(long, default_value_t = 2)]
        threads: i32,
        /// Timed passes after the warm-up.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Print the result as JSON (otherwise a one-line summary).
        #[arg(long)]
        json: bool,
    },
    /// Times end-to-end generation the way `llama-diffusion-cli` runs it: every step one
    /// non-causal forward over the whole canvas with all-position logits (no cache), then
    /// LLaDA's low-confidence schedule over the current block (greedy, `k` per step).
    Generate {
        /// GGUF model file.
        #[arg(long)]
        model: PathBuf,
        /// Prompt length (deterministic ordinary ids).
        #[arg(long, default_value_t = 32)]
        prompt_tokens: usize,
        /// Tokens to generate.
        #[arg(long, default_value_t = 128)]
        gen_length: usize,
        /// Denoising steps in total (a multiple of the number of blocks).
        #[arg(long, default_value_t = 128)]
        steps: usize,
        /// Block length (divides gen_length).
        #[arg(long, default_value_t = 32)]
        block_length: usize,
        /// Threads for the forward passes.
        #[arg(long, default_value_t = 2)]
        threads: i32,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// `llama_model_quantize` as `llama-quantize IN OUT PRESET` runs it (no imatrix).
    Quantize {
        /// Input GGUF (F32/F16/BF16 weights).
        #[arg(long)]
        model: PathBuf,
        /// Output GGUF.
        #[arg(long)]
        out: PathBuf,
        /// Preset name as llama-quantize spells it, e.g. `Q4_K_M`, `IQ4_XS`, `MXFP4_MOE`.
        #[arg(long)]
        preset: String,
        /// Quantization threads.
        #[arg(long, default_value_t = 2)]
        threads: i32,
    },
}

fn main() {
    let cli = Cli::parse();
    ffi::init(cli.verbose);
    if let Err(err) = run(cli.command) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Tokenize { model, input, out, no_special, no_add_special } => {
            tokenize(&model, &input, &out, !no_special, !no_add_special)
        }
        Command::Logits { model, tokens, out, threads, causal } => {
            logits(&model, &tokens, &out, threads, causal)
        }
        Command::Bench { model, seq_len, threads, runs, json } => {
            bench(&model, seq_len, threads, runs, json)
        }
        Command::Generate { model, prompt_tokens, gen_length, steps, block_length, threads, json } => {
            generate(&model, prompt_tokens, gen_length, steps, block_length, threads, json)
        }
        Command::Quantize { model, out, preset, threads } => {
            ffi::quantize(&model, &out, preset_ftype(&preset)?, threads)
        }
    }
}

/// One input string and what llama.cpp made of it.
#[derive(Serialize)]
struct TokenizeCase {
    text: String,
    ids: Vec<i32>,
    /// `llama_detokenize(ids, remove_special = false, unparse_special = false)`, lossy UTF-8.
    decoded: String,
    /// Whether `decoded` was valid UTF-8 before the lossy conversion.
    decoded_utf8: bool,
    /// `decoded == text`.
    roundtrip: bool,
}

/// Vocabulary facts llama.cpp derived from the file.
#[derive(Serialize)]
struct VocabInfo {
    n_vocab: i32,
    vocab_type: u32,
    bos: i32,
    eos: i32,
    eot: i32,
    pad: i32,
    mask: i32,
    add_bos: bool,
    add_eos: bool,
    /// `llama_vocab_get_attr` for every token (llama_token_attr bit flags).
    attrs: Vec<u32>,
    /// `llama_token_to_piece(id, lstrip = 0, special = true)` for every token, as hex bytes.
    pieces_hex: Vec<String>,
}

#[derive(Serialize)]
struct TokenizeOut {
    oracle: &'static str,
    add_special: bool,
    parse_special: bool,
    vocab: VocabInfo,
    cases: Vec<TokenizeCase>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn tokenize(
    model: &std::path::Path,
    input: &std::path::Path,
    out: &std::path::Path,
    parse_special: bool,
    add_special: bool,
) -> Result<()> {
    let texts: Vec<String> = serde_json::from_slice(
        &std::fs::read(input).with_context(|| format!("reading {}", input.display()))?,
    )
    .with_context(|| format!("{} is not a JSON array of strings", input.display()))?;
    let model = Model::load(model, true)?;
    let vocab = model.vocab();
    let n_vocab = vocab.n_tokens();
    let info = VocabInfo {
        n_vocab,
        vocab_type: vocab.vocab_type(),
        bos: vocab.bos(),
        eos: vocab.eos(),
        eot: vocab.eot(),
        pad: vocab.pad(),
        mask: vocab.mask(),
        add_bos: vocab.add_bos(),
        add_eos: vocab.add_eos(),
        attrs: (0..n_vocab).map(|id| vocab.attr(id)).collect(),
        pieces_hex: (0..n_vocab).map(|id| hex(&vocab.piece(id, true))).collect(),
    };
    let mut cases = Vec::with_capacity(texts.len());
    for text in texts {
        let ids = vocab.tokenize(&text, add_special, parse_special)?;
        let bytes = vocab.detokenize(&ids, false, false)?;
        let decoded_utf8 = std::str::from_utf8(&bytes).is_ok();
        let decoded = String::from_utf8_lossy(&bytes).into_owned();
        let roundtrip = decoded == text;
        cases.push(TokenizeCase { text, ids, decoded, decoded_utf8, roundtrip });
    }
    let result = TokenizeOut {
        oracle: ffi::ORACLE_VERSION,
        add_special,
        parse_special,
        vocab: info,
        cases,
    };
    std::fs::write(out, serde_json::to_vec(&result)?)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

fn logits(
    model: &std::path::Path,
    tokens: &[i32],
    out: &std::path::Path,
    threads: i32,
    causal: bool,
) -> Result<()> {
    let model = Model::load(model, false)?;
    let n_vocab = model.vocab().n_tokens();
    if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t >= n_vocab) {
        bail!("token id {bad} is outside the vocabulary (n_vocab = {n_vocab})");
    }
    let mut session = Session::new(&model, tokens.len(), threads, causal)?;
    let logits = session.forward(tokens)?;
    let mut bytes = Vec::with_capacity(logits.len() * 4);
    for v in &logits {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(out, bytes).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote {} positions x {} vocab f32 logits to {}",
        tokens.len(),
        n_vocab,
        out.display()
    );
    Ok(())
}

#[derive(Serialize)]
struct BenchOut {
    model: String,
    seq_len: usize,
    threads: i32,
    runs: usize,
    /// Seconds from the start of loading to a context ready for the first forward (model
    /// load from its memory map plus context creation): the start-up to compare with
    /// Lacuna's `startup_s`.
    load_s: f64,
    ms_per_forward: Vec<f64>,
    median: f64,
    min: f64,
    max: f64,
    llama_cpp_version: &'static str,
    build_flavour: String,
    system_info: String,
}

fn bench(
    model_path: &std::path::Path,
    seq_len: usize,
    threads: i32,
    runs: usize,
    json: bool,
) -> Result<()> {
    if seq_len == 0 || runs == 0 {
        bail!("--seq-len and --runs must be at least 1");
    }
    let load_start = Instant::now();
    let model = Model::load(model_path, false)?;
    let n_vocab = model.vocab().n_tokens();
    // A deterministic spread of ordinary ids; the cost of a forward pass does not depend
    // on which ids are fed.
    let tokens: Vec<i32> =
        (0..seq_len).map(|i| ((i as i64 * 7919 + 13) % i64::from(n_vocab)) as i32).collect();
    let mut session = Session::new(&model, seq_len, threads, false)?;
    let load_s = load_start.elapsed().as_secs_f64();
    session.forward(&tokens)?; // warm-up
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let logits = session.forward(&tokens)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(logits);
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let result = BenchOut {
        model: model_path.display().to_string(),
        seq_len,
        threads,
        runs,
        load_s,
        median,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        ms_per_forward: ms,
        llama_cpp_version: ffi::ORACLE_VERSION,
        build_flavour: option_env!("LLAMA_ORACLE_FLAVOUR").unwrap_or("unspecified").to_owned(),
        system_info: ffi::system_info(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!(
            "seq_len {} threads {}: median {:.2} ms (min {:.2}, max {:.2}) over {} runs",
            seq_len, threads, result.median, result.min, result.max, runs
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct GenerateOut {
    model: String,
    prompt_tokens: usize,
    gen_length: usize,
    steps: usize,
    block_length: usize,
    threads: i32,
    ms_per_step: Vec<f64>,
    median: f64,
    min: f64,
    max: f64,
    total_s: f64,
    generated_tokens_per_s: f64,
    llama_cpp_version: &'static str,
    build_flavour: String,
    system_info: String,
}

/// Tokens committed in each step of a block of `masks` masks over `steps` steps (LLaDA's
/// `get_num_transfer_tokens`).
fn transfer_counts(masks: usize, steps: usize) -> Vec<usize> {
    let (base, rem) = (masks / steps, masks % steps);
    (0..steps).map(|i| base + usize::from(i < rem)).collect()
}

fn generate(
    model_path: &std::path::Path,
    prompt_tokens: usize,
    gen_length: usize,
    steps: usize,
    block_length: usize,
    threads: i32,
    json: bool,
) -> Result<()> {
    if gen_length == 0 || block_length == 0 || gen_length % block_length != 0 {
        bail!("--gen-length must be a positive multiple of --block-length");
    }
    let blocks = gen_length / block_length;
    if steps == 0 || steps % blocks != 0 {
        bail!("--steps must be a positive multiple of the number of blocks {blocks}");
    }
    let model = Model::load(model_path, false)?;
    let n_vocab = model.vocab().n_tokens();
    let mask = match model.vocab().mask() {
        m if m >= 0 => m,
        _ => n_vocab - 1,
    };
    let v = n_vocab as usize;
    let mut canvas: Vec<i32> = (0..prompt_tokens)
        .map(|i| ((i as i64 * 7919 + 13) % i64::from(n_vocab)) as i32)
        .map(|t| if t == mask { (t + 1) % n_vocab } else { t })
        .collect();
    canvas.resize(prompt_tokens + gen_length, mask);
    let mut session = Session::new(&model, canvas.len(), threads, false)?;
    session.forward(&canvas)?; // warm-up, as the first step would page the weights in
    let start = Instant::now();
    let mut ms = Vec::with_capacity(steps);
    for b in 0..blocks {
        let (lo, hi) = (prompt_tokens + b * block_length, prompt_tokens + (b + 1) * block_length);
        for k in transfer_counts(block_length, steps / blocks) {
            let clock = Instant::now();
            let logits = session.forward(&canvas)?;
            let mut scored: Vec<(f64, usize, i32)> = Vec::new();
            for p in (lo..hi).filter(|&p| canvas[p] == mask) {
                let row = &logits[p * v..(p + 1) * v];
                let (mut best, mut best_v) = (0usize, f32::NEG_INFINITY);
                for (i, &x) in row.iter().enumerate() {
                    if x > best_v {
                        (best, best_v) = (i, x);
                    }
                }
                let sum: f64 = row.iter().map(|&x| f64::from(x - best_v).exp()).sum();
                scored.push((1.0 / sum, p, best as i32));
            }
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for &(_, p, t) in scored.iter().take(k) {
                canvas[p] = t;
            }
            ms.push(clock.elapsed().as_secs_f64() * 1e3);
        }
    }
    let total_s = start.elapsed().as_secs_f64();
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let out = GenerateOut {
        model: model_path.display().to_string(),
        prompt_tokens,
        gen_length,
        steps,
        block_length,
        threads,
        median,
        min: sorted[0],
        max: sorted[n - 1],
        ms_per_step: ms,
        total_s,
        generated_tokens_per_s: gen_length as f64 / total_s,
        llama_cpp_version: ffi::ORACLE_VERSION,
        build_flavour: option_env!("LLAMA_ORACLE_FLAVOUR").unwrap_or("unspecified").to_owned(),
        system_info: ffi::system_info(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} steps, threads {threads}: median {:.1} ms/step, {:.2} generated tokens/s",
            steps, out.median, out.generated_tokens_per_s
        );
    }
    Ok(())
}

/// `llama_ftype` of a llama-quantize preset name (the values of `llama.h`).
fn preset_ftype(name: &str) -> Result<u32> {
    const PRESETS: [(&str, u32); 17] = [
        ("Q4_0", 2),
        ("Q4_1", 3),
        ("Q8_0", 7),
        ("Q5_0", 8),
        ("Q5_1", 9),
        ("Q2_K", 10),
        ("Q3_K_S", 11),
        ("Q3_K_M", 12),
        ("Q3_K_L", 13),
        ("Q4_K_S", 14),
        ("Q4_K_M", 15),
        ("Q5_K_S", 16),
        ("Q5_K_M", 17),
        ("Q6_K", 18),
        ("IQ4_NL", 25),
        ("IQ4_XS", 30),
        ("MXFP4_MOE", 38),
    ];
    PRESETS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, f)| f)
        .with_context(|| format!("unknown preset {name}"))
}
