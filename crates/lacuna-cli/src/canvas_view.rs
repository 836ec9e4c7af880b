//! `--visual`: the canvas redrawn after every step. Masks are a dimmed glyph, tokens
//! committed this step are highlighted, earlier ones plain; the prompt is not shown, except
//! for an infill, where the prefix and the suffix frame the middle (dimmed). DiffusionGemma
//! has no masks: its frames show the earlier canvases and the draft of the current one,
//! positions accepted this step highlighted.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use lacuna::StepView;
use lacuna::tokenizer::Tokenizer;

/// The glyph a masked position is drawn as.
pub(crate) const MASK_GLYPH: char = '░';

const DIM: &str = "\x1b[2m";
const HIGHLIGHT: &str = "\x1b[1;30;43m";
const RESET: &str = "\x1b[0m";

/// How a frame is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// ANSI colors (dim masks, highlighted new tokens); otherwise new tokens are wrapped in
    /// `[` `]`.
    pub(crate) color: bool,
}

/// The text of one token for display: control tokens shown by name, control characters
/// other than newline and tab escaped, and a token that is not whole UTF-8 (one byte of a
/// multi-byte character) as its bytes in hex, `<0xE2>`.
fn piece(tokenizer: &Tokenizer, id: u32) -> String {
    let bytes = tokenizer.token_bytes(id, true).unwrap_or(b"?");
    let Ok(text) = std::str::from_utf8(bytes) else {
        return bytes.iter().map(|b| format!("<0x{b:02X}>")).collect();
    };
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Appends the pieces of `ids`, dimmed when `style.color` (an infill's prefix and suffix).
fn push_fixed(out: &mut String, ids: &[u32], tokenizer: &Tokenizer, style: Style) {
    if style.color {
        out.push_str(DIM);
    }
    for &id in ids {
        out.push_str(&piece(tokenizer, id));
    }
    if style.color {
        out.push_str(RESET);
    }
}

/// One frame: a status line, then the generated region (between prefix and suffix for an
/// infill).
pub(crate) fn render_frame(
    view: &StepView<'_>,
    tokenizer: &Tokenizer,
    mask: u32,
    style: Style,
) -> String {
    let region = &view.canvas[view.prompt_len..];
    // A model that drafts (uniform noise, no mask token) draws every token as a token.
    let is_mask = |t: u32| view.draft == 0 && t == mask;
    let mut out = if view.draft > 0 {
        format!(
            "step {}/{}  canvas {}/{}  accepted {}/{}\n",
            view.step + 1,
            view.total_steps,
            view.block + 1,
            view.num_blocks,
            view.committed.len(),
            view.draft
        )
    } else {
        format!(
            "step {}/{}  block {}/{}  committed {}  masks left {}/{}\n",
            view.step + 1,
            view.total_steps,
            view.block + 1,
            view.num_blocks,
            view.committed.len(),
            region.iter().filter(|&&t| is_mask(t)).count(),
            region.len()
        )
    };
    let infill = !view.suffix.is_empty();
    if infill {
        push_fixed(&mut out, &view.canvas[..view.prompt_len], tokenizer, style);
    }
    for (i, &token) in region.iter().enumerate() {
        let position = view.prompt_len + i;
        if is_mask(token) {
            if style.color {
                out.push_str(DIM);
                out.push(MASK_GLYPH);
                out.push_str(RESET);
            } else {
                out.push(MASK_GLYPH);
            }
        } else if view.committed.contains(&position) {
            let text = piece(tokenizer, token);
            if style.color {
                out.push_str(HIGHLIGHT);
                out.push_str(&text);
                out.push_str(RESET);
            } else {
                out.push('[');
                out.push_str(&text);
                out.push(']');
            }
        } else {
            out.push_str(&piece(tokenizer, token));
        }
    }
    if infill {
        push_fixed(&mut out, view.suffix, tokenizer, style);
    }
    out.push('\n');
    out
}

/// Draws frames on stderr: on a terminal each frame replaces the last; otherwise frames
/// follow each other, separated by a blank line.
pub(crate) struct CanvasView {
    tokenizer: Arc<Tokenizer>,
    mask: u32,
    tty: bool,
    frames: usize,
}

impl CanvasView {
    /// A view on stderr.
    pub(crate) fn stderr(tokenizer: Arc<Tokenizer>, mask: u32) -> Self {
        Self {
            tokenizer,
            mask,
            tty: std::io::stderr().is_terminal(),
            frames: 0,
        }
    }

    /// Draws the frame of `view`.
    pub(crate) fn draw(&mut self, view: &StepView<'_>) {
        let frame = render_frame(view, &self.tokenizer, self.mask, Style { color: self.tty });
        let mut err = std::io::stderr().lock();
        // A closed stderr only loses the picture; the generation goes on.
        let _ = if self.tty {
            // Home the cursor and clear the screen, then draw.
            write!(err, "\x1b[H\x1b[2J{frame}")
        } else if self.frames == 0 {
            write!(err, "{frame}")
        } else {
            write!(err, "\n{frame}")
        };
        let _ = err.flush();
        self.frames += 1;
    }

    /// Ends the view (a newline on a terminal so the prompt does not run into the canvas).
    pub(crate) fn finish(&mut self) {
        if self.tty && self.frames > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests;
