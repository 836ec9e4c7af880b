use lacuna::{CachePolicy, ParallelConfig, ParallelRule};

use super::*;

fn chat(body: serde_json::Value) -> Result<ApiRequest, ApiError> {
    parse(body.to_string().as_bytes(), Endpoint::Chat)
}

/// The generation of a chat body for a model of `arch`.
fn generate(body: serde_json::Value, arch: Arch) -> GenerateRequest {
    chat(body).unwrap().generate_request(arch).unwrap()
}

fn base() -> serde_json::Value {
    serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
}

#[test]
fn defaults_follow_the_length() {
    let r = generate(base(), Arch::Llada);
    assert_eq!(r.gen_length, DEFAULT_MAX_TOKENS);
    assert_eq!(r.temperature, 0.0);
    assert_eq!(r.block_length, Some(32));
    assert_eq!(r.steps, 32); // as `lacuna run`: 128 tokens, 32 steps
    let mut b = base();
    b["max_tokens"] = 50.into();
    let r = generate(b, Arch::Llada);
    assert_eq!(r.block_length, Some(50)); // not a multiple of 32: one block
    assert_eq!(r.steps, 12);
    // Dream's official sampler has no blocks.
    let r = generate(base(), Arch::Dream);
    assert_eq!(r.block_length, None);
}

#[test]
fn steps_are_a_multiple_of_the_blocks() {
    for len in [32, 64, 96, 160, 256] {
        let mut b = base();
        b["max_tokens"] = len.into();
        let r = generate(b, Arch::Llada);
        let blocks = len / 32;
        assert_eq!(r.steps % blocks, 0, "len {len}");
        assert!(r.steps <= len);
    }
}

#[test]
fn diffusion_settings() {
    let mut b = base();
    b["diffusion"] = serde_json::json!({"fast": true, "steps": 64, "block_length": 16});
    let r = generate(b, Arch::Llada);
    assert_eq!(r.cache, CachePolicy::Dual);
    assert_eq!(r.parallel, Some(ParallelConfig::default()));
    assert_eq!(r.steps, 64);
    assert_eq!(r.block_length, Some(16));
    let mut b = base();
    b["diffusion"] = serde_json::json!({"parallel": true, "entropy_bound": 0.5});
    let r = generate(b, Arch::Llada);
    assert_eq!(r.parallel.unwrap().rule, ParallelRule::EntropyBound(0.5));
    let mut b = base();
    b["diffusion"] = serde_json::json!({"parallel": true, "threshold": 0.8, "factor": 1.0});
    let e = chat(b).unwrap().generate_request(Arch::Llada).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("diffusion"));
}

#[test]
fn fast_on_llada2_is_its_exact_block_cache() {
    let mut b = base();
    b["diffusion"] = serde_json::json!({"fast": true});
    let r = generate(b, Arch::Llada2);
    assert_eq!(r.cache, CachePolicy::Prefix);
    assert_eq!(r.parallel, None);
}

#[test]
fn names_are_checked_with_the_valid_ones_listed() {
    let mut b = base();
    b["diffusion"] = serde_json::json!({"cache": "triple"});
    let e = chat(b).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("diffusion.cache"));
    assert!(e.message.contains("none, prefix, dual"), "{}", e.message);
}

#[test]
fn max_completion_tokens_wins_and_top_p_one_is_no_filter() {
    let mut b = base();
    b["max_tokens"] = 10.into();
    b["max_completion_tokens"] = 20.into();
    b["top_p"] = 1.0.into();
    let r = generate(b, Arch::Llada);
    assert_eq!(r.gen_length, 20);
    assert_eq!(r.top_p, None);
}

#[test]
fn seeds_given_and_not() {
    let mut b = base();
    b["seed"] = 42.into();
    assert_eq!(generate(b, Arch::Llada).seed, 42);
    // Without a seed, two requests draw differently.
    let a = generate(base(), Arch::Llada).seed;
    let c = generate(base(), Arch::Llada).seed;
    assert_ne!(a, c);
}

#[test]
fn developer_is_system_and_parts_concatenate() {
    let b = serde_json::json!({"model": "m", "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]});
    let r = chat(b).unwrap();
    let Prompt::Chat(m) = r.prompt else {
        panic!("a chat prompt")
    };
    assert_eq!(m[0].role, "system");
    assert_eq!(m[1].content, "ab");
}

#[test]
fn completion_prompts() {
    let parse_c = |p: serde_json::Value| {
        parse(
            serde_json::json!({"model": "m", "prompt": p})
                .to_string()
                .as_bytes(),
            Endpoint::Completion,
        )
    };
    assert_eq!(
        parse_c("x".into()).unwrap().prompt,
        Prompt::Text("x".into())
    );
    assert_eq!(
        parse_c(serde_json::json!([1, 2])).unwrap().prompt,
        Prompt::Tokens(vec![1, 2])
    );
    assert!(parse_c(serde_json::json!([1.5])).is_err());
    assert!(parse_c(serde_json::json!([5_000_000_000u64])).is_err());
    // `messages` is not a completions field.
    let r = parse(
        serde_json::json!({"model": "m", "prompt": "x", "messages": []})
            .to_string()
            .as_bytes(),
        Endpoint::Completion,
    );
    assert_eq!(r.unwrap_err().param.as_deref(), Some("messages"));
}

#[test]
fn typed_errors_name_the_path_and_say_what_was_expected() {
    let err = |extra: serde_json::Value| {
        let mut b = base();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        chat(b).unwrap_err()
    };
    let e = err(serde_json::json!({"diffusion": {"steps": "many"}}));
    assert_eq!(e.param.as_deref(), Some("diffusion.steps"));
    assert_eq!(
        e.message,
        "`diffusion.steps` must be a non-negative integer"
    );
    let e = err(serde_json::json!({"diffusion": {"stepz": 1}}));
    assert_eq!(e.param.as_deref(), Some("diffusion.stepz"));
    assert!(e.message.contains("`steps`"), "{}", e.message);
    assert_eq!(e.code, Some("unsupported_parameter"));
    let e = err(serde_json::json!({"messages": "hi"}));
    assert_eq!(e.message, "`messages` must be an array of messages");
    let e = err(serde_json::json!({"messages": [3]}));
    assert_eq!(e.param.as_deref(), Some("messages[0]"));
    assert_eq!(e.message, "`messages[0]` must be an object");
    let e = err(serde_json::json!({"messages": [{"role": "user", "content": "x", "age": 3}]}));
    assert_eq!(e.param.as_deref(), Some("messages[0].age"));
    let e = err(serde_json::json!({"stream": true, "stream_options": {"x": true}}));
    assert_eq!(e.param.as_deref(), Some("stream_options.x"));
    let e = err(serde_json::json!({"foo": 1}));
    assert_eq!(e.param.as_deref(), Some("foo"));
    assert!(
        e.message
            .starts_with("Unrecognized or unsupported request argument")
    );
    // Trailing bytes after the object are malformed JSON.
    let e = parse(b"{\"model\": \"m\"} x", Endpoint::Chat).unwrap_err();
    assert_eq!(e.code, Some("invalid_json"));
}
