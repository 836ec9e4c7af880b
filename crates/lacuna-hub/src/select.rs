//! Picking one `.gguf` file of a repository for a [`Selector`].

use crate::{Error, Result, Selector};

/// The file of `files` (paths inside `repo`) that `selector` names.
///
/// Only `.gguf` files count. A quant matches a file whose name holds it, case-insensitively,
/// as a part delimited by `-`, `.`, `_` or `/` (`Q4_K_M` in `llada-8b.Q4_K_M.gguf`); a match
/// followed by another `_` part (`Q4_K` in `…-Q4_K_M.gguf`) counts only when no file matches
/// exactly. Several matches, none, or a part of a split GGUF are errors that list the files.
pub fn select_file(repo: &str, files: &[String], selector: &Selector) -> Result<String> {
    let ggufs: Vec<String> = files.iter().filter(|f| is_gguf(f)).cloned().collect();
    if ggufs.is_empty() {
        return Err(Error::NoGguf {
            repo: repo.to_owned(),
        });
    }
    let chosen = match selector {
        Selector::File(file) => {
            if !files.iter().any(|f| f == file) {
                return Err(Error::FileNotFound {
                    repo: repo.to_owned(),
                    file: file.clone(),
                    files: ggufs,
                });
            }
            file.clone()
        }
        Selector::Only => match ggufs.as_slice() {
            [only] => only.clone(),
            _ if is_one_split(&ggufs) => ggufs[0].clone(),
            _ => {
                return Err(Error::QuantRequired {
                    repo: repo.to_owned(),
                    files: ggufs,
                });
            }
        },
        Selector::Quant(quant) => {
            let q = quant.to_ascii_lowercase();
            let exact: Vec<&String> = ggufs
                .iter()
                .filter(|f| quant_match(f, &q) == Some(true))
                .collect();
            let loose: Vec<&String> = ggufs
                .iter()
                .filter(|f| quant_match(f, &q).is_some())
                .collect();
            let matches = if exact.is_empty() { loose } else { exact };
            match matches.as_slice() {
                [] => {
                    return Err(Error::QuantNotFound {
                        repo: repo.to_owned(),
                        quant: quant.clone(),
                        files: ggufs,
                    });
                }
                [one] => (*one).clone(),
                many => {
                    let many: Vec<String> = many.iter().map(|s| (*s).clone()).collect();
                    if !is_one_split(&many) {
                        return Err(Error::AmbiguousQuant {
                            repo: repo.to_owned(),
                            quant: quant.clone(),
                            matches: many,
                        });
                    }
                    many[0].clone()
                }
            }
        }
    };
    if let Some(prefix) = split_prefix(&chosen) {
        let parts = ggufs
            .iter()
            .filter(|f| split_prefix(f) == Some(prefix))
            .cloned()
            .collect();
        return Err(Error::SplitGguf {
            repo: repo.to_owned(),
            file: chosen,
            parts,
        });
    }
    Ok(chosen)
}

/// Whether `path` names a GGUF file (`.gguf`, any case).
pub(crate) fn is_gguf(path: &str) -> bool {
    path.to_ascii_lowercase().ends_with(".gguf")
}

/// `Some(exact)` when lowercase `quant` is a delimited part of `path`'s name (its `.gguf`
/// dropped): `exact` is false when the match is followed by `_` (a longer quant name).
fn quant_match(path: &str, quant: &str) -> Option<bool> {
    let lower = path.to_ascii_lowercase();
    let name = lower.strip_suffix(".gguf").unwrap_or(&lower);
    let delim = |c: u8| matches!(c, b'-' | b'.' | b'_' | b'/');
    let mut best = None;
    for (at, _) in name.match_indices(quant) {
        let end = at + quant.len();
        let before_ok = at == 0 || delim(name.as_bytes()[at - 1]);
        let after = name.as_bytes().get(end).copied();
        if !before_ok || !after.is_none_or(delim) {
            continue;
        }
        let exact = after != Some(b'_');
        best = Some(best.unwrap_or(false) || exact);
    }
    best
}

/// The name of a split file without its `-00001-of-00003.gguf` tail, or `None`.
fn split_prefix(path: &str) -> Option<&str> {
    let lower = path.to_ascii_lowercase();
    let stem = lower.strip_suffix(".gguf")?;
    let (head, total) = stem.rsplit_once("-of-")?;
    let (prefix, index) = head.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    (digits(total) && digits(index)).then(|| &path[..prefix.len()])
}

/// Whether every file of `files` is a part of the same split GGUF.
fn is_one_split(files: &[String]) -> bool {
    let first = files.first().and_then(|f| split_prefix(f));
    first.is_some() && files.iter().all(|f| split_prefix(f) == first)
}

#[cfg(test)]
mod tests;
