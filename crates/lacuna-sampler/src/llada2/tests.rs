use super::*;
use crate::denoiser::Pass;
use crate::rng::Xoshiro256PlusPlus;

/// Records every call; every row prefers token `pos % 7`, with confidence falling along the
/// canvas.
#[derive(Default)]
struct Recorder {
    calls: Vec<(usize, Pass, Vec<usize>)>,
}

impl Denoiser for Recorder {
    type Error = std::convert::Infallible;
    fn vocab_size(&self) -> usize {
        8
    }
    fn supports_cache(&self) -> bool {
        true
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        self.calls.push((canvas.len(), pass.clone(), rows.to_vec()));
        for (row, &p) in out.chunks_exact_mut(8).zip(rows) {
            row.fill(0.0);
            row[p % 7] = 4.0 - p as f32 * 0.1;
        }
        Ok(())
    }
}

/// Generates for the prompt 1..=5 under `cache`, recording the denoiser's calls.
fn record(cache: CachePolicy) -> (Recorder, Generation) {
    let mut d = Recorder::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let g = generate(&mut d, &[1, 2, 3, 4, 5], &config(cache), &mut rng, |_| {}).unwrap();
    (d, g)
}

fn config(cache: CachePolicy) -> Llada2Config {
    Llada2Config {
        common: Common {
            gen_length: 10,
            mask_id: Some(7),
            ..Common::default()
        },
        block_length: 4,
        steps: 2,
        cache,
        ..Llada2Config::default()
    }
}

#[test]
fn the_model_sees_the_canvas_up_to_the_block_end() {
    // Prompt of 5: blocks 1, 2 and 3 (positions 4..16) are decoded; 5 + 10 = 15 tokens kept.
    let (d, g) = record(CachePolicy::None);
    assert_eq!(g.tokens.len(), 10);
    assert_eq!(g.canvas.len(), 15);
    let lens: Vec<usize> = d.calls.iter().map(|c| c.0).collect();
    assert_eq!(lens, vec![8, 8, 12, 12, 16, 16]);
    assert!(d.calls.iter().all(|c| c.1 == Pass::Full));
    // The block holding the prompt's tail asks only for its masked rows.
    assert_eq!(d.calls[0].2, vec![5, 6, 7]);
}

#[test]
fn the_prefix_cache_recomputes_the_previous_block_once() {
    let (d, cached) = record(CachePolicy::Prefix);
    let passes: Vec<Pass> = d.calls.iter().map(|c| c.1.clone()).collect();
    assert_eq!(
        passes,
        vec![
            Pass::Fill,
            Pass::Window(4..8),
            Pass::Window(4..12),
            Pass::Window(8..12),
            Pass::Window(8..16),
            Pass::Window(12..16),
        ]
    );
    let (_, plain) = record(CachePolicy::None);
    assert_eq!(cached.tokens, plain.tokens);
}

#[test]
fn settings_are_checked() {
    let bad = [
        Llada2Config {
            threshold: f64::NAN,
            ..config(CachePolicy::None)
        },
        Llada2Config {
            top_p: Some(0.0),
            ..config(CachePolicy::None)
        },
        Llada2Config {
            top_k: Some(0),
            ..config(CachePolicy::None)
        },
        Llada2Config {
            steps: 0,
            ..config(CachePolicy::None)
        },
        Llada2Config {
            editing: Some(Editing {
                num_to_transfer: 0,
                ..Editing::default()
            }),
            ..config(CachePolicy::None)
        },
        config(CachePolicy::Dual),
        Llada2Config {
            common: Common {
                mask_id: None,
                ..config(CachePolicy::None).common
            },
            ..config(CachePolicy::None)
        },
    ];
    for c in bad {
        assert!(c.validate().is_err(), "{c:?}");
    }
    assert_eq!(config(CachePolicy::Prefix).validate(), Ok(7));
}

#[test]
fn editing_never_touches_the_prompt() {
    /// Predicts 3 at every row, very surely: the prompt token in the block stays.
    struct Sure;
    impl Denoiser for Sure {
        type Error = std::convert::Infallible;
        fn vocab_size(&self) -> usize {
            8
        }
        fn forward(
            &mut self,
            _: &[u32],
            _pass: &Pass,
            rows: &[usize],
            out: &mut [f32],
        ) -> Result<(), Self::Error> {
            for row in out.chunks_exact_mut(8).take(rows.len()) {
                row.fill(0.0);
                row[3] = 20.0;
            }
            Ok(())
        }
    }
    let c = Llada2Config {
        common: Common {
            gen_length: 3,
            mask_id: Some(7),
            ..Common::default()
        },
        block_length: 4,
        steps: 4,
        editing: Some(Editing::default()),
        ..Llada2Config::default()
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let g = generate(&mut Sure, &[5], &c, &mut rng, |_| {}).unwrap();
    assert_eq!(g.canvas, vec![5, 3, 3, 3]);
}
