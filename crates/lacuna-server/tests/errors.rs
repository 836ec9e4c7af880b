//! Every error a client can cause is an OpenAI error object with the right status and the
//! parameter named: never a 500 for bad input.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{get, post, request, shared};
use serde_json::{Value, json};

fn err(resp: &common::Resp, status: u16) -> Value {
    assert_eq!(resp.status, status, "{}", resp.text());
    let j = resp.json();
    let e = &j["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{j}");
    assert!(e["type"].is_string(), "{j}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "{j}");
    e.clone()
}

fn chat(extra: Value) -> Value {
    let mut body = json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 32,
        "diffusion": {"steps": 4},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

#[test]
fn bad_requests_are_400_naming_the_parameter() {
    let s = shared();
    let raw = request(s.addr, "POST", "/v1/chat/completions", &[], b"{not json");
    assert_eq!(err(&raw, 400)["code"], "invalid_json");
    let raw = request(s.addr, "POST", "/v1/chat/completions", &[], b"[1, 2]");
    err(&raw, 400);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"tools": [{"type": "function"}]}),
            "tools[0].function",
        ),
        (
            json!({"tools": [{"type": "retrieval", "function": {"name": "f"}}]}),
            "tools[0].type",
        ),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}}),
            "tool_choice",
        ),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (json!({"tool_choice": "sometimes"}), "tool_choice"),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "not": {}}}}]}),
            "tools[0].function.parameters",
        ),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f"}}], "response_format": {"type": "json_object"}}),
            "response_format",
        ),
        (
            json!({"response_format": {"type": "xml"}}),
            "response_format.type",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "not": {}}}}}),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 5}}}),
            "response_format.json_schema.schema",
        ),
        (
            json!({"response_format": {"type": "json_object"}, "guided_regex": "a+"}),
            "guided_regex",
        ),
        (
            json!({"response_format": {"type": "json_object"}, "stop": ["}"]}),
            "stop",
        ),
        (
            json!({"structured_outputs": {"regex": "a", "foo": 1}}),
            "structured_outputs.foo",
        ),
        (json!({"guided_regex": "(?=a)b"}), "guided_regex"),
        (json!({"guided_regex": "(a"}), "guided_regex"),
        (json!({"grammar": "root ::= \"a\" root"}), "grammar"),
        (json!({"guided_choice": []}), "guided_choice"),
        (json!({"guided_regex": "x{3000}"}), "max_tokens"), // far over 32 tokens
        (
            json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}),
            "messages[0].tool_calls[0].function.arguments",
        ),
        (json!({"foo": 1}), "foo"),
        (json!({"n": 0}), "n"),
        (json!({"n": 9}), "n"),
        (json!({"n": "two"}), "n"),
        (json!({"temperature": 5}), "temperature"),
        (json!({"temperature": "hot"}), "temperature"),
        (json!({"max_tokens": 0}), "max_tokens"),
        (json!({"max_tokens": -3}), "max_tokens"),
        (json!({"top_p": 0.5}), "top_p"), // LLaDA's sampler has no nucleus filter
        (json!({"top_k": 5}), "top_k"),
        (json!({"presence_penalty": 0.5}), "presence_penalty"),
        (json!({"logprobs": "yes"}), "logprobs"),
        (
            json!({"logprobs": true, "top_logprobs": 21}),
            "top_logprobs",
        ),
        (json!({"top_logprobs": 2}), "top_logprobs"), // without logprobs: true
        (json!({"stop": [1]}), "stop"),
        (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
        (
            json!({"stream_options": {"include_usage": true}}),
            "stream_options",
        ),
        (json!({"messages": []}), "messages"),
        (json!({"messages": "hi"}), "messages"),
        (
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            "messages[0].tool_call_id",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
            "messages[0].content[0]",
        ),
        (json!({"diffusion": {"stepz": 3}}), "diffusion.stepz"),
        (json!({"diffusion": {"steps": 0}}), "diffusion.steps"),
        (json!({"diffusion": {"cache": "triple"}}), "diffusion.cache"),
        (
            json!({"diffusion": {"threshold": 0.9}}),
            "diffusion.threshold",
        ),
        (
            json!({"diffusion": {"algorithm": "origin"}}),
            "diffusion.algorithm",
        ),
        (json!({"max_tokens": 4000}), "messages"), // over the demo model's 256 context
        (json!({"model": null}), "model"),
    ];
    for (extra, param) in cases {
        let r = post(s.addr, "/v1/chat/completions", &chat(extra.clone()));
        let e = err(&r, 400);
        assert_eq!(e["param"], param, "for {extra}: {e}");
        assert_eq!(e["type"], "invalid_request_error");
    }
    let over = post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"max_tokens": 4000})),
    );
    assert_eq!(err(&over, 400)["code"], "context_length_exceeded");
    // Impossible settings: 64 tokens in blocks of 32 with 3 steps (not a multiple of 2 blocks).
    let r = post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"max_tokens": 64, "diffusion": {"steps": 3, "block_length": 32}})),
    );
    assert_eq!(err(&r, 400)["code"], "invalid_settings");
    // Completions: bad prompt shapes.
    for prompt in [json!(null), json!(5), json!(["a", "b"]), json!([999_999])] {
        let r = post(
            s.addr,
            "/v1/completions",
            &json!({"model": "lacuna-demo", "prompt": prompt, "max_tokens": 8}),
        );
        assert_eq!(err(&r, 400)["param"], "prompt", "{prompt}");
    }
    let r = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "lacuna-demo", "prompt": "x", "echo": true, "stream": true}),
    );
    assert_eq!(err(&r, 400)["param"], "stream");
    // Completions' legacy integer `logprobs`: at most 20.
    let r = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "lacuna-demo", "prompt": "x", "logprobs": 21}),
    );
    let e = err(&r, 400);
    assert_eq!(e["param"], "logprobs");
    assert!(e["message"].as_str().unwrap().contains("at most 20"), "{e}");
}

#[test]
fn unknown_model_route_and_method() {
    let s = shared();
    let r = post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"model": "gpt-4o"})),
    );
    let e = err(&r, 404);
    assert_eq!(e["code"], "model_not_found");
    assert_eq!(e["param"], "model");
    assert_eq!(err(&get(s.addr, "/v1/nothing"), 404)["code"], "unknown_url");
    assert_eq!(
        err(&get(s.addr, "/v1/chat/completions"), 405)["code"],
        "method_not_allowed"
    );
}

#[test]
fn a_body_over_the_limit_is_413() {
    let mut config = common::config();
    config.max_body = 1024;
    let s = common::start(config);
    let big = chat(json!({"messages": [{"role": "user", "content": "a".repeat(4096)}]}));
    let e = err(&post(s.addr, "/v1/chat/completions", &big), 413);
    assert_eq!(e["code"], "request_too_large");
}

#[test]
fn the_api_key_guards_v1_but_not_health() {
    let mut config = common::config();
    config.api_key = Some("s3cret".into());
    let s = common::start(config);
    let body = chat(json!({}));
    let e = err(&post(s.addr, "/v1/chat/completions", &body), 401);
    assert_eq!(e["code"], "invalid_api_key");
    let wrong = request(
        s.addr,
        "GET",
        "/v1/models",
        &[("Authorization", "Bearer nope")],
        b"",
    );
    err(&wrong, 401);
    let ok = request(
        s.addr,
        "POST",
        "/v1/chat/completions",
        &[("Authorization", "Bearer s3cret")],
        body.to_string().as_bytes(),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(get(s.addr, "/health").status, 200);
}

/// A long request (one token per step over most of the context).
fn long_body(stream: bool) -> Value {
    json!({
        "model": "lacuna-demo",
        "prompt": "And God said,",
        "max_tokens": 224,
        "stream": stream,
        "diffusion": {"steps": 224, "block_length": 32},
    })
}

/// Opens a request and returns the socket without reading the answer.
fn open(addr: std::net::SocketAddr, body: &Value) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let b = body.to_string();
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{b}",
        b.len()
    )
    .unwrap();
    s
}

fn metric(addr: std::net::SocketAddr, line_start: &str) -> f64 {
    let text = get(addr, "/metrics").text();
    text.lines()
        .find_map(|l| {
            l.strip_prefix(line_start)
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("{line_start} not in\n{text}"))
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_full_queue_is_429_and_shutdown_is_503() {
    let mut config = common::config();
    config.max_concurrent = 1;
    config.queue = 0;
    config.shutdown_grace = Duration::from_secs(60);
    let s = common::start(config);
    let mut busy = open(s.addr, &long_body(true));
    wait_for(
        || metric(s.addr, "lacuna_active_canvases ") == 1.0,
        "the first request",
    );
    let e = err(&post(s.addr, "/v1/completions", &long_body(false)), 429);
    assert_eq!(e["type"], "rate_limit_error");
    assert!(metric(s.addr, "lacuna_requests_total{outcome=\"rejected\"}") >= 1.0);
    // Shutdown: new requests are 503 while the running one finishes.
    let server = std::sync::Arc::clone(&s.server);
    let drained = s.runtime.spawn(async move { server.drain().await });
    wait_for(|| get(s.addr, "/health").status == 503, "shutdown to begin");
    let e = err(&post(s.addr, "/v1/completions", &long_body(false)), 503);
    assert_eq!(e["code"], "shutting_down");
    let mut rest = String::new();
    busy.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("data: [DONE]"),
        "the running stream finished cleanly"
    );
    assert!(!rest.contains("\"error\""), "{rest}");
    s.runtime.block_on(drained).unwrap();
}

#[test]
fn shutdown_after_the_grace_period_cancels() {
    let mut config = common::config();
    config.shutdown_grace = Duration::from_millis(50);
    let s = common::start(config);
    let mut busy = open(s.addr, &long_body(true));
    wait_for(
        || metric(s.addr, "lacuna_active_canvases ") == 1.0,
        "the request",
    );
    s.runtime.block_on(s.server.drain());
    assert_eq!(metric(s.addr, "lacuna_active_canvases "), 0.0);
    assert_eq!(
        metric(s.addr, "lacuna_requests_total{outcome=\"cancelled\"}"),
        1.0
    );
    let mut rest = String::new();
    busy.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("\"shutting_down\"") || rest.contains("cancel"),
        "{rest}"
    );
    assert!(rest.contains("data: [DONE]"));
}

/// A client that disconnects cancels its generation at the next step (streamed and not).
#[test]
fn a_disconnect_cancels_the_generation() {
    for stream in [true, false] {
        let s = common::start(common::config());
        let busy = open(s.addr, &long_body(stream));
        wait_for(
            || metric(s.addr, "lacuna_steps_total ") >= 2.0,
            "steps to run",
        );
        drop(busy);
        wait_for(
            || metric(s.addr, "lacuna_requests_total{outcome=\"cancelled\"}") == 1.0,
            "the cancellation",
        );
        assert_eq!(metric(s.addr, "lacuna_active_canvases "), 0.0);
        let steps = metric(s.addr, "lacuna_steps_total ");
        assert!(steps < 224.0, "stream={stream}: all {steps} steps ran");
        assert_eq!(
            metric(s.addr, "lacuna_requests_total{outcome=\"completed\"}"),
            0.0
        );
    }
}
