//! The server end to end on 127.0.0.1 over the demo model: every endpoint, the OpenAI shapes,
//! streaming, and that a request's output is token for token what the engine gives alone.

mod common;

use common::{get, post, request, shared};
use lacuna::{GenerateRequest, Prompt, Remasking};
use serde_json::{Value, json};

/// What `lacuna run --raw` computes for the completion request below.
fn alone(prompt: &str, len: usize, steps: usize, temperature: f64, seed: u64) -> lacuna::Output {
    let mut engine = common::demo_engine();
    let mut r = GenerateRequest::new(Prompt::Text(prompt.to_string()));
    r.gen_length = len;
    r.steps = steps;
    r.block_length = Some(32);
    r.temperature = temperature;
    r.seed = seed;
    if temperature > 0.0 {
        r.remasking = Some(Remasking::Random);
    }
    engine.generate(&r, |_| {}).unwrap()
}

fn completion_body(prompt: &str, len: usize, steps: usize, temperature: f64, seed: u64) -> Value {
    let mut d = json!({"steps": steps, "block_length": 32});
    if temperature > 0.0 {
        d["remasking"] = json!("random");
    }
    json!({
        "model": "lacuna-demo",
        "prompt": prompt,
        "max_tokens": len,
        "temperature": temperature,
        "seed": seed,
        "diffusion": d,
    })
}

#[test]
fn models_health_and_metrics() {
    let s = shared();
    let r = get(s.addr, "/v1/models");
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["object"], "list");
    assert_eq!(j["data"][0]["id"], "lacuna-demo");
    assert_eq!(j["data"][0]["object"], "model");
    assert_eq!(j["data"][0]["architecture"], "llada");
    assert_eq!(
        get(s.addr, "/v1/models/lacuna-demo").json()["id"],
        "lacuna-demo"
    );
    let r = get(s.addr, "/v1/models/gpt-4");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    let h = get(s.addr, "/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.json()["status"], "ok");
    let m = get(s.addr, "/metrics");
    assert_eq!(m.status, 200);
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    for name in [
        "lacuna_queue_depth",
        "lacuna_active_canvases",
        "lacuna_steps_per_second",
        "lacuna_tokens_per_second",
        "lacuna_requests_total{outcome=\"completed\"}",
    ] {
        assert!(m.text().contains(name), "{name} missing from\n{}", m.text());
    }
}

#[test]
fn completion_equals_the_engine_alone() {
    let s = shared();
    let want = alone("And God said,", 64, 32, 0.0, 3);
    let r = post(
        s.addr,
        "/v1/completions",
        &completion_body("And God said,", 64, 32, 0.0, 3),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["object"], "text_completion");
    assert!(j["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(j["model"], "lacuna-demo");
    assert_eq!(j["choices"][0]["text"], want.text.as_str());
    assert_eq!(j["usage"]["completion_tokens"], want.tokens.len());
    assert_eq!(j["usage"]["prompt_tokens"], want.prompt_tokens.len());
    assert_eq!(
        j["usage"]["total_tokens"],
        want.tokens.len() + want.prompt_tokens.len()
    );
    let reason = if want.tokens.len() < 64 {
        "stop"
    } else {
        "length"
    };
    assert_eq!(j["choices"][0]["finish_reason"], reason);
    assert_eq!(j["diffusion"]["steps"], want.stats.steps);
    assert!(!want.text.is_empty());
}

#[test]
fn chat_completion_uses_the_template() {
    let s = shared();
    let mut engine = common::demo_engine();
    let mut r = GenerateRequest::new(Prompt::user("Who made the heaven?"));
    r.gen_length = 32;
    r.steps = 16;
    r.block_length = Some(32);
    let want = engine.generate(&r, |_| {}).unwrap();
    let body = json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Who made the heaven?"}]}],
        "max_tokens": 32,
        "diffusion": {"steps": 16},
    });
    let resp = post(s.addr, "/v1/chat/completions", &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let j = resp.json();
    assert_eq!(j["object"], "chat.completion");
    assert_eq!(j["choices"][0]["message"]["role"], "assistant");
    assert_eq!(j["choices"][0]["message"]["content"], want.text.as_str());
    assert_eq!(j["usage"]["prompt_tokens"], want.prompt_tokens.len());
}

/// Requests running at once (interleaved step by step, each with its own settings, seed and
/// cache) give exactly what each gives alone.
#[test]
fn concurrent_requests_keep_their_own_settings() {
    let s = common::start(common::config());
    let cases = [
        ("And God said,", 64, 32, 0.0, 1),
        ("In the beginning", 32, 8, 0.8, 7),
        ("And the LORD spake unto Moses,", 96, 48, 0.0, 2),
        ("Blessed are", 64, 16, 1.0, 11),
    ];
    let wants: Vec<_> = cases
        .iter()
        .map(|&(p, l, st, t, seed)| alone(p, l, st, t, seed))
        .collect();
    let mut fast = completion_body("And God said,", 64, 64, 0.0, 5);
    fast["diffusion"]["cache"] = json!("dual");
    let want_fast = {
        let mut engine = common::demo_engine();
        let mut r = GenerateRequest::new(Prompt::Text("And God said,".into()));
        r.gen_length = 64;
        r.steps = 64;
        r.block_length = Some(32);
        r.cache = lacuna::CachePolicy::Dual;
        r.seed = 5;
        engine.generate(&r, |_| {}).unwrap()
    };
    let addr = s.addr;
    let handles: Vec<_> = cases
        .iter()
        .map(|&(p, l, st, t, seed)| completion_body(p, l, st, t, seed))
        .chain(std::iter::once(fast))
        .map(|body| std::thread::spawn(move || post(addr, "/v1/completions", &body)))
        .collect();
    let got: Vec<Value> = handles
        .into_iter()
        .map(|h| h.join().unwrap().json())
        .collect();
    for (i, want) in wants.iter().chain(std::iter::once(&want_fast)).enumerate() {
        assert_eq!(
            got[i]["choices"][0]["text"],
            want.text.as_str(),
            "request {i} differs from its run alone"
        );
        assert_eq!(got[i]["usage"]["completion_tokens"], want.tokens.len());
    }
    // All five were answered by this server (default --max-concurrent 4: four ran
    // interleaved while the fifth queued).
    let m = get(s.addr, "/metrics").text();
    assert!(
        m.contains("lacuna_requests_total{outcome=\"completed\"} 5"),
        "{m}"
    );
}

fn chunks(resp: &common::Resp) -> Vec<Value> {
    let data = resp.sse();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn streaming_concatenates_to_the_whole_answer() {
    let s = shared();
    let want = alone("And God said,", 64, 32, 0.0, 0);
    let mut body = completion_body("And God said,", 64, 32, 0.0, 0);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = post(s.addr, "/v1/completions", &body);
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let cs = chunks(&r);
    let text: String = cs
        .iter()
        .filter_map(|c| c["choices"].get(0).and_then(|ch| ch["text"].as_str()))
        .collect();
    assert_eq!(text, want.text);
    // More than one content chunk: the text streams as it settles, not in one piece.
    let pieces = cs
        .iter()
        .filter(|c| {
            c["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert!(pieces > 1, "the answer came in {pieces} chunk(s)");
    let usage = cs.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], want.tokens.len());
    let finish: Vec<_> = cs
        .iter()
        .filter_map(|c| {
            c["choices"]
                .get(0)
                .and_then(|ch| ch["finish_reason"].as_str())
        })
        .collect();
    assert_eq!(finish.len(), 1);
}

#[test]
fn chat_stream_has_role_first_and_canvas_on_request() {
    let s = shared();
    let body = json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": "Who made the heaven?"}],
        "max_tokens": 32,
        "stream": true,
        "stream_options": {"include_canvas": true},
        "diffusion": {"steps": 8},
    });
    let r = post(s.addr, "/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let cs = chunks(&r);
    assert_eq!(cs[0]["object"], "chat.completion.chunk");
    assert_eq!(cs[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(
        cs[1..]
            .iter()
            .all(|c| c["choices"][0]["delta"].get("role").is_none())
    );
    let canvases: Vec<&Value> = cs
        .iter()
        .filter_map(|c| c["choices"][0].get("canvas"))
        .collect();
    // One canvas per step; masks (null) only decrease; the last step has none left unless
    // an end token settled early.
    assert!(!canvases.is_empty() && canvases.len() <= 8);
    let masks = |c: &Value| {
        c["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.is_null())
            .count()
    };
    for w in canvases.windows(2) {
        assert!(masks(w[1]) < masks(w[0]));
        assert_eq!(
            w[1]["step"].as_u64().unwrap(),
            w[0]["step"].as_u64().unwrap() + 1
        );
    }
    assert_eq!(canvases[0]["tokens"].as_array().unwrap().len(), 32);
    assert_eq!(canvases[0]["committed"].as_array().unwrap().len(), 4);
    let content: String = cs
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    let plain = post(
        s.addr,
        "/v1/chat/completions",
        &json!({
            "model": "lacuna-demo",
            "messages": [{"role": "user", "content": "Who made the heaven?"}],
            "max_tokens": 32,
            "diffusion": {"steps": 8},
        }),
    );
    assert_eq!(
        plain.json()["choices"][0]["message"]["content"],
        content.as_str()
    );
}

#[test]
fn a_stop_sequence_cuts_the_text() {
    let s = shared();
    let want = alone("And God said,", 64, 32, 0.0, 0);
    // A word from the middle of the known answer.
    let words: Vec<&str> = want.text.split_whitespace().collect();
    assert!(words.len() > 4, "{:?}", want.text);
    let stop = words[words.len() / 2];
    let cut = &want.text[..want.text.find(stop).unwrap()];
    let mut body = completion_body("And God said,", 64, 32, 0.0, 0);
    body["stop"] = json!([stop, "zzzz-never"]);
    let j = post(s.addr, "/v1/completions", &body).json();
    assert_eq!(j["choices"][0]["text"], cut);
    assert_eq!(j["choices"][0]["finish_reason"], "stop");
    body["stream"] = json!(true);
    let r = post(s.addr, "/v1/completions", &body);
    let text: String = chunks(&r)
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(text, cut);
}

#[test]
fn request_id_is_echoed_or_made() {
    let s = shared();
    let r = request(
        s.addr,
        "GET",
        "/health",
        &[("X-Request-ID", "abc-123")],
        b"",
    );
    assert_eq!(r.header("x-request-id"), Some("abc-123"));
    let r = get(s.addr, "/v1/models");
    assert!(r.header("x-request-id").is_some_and(|v| !v.is_empty()));
}

#[test]
fn the_page_is_served() {
    let s = shared();
    let r = get(s.addr, "/");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let html = r.text();
    assert!(html.contains("include_canvas") && html.contains("/v1/chat/completions"));
    // No external assets.
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "external reference"
    );
}
