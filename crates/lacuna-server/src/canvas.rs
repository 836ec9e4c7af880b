//! The `stream_options.include_canvas` extension: each step's whole generated region, so a
//! client can draw the canvas denoising (masks turning into tokens).

use lacuna::StepView;
use lacuna::tokenizer::Tokenizer;
use serde_json::{Value, json};

/// `{"step", "steps", "block", "blocks", "tokens": [text | null for a mask], "committed":
/// [indices into tokens committed this step]}`, for an infill `"suffix": [text]`, the
/// fixed tokens after the middle (the prefix is the request's prompt), and for
/// DiffusionGemma `"draft": n`, the last n tokens being a draft redrawn every step (then
/// `committed` are the draft positions accepted this step, and `block`/`blocks` count
/// canvases). Token texts are their
/// pieces with control tokens shown (so an end token is visible where it lands); invalid
/// UTF-8 becomes U+FFFD.
pub(crate) fn canvas_json(tokenizer: &Tokenizer, mask_id: u32, view: &StepView<'_>) -> Value {
    let pieces = |ids: &[u32]| -> Vec<Value> {
        ids.iter()
            .map(|&t| {
                if t == mask_id {
                    Value::Null
                } else {
                    let bytes = tokenizer.token_bytes(t, true).unwrap_or(b"?");
                    Value::String(String::from_utf8_lossy(bytes).into_owned())
                }
            })
            .collect()
    };
    let tokens = pieces(&view.canvas[view.prompt_len..]);
    let committed: Vec<usize> = view
        .committed
        .iter()
        .filter_map(|&p| p.checked_sub(view.prompt_len))
        .collect();
    let mut v = json!({
        "step": view.step + 1,
        "steps": view.total_steps,
        "block": view.block,
        "blocks": view.num_blocks,
        "tokens": tokens,
        "committed": committed,
    });
    if !view.suffix.is_empty() {
        v["suffix"] = Value::Array(pieces(view.suffix));
    }
    if view.draft > 0 {
        v["draft"] = json!(view.draft);
    }
    v
}
