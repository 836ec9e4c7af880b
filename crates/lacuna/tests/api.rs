//! The embedding API on fixtures built in memory: generation end to end, the step view,
//! the chat template, and a typed error for each bad setting or file.

mod common;

use common::{one_thread, tiny_bytes, tiny_engine, with_key, without_key};
use lacuna::gguf::{GgufFile, Value};
use lacuna::models::Arch;
use lacuna::sampler::ConfigError;
use lacuna::{
    ChatMessage, DreamAlg, Engine, EngineOptions, Error, GenerateRequest, ParallelConfig, Prompt,
};

fn request(prompt: Prompt, gen_length: usize, steps: usize, block: usize) -> GenerateRequest {
    let mut r = GenerateRequest::new(prompt);
    r.gen_length = gen_length;
    r.steps = steps;
    r.block_length = Some(block);
    r.keep_after_eos = true;
    r
}

#[test]
fn demo_generates_and_streams_every_step() {
    let mut engine = Engine::demo(&one_thread()).unwrap();
    assert_eq!(engine.arch(), Arch::Llada);
    assert!(engine.has_chat_template());
    let mask = engine.mask_token_id();
    let req = request(Prompt::user("Hello"), 16, 8, 8);
    let mut views = Vec::new();
    let out = engine
        .generate(&req, |v| {
            views.push((
                v.step,
                v.total_steps,
                v.block,
                v.committed.to_vec(),
                v.canvas.to_vec(),
                v.confidences.len(),
            ));
        })
        .unwrap();
    let prompt_len = out.prompt_tokens.len();
    assert_eq!(views.len(), 8, "one callback per step");
    assert_eq!(out.timings.step_ms.len(), 8);
    assert!(
        out.timings.encode_ms.is_empty(),
        "LLaDA has no encoder pass"
    );
    assert_eq!(out.stats.steps, 8);
    assert_eq!(out.canvas.len(), prompt_len + 16);
    assert_eq!(
        out.tokens.len(),
        16,
        "keep_after_eos returns the whole region"
    );
    assert!(out.tokens.iter().all(|&t| t != mask), "no masks remain");
    // Every generated position is committed exactly once, inside the generated region, in
    // the block of its step, and stays committed afterwards.
    let mut seen = vec![0usize; 16];
    for (i, (step, total, block, committed, canvas, n_conf)) in views.iter().enumerate() {
        assert_eq!(*step, i);
        assert_eq!(*total, 8);
        assert_eq!(*block, i / 4);
        assert_eq!(committed.len(), *n_conf);
        for &p in committed {
            assert!((prompt_len + block * 8..prompt_len + (block + 1) * 8).contains(&p));
            assert_ne!(canvas[p], mask);
            assert_eq!(canvas[p], out.canvas[p]);
            seen[p - prompt_len] += 1;
        }
        let masks = canvas[prompt_len..].iter().filter(|&&t| t == mask).count();
        assert_eq!(masks, 16 - 2 * (i + 1), "two tokens per step (16 / 8)");
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    assert_eq!(out.text, engine.tokenizer().decode(&out.tokens).unwrap());
    assert!(out.tokens_per_s() > 0.0);
}

#[test]
fn same_seed_same_output_at_temperature() {
    let mut engine = Engine::demo(&one_thread()).unwrap();
    let mut req = request(Prompt::Text("abc".into()), 8, 4, 8);
    req.temperature = 1.0;
    req.seed = 7;
    let a = engine.generate(&req, |_| {}).unwrap();
    let b = engine.generate(&req, |_| {}).unwrap();
    assert_eq!(a.canvas, b.canvas);
}

#[test]
fn threads_option_sizes_the_pool_and_keeps_results() {
    let mut one = Engine::demo(&one_thread()).unwrap();
    let mut two = Engine::demo(&EngineOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(one.threads(), 1);
    assert_eq!(two.threads(), 2);
    let req = request(Prompt::Text("xyz".into()), 8, 4, 8);
    let a = one.generate(&req, |_| {}).unwrap();
    let b = two.generate(&req, |_| {}).unwrap();
    assert_eq!(a.canvas, b.canvas);
    assert!(matches!(
        Engine::demo(&EngineOptions {
            threads: Some(0),
            ..Default::default()
        }),
        Err(Error::ZeroThreads)
    ));
}

#[test]
fn chat_prompt_goes_through_the_template() {
    let engine = Engine::demo(&one_thread()).unwrap();
    let prompt = Prompt::Chat(vec![
        ChatMessage::new("user", "hi"),
        ChatMessage::new("assistant", "yo"),
        ChatMessage::new("user", "again"),
    ]);
    let ids = engine.prompt_tokens(&prompt).unwrap();
    let bos = engine.tokenizer().vocab().special().bos.unwrap();
    assert_eq!(ids[0], bos);
    assert_eq!(
        ids.iter().filter(|&&t| t == bos).count(),
        1,
        "no double BOS"
    );
    // The turn markers are control tokens: parsed as such (not spelled out), and shown by
    // llama.cpp's detokenizer only when asked to unparse specials.
    let text = engine.tokenizer().detokenize(&ids, false, true).unwrap();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nagain<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(
        engine.tokenizer().decode(&ids).unwrap(),
        "user\n\nhiassistant\n\nyouser\n\nagainassistant\n\n"
    );
    assert!(matches!(
        engine.prompt_tokens(&Prompt::Chat(vec![])),
        Err(Error::EmptyChat)
    ));
}

#[test]
fn chat_without_template_is_an_error_text_is_not() {
    let mut engine = tiny_engine(Arch::Llada);
    assert!(!engine.has_chat_template());
    let err = engine
        .generate(&request(Prompt::user("hi"), 4, 4, 4), |_| {})
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Tokenizer(lacuna::tokenizer::Error::NoChatTemplate)
        ),
        "{err}"
    );
    let out = engine
        .generate(&request(Prompt::Text("hi".into()), 4, 4, 4), |_| {})
        .unwrap();
    assert_eq!(out.tokens.len(), 4);
}

#[test]
fn dream_uses_the_dream_sampler() {
    let mut engine = tiny_engine(Arch::Dream);
    assert_eq!(engine.arch(), Arch::Dream);
    let mut req = request(Prompt::Tokens(vec![1, 2, 3]), 8, 4, 8);
    req.block_length = None;
    req.top_k = Some(5);
    // maskgit_plus commits a fixed count per step, so every step runs (origin may finish
    // early when its random reveals empty the canvas).
    req.algorithm = Some(DreamAlg::MaskgitPlus);
    let out = engine.generate(&req, |_| {}).unwrap();
    assert_eq!(out.stats.steps, 4);
    assert_eq!(out.canvas.len(), 11);
    // Dream's official sampler has no blocks.
    req.block_length = Some(4);
    let err = engine.generate(&req, |_| {}).unwrap_err();
    assert!(
        matches!(err, Error::Config(ConfigError::BlockLengthWithoutParallel)),
        "{err}"
    );
    // ... except in parallel mode.
    req.parallel = Some(ParallelConfig::default());
    let out = engine.generate(&req, |_| {}).unwrap();
    assert!(out.stats.steps >= 2, "at least one step per block");
    // LLaDA-only settings are refused by name.
    req.cfg_scale = Some(1.0);
    let err = engine.generate(&req, |_| {}).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedSetting {
                setting: "cfg_scale",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn llada_moe_runs_through_the_llada_sampler() {
    let mut engine = tiny_engine(Arch::LladaMoe);
    let out = engine
        .generate(&request(Prompt::Tokens(vec![5, 6]), 4, 2, 4), |_| {})
        .unwrap();
    assert_eq!(out.stats.steps, 2);
}

#[test]
fn bad_settings_are_typed_errors() {
    let mut engine = tiny_engine(Arch::Llada);
    let p = || Prompt::Text("a".into());
    let cases: Vec<(GenerateRequest, ConfigError)> = vec![
        (
            request(p(), 10, 4, 4),
            ConfigError::GenLengthNotMultipleOfBlock {
                gen_length: 10,
                block_length: 4,
            },
        ),
        (
            request(p(), 8, 3, 4),
            ConfigError::StepsNotMultipleOfBlocks {
                steps: 3,
                blocks: 2,
            },
        ),
        (request(p(), 8, 0, 4), ConfigError::ZeroSteps),
        (request(p(), 0, 4, 4), ConfigError::ZeroGenLength),
    ];
    for (req, expected) in cases {
        match engine.generate(&req, |_| panic!("no step may run")) {
            Err(Error::Config(found)) => assert_eq!(found, expected),
            other => panic!("expected {expected}, got {other:?}"),
        }
    }
    let mut req = request(p(), 8, 4, 4);
    req.temperature = f64::NAN;
    assert!(matches!(
        engine.generate(&req, |_| {}),
        Err(Error::Config(ConfigError::OutOfRange {
            name: "temperature",
            ..
        }))
    ));
    let mut req = request(p(), 8, 4, 4);
    req.top_p = Some(0.9);
    assert!(matches!(
        engine.generate(&req, |_| {}),
        Err(Error::UnsupportedSetting {
            setting: "top_p",
            arch: Arch::Llada,
            ..
        })
    ));
}

#[test]
fn prompt_plus_canvas_longer_than_context_is_refused() {
    let mut engine = tiny_engine(Arch::Llada);
    let ctx = engine.context_length();
    let req = request(Prompt::Tokens(vec![1; 10]), ctx - 9, ctx - 9, ctx - 9);
    match engine.generate(&req, |_| {}) {
        Err(Error::ContextOverflow {
            prompt: 10,
            total,
            context,
            ..
        }) => assert_eq!((total, context), (ctx + 1, ctx)),
        other => panic!("{other:?}"),
    }
    let req = request(Prompt::Tokens(vec![1, 600]), 4, 4, 4);
    assert!(matches!(
        engine.generate(&req, |_| {}),
        Err(Error::PromptToken {
            token: 600,
            position: 1,
            vocab: 512
        })
    ));
}

#[test]
fn model_without_mask_token_is_refused_at_load() {
    // No mask id in the metadata and no `<|mdm_mask|>` text in the vocabulary (with the text
    // the mask would be found by it).
    let bytes = without_key(tiny_bytes(Arch::Llada), "tokenizer.ggml.mask_token_id");
    let file = GgufFile::from_vec(bytes.clone()).unwrap();
    let Some(Value::Array(lacuna::gguf::Array::String(mut tokens))) =
        file.metadata().value("tokenizer.ggml.tokens").cloned()
    else {
        panic!("string tokens")
    };
    for t in tokens.iter_mut().filter(|t| *t == "<|mdm_mask|>") {
        *t = "<|not_a_mask|>".to_string();
    }
    let tokens = Value::Array(lacuna::gguf::Array::String(tokens));
    let bytes = with_key(bytes, "tokenizer.ggml.tokens", tokens);
    let err = Engine::from_gguf(GgufFile::from_vec(bytes).unwrap(), &one_thread()).unwrap_err();
    assert!(
        matches!(err, Error::NoMaskToken { arch: Arch::Llada }),
        "{err}"
    );
    assert!(err.to_string().contains("mask token"));
}

#[test]
fn missing_and_unreadable_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.gguf");
    let err = Engine::load(&missing, &one_thread()).unwrap_err();
    assert!(
        matches!(err, Error::Gguf(lacuna::gguf::Error::Io { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("nope.gguf"), "{err}");

    let garbage = dir.path().join("garbage.gguf");
    std::fs::write(&garbage, b"this is not a gguf file at all").unwrap();
    let err = Engine::load(&garbage, &one_thread()).unwrap_err();
    assert!(matches!(err, Error::Open { .. }), "{err}");
    assert!(err.to_string().contains("garbage.gguf"), "{err}");

    let good = dir.path().join("tiny.gguf");
    std::fs::write(&good, tiny_bytes(Arch::Llada)).unwrap();
    let engine = Engine::load(&good, &one_thread()).unwrap();
    assert_eq!(engine.mask_token_id(), 511);
    assert!(engine.load_s() > 0.0);
}

#[test]
fn broken_chat_template_is_refused_at_load() {
    let bytes = with_key(
        tiny_bytes(Arch::Llada),
        "tokenizer.chat_template",
        Value::String("{% for m in messages %}".into()),
    );
    let err = Engine::from_gguf(GgufFile::from_vec(bytes).unwrap(), &one_thread()).unwrap_err();
    assert!(matches!(err, Error::Tokenizer(_)), "{err}");
}

#[test]
fn llada2_generates_block_by_block_and_its_cache_is_exact() {
    let mut engine = tiny_engine(Arch::Llada2);
    let mut r = request(Prompt::Tokens(vec![5, 6, 7, 8, 9]), 20, 4, 8);
    let mut lens = Vec::new();
    let plain = engine
        .generate(&r, |v| lens.push((v.block, v.num_blocks)))
        .unwrap();
    assert_eq!(plain.tokens.len(), 20);
    // 5 + 20 = 25 tokens: blocks 0..4 of 8, all but the prompt-only ones decoded.
    assert_eq!(lens.last(), Some(&(3, 4)));
    r.cache = lacuna::CachePolicy::Prefix;
    let cached = engine.generate(&r, |_| {}).unwrap();
    assert_eq!(cached.canvas, plain.canvas);
    assert_eq!(cached.stats.cache_fills, 1);
    assert!(cached.stats.positions_computed < plain.stats.positions_computed);
    // LLaDA2.1's editing runs too.
    r.editing = Some(lacuna::Editing::default());
    let edited = engine.generate(&r, |_| {}).unwrap();
    assert_eq!(edited.tokens.len(), 20);
}

#[test]
fn rnd1_runs_its_entropy_sampler() {
    let mut engine = tiny_engine(Arch::Rnd1);
    let mut r = GenerateRequest::new(Prompt::Tokens(vec![5, 6]));
    r.gen_length = 10;
    r.steps = 5;
    r.keep_after_eos = true;
    let out = engine.generate(&r, |_| {}).unwrap();
    assert_eq!(out.tokens.len(), 10);
    assert!(!out.tokens.contains(&engine.mask_token_id()));
    assert_eq!(out.stats.denoiser_calls, 5);
}

#[test]
fn settings_of_other_samplers_are_refused_by_llada2_and_rnd1() {
    let mut llada2 = tiny_engine(Arch::Llada2);
    let mut r = request(Prompt::Tokens(vec![5]), 8, 4, 8);
    r.cache = lacuna::CachePolicy::Dual;
    assert!(matches!(
        llada2.generate(&r, |_| panic!("no step")),
        Err(Error::Config(ConfigError::CacheUnsupported { .. }))
    ));
    r.cache = lacuna::CachePolicy::None;
    r.cfg_scale = Some(1.0);
    assert!(matches!(
        llada2.generate(&r, |_| panic!("no step")),
        Err(Error::UnsupportedSetting {
            setting: "cfg_scale",
            ..
        })
    ));
    let mut rnd1 = tiny_engine(Arch::Rnd1);
    let mut r = GenerateRequest::new(Prompt::Tokens(vec![5]));
    r.block_length = Some(4);
    assert!(matches!(
        rnd1.generate(&r, |_| panic!("no step")),
        Err(Error::UnsupportedSetting {
            setting: "block_length",
            ..
        })
    ));
    let mut r = GenerateRequest::new(Prompt::Tokens(vec![]));
    r.gen_length = 4;
    assert!(matches!(
        rnd1.generate(&r, |_| panic!("no step")),
        Err(Error::Config(ConfigError::EmptyPrompt))
    ));
    let mut llada = tiny_engine(Arch::Llada);
    let mut r = request(Prompt::Tokens(vec![5]), 8, 4, 8);
    r.editing = Some(lacuna::Editing::default());
    assert!(matches!(
        llada.generate(&r, |_| panic!("no step")),
        Err(Error::UnsupportedSetting {
            setting: "editing",
            ..
        })
    ));
}
