//! Structured outputs and tool calls over HTTP. JSON on the demo model (a 5.5M-parameter
//! LLaDA trained on the King James Bible, which knows no JSON); tool calls, whose prompt
//! (the tools described) outgrows the demo's 256-token context, on a random-weight tiny
//! LLaDA fixture with a byte vocabulary and a chat template. Every answer is in the language
//! asked for because the canvas is constrained, not because the model knows it.

mod common;

use std::sync::OnceLock;

use common::{post, shared};
use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{Engine, EngineOptions};
use lacuna_server::ServerConfig;
use serde_json::{Value, json};

/// A server over a 2-layer random tiny LLaDA (context 4096) with a plain chat template.
fn tool_server() -> &'static common::Running {
    static S: OnceLock<common::Running> = OnceLock::new();
    S.get_or_init(|| {
        let spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 2, QuantMix::F32);
        let mut w = fixture::build(&spec).unwrap();
        w.add_metadata(
            "tokenizer.chat_template",
            "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>",
        )
        .unwrap();
        let file = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
        let options = EngineOptions {
            threads: Some(1),
            ..Default::default()
        };
        common::start_with(
            Engine::from_gguf(file, &options).unwrap(),
            ServerConfig::new("lacuna-demo"),
        )
    })
}

/// A tool request: few steps (the fixture's answers are random; only their form is tested).
fn tool_chat(extra: Value) -> Value {
    let mut body = chat(json!({"max_tokens": 128, "diffusion": {"steps": 32, "block_length": 32}}));
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn chat(extra: Value) -> Value {
    let mut body = json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": "And God said,"}],
        "max_tokens": 64,
        "seed": 7,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn ok(resp: &common::Resp) -> Value {
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()
}

fn person() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tribe": {"enum": ["Judah", "Levi", "Dan"]},
        },
        "required": ["name", "age", "tribe"],
        "additionalProperties": false,
    })
}

/// The object fits [`person`] (checked by hand: the keys in order, each value's type).
fn is_person(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    keys == ["name", "age", "tribe"]
        && o["name"].as_str().is_some_and(|s| s.chars().count() <= 12)
        && o["age"].as_u64().is_some_and(|a| a <= 150)
        && ["Judah", "Levi", "Dan"].contains(&o["tribe"].as_str().unwrap_or(""))
}

#[test]
fn response_format_json_schema_is_always_valid() {
    let s = shared();
    for seed in 0..3 {
        let body = chat(json!({
            "seed": seed,
            "temperature": 1.0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": person(), "strict": true}},
        }));
        let j = ok(&post(s.addr, "/v1/chat/completions", &body));
        let content = j["choices"][0]["message"]["content"].as_str().unwrap();
        let v: Value = serde_json::from_str(content).unwrap_or_else(|e| panic!("{e}: {content}"));
        assert!(is_person(&v), "{content}");
    }
}

#[test]
fn every_source_of_a_constraint_is_read() {
    let s = shared();
    let choices = ["yea", "nay", "verily"];
    // vLLM's structured_outputs and guided_choice, on completions.
    for field in [
        json!({"structured_outputs": {"choice": choices}}),
        json!({"guided_choice": choices}),
    ] {
        let mut body = json!({"model": "lacuna-demo", "prompt": "And he answered,", "max_tokens": 16, "seed": 1});
        for (k, v) in field.as_object().unwrap() {
            body[k] = v.clone();
        }
        let j = ok(&post(s.addr, "/v1/completions", &body));
        let text = j["choices"][0]["text"].as_str().unwrap();
        assert!(choices.contains(&text), "{field}: {text:?}");
    }
    // A regex (vLLM), a GBNF grammar (llama-server), json_object (OpenAI).
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"structured_outputs": {"regex": "[0-9]{3}-[A-Z]{2}"}})),
    ));
    let text = j["choices"][0]["message"]["content"].as_str().unwrap();
    let b = text.as_bytes();
    assert!(
        b.len() == 6
            && b[..3].iter().all(u8::is_ascii_digit)
            && b[3] == b'-'
            && b[4..].iter().all(u8::is_ascii_uppercase),
        "{text:?}"
    );
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"grammar": "root ::= \"light\" | \"darkness\""})),
    ));
    let text = j["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text == "light" || text == "darkness", "{text:?}");
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"response_format": {"type": "json_object"}})),
    ));
    let text = j["choices"][0]["message"]["content"].as_str().unwrap();
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(v.is_object(), "{text}");
    // llama-server's json_schema, with n = 2: each choice valid.
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"json_schema": person(), "n": 2, "temperature": 1.0})),
    ));
    for c in j["choices"].as_array().unwrap() {
        let text = c["message"]["content"].as_str().unwrap();
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(is_person(&v), "{text}");
    }
}

fn chunks(resp: &common::Resp) -> Vec<Value> {
    assert_eq!(resp.status, 200, "{}", resp.text());
    let data = resp.sse();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn a_streamed_json_answer_equals_the_whole_one() {
    let s = shared();
    let rf = json!({"type": "json_schema", "json_schema": {"name": "p", "schema": person()}});
    let whole = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"response_format": rf})),
    ));
    let whole = whole["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = post(
        s.addr,
        "/v1/chat/completions",
        &chat(json!({"response_format": rf, "stream": true})),
    );
    let streamed: String = chunks(&resp)
        .iter()
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(streamed, whole);
}

fn weather_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "maxLength": 16},
                "unit": {"enum": ["celsius", "fahrenheit"]},
            }, "required": ["city", "unit"], "additionalProperties": false},
        }},
        {"type": "function", "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}, "required": ["zone"]},
        }},
    ])
}

/// A call's name and its parsed arguments, checked to fit the tool.
fn check_call(call: &Value) -> (String, Value) {
    assert_eq!(call["type"], "function", "{call}");
    assert!(
        call["id"].as_str().is_some_and(|i| i.starts_with("call_")),
        "{call}"
    );
    let name = call["function"]["name"].as_str().unwrap().to_string();
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {call}"));
    match name.as_str() {
        "get_weather" => {
            assert!(args["city"].is_string(), "{args}");
            assert!(
                ["celsius", "fahrenheit"].contains(&args["unit"].as_str().unwrap()),
                "{args}"
            );
        }
        "get_time" => assert!(args["zone"].is_string(), "{args}"),
        other => panic!("called {other}, which is not a tool"),
    }
    (name, args)
}

#[test]
fn tool_calls_fit_the_tools() {
    let s = tool_server();
    // Required: one or more calls, each a tool offered with arguments its schema takes.
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &tool_chat(json!({"tools": weather_tools(), "tool_choice": "required"})),
    ));
    let c = &j["choices"][0];
    assert_eq!(c["finish_reason"], "tool_calls", "{j}");
    assert!(c["message"]["content"].is_null(), "{j}");
    let calls = c["message"]["tool_calls"].as_array().unwrap();
    assert!(!calls.is_empty());
    for call in calls {
        check_call(call);
    }
    // A named function: exactly that one call.
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &tool_chat(json!({
            "tools": weather_tools(),
            "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        })),
    ));
    let calls = j["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{j}");
    assert_eq!(check_call(&calls[0]).0, "get_time");
    // Auto: calls, or a text reply as the message's content.
    for seed in 0..3 {
        let j = ok(&post(
            s.addr,
            "/v1/chat/completions",
            &tool_chat(json!({"tools": weather_tools(), "seed": seed, "temperature": 1.0})),
        ));
        let c = &j["choices"][0];
        match c["message"]["tool_calls"].as_array() {
            Some(calls) => {
                assert_eq!(c["finish_reason"], "tool_calls");
                calls.iter().for_each(|x| {
                    check_call(x);
                });
            }
            None => {
                assert!(c["message"]["content"].is_string(), "{j}");
                assert_eq!(c["finish_reason"], "stop", "{j}");
            }
        }
    }
    // `none`: plain text, no tool format.
    let j = ok(&post(
        s.addr,
        "/v1/chat/completions",
        &tool_chat(json!({"tools": weather_tools(), "tool_choice": "none"})),
    ));
    assert!(j["choices"][0]["message"].get("tool_calls").is_none());
}

#[test]
fn streamed_tool_calls_come_whole_with_their_finish_reason() {
    let s = tool_server();
    let resp = post(
        s.addr,
        "/v1/chat/completions",
        &tool_chat(json!({"tools": weather_tools(), "tool_choice": "required", "stream": true})),
    );
    let chunks = chunks(&resp);
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    assert_eq!(deltas[0]["role"], "assistant");
    let calls: Vec<&Value> = deltas
        .iter()
        .filter_map(|d| d["tool_calls"].as_array())
        .flatten()
        .collect();
    assert!(!calls.is_empty(), "{chunks:?}");
    for (j, call) in calls.iter().enumerate() {
        assert_eq!(call["index"], j);
        check_call(call);
    }
    assert!(
        deltas
            .iter()
            .all(|d| d["content"].as_str().unwrap_or("").is_empty()),
        "no text streams beside the calls"
    );
    let last = &chunks.last().unwrap()["choices"][0];
    assert_eq!(last["finish_reason"], "tool_calls");
}

#[test]
fn a_conversation_with_tool_results_runs() {
    let s = tool_server();
    let body = tool_chat(json!({
        "tools": weather_tools(),
        "messages": [
            {"role": "user", "content": "Weather in Jericho?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Jericho\", \"unit\": \"celsius\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 31}"},
        ],
    }));
    let j = ok(&post(s.addr, "/v1/chat/completions", &body));
    let m = &j["choices"][0]["message"];
    assert!(
        m["content"].is_string() || m["tool_calls"].is_array(),
        "{j}"
    );
}
