use super::*;
use lacuna::{Engine, EngineOptions};

fn demo() -> Engine {
    Engine::demo(&EngineOptions {
        threads: Some(1),
        ..Default::default()
    })
    .unwrap()
}

/// Feeds `tokens` settling left to right one at a time (masks after), collecting deltas.
fn stream(engine: &Engine, tokens: &[u32], stops: Vec<String>) -> (String, SettledText) {
    stream_as(engine, tokens, stops, false)
}

/// [`stream`], raw (`true`: the tokens' bytes, as a constrained answer's text is).
fn stream_as(
    engine: &Engine,
    tokens: &[u32],
    stops: Vec<String>,
    raw: bool,
) -> (String, SettledText) {
    let tok = engine.tokenizer();
    let mask = engine.mask_token_id();
    let mut t = SettledText::new(tok, mask, engine.eos_ids(), stops, raw);
    let mut out = String::new();
    for k in 0..=tokens.len() {
        let mut canvas = tokens[..k].to_vec();
        canvas.resize(tokens.len(), mask);
        out.push_str(&t.update(tok, &canvas));
    }
    (out, t)
}

#[test]
fn deltas_concatenate_to_the_decoded_text() {
    let e = demo();
    let ids = e
        .tokenizer()
        .encode(
            "And God said, Let there be light: and there was light.",
            false,
            false,
        )
        .unwrap();
    let whole = e.tokenizer().decode(&ids).unwrap();
    let (streamed, mut t) = stream(&e, &ids, Vec::new());
    let (rest, text) = t.finish(&whole);
    assert_eq!(format!("{streamed}{rest}"), whole);
    assert_eq!(text, whole);
}

#[test]
fn nothing_after_a_mask_or_end_token_is_sent() {
    let e = demo();
    let tok = e.tokenizer();
    let mask = e.mask_token_id();
    let ids = tok.encode("And God said", false, false).unwrap();
    let mut t = SettledText::new(tok, mask, e.eos_ids(), Vec::new(), false);
    // The last token settles first: nothing is sent until the ones before it do.
    let mut canvas = vec![mask; ids.len()];
    *canvas.last_mut().unwrap() = *ids.last().unwrap();
    assert_eq!(t.update(tok, &canvas), "");
    let eos = e.eos_ids()[0];
    let mut canvas = ids.clone();
    canvas.push(eos);
    canvas.extend(&ids);
    let sent = t.update(tok, &canvas);
    assert_eq!(sent, tok.decode(&ids).unwrap());
    assert_eq!(t.settled_tokens(), ids.len());
}

#[test]
fn stop_sequences_cut_and_are_never_sent_in_part() {
    let e = demo();
    let ids = e
        .tokenizer()
        .encode("And God said, Let there be light", false, false)
        .unwrap();
    let (streamed, t) = stream(&e, &ids, vec!["Let there".into()]);
    assert_eq!(streamed, "And God said, ");
    assert!(t.stopped());
    // A stop sequence that never completes is held back only while it could.
    let (streamed, mut t) = stream(&e, &ids, vec!["light!".into()]);
    let whole = e.tokenizer().decode(&ids).unwrap();
    assert!(!streamed.ends_with("light"));
    let (rest, _) = t.finish(&whole);
    assert_eq!(format!("{streamed}{rest}"), whole);
    assert!(!t.stopped());
}

#[test]
fn a_raw_text_is_the_tokens_bytes_not_the_cleaned_up_text() {
    let e = demo();
    let tok = e.tokenizer();
    // Space clean-up drops the space before `.` and `,`; a constrained answer keeps it.
    let ids = tok
        .encode("{\"a\" : 1 , \"b\" : \"x .\"}", false, false)
        .unwrap();
    let raw = tok.concat(&ids).unwrap();
    assert_ne!(
        raw,
        tok.decode(&ids).unwrap(),
        "the test needs text clean-up changes"
    );
    let (streamed, mut t) = stream_as(&e, &ids, Vec::new(), true);
    let (rest, text) = t.finish(&raw);
    assert_eq!(format!("{streamed}{rest}"), raw);
    assert_eq!(text, raw);
}
