//! `lacuna run --json`'s `logprobs`: per generated token its text, bytes, log-probability and
//! alternatives, from the denoising step that committed it (the same figures as the
//! server's `logprobs`; see [`lacuna::TokenLogprob`]).

use lacuna::TokenLogprob;
use lacuna::tokenizer::Tokenizer;
use serde_json::{Value, json};

fn piece(tokenizer: &Tokenizer, id: u32, logprob: f32) -> Value {
    let bytes = tokenizer.token_bytes(id, false).unwrap_or_default();
    json!({
        "id": id,
        "token": String::from_utf8_lossy(bytes),
        "bytes": bytes,
        // JSON has no -inf: the lowest f32 stands for it.
        "logprob": if logprob.is_finite() { logprob } else { f32::MIN },
    })
}

/// One object per generated token (`null` for a position never committed).
pub(crate) fn json(tokenizer: &Tokenizer, records: &[Option<TokenLogprob>]) -> Value {
    records
        .iter()
        .map(|r| match r {
            None => Value::Null,
            Some(r) => {
                let mut v = piece(tokenizer, r.token, r.logprob);
                v["top_logprobs"] = r
                    .top
                    .iter()
                    .map(|t| piece(tokenizer, t.token, t.logprob))
                    .collect();
                v
            }
        })
        .collect()
}
