//! Every llama-quantize preset loads and generates, for every architecture: the tiny
//! 2-layer fixture of each quantized the way llama-quantize does it (`build_preset`), run
//! through the embedding API end to end.

mod common;

use common::one_thread;
use lacuna::gguf::GgufFile;
use lacuna::models::fixture::{FixtureSpec, QuantMix, Shape, build_preset};
use lacuna::models::{Arch, Preset};
use lacuna::{Engine, GenerateRequest, Prompt};

fn generates_under_every_preset(arch: Arch) {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, QuantMix::F32);
    for preset in Preset::ALL {
        let bytes = build_preset(&spec, preset).unwrap().to_vec().unwrap();
        let mut engine = Engine::from_gguf(GgufFile::from_vec(bytes).unwrap(), &one_thread())
            .unwrap_or_else(|e| panic!("{arch} {}: {e}", preset.name()));
        let mut req = GenerateRequest::new(Prompt::Tokens(vec![1, 2, 3, 4]));
        req.gen_length = 16;
        req.steps = 8;
        req.keep_after_eos = true;
        if arch != Arch::Dream {
            req.block_length = Some(8);
        }
        let out = engine
            .generate(&req, |_| {})
            .unwrap_or_else(|e| panic!("{arch} {}: {e}", preset.name()));
        let mask = engine.mask_token_id();
        assert_eq!(out.tokens.len(), 16, "{arch} {}", preset.name());
        assert!(
            out.tokens.iter().all(|&t| t != mask),
            "{arch} {}",
            preset.name()
        );
        // Dream may stop early once its canvas holds only end tokens.
        assert!(
            (1..=8).contains(&out.stats.steps),
            "{arch} {}",
            preset.name()
        );
    }
}

#[test]
fn llada_generates_under_every_preset() {
    generates_under_every_preset(Arch::Llada);
}

#[test]
fn dream_generates_under_every_preset() {
    generates_under_every_preset(Arch::Dream);
}

#[test]
fn llada_moe_generates_under_every_preset() {
    generates_under_every_preset(Arch::LladaMoe);
}
