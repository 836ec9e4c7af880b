//! OpenAI's `n`: several choices of one request, each its own canvas with the seed
//! `seed + i`, run at once so their passes batch; every choice is what the request with
//! that seed gives alone, streamed or not, on both endpoints; `/metrics` shows the batches.

mod common;

use common::{get, post, shared};
use lacuna::{GenerateRequest, Prompt, Remasking};
use serde_json::{Value, json};

fn alone(prompt: &str, seed: u64) -> lacuna::Output {
    let mut engine = common::demo_engine();
    let mut r = GenerateRequest::new(Prompt::Text(prompt.to_string()));
    r.gen_length = 32;
    r.steps = 16;
    r.block_length = Some(32);
    r.temperature = 0.8;
    r.remasking = Some(Remasking::Random);
    r.seed = seed;
    engine.generate(&r, |_| {}).unwrap()
}

fn body(prompt: &str, n: usize, seed: u64) -> Value {
    json!({
        "model": "lacuna-demo",
        "prompt": prompt,
        "max_tokens": 32,
        "temperature": 0.8,
        "seed": seed,
        "n": n,
        "diffusion": {"steps": 16, "block_length": 32, "remasking": "random"},
    })
}

#[test]
fn every_choice_is_its_seed_alone_and_usage_sums_them() {
    let s = shared();
    let r = post(s.addr, "/v1/completions", &body("And God said,", 4, 11));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let choices = j["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 4);
    let mut completion = 0;
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i);
        let want = alone("And God said,", 11 + i as u64);
        assert_eq!(c["text"], want.text.as_str(), "choice {i}");
        assert!(c["diffusion"]["forwards"].as_u64().unwrap() > 0);
        completion += want.tokens.len();
    }
    // Different seeds at temperature 0.8: the choices are not all one text.
    assert!(choices.iter().any(|c| c["text"] != choices[0]["text"]));
    assert_eq!(j["usage"]["completion_tokens"], completion);
    assert_eq!(j["usage"]["prompt_tokens"], want_prompt_tokens(&j));
    // The four canvases' passes ran in batches: some forward took more than one.
    let m = get(s.addr, "/metrics").text();
    let count = metric(&m, "lacuna_batch_passes_count");
    let sum = metric(&m, "lacuna_batch_passes_sum");
    let one = metric(&m, "lacuna_batch_passes_bucket{le=\"1\"}");
    assert!(count > 0.0 && sum > count && one < count, "{m}");
    assert_eq!(metric(&m, "lacuna_canvas_passes_total"), sum);
    assert!(metric(&m, "lacuna_batch_tokens_count") == count);
}

fn want_prompt_tokens(j: &Value) -> u64 {
    j["usage"]["total_tokens"].as_u64().unwrap() - j["usage"]["completion_tokens"].as_u64().unwrap()
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from {text}"))
}

#[test]
fn streamed_choices_carry_their_index_and_end_once() {
    let s = shared();
    let mut b = body("In the beginning", 3, 5);
    b["stream"] = json!(true);
    b["stream_options"] = json!({"include_usage": true});
    let r = post(s.addr, "/v1/completions", &b);
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.sse();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(data.iter().filter(|d| *d == "[DONE]").count(), 1);
    let cs: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let mut texts = vec![String::new(); 3];
    let mut finishes = [0; 3];
    for c in &cs {
        for ch in c["choices"].as_array().unwrap() {
            let i = ch["index"].as_u64().unwrap() as usize;
            texts[i].push_str(ch["text"].as_str().unwrap());
            if !ch["finish_reason"].is_null() {
                finishes[i] += 1;
            }
        }
    }
    assert_eq!(finishes, [1, 1, 1]);
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(
            t,
            &alone("In the beginning", 5 + i as u64).text,
            "choice {i}"
        );
    }
    let usage = cs.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    let total: usize = (0..3)
        .map(|i| alone("In the beginning", 5 + i).tokens.len())
        .sum();
    assert_eq!(usage["usage"]["completion_tokens"], total);
}

#[test]
fn chat_takes_n_too() {
    let s = shared();
    let r = post(
        s.addr,
        "/v1/chat/completions",
        &json!({
            "model": "lacuna-demo",
            "messages": [{"role": "user", "content": "Who made the heaven?"}],
            "max_tokens": 16,
            "temperature": 0.0,
            "n": 2,
            "diffusion": {"steps": 8},
        }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let choices = j["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    // Temperature 0: the seed does not matter, both choices are the same answer.
    assert_eq!(choices[0]["message"], choices[1]["message"]);
    assert_eq!(choices[1]["index"], 1);
}
