//! The tokenizer keys `convert_hf_to_gguf.py` writes for a byte-level BPE
//! (`_set_vocab_gpt2` + `gguf.SpecialVocab`, then LLaDA's `add_add_bos_token(True)`), from
//! the `tokenizer.json` that `corpus.py` trained.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use lacuna_gguf::GgufWriter;

/// LLaDA-8B-Instruct's chat template (turn markers `<|start_header_id|>`, `<|eot_id|>`).
pub const LLADA_TEMPLATE: &str = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/// `tokenizer.ggml.pre` of the KJV model: the LLaMA-3 split regex its BPE was trained with
/// (the task model's is `qwen2`, which isolates every digit).
pub const PRE: &str = "llama-bpe";

const NORMAL: i32 = 1;
const CONTROL: i32 = 3;

/// Ids of the special tokens.
#[derive(Debug, Clone, Copy)]
pub struct Specials {
    pub bos: u32,
    pub eos: u32,
    pub eot: u32,
    pub mask: u32,
}

/// Adds the `tokenizer.*` keys (`pre`: `tokenizer.ggml.pre`; LLaDA's chat template unless
/// `raw_only`, for a model trained on raw prompts); returns the special ids and the
/// vocabulary size.
pub fn add(
    w: &mut GgufWriter,
    tokenizer_json: &Path,
    pre: &str,
    raw_only: bool,
) -> Result<(Specials, usize)> {
    let text = std::fs::read_to_string(tokenizer_json)
        .with_context(|| format!("reading {}", tokenizer_json.display()))?;
    let tj: serde_json::Value = serde_json::from_str(&text)?;
    let vocab = tj["model"]["vocab"].as_object().context("model.vocab")?;
    let added = tj["added_tokens"].as_array().context("added_tokens")?;
    let n = vocab.len() + added.len();
    let mut tokens = vec![String::new(); n];
    let mut types = vec![NORMAL; n];
    for (tok, id) in vocab {
        let id = id.as_u64().context("vocab id")? as usize;
        ensure!(
            id < n && tokens[id].is_empty(),
            "vocab id {id} out of range or repeated"
        );
        tokens[id] = tok.clone();
    }
    let find = |s: &str| -> Result<u32> {
        added
            .iter()
            .find(|t| t["content"] == s)
            .and_then(|t| t["id"].as_u64())
            .map(|id| id as u32)
            .with_context(|| format!("special token {s} missing"))
    };
    for t in added {
        let id = t["id"].as_u64().context("added id")? as usize;
        ensure!(
            id < n && tokens[id].is_empty(),
            "added id {id} out of range or repeated"
        );
        tokens[id] = t["content"].as_str().context("content")?.to_string();
        types[id] = CONTROL;
    }
    let merges: Vec<String> = tj["model"]["merges"]
        .as_array()
        .context("model.merges")?
        .iter()
        .map(|m| match m {
            serde_json::Value::String(s) => Ok(s.clone()),
            serde_json::Value::Array(p) if p.len() == 2 => Ok(format!(
                "{} {}",
                p[0].as_str().context("merge")?,
                p[1].as_str().context("merge")?
            )),
            _ => anyhow::bail!("unexpected merge {m}"),
        })
        .collect::<Result<_>>()?;
    let sp = Specials {
        bos: find("<|startoftext|>")?,
        eos: find("<|endoftext|>")?,
        eot: find("<|eot_id|>")?,
        mask: find("<|mdm_mask|>")?,
    };
    w.add_metadata("tokenizer.ggml.model", "gpt2")?;
    w.add_metadata("tokenizer.ggml.pre", pre)?;
    w.add_metadata(
        "tokenizer.ggml.tokens",
        tokens.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    w.add_metadata("tokenizer.ggml.token_type", types)?;
    w.add_metadata(
        "tokenizer.ggml.merges",
        merges.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    w.add_metadata("tokenizer.ggml.bos_token_id", sp.bos)?;
    w.add_metadata("tokenizer.ggml.eos_token_id", sp.eos)?;
    // Not written by the LLaDA converter: without it llama.cpp picks EOT by iterating an
    // unordered map over `<|endoftext|>` and `<|eot_id|>` (hash order; it chose EOS here),
    // while Lacuna takes the first of its list. Naming it makes both agree.
    w.add_metadata("tokenizer.ggml.eot_token_id", sp.eot)?;
    w.add_metadata("tokenizer.ggml.padding_token_id", sp.eos)?;
    w.add_metadata("tokenizer.ggml.mask_token_id", sp.mask)?;
    w.add_metadata("tokenizer.ggml.add_bos_token", true)?;
    w.add_metadata("tokenizer.ggml.add_eos_token", false)?;
    if !raw_only {
        w.add_metadata("tokenizer.chat_template", LLADA_TEMPLATE)?;
    }
    Ok((sp, n))
}
