use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{Engine, EngineOptions, StepView};

use super::{MASK_GLYPH, Style, render_frame};

/// An engine over the tiny random fixture, whose byte-level vocabulary maps id `b` to byte
/// `b`, so the canvases below can be written as bytes.
fn demo() -> Engine {
    let spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 1, QuantMix::F32);
    let file = GgufFile::from_vec(fixture::build(&spec).unwrap().to_vec().unwrap()).unwrap();
    Engine::from_gguf(
        file,
        &EngineOptions {
            threads: Some(1),
            ..Default::default()
        },
    )
    .unwrap()
}

/// DiffusionGemma's frames: no masks (the mask id drawn by the uniform noise is shown as
/// the token it is), the accepted draft positions marked, canvases counted.
#[test]
fn a_draft_has_no_masks_and_marks_the_accepted_positions() {
    let engine = demo();
    let tok = engine.tokenizer();
    let mask = engine.mask_token_id();
    // Prompt "a", an earlier canvas "bc", then the draft of the current one: 'x' accepted
    // this step, the mask id, 'z'.
    let canvas = [b'a', b'b', b'c', b'x']
        .map(u32::from)
        .into_iter()
        .chain([mask, u32::from(b'z')])
        .collect::<Vec<_>>();
    let view = StepView {
        canvas: &canvas,
        prompt_len: 1,
        suffix: &[],
        committed: &[3],
        confidences: &[0.01],
        draft: 3,
        step: 4,
        total_steps: 48,
        block: 1,
        num_blocks: 2,
        logprobs: None,
    };
    let plain = render_frame(&view, tok, mask, Style { color: false });
    let shown = super::piece(tok, mask);
    assert_eq!(
        plain,
        format!("step 5/48  canvas 2/2  accepted 1/3\nbc[x]{shown}z\n")
    );
    assert!(!plain.contains(MASK_GLYPH));
}

#[test]
fn masks_are_glyphs_new_tokens_marked_old_tokens_plain() {
    let engine = demo();
    let tok = engine.tokenizer();
    let mask = engine.mask_token_id();
    // Prompt "ab", then: committed earlier 'x', committed now 'y', a mask, a newline.
    let canvas = [
        u32::from(b'a'),
        u32::from(b'b'),
        u32::from(b'x'),
        u32::from(b'y'),
        mask,
    ];
    let view = StepView {
        canvas: &canvas,
        prompt_len: 2,
        suffix: &[],
        committed: &[3],
        confidences: &[0.5],
        draft: 0,
        step: 1,
        total_steps: 4,
        block: 0,
        num_blocks: 2,
        logprobs: None,
    };
    let plain = render_frame(&view, tok, mask, Style { color: false });
    assert_eq!(
        plain,
        format!("step 2/4  block 1/2  committed 1  masks left 1/3\nx[y]{MASK_GLYPH}\n")
    );
    let color = render_frame(&view, tok, mask, Style { color: true });
    assert!(color.contains("\x1b[1;30;43my\x1b[0m"), "{color:?}");
    assert!(
        color.contains(&format!("\x1b[2m{MASK_GLYPH}\x1b[0m")),
        "{color:?}"
    );
    assert!(!color.contains("[y]"));
}

#[test]
fn control_characters_are_escaped_newlines_kept() {
    let engine = demo();
    let mask = engine.mask_token_id();
    let canvas = [u32::from(b'\n'), 0x07, u32::from(b'z'), 0xE2];
    let view = StepView {
        canvas: &canvas,
        prompt_len: 0,
        suffix: &[],
        committed: &[],
        confidences: &[],
        draft: 0,
        step: 0,
        total_steps: 1,
        block: 0,
        num_blocks: 1,
        logprobs: None,
    };
    let frame = render_frame(&view, engine.tokenizer(), mask, Style { color: false });
    assert!(frame.ends_with("\n\\u{7}z<0xE2>\n"), "{frame:?}");
}

#[test]
fn an_infill_frame_shows_the_prefix_and_suffix_around_the_middle() {
    let engine = demo();
    let mask = engine.mask_token_id();
    let canvas = [u32::from(b'a'), u32::from(b'b'), u32::from(b'x'), mask];
    let suffix = [u32::from(b'y'), u32::from(b'z')];
    let view = StepView {
        canvas: &canvas,
        prompt_len: 2,
        suffix: &suffix,
        committed: &[2],
        confidences: &[0.9],
        draft: 0,
        step: 0,
        total_steps: 2,
        block: 0,
        num_blocks: 1,
        logprobs: None,
    };
    let plain = render_frame(&view, engine.tokenizer(), mask, Style { color: false });
    assert!(
        plain.ends_with(&format!("\nab[x]{MASK_GLYPH}yz\n")),
        "{plain:?}"
    );
    let color = render_frame(&view, engine.tokenizer(), mask, Style { color: true });
    assert!(color.contains("\x1b[2mab\x1b[0m"), "{color:?}");
    assert!(color.contains("\x1b[2myz\x1b[0m"), "{color:?}");
    // Without a suffix the prompt stays hidden (the first test).
}
