//! Infilling through the engine: the middle between a prefix and a suffix is generated,
//! the suffix is tokenized without BOS/EOS and seen by the model, the output holds the
//! middle only, and the cases a model cannot serve are typed errors.

mod common;

use common::{one_thread, tiny_engine};
use lacuna::models::Arch;
use lacuna::{CachePolicy, Engine, Error, GenerateRequest, ParallelConfig};

fn infill(prefix: &str, suffix: &str, gen_length: usize) -> GenerateRequest {
    let mut r = GenerateRequest::infill(prefix, suffix);
    r.gen_length = gen_length;
    r.steps = gen_length;
    r.block_length = Some(gen_length);
    r
}

#[test]
fn the_middle_is_generated_and_the_suffix_is_seen() {
    let mut engine = Engine::demo(&one_thread()).unwrap();
    let prefix_tokens = engine
        .tokenizer()
        .encode("And God said,", true, true)
        .unwrap();
    let suffix = " and there was light.";
    let mut suffix_seen = Vec::new();
    let mut plain_req = infill("And God said,", "", 8);
    plain_req.suffix = None;
    let plain = engine.generate(&plain_req, |_| {}).unwrap();
    for cache in [CachePolicy::None, CachePolicy::Prefix, CachePolicy::Dual] {
        let mut r = infill("And God said,", suffix, 8);
        r.cache = cache;
        r.keep_after_eos = true;
        let out = engine.generate(&r, |_| {}).unwrap();
        assert_eq!(out.prompt_tokens, prefix_tokens, "{cache:?}");
        assert_eq!(out.canvas.len(), prefix_tokens.len() + 8, "{cache:?}");
        assert_eq!(out.tokens.len(), 8);
        assert!(!out.canvas.contains(&engine.mask_token_id()));
        suffix_seen.push(out.tokens);
    }
    // Exact decoding with the suffix differs from decoding without it: it is seen.
    assert_ne!(
        suffix_seen[0][..],
        plain.canvas[plain.prompt_tokens.len()..]
    );
    // The parallel mode infills too.
    let mut r = infill("And God said,", suffix, 16);
    r.parallel = Some(ParallelConfig::default());
    r.block_length = Some(8);
    let out = engine.generate(&r, |_| {}).unwrap();
    assert!(out.tokens.len() <= 16);
}

#[test]
fn infill_errors_are_typed() {
    let engine = Engine::demo(&one_thread()).unwrap();
    let context = engine.context_length();
    let long = " light".repeat(300);
    let err = engine
        .prepare(&infill("And God said,", &long, 32))
        .unwrap_err();
    assert!(
        matches!(err, Error::InfillContextOverflow { gen_length: 32, context: c, .. } if c == context),
        "{err}"
    );
    assert!(err.to_string().contains("suffix"), "{err}");
    let llada2 = tiny_engine(Arch::Llada2);
    let mut r = infill("ab", "cd", 8);
    r.steps = 8;
    let err = llada2.prepare(&r).unwrap_err();
    assert!(
        matches!(err, Error::InfillUnsupported { arch: Arch::Llada2 }),
        "{err}"
    );
    assert!(err.to_string().contains("block-causal"), "{err}");
    // An empty suffix is plain generation, for every model.
    let mut r = infill("ab", "", 8);
    r.steps = 8;
    assert!(llada2.prepare(&r).is_ok());
}
