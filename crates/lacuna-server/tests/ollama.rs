//! Ollama's API (`/api/...`) end to end on 127.0.0.1 over the demo model: every endpoint,
//! Ollama's shapes, NDJSON streaming, the option mapping onto the OpenAI endpoints' request
//! vocabulary (the same request answers the same text on both), and the refusals.

mod common;

use std::sync::OnceLock;

use common::{get, post, request, shared};
use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{Engine, EngineOptions};
use lacuna_server::ServerConfig;
use serde_json::{Value, json};

const QUESTION: &str = "Who made the heaven and the earth?";

/// The NDJSON lines of a streamed answer, each parsed.
fn ndjson(r: &common::Resp) -> Vec<Value> {
    r.text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

/// An `/api/chat` body asking `QUESTION` with `options`.
fn chat(options: Value, stream: bool) -> Value {
    json!({
        "model": "lacuna-demo",
        "messages": [{"role": "user", "content": QUESTION}],
        "stream": stream,
        "options": options,
    })
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z`.
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && s.ends_with('Z')
        && s[..4].parse::<u32>().is_ok_and(|y| y >= 2024)
}

/// The fields of a `done: true` object.
fn check_done(v: &Value) {
    assert_eq!(v["done"], true, "{v}");
    assert!(
        matches!(v["done_reason"].as_str(), Some("stop" | "length")),
        "{v}"
    );
    assert!(v["prompt_eval_count"].as_u64().unwrap() > 0, "{v}");
    assert!(v["eval_count"].as_u64().unwrap() > 0, "{v}");
    let total = v["total_duration"].as_u64().unwrap();
    let parts = ["load_duration", "prompt_eval_duration", "eval_duration"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} missing: {v}")));
    assert!(parts[2] > 0, "{v}");
    assert!(parts.iter().sum::<u64>() <= total, "{v}");
    assert!(v["diffusion"]["steps"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn chat_answers_what_the_openai_endpoint_answers() {
    let s = shared();
    let options =
        json!({"num_predict": 32, "temperature": 0, "seed": 3, "diffusion": {"steps": 16}});
    let r = post(s.addr, "/api/chat", &chat(options, false));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["model"], "lacuna-demo");
    assert!(is_rfc3339(j["created_at"].as_str().unwrap()), "{j}");
    assert_eq!(j["message"]["role"], "assistant");
    check_done(&j);
    let openai = post(
        s.addr,
        "/v1/chat/completions",
        &json!({
            "model": "lacuna-demo",
            "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": 32, "temperature": 0, "seed": 3, "diffusion": {"steps": 16},
        }),
    )
    .json();
    assert_eq!(
        j["message"]["content"],
        openai["choices"][0]["message"]["content"]
    );
    assert!(!j["message"]["content"].as_str().unwrap().is_empty());
    assert_eq!(j["prompt_eval_count"], openai["usage"]["prompt_tokens"]);
    assert_eq!(j["eval_count"], openai["usage"]["completion_tokens"]);
    let reason = openai["choices"][0]["finish_reason"].clone();
    assert_eq!(j["done_reason"], reason);
}

#[test]
fn generate_reads_prompt_system_raw_and_suffix() {
    let s = shared();
    let options = json!({"num_predict": 32, "seed": 5, "diffusion": {"steps": 16}});
    // Not raw: system and prompt through the chat template, as chat messages.
    let r = post(
        s.addr,
        "/api/generate",
        &json!({"model": "lacuna-demo", "prompt": QUESTION, "system": "Answer briefly.",
                "stream": false, "options": options}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let g = r.json();
    check_done(&g);
    let c = post(
        s.addr,
        "/api/chat",
        &json!({"model": "lacuna-demo", "stream": false, "options": options, "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": QUESTION},
        ]}),
    )
    .json();
    assert_eq!(g["response"], c["message"]["content"]);
    // Raw: the prompt as it is, as /v1/completions reads it.
    let raw = post(
        s.addr,
        "/api/generate",
        &json!({"model": "lacuna-demo", "prompt": "And God said,", "raw": true,
                "stream": false, "options": options}),
    )
    .json();
    let completion = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "lacuna-demo", "prompt": "And God said,", "max_tokens": 32, "seed": 5,
                "diffusion": {"steps": 16}}),
    )
    .json();
    assert_eq!(raw["response"], completion["choices"][0]["text"]);
    assert!(!raw["response"].as_str().unwrap().is_empty());
    // A suffix: infilling, as /v1/completions' suffix.
    let body = json!({"model": "lacuna-demo", "prompt": "In the beginning God created",
                      "suffix": "And the earth was without form.", "stream": false,
                      "options": options});
    let infill = post(s.addr, "/api/generate", &body).json();
    let openai = post(
        s.addr,
        "/v1/completions",
        &json!({"model": "lacuna-demo", "prompt": "In the beginning God created",
                "suffix": "And the earth was without form.", "max_tokens": 32, "seed": 5,
                "diffusion": {"steps": 16}}),
    )
    .json();
    assert_eq!(infill["response"], openai["choices"][0]["text"], "{infill}");
}

#[test]
fn streams_are_ndjson_and_join_to_the_whole_answer() {
    let s = shared();
    // Temperature 1 with a seed: the same seed gives the same text streamed or not.
    let options = json!({"num_predict": 64, "temperature": 1.0, "seed": 11,
                         "diffusion": {"steps": 32, "remasking": "random"}});
    for (path, body, text) in [
        ("/api/chat", chat(options.clone(), true), "/message/content"),
        (
            "/api/generate",
            json!({"model": "lacuna-demo", "prompt": QUESTION, "options": options}),
            "/response",
        ),
    ] {
        let whole = {
            let mut b = body.clone();
            b["stream"] = json!(false);
            post(s.addr, path, &b).json()
        };
        let r = post(s.addr, path, &body);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
        let lines = ndjson(&r);
        assert!(lines.len() >= 3, "{path}: {} lines", lines.len());
        let (last, pieces) = lines.split_last().unwrap();
        for p in pieces {
            assert_eq!(p["done"], false, "{p}");
            assert_eq!(p["model"], "lacuna-demo");
            assert!(is_rfc3339(p["created_at"].as_str().unwrap()));
        }
        check_done(last);
        assert_eq!(last.pointer(text).unwrap(), "", "{last}");
        let joined: String = pieces
            .iter()
            .map(|p| p.pointer(text).unwrap().as_str().unwrap())
            .collect();
        assert_eq!(
            joined,
            whole.pointer(text).unwrap().as_str().unwrap(),
            "{path}"
        );
        assert_eq!(last["eval_count"], whole["eval_count"]);
    }
}

#[test]
fn model_names_with_and_without_the_latest_tag() {
    let s = shared();
    let options = json!({"num_predict": 32, "diffusion": {"steps": 8}});
    let mut body = chat(options, false);
    body["model"] = json!("lacuna-demo:latest");
    let r = post(s.addr, "/api/chat", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["model"], "lacuna-demo:latest");
    for name in ["llama3.2", "lacuna-demo:7b"] {
        body["model"] = json!(name);
        let r = post(s.addr, "/api/chat", &body);
        assert_eq!(r.status, 404, "{}", r.text());
        let e = r.json()["error"].as_str().unwrap().to_string();
        assert!(e.starts_with(&format!("model '{name}' not found")), "{e}");
        let r = post(s.addr, "/api/show", &json!({"model": name}));
        assert_eq!(r.status, 404);
        assert!(r.json()["error"].is_string());
    }
    let r = post(s.addr, "/api/generate", &json!({"prompt": "x"}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"], "model is required");
}

#[test]
fn tags_show_ps_and_version() {
    let s = shared();
    let tags = get(s.addr, "/api/tags");
    assert_eq!(tags.status, 200);
    let m = &tags.json()["models"][0];
    assert_eq!(m["name"], "lacuna-demo:latest");
    assert_eq!(m["model"], "lacuna-demo:latest");
    assert!(is_rfc3339(m["modified_at"].as_str().unwrap()), "{m}");
    assert!(m["size"].as_u64().unwrap() > 1_000_000, "{m}");
    let digest = m["digest"].as_str().unwrap();
    assert!(
        digest.len() == 16 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{m}"
    );
    let details = &m["details"];
    assert_eq!(details["format"], "gguf");
    assert_eq!(details["family"], "llada");
    assert_eq!(details["families"], json!(["llada"]));
    assert_eq!(details["parent_model"], "");
    // The demo model has 5.5M parameters.
    assert!(
        details["parameter_size"].as_str().unwrap().ends_with('M'),
        "{details}"
    );
    assert!(details["quantization_level"].is_string());

    let show = post(s.addr, "/api/show", &json!({"model": "lacuna-demo"}));
    assert_eq!(show.status, 200, "{}", show.text());
    let j = show.json();
    assert_eq!(j["details"], *details);
    assert_eq!(j["model_info"]["general.architecture"], "llada");
    assert_eq!(j["model_info"]["llada.context_length"], 256);
    assert!(j["model_info"]["general.parameter_count"].as_u64().unwrap() > 1_000_000);
    assert_eq!(j["model_info"]["tokenizer.ggml.tokens"], json!([]));
    assert!(j["model_info"].get("tokenizer.chat_template").is_none());
    assert_eq!(j["capabilities"], json!(["completion", "tools", "insert"]));
    assert!(j["template"].as_str().unwrap().contains("message"), "{j}");
    assert!(j["parameters"].as_str().unwrap().contains("num_ctx"), "{j}");
    assert!(
        j["modelfile"]
            .as_str()
            .unwrap()
            .contains("FROM lacuna-demo:latest")
    );
    // Verbose: the arrays too; Ollama's older `name` for `model`.
    let v = post(
        s.addr,
        "/api/show",
        &json!({"name": "lacuna-demo:latest", "verbose": true}),
    );
    assert_eq!(v.status, 200, "{}", v.text());
    assert!(
        v.json()["model_info"]["tokenizer.ggml.tokens"]
            .as_array()
            .unwrap()
            .len()
            > 100
    );
    let r = post(s.addr, "/api/show", &json!({}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"], "model is required");

    let ps = get(s.addr, "/api/ps");
    assert_eq!(ps.status, 200);
    let p = &ps.json()["models"][0];
    assert_eq!(p["name"], "lacuna-demo:latest");
    assert_eq!(p["context_length"], 256);
    assert_eq!(p["digest"], digest);
    assert_eq!(p["size_vram"], 0);
    assert!(p["size"].as_u64().unwrap() > 0);
    assert!(is_rfc3339(p["expires_at"].as_str().unwrap()));

    let v = get(s.addr, "/api/version");
    assert_eq!(v.status, 200);
    let version = v.json()["version"].as_str().unwrap().to_string();
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(parts.len(), 3, "{version}");
    assert_eq!(
        request(s.addr, "HEAD", "/api/version", &[], b"").status,
        200
    );
}

#[test]
fn nothing_to_generate_answers_loaded() {
    let s = shared();
    let r = post(s.addr, "/api/generate", &json!({"model": "lacuna-demo"}));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["done"], true);
    assert_eq!(j["done_reason"], "load");
    assert_eq!(j["response"], "");
    let r = post(
        s.addr,
        "/api/chat",
        &json!({"model": "lacuna-demo", "messages": [], "keep_alive": 0}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["done_reason"], "load");
    assert_eq!(r.json()["message"]["role"], "assistant");
}

#[test]
fn format_json_schema_gives_valid_json() {
    let s = shared();
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "blessed": {"type": "boolean"},
        },
        "required": ["name", "age", "blessed"],
        "additionalProperties": false,
    });
    for seed in 0..3 {
        let mut body = chat(
            json!({"num_predict": 64, "temperature": 1.0, "seed": seed}),
            false,
        );
        body["format"] = schema.clone();
        let r = post(s.addr, "/api/chat", &body);
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.json()["message"]["content"].as_str().unwrap().to_string();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(v["name"].as_str().unwrap().chars().count() <= 12, "{v}");
        assert!((0..=150).contains(&v["age"].as_i64().unwrap()), "{v}");
        assert!(v["blessed"].is_boolean(), "{v}");
        assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
    }
    let r = post(
        s.addr,
        "/api/generate",
        &json!({"model": "lacuna-demo", "prompt": "And God said,", "format": "json",
                "stream": false, "options": {"num_predict": 48}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.json()["response"].as_str().unwrap().to_string();
    assert!(
        serde_json::from_str::<Value>(&text).unwrap().is_object(),
        "{text}"
    );
    // A schema keyword the compiler refuses names `format`.
    let mut body = chat(json!({"num_predict": 32}), false);
    body["format"] = json!({"type": "object", "not": {}});
    let r = post(s.addr, "/api/chat", &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.json()["error"].is_string());
}

#[test]
fn logprobs_per_token() {
    let s = shared();
    let mut body = chat(
        json!({"num_predict": 32, "diffusion": {"steps": 16}}),
        false,
    );
    body["logprobs"] = json!(true);
    body["top_logprobs"] = json!(2);
    let r = post(s.addr, "/api/chat", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let lps = j["logprobs"].as_array().unwrap();
    assert_eq!(lps.len() as u64, j["eval_count"].as_u64().unwrap());
    let joined: String = lps.iter().map(|l| l["token"].as_str().unwrap()).collect();
    assert_eq!(joined, j["message"]["content"].as_str().unwrap());
    for l in lps {
        assert!(l["logprob"].as_f64().unwrap() <= 0.0);
        assert_eq!(l["top_logprobs"].as_array().unwrap().len(), 2);
    }
    // Streamed: the pieces' entries add up to the same list.
    body["stream"] = json!(true);
    let lines = ndjson(&post(s.addr, "/api/chat", &body));
    let streamed: Vec<Value> = lines
        .iter()
        .filter_map(|l| l["logprobs"].as_array())
        .flatten()
        .cloned()
        .collect();
    assert_eq!(&streamed, lps);
}

#[test]
fn harmless_options_are_accepted() {
    let s = shared();
    let options = json!({
        "num_predict": 32, "num_ctx": 256, "num_thread": 2, "num_gpu": 0, "main_gpu": 0,
        "num_batch": 512, "num_keep": 4, "use_mmap": true, "use_mlock": false,
        "repeat_penalty": 1.0, "presence_penalty": 0, "frequency_penalty": 0, "min_p": 0,
        "typical_p": 1.0, "mirostat": 0, "mirostat_tau": 5.0, "repeat_last_n": 64,
        "top_k": 0, "top_p": 1.0, "seed": -1, "stop": ["\n\n\n"],
        "diffusion": {"steps": 8},
    });
    let mut body = chat(options, false);
    body["keep_alive"] = json!("5m");
    body["think"] = json!(false);
    body["truncate"] = json!(true);
    body["tools"] = json!([]);
    let r = post(s.addr, "/api/chat", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    check_done(&r.json());
}

/// Each request is refused with a 400 (or the status given) whose `error` contains the
/// words given.
#[test]
fn refusals_say_why() {
    let s = shared();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "/api/chat",
            json!({"options": {"repeat_penalty": 1.2}}),
            "repetition penalty",
        ),
        (
            "/api/chat",
            json!({"options": {"mirostat": 2}}),
            "`options.mirostat` = 2",
        ),
        (
            "/api/chat",
            json!({"options": {"min_p": 0.05}}),
            "`options.min_p`",
        ),
        (
            "/api/chat",
            json!({"options": {"num_ctx": 8192}}),
            "context length 256",
        ),
        (
            "/api/chat",
            json!({"options": {"num_predict": -2}}),
            "fill the context",
        ),
        (
            "/api/chat",
            json!({"options": {"num_predict": 0}}),
            "at least 1",
        ),
        (
            "/api/chat",
            json!({"options": {"temprature": 0.5}}),
            "unknown option `options.temprature`",
        ),
        (
            "/api/chat",
            json!({"options": {"num_thread": "8"}}),
            "`options.num_thread` must be an integer",
        ),
        (
            "/api/chat",
            json!({"options": {"top_k": 40}}),
            "options.top_k",
        ),
        (
            "/api/chat",
            json!({"options": {"diffusion": {"threshold": 0.9}}}),
            "`options.diffusion.threshold` is a parallel-decoding rule",
        ),
        (
            "/api/chat",
            json!({"options": {"diffusion": {"steps": 0}}}),
            "`options.diffusion.steps`",
        ),
        (
            "/api/chat",
            json!({"think": true}),
            "\"lacuna-demo\" does not support thinking",
        ),
        ("/api/chat", json!({"format": "xml"}), "`format` must be"),
        (
            "/api/chat",
            json!({"top_logprobs": 3}),
            "needs `logprobs: true`",
        ),
        ("/api/chat", json!({"mirostat": 1}), "unknown field"),
        (
            "/api/chat",
            json!({"format": "json", "options": {"stop": ["x"]}}),
            "cannot be combined",
        ),
        (
            "/api/chat",
            json!({"messages": [{"role": "user", "content": "x", "images": ["aGk="]}]}),
            "`messages[0].images` is not supported",
        ),
        (
            "/api/chat",
            json!({"messages": [{"role": "narrator", "content": "x"}]}),
            "role `narrator`",
        ),
        (
            "/api/generate",
            json!({"prompt": "x", "context": [1, 2, 3]}),
            "no left-to-right KV context",
        ),
        (
            "/api/generate",
            json!({"prompt": "x", "images": ["aGk="]}),
            "reads text only",
        ),
        (
            "/api/generate",
            json!({"prompt": "x", "template": "{{ .Prompt }}"}),
            "Go template",
        ),
        (
            "/api/generate",
            json!({"prompt": "x", "raw": true, "system": "s"}),
            "raw mode",
        ),
        (
            "/api/generate",
            json!({"prompt": "x", "suffix": "y", "system": "s"}),
            "`suffix`",
        ),
    ];
    for (path, extra, words) in cases {
        let mut body = if path == "/api/chat" {
            chat(json!({"num_predict": 32}), false)
        } else {
            json!({"model": "lacuna-demo", "stream": false})
        };
        for (k, v) in extra.as_object().unwrap() {
            if k == "options" {
                for (ok, ov) in v.as_object().unwrap() {
                    body["options"][ok] = ov.clone();
                }
            } else {
                body[k] = v.clone();
            }
        }
        let r = post(s.addr, path, &body);
        assert_eq!(r.status, 400, "{path} {body}: {}", r.text());
        let j = r.json();
        let e = j["error"].as_str().unwrap_or_else(|| panic!("{j}"));
        assert!(e.contains(words), "{path} {body}: {e:?} lacks {words:?}");
    }
    let r = post(
        s.addr,
        "/api/chat",
        &json!({"model": "lacuna-demo", "messages": "x"}),
    );
    assert_eq!(r.status, 400);
    let r = request(s.addr, "POST", "/api/chat", &[], b"{not json");
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    for path in ["/api/embed", "/api/embeddings"] {
        let r = post(s.addr, path, &json!({"model": "lacuna-demo", "input": "x"}));
        assert_eq!(r.status, 400);
        assert!(
            r.json()["error"]
                .as_str()
                .unwrap()
                .contains("no embedding output")
        );
    }
    let r = post(s.addr, "/api/pull", &json!({"model": "llama3.2"}));
    assert_eq!(r.status, 404);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("nothing to pull")
    );
    let r = get(s.addr, "/api/chat");
    assert_eq!(r.status, 405);
    assert!(r.json()["error"].is_string());
}

/// A server over a random-weight tiny LLaDA with a chat template and a 4096-token context
/// (the tools' descriptions outgrow the demo's 256 tokens).
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
            ServerConfig::new("fixture"),
        )
    })
}

#[test]
fn tool_calls_have_object_arguments() {
    let s = tool_server();
    let tools = json!([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 12},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        }, "required": ["city", "unit"], "additionalProperties": false},
    }}]);
    let options = json!({"num_predict": 128, "diffusion": {"steps": 32, "block_length": 32}});
    let messages = json!([{"role": "user", "content": "Weather in Tokyo?"}]);
    // Without `tool_choice` the model chooses between a call and a text reply (this random
    // one always writes text); the extension `tool_choice: "required"` makes it call.
    for seed in 0..2 {
        let body = json!({"model": "fixture", "stream": false, "tools": tools, "messages": messages,
                          "options": {"num_predict": 128, "seed": seed, "temperature": 1.0,
                                      "diffusion": {"steps": 32, "block_length": 32}}});
        let r = post(s.addr, "/api/chat", &body);
        assert_eq!(r.status, 200, "{}", r.text());
        let j = r.json();
        assert!(
            j["message"]["content"].is_string() || j["message"]["tool_calls"].is_array(),
            "{j}"
        );
    }
    let body = json!({"model": "fixture", "stream": false, "tools": tools, "messages": messages,
                      "tool_choice": "required", "options": options});
    let r = post(s.addr, "/api/chat", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let m = &j["message"];
    assert_eq!(m["content"], "");
    let calls = m["tool_calls"].as_array().unwrap();
    for c in calls {
        assert_eq!(c["function"]["name"], "get_weather");
        let args = c["function"]["arguments"].as_object().unwrap();
        assert!(args["city"].as_str().unwrap().chars().count() <= 12);
        assert!(["celsius", "fahrenheit"].contains(&args["unit"].as_str().unwrap()));
    }
    // Streamed: the calls come whole in one `done: false` line before the last.
    let mut b = body.clone();
    b["stream"] = json!(true);
    let lines = ndjson(&post(s.addr, "/api/chat", &b));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["done"], false);
    let functions = |v: &Value| -> Vec<Value> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| c["function"].clone())
            .collect()
    };
    assert_eq!(
        functions(&lines[0]["message"]["tool_calls"]),
        functions(&m["tool_calls"])
    );
    check_done(&lines[1]);
    // A second turn: the call and its result go back as Ollama writes them.
    let turn = json!({"model": "fixture", "stream": false, "tools": tools, "options": options,
    "messages": [
        {"role": "user", "content": "Weather in Tokyo?"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_name": "get_weather", "content": "11 degrees"},
    ]});
    let r = post(s.addr, "/api/chat", &turn);
    assert_eq!(r.status, 200, "{}", r.text());
    check_done(&r.json());
}

#[test]
fn api_key_guards_the_api_routes() {
    let mut config = common::config();
    config.api_key = Some("k".into());
    let s = common::start(config);
    let r = get(s.addr, "/api/tags");
    assert_eq!(r.status, 401);
    assert!(r.json()["error"].as_str().unwrap().contains("API key"));
    let r = request(
        s.addr,
        "GET",
        "/api/tags",
        &[("Authorization", "Bearer k")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["models"][0]["name"], "lacuna-demo:latest");
}
