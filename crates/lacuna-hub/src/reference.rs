//! Model references: `OWNER/REPO`, `OWNER/REPO:QUANT` and `OWNER/REPO/FILE.gguf`, with an
//! optional `hf:` prefix where a reference stands in for a file path.

use std::fmt;

use crate::{Error, Result};

/// The prefix that marks a `-m` value as a Hub reference rather than a path.
pub const HF_PREFIX: &str = "hf:";

/// Which file of the repository a reference picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The repository's only `.gguf` file.
    Only,
    /// The `.gguf` file whose name carries this quant (`Q4_K_M`), matched case-insensitively.
    Quant(String),
    /// This file, a path inside the repository.
    File(String),
}

/// A GGUF file on the Hugging Face Hub: a repository and which of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    repo: String,
    selector: Selector,
}

impl ModelRef {
    /// Parses `OWNER/REPO`, `OWNER/REPO:QUANT` or `OWNER/REPO/PATH/FILE.gguf` (an `hf:`
    /// prefix is accepted and ignored).
    pub fn parse(reference: &str) -> Result<ModelRef> {
        let bad = |reason| Error::InvalidReference {
            reference: reference.to_owned(),
            reason,
        };
        let s = reference.strip_prefix(HF_PREFIX).unwrap_or(reference);
        let (owner, rest) = s
            .split_once('/')
            .ok_or_else(|| bad("no '/' between owner and repository"))?;
        let (name, selector) = match rest.split_once('/') {
            Some((name, file)) => {
                if !is_file_path(file) {
                    return Err(bad("the file must be a relative path ending in .gguf"));
                }
                (name, Selector::File(file.to_owned()))
            }
            None => match rest.split_once(':') {
                Some((name, quant)) => {
                    if quant.is_empty() || !quant.chars().all(is_quant_char) {
                        return Err(bad("the quant must be letters, digits, '_', '-' or '.'"));
                    }
                    (name, Selector::Quant(quant.to_owned()))
                }
                None => (rest, Selector::Only),
            },
        };
        if !is_repo_part(owner) || !is_repo_part(name) {
            return Err(bad(
                "owner and repository must be letters, digits, '-', '_' or '.'",
            ));
        }
        Ok(ModelRef {
            repo: format!("{owner}/{name}"),
            selector,
        })
    }

    /// Parses `value` as a reference when it starts with [`HF_PREFIX`]; `None` for a path.
    pub fn from_hf_arg(value: &str) -> Option<Result<ModelRef>> {
        value.starts_with(HF_PREFIX).then(|| ModelRef::parse(value))
    }

    /// The repository, `OWNER/REPO`.
    pub fn repo(&self) -> &str {
        &self.repo
    }

    /// Which file of the repository.
    pub fn selector(&self) -> &Selector {
        &self.selector
    }
}

/// Prints the reference as `lacuna pull` takes it (no `hf:` prefix).
impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.selector {
            Selector::Only => write!(f, "{}", self.repo),
            Selector::Quant(q) => write!(f, "{}:{q}", self.repo),
            Selector::File(file) => write!(f, "{}/{file}", self.repo),
        }
    }
}

/// A Hub owner or repository name: ASCII letters, digits, `-`, `_`, `.`, not `.`/`..`.
fn is_repo_part(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.contains("--")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_quant_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// A relative, `/`-separated path ending in `.gguf` with no empty, `.` or `..` component.
fn is_file_path(s: &str) -> bool {
    s.to_ascii_lowercase().ends_with(".gguf")
        && !s.contains(['\\', ':', '?', '#', '%'])
        && !s.chars().any(char::is_control)
        && s.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

#[cfg(test)]
mod tests;
