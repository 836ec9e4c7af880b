//! The text a client sees while a canvas denoises: the committed prefix of the generated
//! region, up to the first position still masked (or the first end token), cut at the first
//! stop sequence. It only grows, so it streams as ordinary `delta.content` chunks, and the
//! concatenated chunks equal the final text.

use lacuna::tokenizer::Tokenizer;

/// Tracks the settled text of one generation and what of it was sent.
#[derive(Debug)]
pub(crate) struct SettledText {
    mask_id: u32,
    eos_ids: Vec<u32>,
    stops: Vec<String>,
    hold_spaces: bool,
    /// The text is the tokens' bytes as they are (a constrained answer), not detokenized.
    raw: bool,
    /// Bytes of text already handed out.
    sent: String,
    /// Settled tokens counted so far (for usage when a stop sequence ends early).
    settled_tokens: usize,
    stopped: bool,
}

impl SettledText {
    /// A tracker for a model with `mask_id` and end tokens `eos_ids`, cutting at `stops`;
    /// `raw`: the text is the tokens' bytes concatenated (as a constrained answer's is).
    pub(crate) fn new(
        tokenizer: &Tokenizer,
        mask_id: u32,
        eos_ids: &[u32],
        stops: Vec<String>,
        raw: bool,
    ) -> Self {
        Self {
            mask_id,
            eos_ids: eos_ids.to_vec(),
            stops,
            hold_spaces: !raw && tokenizer.vocab().clean_spaces(),
            raw,
            sent: String::new(),
            settled_tokens: 0,
            stopped: false,
        }
    }

    /// Whether a stop sequence has appeared (generation should end).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Settled generated tokens at the last update.
    pub(crate) fn settled_tokens(&self) -> usize {
        self.settled_tokens
    }

    /// The new text after a step whose generated region is `generated`; empty when nothing
    /// new settled. Text that a later token could still change is held back: an incomplete
    /// UTF-8 sequence, a trailing space when the vocabulary cleans spaces, and a tail that
    /// could be the start of a stop sequence.
    pub(crate) fn update(&mut self, tokenizer: &Tokenizer, generated: &[u32]) -> String {
        if self.stopped {
            return String::new();
        }
        let settled = generated
            .iter()
            .position(|&t| t == self.mask_id || self.eos_ids.contains(&t))
            .unwrap_or(generated.len());
        self.settled_tokens = settled;
        let ids = &generated[..settled];
        let bytes = if self.raw {
            tokenizer.concat_bytes(ids)
        } else {
            tokenizer.detokenize(ids, false, false)
        }
        .unwrap_or_default();
        let valid = match std::str::from_utf8(&bytes) {
            Ok(s) => s,
            // The complete characters; a split one waits for its next token.
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
        };
        let mut text = valid;
        if self.hold_spaces {
            // Space clean-up can still drop a trailing space (" ." " ' " " 're" " 've").
            if let Some(i) = text.rfind(' ') {
                let tail = &text[i + 1..];
                if ["", "'", "'r", "'v"].contains(&tail) {
                    text = &text[..i];
                }
            }
        }
        let text = match self.cut_at_stop(text) {
            Some(cut) => {
                self.stopped = true;
                cut
            }
            None => &text[..text.len() - self.stop_prefix_len(text)],
        };
        self.advance(text)
    }

    /// The rest of the text given the generation's final text (already cut at the first end
    /// token), cut at a stop sequence; returns the delta and the whole text.
    pub(crate) fn finish(&mut self, final_text: &str) -> (String, String) {
        let text = match self.cut_at_stop(final_text) {
            Some(cut) => {
                self.stopped = true;
                cut
            }
            None => final_text,
        };
        let delta = self.advance(text);
        (delta, self.sent.clone())
    }

    /// The text handed out so far is final (a stop sequence ended generation early).
    pub(crate) fn finish_stopped(&self) -> String {
        self.sent.clone()
    }

    fn advance(&mut self, text: &str) -> String {
        match text.strip_prefix(self.sent.as_str()) {
            Some(rest) if !rest.is_empty() => {
                self.sent.push_str(rest);
                rest.to_string()
            }
            Some(_) => String::new(),
            None => {
                // Never expected (a settled prefix does not change); keep what was sent.
                tracing::warn!(sent = %self.sent, text, "settled text changed; not resent");
                String::new()
            }
        }
    }

    /// `text` before its earliest stop sequence, when one occurs.
    fn cut_at_stop<'t>(&self, text: &'t str) -> Option<&'t str> {
        self.stops
            .iter()
            .filter_map(|s| text.find(s.as_str()))
            .min()
            .map(|i| &text[..i])
    }

    /// Bytes at the end of `text` that begin some stop sequence (held back until decided).
    fn stop_prefix_len(&self, text: &str) -> usize {
        let mut longest = 0;
        for stop in &self.stops {
            for (i, _) in stop.char_indices().skip(1) {
                if i > longest && text.ends_with(&stop[..i]) {
                    longest = i;
                }
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests;
