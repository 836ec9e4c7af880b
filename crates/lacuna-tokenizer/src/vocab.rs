//! The vocabulary as llama.cpp sees it: tokens, attributes, scores, merges, special ids and
//! flags, read from `tokenizer.ggml.*` with llama.cpp's defaults and text-based fixes.

use std::collections::HashMap;

use lacuna_gguf::Metadata;

use crate::pretok::PreTokenizer;
use crate::{Error, Result};

/// A token id.
pub type TokenId = u32;

/// Token attribute bit flags, with llama.cpp's `llama_token_attr` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TokenAttr(pub u32);

impl TokenAttr {
    /// No type recorded.
    pub const UNDEFINED: Self = Self(0);
    /// The unknown token.
    pub const UNKNOWN: Self = Self(1 << 0);
    /// A reserved, unused slot.
    pub const UNUSED: Self = Self(1 << 1);
    /// An ordinary token.
    pub const NORMAL: Self = Self(1 << 2);
    /// A control token (BOS, EOS, chat markers, mask): matched as special text.
    pub const CONTROL: Self = Self(1 << 3);
    /// A user-defined token: always matched as a whole, even without special parsing.
    pub const USER_DEFINED: Self = Self(1 << 4);
    /// A byte-fallback token `<0xXX>`.
    pub const BYTE: Self = Self(1 << 5);
    /// Normalized before matching (llama.cpp records it; Lacuna does not act on it).
    pub const NORMALIZED: Self = Self(1 << 6);
    /// Partitioning drops the whitespace just before the token's text.
    pub const LSTRIP: Self = Self(1 << 7);
    /// Partitioning drops the whitespace just after the token's text.
    pub const RSTRIP: Self = Self(1 << 8);
    /// Matched only as a whole word (llama.cpp records it; Lacuna does not act on it).
    pub const SINGLE_WORD: Self = Self(1 << 9);

    /// Whether any flag of `other` is set.
    pub fn contains_any(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// The attribute for a `tokenizer.ggml.token_type` value.
    fn from_gguf_type(t: i32) -> Self {
        match t {
            1 => Self::NORMAL,
            2 => Self::UNKNOWN,
            3 => Self::CONTROL,
            4 => Self::USER_DEFINED,
            5 => Self::UNUSED,
            6 => Self::BYTE,
            _ => Self::UNDEFINED,
        }
    }
}

impl std::ops::BitOr for TokenAttr {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// The tokenizer algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// `tokenizer.ggml.model = "gpt2"`: byte-level BPE after a regex pre-tokenizer.
    Bpe(PreTokenizer),
    /// `tokenizer.ggml.model = "llama"`: SentencePiece-style BPE over scores with byte fallback.
    Spm,
    /// `tokenizer.ggml.model = "gemma4"`: BPE over code points by merge rank, spaces as `▁`,
    /// split only at newline runs, `<0xXX>` byte fallback (Gemma 4, DiffusionGemma).
    Gemma4,
}

/// Ids of the special tokens; `None` when the vocabulary has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpecialTokens {
    /// Beginning of sequence.
    pub bos: Option<TokenId>,
    /// End of sequence.
    pub eos: Option<TokenId>,
    /// End of turn (from the key, else found by its text as llama.cpp does).
    pub eot: Option<TokenId>,
    /// Unknown.
    pub unk: Option<TokenId>,
    /// Padding.
    pub pad: Option<TokenId>,
    /// The diffusion mask token: `tokenizer.ggml.mask_token_id`, else the architecture's
    /// default when it lies inside the vocabulary.
    pub mask: Option<TokenId>,
}

/// Everything read from `tokenizer.ggml.*`.
#[derive(Debug, Clone)]
pub struct Vocab {
    pub(crate) kind: VocabKind,
    pub(crate) tokens: Vec<String>,
    pub(crate) attrs: Vec<TokenAttr>,
    pub(crate) scores: Vec<f32>,
    pub(crate) merges: Vec<(String, String)>,
    pub(crate) special: SpecialTokens,
    pub(crate) add_bos: bool,
    pub(crate) add_eos: bool,
    pub(crate) add_space_prefix: bool,
    pub(crate) clean_spaces: bool,
    pub(crate) architecture: Option<String>,
    pub(crate) chat_template: Option<String>,
    pub(crate) eog: Vec<TokenId>,
}

/// Default mask token id of each diffusion architecture, used when the file has no
/// `tokenizer.ggml.mask_token_id` (the ids their official configs use).
pub const DEFAULT_MASK_IDS: &[(&str, TokenId)] = &[
    ("llada", 126_336),
    ("llada-moe", 156_895),
    ("dream", 151_666),
];

/// Texts llama.cpp marks CONTROL (end-of-generation markers) whatever their stored type.
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];
/// Texts llama.cpp takes as the EOT token when `tokenizer.ggml.eot_token_id` is absent.
const EOT_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];
/// Fill-in-the-middle marker texts, by key; marked CONTROL when the key is absent.
const FIM_TEXTS: &[(&str, &[&str])] = &[
    (
        "tokenizer.ggml.fim_pre_token_id",
        &[
            "<|fim_prefix|>",
            "<fim-prefix>",
            "<fim_prefix>",
            "<｜fim▁begin｜>",
            "<PRE>",
            "▁<PRE>",
            "<|code_prefix|>",
            "<|prefix|>",
        ],
    ),
    (
        "tokenizer.ggml.fim_suf_token_id",
        &[
            "<|fim_suffix|>",
            "<fim-suffix>",
            "<fim_suffix>",
            "<｜fim▁hole｜>",
            "<SUF>",
            "▁<SUF>",
            "<|code_suffix|>",
            "<|suffix|>",
        ],
    ),
    (
        "tokenizer.ggml.fim_mid_token_id",
        &[
            "<|fim_middle|>",
            "<fim-middle>",
            "<fim_middle>",
            "<｜fim▁end｜>",
            "<MID>",
            "▁<MID>",
            "<|code_middle|>",
            "<|middle|>",
        ],
    ),
    (
        "tokenizer.ggml.fim_pad_token_id",
        &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    ),
    (
        "tokenizer.ggml.fim_rep_token_id",
        &[
            "<|fim_repo|>",
            "<|repo_name|>",
            "<fim-repo>",
            "<REPO>",
            "<reponame>",
        ],
    ),
    ("tokenizer.ggml.fim_sep_token_id", &["<|file_sep|>"]),
    ("tokenizer.ggml.eom_token_id", &["<|eom_id|>"]),
];
/// gpt-oss markers llama.cpp forces to USER_DEFINED.
const FORCED_USER_DEFINED: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

impl Vocab {
    /// Reads the vocabulary from a GGUF file's metadata.
    pub fn from_metadata(md: &Metadata) -> Result<Self> {
        let model: &str = md.get("tokenizer.ggml.model")?;
        let kind = match model {
            "gpt2" => {
                let pre = md
                    .get_opt::<&str>("tokenizer.ggml.pre")?
                    .ok_or(Error::MissingPreTokenizer)?;
                VocabKind::Bpe(PreTokenizer::from_name(pre)?)
            }
            "llama" => VocabKind::Spm,
            "gemma4" => VocabKind::Gemma4,
            other => {
                return Err(Error::UnsupportedModel {
                    model: other.to_owned(),
                });
            }
        };
        let tokens: Vec<String> = md
            .get_str_array("tokenizer.ggml.tokens")?
            .iter()
            .enumerate()
            .map(|(i, t)| {
                // llama.cpp reads each text as a C string: it ends at the first NUL.
                let t = t.split('\0').next().unwrap_or_default();
                if t.is_empty() {
                    format!("[EMPTY_{i}]")
                } else {
                    t.to_owned()
                }
            })
            .collect();
        let n = tokens.len();
        if n == 0 {
            return Err(Error::EmptyVocab);
        }
        let scores = read_scores(md, n)?;
        let mut attrs = match md.get_opt::<&[i32]>("tokenizer.ggml.token_type")? {
            Some(types) => {
                check_len("tokenizer.ggml.token_type", n, types.len())?;
                types[..n]
                    .iter()
                    .map(|&t| TokenAttr::from_gguf_type(t))
                    .collect()
            }
            None => vec![TokenAttr::NORMAL; n],
        };
        let merges = match kind {
            VocabKind::Bpe(_) => read_merges(md)?,
            VocabKind::Gemma4 => {
                if !md.contains_key("tokenizer.ggml.merges") {
                    return Err(lacuna_gguf::Error::MissingKey {
                        key: "tokenizer.ggml.merges".to_owned(),
                    }
                    .into());
                }
                read_merges(md)?
            }
            VocabKind::Spm => Vec::new(),
        };

        // llama.cpp's text-based fixes of token types.
        let mut by_text: HashMap<&str, TokenId> = HashMap::with_capacity(n);
        for (i, t) in tokens.iter().enumerate() {
            by_text.insert(t, i as TokenId); // last wins, as llama.cpp's token_to_id
        }
        let mut mark = |text: &str, attr: TokenAttr, replace: bool| {
            if let Some(&id) = by_text.get(text) {
                let a = &mut attrs[id as usize];
                *a = if replace { attr } else { *a | attr };
            }
        };
        for t in EOG_TEXTS {
            mark(t, TokenAttr::CONTROL, false);
        }
        for (key, texts) in FIM_TEXTS {
            if !md.contains_key(key) {
                for t in *texts {
                    mark(t, TokenAttr::CONTROL, false);
                }
            }
        }
        for t in FORCED_USER_DEFINED {
            mark(t, TokenAttr::USER_DEFINED, true);
        }
        apply_strip_rules(md, &by_text, &mut attrs)?;

        let (def_bos, def_eos, def_unk) = match kind {
            VocabKind::Spm => (Some(1), Some(2), Some(0)),
            VocabKind::Bpe(_) => (Some(11), Some(11), None),
            VocabKind::Gemma4 => (None, None, None),
        };
        let in_range = |id: Option<TokenId>| id.filter(|&i| (i as usize) < n);
        let special_id = |key: &'static str, default: Option<TokenId>| -> Result<Option<TokenId>> {
            match md.value(key) {
                None => Ok(in_range(default)),
                Some(v) => {
                    let id = v
                        .as_u64_lenient()
                        .ok_or_else(|| lacuna_gguf::Error::WrongType {
                            key: key.to_owned(),
                            expected: "non-negative integer",
                            found: v.type_description(),
                        })?;
                    if id as usize >= n {
                        return Err(Error::SpecialTokenOutOfRange {
                            key,
                            id,
                            n_vocab: n,
                        });
                    }
                    Ok(Some(id as TokenId))
                }
            }
        };
        let architecture = md
            .get_opt::<&str>("general.architecture")?
            .map(str::to_owned);
        let mask_default = architecture
            .as_deref()
            .and_then(|a| DEFAULT_MASK_IDS.iter().find(|(arch, _)| *arch == a))
            .map(|&(_, id)| id);
        // llama.cpp takes the first match in hash-map order; Lacuna takes the first text of the
        // list present, which agrees whenever a vocabulary has one candidate.
        let eot_by_text = EOT_TEXTS.iter().find_map(|t| by_text.get(t).copied());
        let special = SpecialTokens {
            bos: special_id("tokenizer.ggml.bos_token_id", def_bos)?,
            eos: special_id("tokenizer.ggml.eos_token_id", def_eos)?,
            eot: special_id("tokenizer.ggml.eot_token_id", None)?.or(eot_by_text),
            unk: special_id("tokenizer.ggml.unknown_token_id", def_unk)?,
            pad: special_id("tokenizer.ggml.padding_token_id", None)?,
            mask: special_id("tokenizer.ggml.mask_token_id", mask_default)?,
        };

        let (mut add_bos, mut add_space_prefix, clean_spaces) = match kind {
            VocabKind::Spm => (true, true, false),
            VocabKind::Bpe(pre) => (pre.add_bos, false, pre.clean_spaces),
            VocabKind::Gemma4 => (true, false, true),
        };
        if let Some(v) = md.get_opt::<bool>("tokenizer.ggml.add_space_prefix")? {
            add_space_prefix = v;
        }
        if let Some(v) = md.get_opt::<bool>("tokenizer.ggml.add_bos_token")? {
            add_bos = v;
        }
        // llama.cpp forces BOS on for Gemma 4 whatever the file says.
        if kind == VocabKind::Gemma4 {
            add_bos = true;
        }
        let add_eos = md
            .get_opt::<bool>("tokenizer.ggml.add_eos_token")?
            .unwrap_or(false);
        let chat_template = md
            .get_opt::<&str>("tokenizer.chat_template")?
            .map(str::to_owned);

        // End-of-generation set: llama.cpp's EOG texts plus EOS and EOT.
        let mut eog: Vec<TokenId> = EOG_TEXTS
            .iter()
            .filter_map(|t| by_text.get(t).copied())
            .collect();
        eog.extend(special.eos);
        eog.extend(special.eot);
        eog.sort_unstable();
        eog.dedup();
        // Gemma 4 (and PLaMo) have a normal `</s>`: llama.cpp takes it out of the EOG set and
        // makes it NORMAL again when `<|tool_response>` (or `<|plamo:eos|>`) is in the set.
        let in_eog = |t: &str| by_text.get(t).filter(|id| eog.contains(id)).copied();
        if let (Some(s), true) = (
            in_eog("</s>"),
            in_eog("<|tool_response>").is_some() || in_eog("<|plamo:eos|>").is_some(),
        ) {
            eog.retain(|&id| id != s);
            attrs[s as usize] = TokenAttr::NORMAL;
        }

        let vocab = Self {
            eog,
            kind,
            tokens,
            attrs,
            scores,
            merges,
            special,
            add_bos,
            add_eos,
            add_space_prefix,
            clean_spaces,
            architecture,
            chat_template,
        };
        vocab.check_byte_tokens()?;
        Ok(vocab)
    }

    /// BYTE tokens must read `<0xXX>`: decode relies on it.
    fn check_byte_tokens(&self) -> Result<()> {
        for (i, (t, a)) in self.tokens.iter().zip(&self.attrs).enumerate() {
            if a.contains_any(TokenAttr::BYTE) && parse_byte_token(t).is_none() {
                return Err(Error::BadByteToken {
                    id: i as TokenId,
                    text: t.clone(),
                });
            }
        }
        Ok(())
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty (never true for a loaded vocabulary).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The algorithm and, for BPE, the pre-tokenizer.
    pub fn kind(&self) -> VocabKind {
        self.kind
    }

    /// Whether decoding removes spaces before punctuation and in contractions (so the text of
    /// a token prefix can lose a trailing space once the next token arrives).
    pub fn clean_spaces(&self) -> bool {
        self.clean_spaces
    }

    /// The stored text of a token (byte-level encoded for BPE, `▁` for spaces in SPM).
    pub fn token_text(&self, id: TokenId) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// A token's attributes.
    pub fn token_attr(&self, id: TokenId) -> Option<TokenAttr> {
        self.attrs.get(id as usize).copied()
    }

    /// The special-token ids.
    pub fn special(&self) -> SpecialTokens {
        self.special
    }

    /// Whether encoding with `add_special` prepends BOS.
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// Whether encoding with `add_special` appends EOS.
    pub fn add_eos(&self) -> bool {
        self.add_eos
    }

    /// Tokens that end generation: every end-of-generation marker llama.cpp recognises by
    /// text, plus EOS and EOT, sorted. (When a vocabulary holds several EOT candidates,
    /// llama.cpp's single EOT id depends on hash-map order; this set holds all of them.)
    pub fn eog_ids(&self) -> &[TokenId] {
        &self.eog
    }

    /// `general.architecture`, if present.
    pub fn architecture(&self) -> Option<&str> {
        self.architecture.as_deref()
    }

    /// `tokenizer.chat_template`, if present.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }
}

/// llama.cpp's per-model LSTRIP/RSTRIP attributes (GGUF files carry no per-token strip
/// flags; llama.cpp sets them at load from `tokenizer.ggml.pre`, `general.architecture` and
/// the lower-cased `general.name`, after building its special-token cache).
fn apply_strip_rules(
    md: &Metadata,
    by_text: &HashMap<&str, TokenId>,
    attrs: &mut [TokenAttr],
) -> Result<()> {
    let name = md
        .get_opt::<&str>("general.name")?
        .unwrap_or("")
        .to_ascii_lowercase();
    let pre = md.get_opt::<&str>("tokenizer.ggml.pre")?.unwrap_or("");
    let arch = md.get_opt::<&str>("general.architecture")?.unwrap_or("");
    let has = |s: &str, subs: &[&str]| subs.iter().any(|x| s.contains(x));
    if has(pre, &["jina-v2-de", "jina-v2-es", "jina-v2-code"])
        || has(arch, &["nomic-bert-moe", "jina-bert-v3"])
    {
        set_attr(by_text, attrs, "<mask>", TokenAttr::LSTRIP, true);
    } else if has(&name, &["phi-3", "phi3"]) {
        let cached = TokenAttr::CONTROL | TokenAttr::USER_DEFINED | TokenAttr::UNKNOWN;
        for a in attrs.iter_mut().filter(|a| a.contains_any(cached)) {
            *a = *a | TokenAttr::RSTRIP;
        }
        for (text, on) in [
            ("</s>", true),
            ("<unk>", false),
            ("<s>", false),
            ("<|endoftext|>", false),
        ] {
            if !set_attr(by_text, attrs, text, TokenAttr::RSTRIP, on) {
                return Err(Error::MissingRuleToken {
                    rule: "Phi-3's RSTRIP attributes",
                    text,
                });
            }
        }
    } else if has(&name, &["modern-bert"]) {
        set_attr(by_text, attrs, "[MASK]", TokenAttr::LSTRIP, true);
    }
    Ok(())
}

/// Sets or clears `attr` on the token with this text; false when there is none.
fn set_attr(
    by_text: &HashMap<&str, TokenId>,
    attrs: &mut [TokenAttr],
    text: &str,
    attr: TokenAttr,
    on: bool,
) -> bool {
    let Some(&id) = by_text.get(text) else {
        return false;
    };
    let a = &mut attrs[id as usize];
    a.0 = if on { a.0 | attr.0 } else { a.0 & !attr.0 };
    true
}

/// `<0xXX>` → the byte.
pub(crate) fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

fn check_len(key: &'static str, expected: usize, found: usize) -> Result<()> {
    if found < expected {
        return Err(Error::LengthMismatch {
            key,
            expected,
            found,
        });
    }
    Ok(())
}

fn read_scores(md: &Metadata, n: usize) -> Result<Vec<f32>> {
    const KEY: &str = "tokenizer.ggml.scores";
    // llama.cpp accepts f32 or i32 scores.
    let scores: Vec<f32> = match md.value(KEY) {
        None => return Ok(vec![0.0; n]),
        Some(lacuna_gguf::Value::Array(lacuna_gguf::Array::I32(s))) => {
            s.iter().map(|&v| v as f32).collect()
        }
        Some(_) => md.get::<&[f32]>(KEY)?.to_vec(),
    };
    check_len(KEY, n, scores.len())?;
    Ok(scores[..n].to_vec())
}

/// `tokenizer.ggml.merges`: "left right", split at the first space after the first byte
/// (so a merge whose left part is a space still parses), as llama.cpp does. Entries
/// without such a space can never match and are dropped; a repeated pair keeps its first
/// (lowest) rank.
fn read_merges(md: &Metadata) -> Result<Vec<(String, String)>> {
    let raw = md.get_str_array("tokenizer.ggml.merges")?;
    let mut seen = std::collections::HashSet::with_capacity(raw.len());
    let mut merges = Vec::with_capacity(raw.len());
    for m in raw {
        let bytes = m.as_bytes();
        let Some(pos) = bytes
            .get(1..)
            .and_then(|rest| rest.iter().position(|&b| b == b' '))
            .map(|p| p + 1)
        else {
            continue;
        };
        let pair = (m[..pos].to_owned(), m[pos + 1..].to_owned());
        if seen.insert(pair.clone()) {
            merges.push(pair);
        }
    }
    Ok(merges)
}

#[cfg(test)]
mod tests;
