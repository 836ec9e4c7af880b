//! The tokenizer endpoints (vLLM's and llama-server's shapes) and completions' `echo` with
//! prompt log-likelihoods, over the task model: what lm-evaluation-harness reads.

mod common;

use std::sync::OnceLock;

use common::{Running, get, post, start_with};
use lacuna::likelihood::Scoring;
use lacuna::{Demo, Engine, EngineOptions, Prompt};
use serde_json::{Value, json};

const MODEL: &str = "lacuna-demo-tasks";

fn tasks() -> Engine {
    Engine::demo_model(
        Demo::Tasks,
        &EngineOptions {
            threads: Some(1),
            ..Default::default()
        },
    )
    .unwrap()
}

fn server() -> &'static Running {
    static S: OnceLock<Running> = OnceLock::new();
    S.get_or_init(|| {
        let mut config = lacuna_server::ServerConfig::new(MODEL);
        config.likelihood_samples = 16;
        start_with(tasks(), config)
    })
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn tokenize_answers_in_vllm_s_and_llama_server_s_shapes() {
    let s = server();
    let e = tasks();
    let plain = e.tokenizer().encode("add: 2+2=", false, true).unwrap();
    let with_bos = e.tokenizer().encode("add: 2+2=", true, true).unwrap();
    assert_ne!(plain, with_bos);

    let r = post(
        s.addr,
        "/tokenize",
        &json!({"prompt": "add: 2+2=", "add_special_tokens": false}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(ids(&v["tokens"]), plain);
    assert_eq!(v["count"], plain.len());
    assert_eq!(v["max_model_len"], e.context_length());
    assert_eq!(v["token_strs"], Value::Null);
    // vLLM adds special tokens by default.
    let v = post(
        s.addr,
        "/tokenize",
        &json!({"model": MODEL, "prompt": "add: 2+2=", "return_token_strs": true}),
    )
    .json();
    assert_eq!(ids(&v["tokens"]), with_bos);
    assert_eq!(v["token_strs"].as_array().unwrap().len(), with_bos.len());

    // llama-server: no special tokens by default, pieces on request.
    let v = post(s.addr, "/tokenize", &json!({"content": "add: 2+2="})).json();
    assert_eq!(ids(&v["tokens"]), plain);
    let v = post(
        s.addr,
        "/tokenize",
        &json!({"content": "add: 2+2=", "with_pieces": true}),
    )
    .json();
    let pieces = v["tokens"].as_array().unwrap();
    assert_eq!(pieces[0]["id"], plain[0]);
    assert_eq!(pieces[0]["piece"], "add");

    let v = post(s.addr, "/detokenize", &json!({"tokens": plain})).json();
    assert_eq!(v["prompt"], "add: 2+2=");
    assert_eq!(v["content"], "add: 2+2=");
}

#[test]
fn tokenizer_info_names_special_tokens_that_tokenize_back() {
    let s = server();
    let e = tasks();
    let r = get(s.addr, "/tokenizer_info");
    assert_eq!(r.status, 200);
    let info = r.json();
    assert_eq!(info["model_max_length"], e.context_length());
    for (key, id) in [
        ("eos_token", e.eos_ids()[0]),
        ("mask_token", e.mask_token_id()),
    ] {
        let text = info[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {info}"));
        let v = post(
            s.addr,
            "/tokenize",
            &json!({"prompt": text, "add_special_tokens": false}),
        )
        .json();
        assert_eq!(ids(&v["tokens"]), vec![id], "{key}");
    }
}

#[test]
fn bad_tokenizer_requests_name_what_is_wrong() {
    let s = server();
    let cases = [
        (
            "/tokenize",
            json!({"prompt": "x", "bogus": 1}),
            400,
            "bogus",
        ),
        ("/tokenize", json!({}), 400, "prompt"),
        (
            "/tokenize",
            json!({"prompt": "x", "content": "y"}),
            400,
            "content",
        ),
        (
            "/tokenize",
            json!({"prompt": "x", "model": "nope"}),
            404,
            "nope",
        ),
        (
            "/detokenize",
            json!({"tokens": [1, 99999]}),
            400,
            "tokens[1]",
        ),
        ("/detokenize", json!({"tokens": [-1]}), 400, "tokens[0]"),
        ("/detokenize", json!({}), 400, "tokens"),
    ];
    for (path, body, status, names) in cases {
        let r = post(s.addr, path, &body);
        assert_eq!(r.status, status, "{path} {body}: {}", r.text());
        assert!(r.text().contains(names), "{path} {body}: {}", r.text());
    }
}

fn echo(body: Value) -> Value {
    let r = post(server().addr, "/v1/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn echo_scores_every_prompt_token_as_the_engine_does() {
    let mut e = tasks();
    let mut prompt = e.prompt_tokens(&Prompt::Text("add: 2+2=".into())).unwrap();
    prompt.extend(e.tokenizer().encode("4", false, false).unwrap());
    prompt.push(e.eos_ids()[0]);
    let want = e
        .score(
            &prompt,
            &Scoring {
                samples: 16,
                seed: 7,
                top: 1,
            },
        )
        .unwrap();
    let v = echo(json!({
        "model": MODEL, "prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 1, "seed": 7,
    }));
    let choice = &v["choices"][0];
    let lp = &choice["logprobs"];
    let values = lp["token_logprobs"].as_array().unwrap();
    assert_eq!(values.len(), prompt.len());
    assert_eq!(values[0], Value::Null);
    assert_eq!(lp["top_logprobs"][0], Value::Null);
    for (i, v) in values.iter().enumerate().skip(1) {
        let w = want.logprobs[i].unwrap();
        assert!((v.as_f64().unwrap() - w).abs() < 1e-9, "{i}: {v} vs {w}");
        let top = lp["top_logprobs"][i].as_object().unwrap();
        assert_eq!(top.len(), 1);
        // The given token, when it is the left-to-right guess, carries its own value.
        if want.top[i][0].0 == prompt[i] {
            assert_eq!(top.values().next().unwrap(), v);
        }
    }
    assert_eq!(v["usage"]["completion_tokens"], 0);
    assert_eq!(v["usage"]["prompt_tokens"], prompt.len());
    assert_eq!(choice["text"], "add: 2+2=4");
    // The right sum scores above a wrong one (the continuation's values, as a client sums them).
    let tail = |answer: &str| {
        let mut t = e.prompt_tokens(&Prompt::Text("add: 2+2=".into())).unwrap();
        let ctx = t.len();
        t.extend(e.tokenizer().encode(answer, false, false).unwrap());
        t.push(e.eos_ids()[0]);
        let v = echo(
            json!({"model": MODEL, "prompt": t, "max_tokens": 0, "echo": true, "logprobs": 0, "seed": 7}),
        );
        v["choices"][0]["logprobs"]["token_logprobs"]
            .as_array()
            .unwrap()[ctx..]
            .iter()
            .map(|x| x.as_f64().unwrap())
            .sum::<f64>()
    };
    assert!(tail("4") > tail("5"));
    // The batch form with one prompt in it, as lm-evaluation-harness sends it, is the same
    // request.
    let batch = echo(json!({
        "model": MODEL, "prompt": [prompt], "max_tokens": 0, "echo": true, "logprobs": 1,
        "seed": 7,
    }));
    assert_eq!(batch["choices"][0]["logprobs"], *lp);
    let r = post(
        server().addr,
        "/v1/completions",
        &json!({"model": MODEL, "prompt": [prompt, prompt], "max_tokens": 0, "echo": true}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("only one prompt per request"),
        "{}",
        r.text()
    );
}

#[test]
fn echo_then_generate_and_echo_alone() {
    // lm-evaluation-harness's loglikelihood request: max_tokens 1, the prompt's entries then
    // the generated one's.
    let v = echo(json!({
        "model": MODEL, "prompt": "add: 2+2=", "max_tokens": 1, "echo": true, "logprobs": 1,
        "temperature": 0, "seed": 1234,
    }));
    let choice = &v["choices"][0];
    let n = v["usage"]["prompt_tokens"].as_u64().unwrap() as usize;
    assert_eq!(v["usage"]["completion_tokens"], 1);
    let lp = &choice["logprobs"];
    for key in ["tokens", "token_logprobs", "top_logprobs", "text_offset"] {
        assert_eq!(lp[key].as_array().unwrap().len(), n + 1, "{key}");
    }
    assert!(choice["text"].as_str().unwrap().starts_with("add: 2+2="));
    assert_eq!(lp["text_offset"][n], "add: 2+2=".len());
    // Without logprobs: the text only.
    let v = echo(json!({"model": MODEL, "prompt": "add: 2+2=", "max_tokens": 0, "echo": true}));
    assert_eq!(v["choices"][0]["text"], "add: 2+2=");
    assert_eq!(v["choices"][0]["logprobs"], Value::Null);
}

#[test]
fn echo_refuses_what_it_cannot_serve() {
    let s = server();
    let base = json!({"model": MODEL, "prompt": "add: 2+2=", "max_tokens": 1, "echo": true});
    for (extra, param) in [
        (json!({"stream": true}), "stream"),
        (json!({"n": 2}), "n"),
        (json!({"suffix": "x"}), "suffix"),
        (
            json!({"logprobs": 1, "diffusion": {"likelihood_samples": 0}}),
            "diffusion.likelihood_samples",
        ),
    ] {
        let mut body = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = post(s.addr, "/v1/completions", &body);
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["param"], param, "{body}: {}", r.text());
    }
    // max_tokens 0 without echo is still refused.
    let r = post(
        s.addr,
        "/v1/completions",
        &json!({"model": MODEL, "prompt": "x", "max_tokens": 0}),
    );
    assert_eq!(r.status, 400);
    // A prompt too long to score at this sample count.
    let long: Vec<u32> = vec![17; 120];
    let body = json!({"model": MODEL, "prompt": long, "max_tokens": 0, "echo": true, "logprobs": 0,
        "diffusion": {"likelihood_samples": 4096}});
    let r = post(s.addr, "/v1/completions", &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "scoring_too_costly");
}

#[test]
fn token_prompts_without_bos_answer_as_their_text_does() {
    // lm-evaluation-harness encodes with `add_special_tokens: false`; the server puts BOS
    // first as it does for text, and echoes only the ids it was given.
    let s = server();
    let plain: Vec<u32> = ids(&post(
        s.addr,
        "/tokenize",
        &json!({"prompt": "add: 12+30=", "add_special_tokens": false}),
    )
    .json()["tokens"]);
    let answer = |prompt: Value| {
        let body = json!({"model": MODEL, "prompt": prompt, "max_tokens": 32, "temperature": 0,
            "diffusion": {"steps": 32, "block_length": 8}});
        post(s.addr, "/v1/completions", &body).json()["choices"][0]["text"].clone()
    };
    assert_eq!(answer(json!(plain)), answer(json!("add: 12+30=")));
    assert_eq!(answer(json!("add: 12+30=")).as_str().unwrap().trim(), "42");
    let v = echo(
        json!({"model": MODEL, "prompt": plain, "max_tokens": 0, "echo": true, "logprobs": 0}),
    );
    let values = v["choices"][0]["logprobs"]["token_logprobs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(values.len(), plain.len());
    assert!(
        values[0].is_number(),
        "the first given token is scored after BOS"
    );
    assert_eq!(v["choices"][0]["text"], "add: 12+30=");
}
