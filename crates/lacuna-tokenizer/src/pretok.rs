//! The byte-level BPE pre-tokenizers, keyed by `tokenizer.ggml.pre`, each with the exact
//! split regexes and vocabulary flags llama.cpp uses for it (`src/llama-vocab.cpp`).
//!
//! Accepted ([`SUPPORTED`]): llama.cpp's `default`, the GPT-2 family, the LLaMA-3 family
//! (`llama-bpe`, with `ignore_merges` and BOS), Qwen2 (Dream) and Bailing-MoE (`llada-moe`).
//! Each regex family has a fixture vocabulary whose ids are checked against llama.cpp.
//!
//! Rejected, with an error naming the value (llama.cpp knows them; Lacuna does not yet):
//! * other regex sets (`deepseek-*`, `falcon`, `starcoder`, `refact`, `command-r`, `smollm`,
//!   `codeshell`, `exaone`, `exaone-moe`, `minerva-7b`, `mellum2`, `stablelm2`, `hunyuan*`,
//!   `solar-open`, `qwen35`, `chatglm-bpe`, `glm4`, `glm5`, `viking`, `poro-chat`, `bloom`,
//!   `gpt3-finnish`, `tekken`, `chameleon`, `gpt-4o`/`llama4`, `tiny_aya`, `superbpe`,
//!   `seed-coder`, `ufakzeka`, `grok-2`, `jais-2`, `spark2_5`, `youtu`, `minicpm5`, `laguna`):
//!   none is used by LLaDA, LLaDA-MoE or Dream, and each needs its own parity fixture before
//!   it can be trusted (several run through llama.cpp's std::regex-on-collapsed-categories
//!   path, whose corner cases differ from a true Unicode regex);
//! * custom splitters with no regex equivalent (`kimi-k2`, `afmoe` digit grouping);
//! * pre-tokenizers that change more than the split: `jina-v2-*` and `mmbert` (LSTRIP on
//!   `<mask>`), `gemma4`/`sarvam-moe`/`mmbert` (SentencePiece-style BPE on raw UTF-8),
//!   `chatglm-bpe`/`glm*` (BOS removed), `whitespace`.
//!
//! Adding one is a table row plus a fixture vocabulary and recorded ids
//! (`tools/tokenizer-fixtures`).

use crate::{Error, Result};

/// GPT-2's split regex (llama.cpp `LLAMA_VOCAB_PRE_TYPE_GPT2`).
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// LLaMA-3's split regex, with llama.cpp's case-insensitive contractions spelled out.
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's split regex: LLaMA-3's with single digits.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Bailing-MoE / LLaDA-MoE's split regex (possessive quantifiers made greedy, as llama.cpp does).
const BAILING: &str = r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// The regex families Lacuna implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreTokenizerKind {
    /// llama.cpp's "default": punctuation runs, GPT-2, digit runs, then digit triples.
    Default,
    /// GPT-2 (`gpt-2`, `mpt`, `olmo`, ...).
    Gpt2,
    /// LLaMA-3 (`llama-bpe`, `llama3`, `dbrx`, `smaug-bpe`, ...).
    Llama3,
    /// Qwen2 (`qwen2`, Dream's tokenizer).
    Qwen2,
    /// Bailing-MoE (`llada-moe`, `bailingmoe`, `bailingmoe2`).
    BailingMoe,
}

impl PreTokenizerKind {
    /// The split regexes, applied in order, each splitting every piece the previous left.
    pub fn regexes(self) -> &'static [&'static str] {
        match self {
            Self::Default => &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
            Self::Gpt2 => &[GPT2],
            Self::Llama3 => &[LLAMA3],
            Self::Qwen2 => &[QWEN2],
            Self::BailingMoe => &[BAILING],
        }
    }
}

/// A `tokenizer.ggml.pre` entry: the regex family and the flags llama.cpp sets with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreTokenizer {
    /// The `tokenizer.ggml.pre` value.
    pub name: &'static str,
    /// Which regexes split the text.
    pub kind: PreTokenizerKind,
    /// A word that is itself a token is emitted whole, without running merges.
    pub ignore_merges: bool,
    /// Default for `add_bos_token` when the key is absent.
    pub add_bos: bool,
    /// Decode removes spaces before `?!.,` and in contractions (HF `clean_up_tokenization_spaces`).
    pub clean_spaces: bool,
}

const fn entry(name: &'static str, kind: PreTokenizerKind, clean_spaces: bool) -> PreTokenizer {
    PreTokenizer {
        name,
        kind,
        ignore_merges: false,
        add_bos: false,
        clean_spaces,
    }
}

const fn llama3(name: &'static str) -> PreTokenizer {
    PreTokenizer {
        name,
        kind: PreTokenizerKind::Llama3,
        ignore_merges: true,
        add_bos: true,
        clean_spaces: true,
    }
}

use PreTokenizerKind as K;

/// Every `tokenizer.ggml.pre` value Lacuna accepts, with llama.cpp's flags for it.
pub const SUPPORTED: &[PreTokenizer] = &[
    entry("default", K::Default, true),
    entry("gpt-2", K::Gpt2, true),
    entry("phi-2", K::Gpt2, true),
    entry("jina-es", K::Gpt2, true),
    entry("jina-de", K::Gpt2, true),
    entry("jina-v1-en", K::Gpt2, true),
    entry("gigachat", K::Gpt2, true),
    entry("a.x-4.0", K::Gpt2, true),
    entry("mellum", K::Gpt2, true),
    entry("roberta-bpe", K::Gpt2, true),
    entry("exaone4", K::Gpt2, true),
    entry("mpt", K::Gpt2, true),
    entry("olmo", K::Gpt2, true),
    entry("jais", K::Gpt2, true),
    entry("trillion", K::Gpt2, false),
    entry("granite-docling", K::Gpt2, false),
    llama3("llama3"),
    llama3("llama-v3"),
    llama3("llama-bpe"),
    llama3("falcon3"),
    llama3("falcon-h1"),
    llama3("pixtral"),
    llama3("midm-2.0"),
    llama3("lfm2"),
    llama3("jina-v5-nano"),
    entry("dbrx", K::Llama3, true),
    entry("smaug-bpe", K::Llama3, true),
    entry("qwen2", K::Qwen2, false),
    entry("deepseek-r1-qwen", K::Qwen2, false),
    entry("kormo", K::Qwen2, false),
    entry("f2llmv2", K::Qwen2, false),
    entry("megrez", K::Qwen2, true),
    entry("bailingmoe", K::BailingMoe, false),
    entry("bailingmoe2", K::BailingMoe, false),
    entry("llada-moe", K::BailingMoe, false),
];

impl PreTokenizer {
    /// Looks up `tokenizer.ggml.pre`; an unknown name is an error naming it.
    pub fn from_name(name: &str) -> Result<Self> {
        SUPPORTED
            .iter()
            .find(|p| p.name == name)
            .copied()
            .ok_or_else(|| Error::UnsupportedPreTokenizer {
                pre: name.to_owned(),
                supported: SUPPORTED
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

#[cfg(test)]
mod tests;
