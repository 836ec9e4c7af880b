//! Infilling over HTTP on the demo model: OpenAI's `suffix` on `/v1/completions` and
//! llama-server's `POST /infill` (the fields editor plugins send) answer with the middle the
//! engine fills between prefix and suffix; what cannot be served is a 400 naming why.

mod common;

use common::{post, shared};
use lacuna::GenerateRequest;
use serde_json::json;

/// What the engine fills between `prefix` and `suffix` (16 tokens, 16 steps, one block).
fn alone(prefix: &str, suffix: &str) -> lacuna::Output {
    let mut engine = common::demo_engine();
    let mut r = GenerateRequest::infill(prefix, suffix);
    r.gen_length = 16;
    r.steps = 16;
    r.block_length = Some(16);
    r.seed = 1;
    engine.generate(&r, |_| {}).unwrap()
}

#[test]
fn completions_take_a_suffix() {
    let s = shared();
    let want = alone("And God said,", " and it was so.");
    let body = json!({
        "model": "lacuna-demo",
        "prompt": "And God said,",
        "suffix": " and it was so.",
        "max_tokens": 16,
        "seed": 1,
        "diffusion": {"steps": 16, "block_length": 16},
    });
    let r = post(s.addr, "/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["choices"][0]["text"], want.text.as_str());
    // Without the suffix the same request fills otherwise: the suffix reached the model.
    let mut plain = body.clone();
    plain.as_object_mut().unwrap().remove("suffix");
    let r = post(s.addr, "/v1/completions", &plain);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_ne!(r.json()["choices"][0]["text"], want.text.as_str());
    // A suffix that is not a string names the field.
    let mut bad = body.clone();
    bad["suffix"] = json!(3);
    let r = post(s.addr, "/v1/completions", &bad);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "suffix");
}

#[test]
fn infill_speaks_llama_server() {
    let s = shared();
    // llama.vim's request: extra context, prefix, cursor text, suffix, and its hints.
    let body = json!({
        "input_prefix": "And God said,",
        "input_suffix": " and it was so.",
        "input_extra": [{"filename": "genesis.txt", "text": "In the beginning"}],
        "prompt": "",
        "n_predict": 16,
        "top_k": 40,
        "top_p": 0.9,
        "samplers": ["top_k", "top_p", "infill"],
        "stream": false,
        "cache_prompt": true,
        "t_max_prompt_ms": 500,
        "t_max_predict_ms": 1000,
        "diffusion": {"steps": 16, "block_length": 16},
        "seed": 1,
    });
    let want = alone(
        "genesis.txt\nIn the beginning\nAnd God said,",
        " and it was so.",
    );
    let r = post(s.addr, "/infill", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["content"], want.text.as_str());
    assert_eq!(j["stop"], true);
    assert_eq!(j["tokens_predicted"], want.tokens.len());
    assert_eq!(j["tokens_evaluated"], want.prompt_tokens.len());
    assert!(
        matches!(j["stop_type"].as_str(), Some("eos" | "limit")),
        "{j}"
    );

    // Streamed: pieces with `stop: false`, then one `stop: true`, no [DONE].
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = post(s.addr, "/infill", &streamed);
    assert_eq!(r.status, 200, "{}", r.text());
    let events = r.sse();
    let objs: Vec<serde_json::Value> = events
        .iter()
        .map(|e| serde_json::from_str(e).unwrap_or_else(|_| panic!("not JSON: {e}")))
        .collect();
    let (last, pieces) = objs.split_last().unwrap();
    assert_eq!(last["stop"], true);
    assert!(pieces.iter().all(|p| p["stop"] == false));
    let text: String = pieces
        .iter()
        .map(|p| p["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, want.text);

    // Unknown fields and a wrong model are refused, naming them.
    let mut bad = body.clone();
    bad["grammar"] = json!("root ::= x");
    let r = post(s.addr, "/infill", &bad);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "grammar");
    let mut bad = body.clone();
    bad["n_predict"] = json!(0);
    assert_eq!(post(s.addr, "/infill", &bad).status, 400);
    let mut bad = body;
    bad["model"] = json!("other");
    assert_eq!(post(s.addr, "/infill", &bad).status, 404);
}

#[test]
fn a_length_search_answers_with_its_candidates_and_streams_the_suffix_in_the_canvas() {
    let s = shared();
    let mut engine = common::demo_engine();
    let mut want = GenerateRequest::infill("And God said,", " and it was so.");
    want.gen_length = 16;
    want.steps = 16;
    want.block_length = Some(16);
    want.seed = 1;
    want.infill_lengths = vec![4, 8, 16];
    let want = engine.generate(&want, |_| {}).unwrap();
    let search = want.infill.as_ref().unwrap();
    let body = json!({
        "model": "lacuna-demo",
        "prompt": "And God said,",
        "suffix": " and it was so.",
        "max_tokens": 16,
        "seed": 1,
        "diffusion": {"steps": 16, "block_length": 16, "infill_lengths": [16, 4, 8]},
    });
    let r = post(s.addr, "/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["choices"][0]["text"], want.text.as_str());
    let d = &j["diffusion"];
    assert_eq!(d["infill_length"], search.chosen().length);
    let candidates = d["infill_candidates"].as_array().unwrap();
    let lengths: Vec<u64> = candidates
        .iter()
        .map(|c| c["length"].as_u64().unwrap())
        .collect();
    assert_eq!(lengths, [4, 8, 16]);
    for (c, w) in candidates.iter().zip(&search.candidates) {
        assert_eq!(c["text"], w.text.as_str());
        assert!((c["score"].as_f64().unwrap() - w.score).abs() < 1e-9);
    }

    // Streaming a plain infill: every canvas shows the suffix after the middle.
    let stream = json!({
        "model": "lacuna-demo",
        "prompt": "And God said,",
        "suffix": " and it was so.",
        "max_tokens": 8,
        "stream": true,
        "stream_options": {"include_canvas": true},
        "diffusion": {"steps": 8, "block_length": 8},
    });
    let r = post(s.addr, "/v1/completions", &stream);
    assert_eq!(r.status, 200, "{}", r.text());
    let canvases: Vec<serde_json::Value> = r
        .sse()
        .iter()
        .filter(|e| e.as_str() != "[DONE]")
        .filter_map(|e| serde_json::from_str::<serde_json::Value>(e).ok())
        .filter_map(|c| c["choices"][0].get("canvas").cloned())
        .collect();
    assert!(!canvases.is_empty());
    for c in &canvases {
        let suffix: String = c["suffix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(suffix, " and it was so.");
        assert_eq!(c["tokens"].as_array().unwrap().len(), 8);
    }

    // Lengths without a suffix, a zero length, and a wrong type name the field.
    for (suffix, lengths) in [
        (None, json!([4, 8])),
        (Some("x"), json!([0, 4])),
        (Some("x"), json!("4,8")),
    ] {
        let mut bad = body.clone();
        match suffix {
            Some(s) => bad["suffix"] = json!(s),
            None => {
                bad.as_object_mut().unwrap().remove("suffix");
            }
        }
        bad["diffusion"]["infill_lengths"] = lengths.clone();
        let r = post(s.addr, "/v1/completions", &bad);
        assert_eq!(r.status, 400, "{lengths}: {}", r.text());
        assert_eq!(
            r.json()["error"]["param"],
            "diffusion.infill_lengths",
            "{lengths}"
        );
    }
}
