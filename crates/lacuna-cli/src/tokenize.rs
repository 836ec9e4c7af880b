//! `lacuna tokenize`: the token ids llama.cpp would produce for a text, from a GGUF's
//! vocabulary.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use lacuna::gguf::GgufFile;
use lacuna::tokenizer::Tokenizer;

/// Arguments of `lacuna tokenize`.
#[derive(clap::Args)]
pub(crate) struct TokenizeArgs {
    /// GGUF file (a vocabulary-only file is enough), or hf:OWNER/REPO:QUANT.
    #[arg(short = 'm', long)]
    model: PathBuf,
    /// Treat special-token text (e.g. `<|mdm_mask|>`) as plain text.
    #[arg(long)]
    no_special: bool,
    /// Do not add BOS/EOS even when the vocabulary asks for them.
    #[arg(long)]
    no_bos: bool,
    /// Print JSON: ids and the piece (decoded text) of each token.
    #[arg(long)]
    json: bool,
    /// The text to tokenize.
    text: String,
}

/// Tokenizes the text and prints the ids (or JSON).
pub(crate) fn run(mut a: TokenizeArgs) -> Result<()> {
    a.model = crate::pull::resolve_model(&a.model)?;
    let file =
        GgufFile::open(&a.model).with_context(|| format!("opening {}", a.model.display()))?;
    let tok = Tokenizer::from_gguf(&file)
        .with_context(|| format!("reading the vocabulary of {}", a.model.display()))?;
    let ids = tok.encode(&a.text, !a.no_bos, !a.no_special)?;
    let out = if a.json {
        let tokens = ids
            .iter()
            .map(|&id| {
                let bytes = tok.token_bytes(id, true)?;
                Ok(match std::str::from_utf8(bytes) {
                    Ok(piece) => serde_json::json!({ "id": id, "piece": piece }),
                    // part of a character split across tokens: give the raw bytes too
                    Err(_) => serde_json::json!({
                        "id": id,
                        "piece": String::from_utf8_lossy(bytes),
                        "bytes_hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                    }),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        serde_json::to_string_pretty(&serde_json::json!({ "ids": ids, "tokens": tokens }))?
    } else {
        ids.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
    };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{out}") {
        // `lacuna tokenize ... | head` closing the pipe early is not an error
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}
