//! `logprobs` on both endpoints over the demo model: OpenAI's shapes, and the figures are the
//! engine's own (each token's log-probability from the step that committed it).

mod common;

use common::{post, shared};
use lacuna::{GenerateRequest, Prompt};
use serde_json::{Value, json};

fn alone(prompt: Prompt, top: usize) -> lacuna::Output {
    let mut engine = common::demo_engine();
    let mut r = GenerateRequest::new(prompt);
    r.gen_length = 32;
    r.steps = 16;
    r.block_length = Some(32);
    r.seed = 1;
    r.logprobs = Some(top);
    engine.generate(&r, |_| {}).unwrap()
}

fn close(v: &Value, want: f32) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - f64::from(want)).abs() < 1e-5, "{got} vs {want}");
    assert!(got <= 0.0);
}

#[test]
fn completions_report_the_legacy_shape() {
    let s = shared();
    let want = alone(Prompt::Text("And God said,".into()), 3);
    let body = json!({
        "model": "lacuna-demo",
        "prompt": "And God said,",
        "max_tokens": 32,
        "seed": 1,
        "logprobs": 3,
        "diffusion": {"steps": 16},
    });
    let r = post(s.addr, "/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let choice = &j["choices"][0];
    assert_eq!(choice["text"], want.text.as_str());
    let lp = &choice["logprobs"];
    let records: Vec<_> = want
        .logprobs
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert!(!records.is_empty());
    let tokens = lp["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), records.len());
    assert_eq!(
        tokens.len(),
        j["usage"]["completion_tokens"].as_u64().unwrap() as usize
    );
    let offsets = lp["text_offset"].as_array().unwrap();
    let mut at = 0;
    for (i, rec) in records.iter().enumerate() {
        close(&lp["token_logprobs"][i], rec.logprob);
        let top = lp["top_logprobs"][i].as_object().unwrap();
        // Alternatives are keyed by their text; distinct tokens may share one (few here).
        assert!(!top.is_empty() && top.len() <= 3, "{top:?}");
        for t in &rec.top {
            assert!(
                top.values()
                    .any(|v| (v.as_f64().unwrap() - f64::from(t.logprob)).abs() < 1e-5)
            );
        }
        assert_eq!(offsets[i].as_u64().unwrap() as usize, at);
        at += tokens[i].as_str().unwrap().len();
    }
}

#[test]
fn chat_reports_content_entries() {
    let s = shared();
    let want = alone(Prompt::user("Who made the heaven?"), 2);
    let body = json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": "Who made the heaven?"}],
        "max_tokens": 32,
        "seed": 1,
        "logprobs": true,
        "top_logprobs": 2,
        "diffusion": {"steps": 16},
    });
    let r = post(s.addr, "/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let choice = &j["choices"][0];
    assert_eq!(choice["message"]["content"], want.text.as_str());
    let content = choice["logprobs"]["content"].as_array().unwrap();
    let records: Vec<_> = want
        .logprobs
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert!(!records.is_empty());
    assert_eq!(content.len(), records.len());
    for (c, rec) in content.iter().zip(&records) {
        close(&c["logprob"], rec.logprob);
        let bytes: Vec<u8> = c["bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            c["token"].as_str().unwrap()
        );
        let top = c["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 2);
        let lps: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
        assert!(lps[0] >= lps[1]);
        for (t, w) in top.iter().zip(&rec.top) {
            close(&t["logprob"], w.logprob);
        }
        // The chosen token is among the alternatives whenever it beats the last one.
        if c["logprob"].as_f64().unwrap() > lps[1] + 1e-6 {
            assert!(top.iter().any(|t| t["token"] == c["token"]), "{c}");
        }
    }
    // Without `logprobs`, the field is null.
    let mut plain = body.clone();
    plain.as_object_mut().unwrap().remove("logprobs");
    plain.as_object_mut().unwrap().remove("top_logprobs");
    let r = post(s.addr, "/v1/chat/completions", &plain);
    assert_eq!(r.json()["choices"][0]["logprobs"], Value::Null);
}

/// The SSE chunks of a streamed response, `[DONE]` left out.
fn chunks(resp: &common::Resp) -> Vec<Value> {
    let data = resp.sse();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn streamed_entries_add_up_to_the_whole_answer() {
    let s = shared();
    for (path, extra) in [
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "Who made the heaven?"}],
                   "logprobs": true, "top_logprobs": 2}),
        ),
        (
            "/v1/completions",
            json!({"prompt": "And God said,", "logprobs": 2}),
        ),
    ] {
        let mut body = json!({
            "model": "lacuna-demo",
            "max_tokens": 64,
            "seed": 1,
            "diffusion": {"steps": 16},
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let whole = post(s.addr, path, &body).json();
        body["stream"] = json!(true);
        let streamed = chunks(&post(s.addr, path, &body));
        let chat = path.contains("chat");
        let mut got: Vec<Value> = Vec::new();
        let mut with_entries = 0;
        for c in &streamed {
            let lp = &c["choices"][0]["logprobs"];
            if lp.is_null() {
                continue;
            }
            with_entries += 1;
            if chat {
                got.extend(lp["content"].as_array().unwrap().iter().cloned());
            } else {
                for (i, t) in lp["tokens"].as_array().unwrap().iter().enumerate() {
                    got.push(json!([t, lp["token_logprobs"][i], lp["text_offset"][i]]));
                }
            }
        }
        let lp = &whole["choices"][0]["logprobs"];
        let want: Vec<Value> = if chat {
            lp["content"].as_array().unwrap().clone()
        } else {
            (0..lp["tokens"].as_array().unwrap().len())
                .map(|i| {
                    json!([
                        lp["tokens"][i],
                        lp["token_logprobs"][i],
                        lp["text_offset"][i]
                    ])
                })
                .collect()
        };
        assert!(!want.is_empty(), "{whole}");
        assert_eq!(got, want, "{path}");
        // Two blocks of 32 settle over several steps: entries stream, not all at the end.
        assert!(
            with_entries >= 2,
            "{path}: {with_entries} chunks with entries"
        );
    }
}
