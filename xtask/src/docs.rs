//! `cargo xtask docs-check`: the rules the user-facing Markdown keeps.
//!
//! - `README.md` holds at most [`README_MAX_CHARS`] characters;
//! - no paragraph or list item of `README.md` or `docs/*.md` is longer than
//!   [`BLOCK_MAX_CHARS`] characters (fenced code, tables, headings, HTML comments and the
//!   generated parts between `<!-- …:begin` and `<!-- …:end` markers are not prose and are
//!   not measured);
//! - every relative link of those files (inline `[text](target)`, images, reference
//!   definitions; tables and generated parts included) names a file or folder that exists,
//!   and an anchor (`#section`) names a heading of the Markdown file it points into.
//!
//! Characters are Unicode scalar values, as written in the source (a link's target counts).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::read;

/// The most characters `README.md` may hold.
pub(crate) const README_MAX_CHARS: usize = 10_000;

/// The most characters one paragraph or list item may hold.
pub(crate) const BLOCK_MAX_CHARS: usize = 600;

/// One broken rule, at a line of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The file, relative to the repository root.
    pub(crate) file: String,
    /// 1-based.
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The files checked: `README.md` and every `docs/*.md`, as paths from the root.
fn files(root: &Path) -> Result<Vec<String>> {
    let mut out = vec!["README.md".to_string()];
    let docs = root.join("docs");
    if docs.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&docs)
            .with_context(|| format!("cannot list {}", docs.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| format!("docs/{n}")));
    }
    Ok(out)
}

/// Checks every file; returns how many were checked, or fails listing every problem.
pub(crate) fn check(root: &Path) -> Result<usize> {
    let files = files(root)?;
    let mut problems = Vec::new();
    for file in &files {
        let text = read(&root.join(file))?;
        problems.extend(check_file(root, file, &text));
    }
    if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(Problem::to_string).collect();
        bail!(
            "{} documentation problem(s):\n{}",
            problems.len(),
            list.join("\n")
        );
    }
    Ok(files.len())
}

/// The problems of `text`, the contents of `file` (relative to `root`).
pub(crate) fn check_file(root: &Path, file: &str, text: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let problem = |line: usize, message: String| Problem {
        file: file.to_string(),
        line,
        message,
    };
    let past = line_past(text, README_MAX_CHARS).filter(|_| file == "README.md");
    if let Some(line) = past {
        out.push(problem(
            line,
            format!(
                "README.md has {} characters, more than {README_MAX_CHARS} (the limit is passed on this line); move detail into a guide under docs/",
                text.chars().count()
            ),
        ));
    }
    for block in blocks(text) {
        if block.chars > BLOCK_MAX_CHARS {
            out.push(problem(
                block.line,
                format!(
                    "{} of {} characters, more than {BLOCK_MAX_CHARS}; split it",
                    block.kind, block.chars
                ),
            ));
        }
    }
    for link in links(text) {
        if let Some(message) = broken(root, file, text, &link.target) {
            out.push(problem(link.line, message));
        }
    }
    out
}

/// The line on which the text's `limit`-th character is passed, if it has more.
fn line_past(text: &str, limit: usize) -> Option<usize> {
    let (i, _) = text.char_indices().nth(limit)?;
    Some(text[..i].matches('\n').count() + 1)
}

/// What a measured block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Lines of prose between blank lines.
    Paragraph,
    /// A list item with its continuation lines.
    ListItem,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Paragraph => "paragraph",
            Kind::ListItem => "list item",
        })
    }
}

/// A paragraph or list item: where it starts and how long it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// Its first line, 1-based.
    pub(crate) line: usize,
    /// Its kind.
    pub(crate) kind: Kind,
    /// Its characters: its lines trimmed, joined by one space.
    pub(crate) chars: usize,
}

/// Whether `line` (trimmed) opens a list item: `- `, `* `, `+ `, `1. ` or `1) `.
fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "+ "].iter().any(|m| line.starts_with(m)) || ["-", "*", "+"].contains(&line) {
        return true;
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits)
        && matches!(line.as_bytes().get(digits), Some(b'.' | b')'))
        && matches!(line.as_bytes().get(digits + 1), None | Some(b' '))
}

/// The opening of a code fence (its marker: three or more backticks or tildes).
fn fence(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then(|| &t[..n])
}

/// Whether `line` closes the fence opened by `marker`: the same character, at least as many,
/// nothing else.
fn closes(line: &str, marker: &str) -> bool {
    let t = line.trim();
    let c = marker.chars().next().unwrap_or('`');
    t.starts_with(marker) && t.chars().all(|x| x == c)
}

/// The lines of `text` that are prose, with their 1-based numbers: `None` for a line that is
/// not (inside a code fence, a table row, a heading, an HTML comment, a generated part) or is
/// blank, so that such a line ends the block before it.
fn prose_lines(text: &str) -> Vec<(usize, Option<&str>)> {
    let mut out = Vec::new();
    let mut in_fence: Option<String> = None;
    let mut in_comment = false;
    let mut generated: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if let Some(marker) = &in_fence {
            if closes(line, marker) {
                in_fence = None;
            }
            out.push((n, None));
            continue;
        }
        if let Some(end) = &generated {
            if t.starts_with(end.as_str()) {
                generated = None;
            }
            out.push((n, None));
            continue;
        }
        if in_comment {
            if t.contains("-->") {
                in_comment = false;
            }
            out.push((n, None));
            continue;
        }
        if let Some(f) = fence(line) {
            in_fence = Some(f.to_string());
            out.push((n, None));
            continue;
        }
        if let Some(rest) = t.strip_prefix("<!--") {
            // `<!-- name:begin …` opens a generated part that `<!-- name:end` closes.
            match rest.find(":begin") {
                Some(i) => generated = Some(format!("<!-- {}:end", rest[..i].trim())),
                None => in_comment = !t.contains("-->"),
            }
            out.push((n, None));
            continue;
        }
        if t.is_empty() || t.starts_with('|') || t.starts_with('#') {
            out.push((n, None));
            continue;
        }
        out.push((n, Some(t)));
    }
    out
}

/// Every paragraph and list item of `text`.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut open = false;
    for (n, line) in prose_lines(text) {
        let Some(t) = line else {
            open = false;
            continue;
        };
        let t = t.trim_start_matches('>').trim();
        let chars = t.chars().count();
        if is_list_item(t) || !open {
            let kind = if is_list_item(t) {
                Kind::ListItem
            } else {
                Kind::Paragraph
            };
            out.push(Block {
                line: n,
                kind,
                chars,
            });
            open = true;
        } else if let Some(b) = out.last_mut() {
            b.chars += 1 + chars;
        }
    }
    out
}

/// A link's target and the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    /// 1-based.
    pub(crate) line: usize,
    /// As written, without a title.
    pub(crate) target: String,
}

/// `line` with its inline code spans blanked out (their text is not Markdown).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let ticks = rest[i..].chars().take_while(|&c| c == '`').count();
        let marker = &rest[i..i + ticks];
        let after = &rest[i + ticks..];
        match after.find(marker) {
            Some(j) => {
                out.push_str(&" ".repeat(ticks * 2 + j));
                rest = &after[j + ticks..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every link target of `text` outside code: `[text](target "title")`, `![alt](target)`,
/// `<target>` inside the parentheses, and reference definitions `[id]: target`.
pub(crate) fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    let mut in_fence: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        if let Some(marker) = &in_fence {
            if closes(raw, marker) {
                in_fence = None;
            }
            continue;
        }
        if let Some(f) = fence(raw) {
            in_fence = Some(f.to_string());
            continue;
        }
        let line = without_code_spans(raw);
        let t = line.trim_start();
        // A reference definition: `[id]: target`.
        let definition = t
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]:"))
            .filter(|(label, _)| !label.contains(']'));
        if let Some((_, def)) = definition {
            if let Some(target) = def.split_whitespace().next() {
                out.push(Link {
                    line: i + 1,
                    target: target.trim_matches(['<', '>']).to_string(),
                });
            }
            continue;
        }
        let mut rest = line.as_str();
        while let Some(j) = rest.find("](") {
            rest = &rest[j + 2..];
            // Up to the parenthesis that closes this one (targets may hold balanced ones).
            let mut depth = 0usize;
            let mut end = rest.len();
            for (k, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = k;
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let inside = rest[..end].trim();
            let target = match inside.strip_prefix('<') {
                Some(t) => t.split('>').next().unwrap_or_default(),
                None => inside.split_whitespace().next().unwrap_or_default(),
            };
            out.push(Link {
                line: i + 1,
                target: target.to_string(),
            });
            rest = &rest[end..];
        }
    }
    out
}

/// Why `target`, a link in `file` (whose text is `text`), is broken; `None` when it is not
/// or is not relative (a URL, `mailto:`).
fn broken(root: &Path, file: &str, text: &str, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("a link with an empty target".to_string());
    }
    if target.contains("://") || target.starts_with("mailto:") || target.starts_with("//") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let path = percent_decode(path.split('?').next().unwrap_or_default());
    let (resolved, shown) = if path.is_empty() {
        (root.join(file), file.to_string())
    } else {
        let joined = resolve(file, &path)?;
        (root.join(&joined), joined)
    };
    if !path.is_empty() && !resolved.exists() {
        return Some(format!("link to {target}: {shown} does not exist"));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if !path.is_empty() && (!shown.ends_with(".md") || !resolved.is_file()) {
        return None;
    }
    let doc = if path.is_empty() {
        text.to_string()
    } else {
        std::fs::read_to_string(&resolved).ok()?
    };
    let anchor = percent_decode(anchor).to_lowercase();
    if anchors(&doc).contains(&anchor) {
        None
    } else {
        Some(format!(
            "link to {target}: {shown} has no heading whose anchor is #{anchor}"
        ))
    }
}

/// `path` (a link in `file`) as a path from the repository root; a leading `/` is the root.
/// `None` when it climbs out of the repository (not this check's business).
fn resolve(file: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        let mut dir: Vec<&str> = file.split('/').collect();
        dir.pop();
        dir
    };
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let joined: PathBuf = parts.iter().collect();
    Some(joined.to_string_lossy().replace('\\', "/"))
}

/// `%20` and the like decoded (invalid escapes kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| s.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        if let Some(v) = escaped {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The anchors of a Markdown file as GitHub makes them: each heading lower-cased, its
/// punctuation (but `-` and `_`) dropped, spaces as `-`, a repeat suffixed `-1`, `-2`, …;
/// and HTML `id="…"` / `name="…"` attributes.
pub(crate) fn anchors(doc: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, line) in prose_or_heading_lines(doc) {
        let t = line.trim();
        for attr in ["id=\"", "name=\""] {
            let mut rest = t;
            while let Some(i) = rest.find(attr) {
                rest = &rest[i + attr.len()..];
                if let Some(end) = rest.find('"') {
                    out.push(rest[..end].to_lowercase());
                }
            }
        }
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let title = link_texts(t[hashes..].trim().trim_end_matches('#').trim());
        let mut slug = String::new();
        for c in title.chars().flat_map(char::to_lowercase) {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                slug.push(c);
            } else if c == ' ' {
                slug.push('-');
            }
        }
        let base = slug.clone();
        let mut k = 0;
        while out.contains(&slug) {
            k += 1;
            slug = format!("{base}-{k}");
        }
        out.push(slug);
    }
    out
}

/// The lines of `doc` outside code fences (headings included).
fn prose_or_heading_lines(doc: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_fence: Option<String> = None;
    for (i, line) in doc.lines().enumerate() {
        if let Some(marker) = &in_fence {
            if closes(line, marker) {
                in_fence = None;
            }
            continue;
        }
        if let Some(f) = fence(line) {
            in_fence = Some(f.to_string());
            continue;
        }
        out.push((i + 1, line));
    }
    out
}

/// `[text](target)` as `text`, so a heading's anchor is made from what it shows.
fn link_texts(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("](") {
        let Some(open) = rest[..i].rfind('[') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..i]);
        rest = match rest[i..].find(')') {
            Some(j) => &rest[i + j + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
