//! DiffusionGemma through the server: its steps show a draft of the canvas being denoised,
//! which changes at every step, so only committed canvases may stream as text.

mod common;

use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{Engine, EngineOptions};
use lacuna_server::ServerConfig;
use serde_json::{Value, json};

fn engine() -> Engine {
    let spec = FixtureSpec::new(Arch::DiffusionGemma, Shape::Tiny, 2, QuantMix::F32);
    let file = GgufFile::from_vec(fixture::build(&spec).unwrap().to_vec().unwrap()).unwrap();
    Engine::from_gguf(
        file,
        &EngineOptions {
            threads: Some(1),
            ..Default::default()
        },
    )
    .unwrap()
}

fn body(stream: bool) -> Value {
    let mut b = json!({
        "model": "dg",
        "prompt": "hello there",
        "max_tokens": 40,
        "seed": 7,
        "diffusion": {"steps": 6},
    });
    if stream {
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_canvas": true});
    }
    b
}

#[test]
fn streaming_sends_committed_canvases_not_drafts() {
    let s = common::start_with(engine(), ServerConfig::new("dg"));
    let whole = common::post(s.addr, "/v1/completions", &body(false));
    assert_eq!(whole.status, 200, "{}", whole.text());
    let want = whole.json()["choices"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let r = common::post(s.addr, "/v1/completions", &body(true));
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.sse();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0).and_then(|ch| ch["text"].as_str()))
        .collect();
    assert_eq!(text, want, "the stream is the answer, not a step's draft");
    // Every step's canvas carries its draft: the current canvas' tokens, after the
    // committed ones; accepted positions lie inside it.
    let canvases: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0].get("canvas"))
        .collect();
    assert!(!canvases.is_empty());
    for c in &canvases {
        let n = c["tokens"].as_array().unwrap().len();
        let draft = c["draft"].as_u64().expect("a draft length") as usize;
        assert!(draft > 0 && draft <= n, "{c}");
        for p in c["committed"].as_array().unwrap() {
            assert!(p.as_u64().unwrap() as usize >= n - draft, "{c}");
        }
    }
    // While the first canvas is still a draft, nothing has settled: no text streams.
    let first_canvas = chunks.iter().filter(|c| {
        c["choices"][0].get("canvas").is_some_and(|v| {
            v["draft"].as_u64() == Some(v["tokens"].as_array().unwrap().len() as u64)
        })
    });
    let mut seen = 0;
    for c in first_canvas {
        seen += 1;
        let t = c["choices"][0]["text"].as_str().unwrap_or("");
        assert!(t.is_empty(), "a draft streamed as text: {t:?}");
    }
    assert!(seen > 0);
}
