use super::*;
use crate::output::Finish;
use crate::rng::Xoshiro256PlusPlus;
use crate::testing::{Boom, model};

/// Row r prefers token r % vocab with a confidence that grows with r.
fn ramp(_: &[u32], r: usize, t: usize) -> f32 {
    if t == r % 8 {
        1.0 + r as f32 * 0.25
    } else {
        0.0
    }
}

const MASK: u32 = 100;

fn config() -> LladaConfig {
    LladaConfig {
        common: Common {
            gen_length: 8,
            mask_id: Some(MASK),
            ..Common::default()
        },
        block_length: 4,
        steps: 4,
        ..LladaConfig::default()
    }
}

fn run_default<D: Denoiser>(d: &mut D, c: &LladaConfig) -> Result<Generation, Error<D::Error>> {
    generate(
        d,
        &[1, 2, 3],
        c,
        &mut Xoshiro256PlusPlus::seed_from_u64(0),
        |_| {},
    )
}

fn config_err(c: LladaConfig) -> ConfigError {
    match run_default(&mut model(8, ramp), &c) {
        Err(Error::Config(e)) => e,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn bad_settings_are_typed_errors() {
    let base = config();
    assert_eq!(
        config_err(LladaConfig {
            block_length: 3,
            ..base.clone()
        }),
        ConfigError::GenLengthNotMultipleOfBlock {
            gen_length: 8,
            block_length: 3
        }
    );
    assert_eq!(
        config_err(LladaConfig {
            steps: 3,
            ..base.clone()
        }),
        ConfigError::StepsNotMultipleOfBlocks {
            steps: 3,
            blocks: 2
        }
    );
    assert_eq!(
        config_err(LladaConfig {
            steps: 0,
            ..base.clone()
        }),
        ConfigError::ZeroSteps
    );
    assert_eq!(
        config_err(LladaConfig {
            common: Common {
                gen_length: 0,
                ..base.common.clone()
            },
            ..base.clone()
        }),
        ConfigError::ZeroGenLength
    );
    assert_eq!(
        config_err(LladaConfig {
            block_length: 0,
            ..base.clone()
        }),
        ConfigError::ZeroBlockLength
    );
    assert_eq!(
        config_err(LladaConfig {
            common: Common {
                mask_id: None,
                ..base.common.clone()
            },
            ..base.clone()
        }),
        ConfigError::MissingMaskId
    );
    for temperature in [f64::NAN, -1.0, f64::INFINITY] {
        let e = config_err(LladaConfig {
            temperature,
            ..base.clone()
        });
        assert!(
            matches!(
                e,
                ConfigError::OutOfRange {
                    name: "temperature",
                    ..
                }
            ),
            "{e:?}"
        );
    }
    let e = config_err(LladaConfig {
        cfg_scale: -0.5,
        ..base.clone()
    });
    assert!(
        matches!(
            e,
            ConfigError::OutOfRange {
                name: "cfg_scale",
                ..
            }
        ),
        "{e:?}"
    );
    for rule in [
        ParallelRule::Threshold(f64::NAN),
        ParallelRule::Factor(0.0),
        ParallelRule::Factor(-1.0),
    ] {
        let e = config_err(LladaConfig {
            parallel: Some(ParallelConfig { rule }),
            ..base.clone()
        });
        assert!(matches!(e, ConfigError::OutOfRange { .. }), "{e:?}");
    }
    assert!(matches!(
        run_default(&mut model(0, ramp), &base),
        Err(Error::Config(ConfigError::EmptyVocab))
    ));
}

use crate::parallel::ParallelRule;

#[test]
fn denoiser_failures_and_bad_logits_are_reported() {
    let mut failing = model(8, ramp);
    failing.fail = true;
    assert!(matches!(
        run_default(&mut failing, &config()),
        Err(Error::Denoiser(Boom))
    ));

    let nan = |_: &[u32], r: usize, t: usize| if r == 4 && t == 2 { f32::NAN } else { 0.0 };
    match run_default(&mut model(8, nan), &config()) {
        Err(Error::InvalidLogit {
            row: 4,
            token: 2,
            value,
        }) => assert!(value.is_nan()),
        other => panic!("{other:?}"),
    }
    let inf = |_: &[u32], _: usize, t: usize| if t == 1 { f32::INFINITY } else { 0.0 };
    assert!(matches!(
        run_default(&mut model(8, inf), &config()),
        Err(Error::InvalidLogit { token: 1, .. })
    ));
    let dead = |_: &[u32], _: usize, _: usize| f32::NEG_INFINITY;
    assert!(matches!(
        run_default(&mut model(8, dead), &config()),
        Err(Error::NoFiniteLogit { row: 3 })
    ));
    // -inf alone is fine.
    let some_dead =
        |_: &[u32], _: usize, t: usize| if t == 0 { f32::NEG_INFINITY } else { t as f32 };
    let g = run_default(&mut model(8, some_dead), &config()).expect("-inf logits are allowed");
    assert!(g.tokens.iter().all(|&t| t == 7));
}

#[test]
fn only_masked_positions_up_to_the_block_end_are_requested_and_committed() {
    let mut m = model(8, ramp);
    let c = LladaConfig {
        common: Common {
            gen_length: 12,
            ..config().common
        },
        block_length: 4,
        steps: 6,
        ..config()
    };
    let mut views = Vec::new();
    let g = generate(
        &mut m,
        &[1, 2, 3],
        &c,
        &mut Xoshiro256PlusPlus::seed_from_u64(0),
        |v| {
            views.push((v.block, v.committed.to_vec()));
        },
    )
    .expect("runs");
    for (canvas, rows) in &m.requests {
        assert!(
            rows.iter().all(|&r| canvas[r] == MASK),
            "requested an unmasked row"
        );
    }
    // Two steps per block, two commits each, all inside the block.
    assert_eq!(views.len(), 6);
    for (block, committed) in &views {
        assert_eq!(committed.len(), 2);
        let start = 3 + 4 * block;
        assert!(
            committed.iter().all(|&p| (start..start + 4).contains(&p)),
            "{committed:?}"
        );
    }
    // low_confidence with a ramp: the right-most (most confident) positions first.
    assert_eq!(views[0].1, vec![6, 5]);
    assert_eq!(g.tokens, vec![3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(g.stats.steps, 6);
    assert_eq!(g.stats.denoiser_calls, 6);
}

#[test]
fn cfg_runs_a_second_pass_with_the_prompt_masked() {
    let mut m = model(8, ramp);
    let c = LladaConfig {
        cfg_scale: 1.0,
        ..config()
    };
    let g = run_default(&mut m, &c).expect("runs");
    assert_eq!(g.stats.denoiser_calls, 2 * g.stats.steps);
    for pair in m.requests.chunks(2) {
        assert_eq!(pair[0].1, pair[1].1, "both passes ask for the same rows");
        assert_eq!(&pair[0].0[..3], &[1, 2, 3]);
        assert_eq!(&pair[1].0[..3], &[MASK; 3]);
        assert_eq!(pair[0].0[3..], pair[1].0[3..]);
    }
}

#[test]
fn cfg_combines_as_uncond_plus_scale_times_difference() {
    // Conditional prefers token 1 slightly, unconditional prefers token 1 even more:
    // with scale 2, l = u + 3 (c - u) flips the preference to token 0.
    let f = |canvas: &[u32], _: usize, t: usize| {
        let cond = canvas[0] != MASK;
        match (cond, t) {
            (true, 0) => 1.0,
            (true, 1) => 1.5,
            (false, 0) => 0.0,
            (false, 1) => 1.0,
            _ => -10.0,
        }
    };
    let off = run_default(&mut model(4, f), &config()).expect("runs");
    assert!(off.tokens.iter().all(|&t| t == 1));
    let on = run_default(
        &mut model(4, f),
        &LladaConfig {
            cfg_scale: 2.0,
            ..config()
        },
    )
    .expect("runs");
    assert!(on.tokens.iter().all(|&t| t == 0), "{:?}", on.tokens);
}

#[test]
fn the_same_seed_gives_the_same_tokens() {
    let noisy = |canvas: &[u32], r: usize, t: usize| {
        let h = canvas
            .iter()
            .fold(r as u32, |a, &b| a.wrapping_mul(31).wrapping_add(b));
        ((h.wrapping_add(t as u32 * 7919)) % 13) as f32 * 0.3
    };
    let c = LladaConfig {
        common: Common {
            gen_length: 16,
            ..config().common
        },
        block_length: 8,
        steps: 8,
        temperature: 1.0,
        remasking: Remasking::Random,
        ..config()
    };
    let run = |seed| {
        generate(
            &mut model(16, noisy),
            &[1, 2],
            &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |_| {},
        )
        .expect("runs")
        .tokens
    };
    assert_eq!(run(5), run(5));
    assert!(
        (0..8).any(|s| run(s) != run(5)),
        "the seed must matter at temperature 1"
    );
}

#[test]
fn parallel_mode_stops_a_block_when_it_has_no_masks_and_reports_stalls() {
    // Every row is very sure: one step per block.
    let sure = |_: &[u32], _: usize, t: usize| if t == 3 { 20.0 } else { 0.0 };
    let c = LladaConfig {
        parallel: Some(ParallelConfig::default()),
        ..config()
    };
    let g = run_default(&mut model(8, sure), &c).expect("runs");
    assert_eq!(g.stats.steps, 2);
    assert_eq!(g.tokens, vec![3; 8]);

    // Nobody is sure: one commit per step, as the official loop.
    let flat = |_: &[u32], _: usize, _: usize| 0.0;
    let g = run_default(&mut model(8, flat), &c).expect("runs");
    assert_eq!(g.stats.steps, 8);

    // A model that predicts the mask token never empties the block.
    let masky = |_: &[u32], _: usize, t: usize| if t == 5 { 1.0 } else { 0.0 };
    let c = LladaConfig {
        common: Common {
            mask_id: Some(5),
            ..c.common
        },
        ..c
    };
    assert!(matches!(
        run_default(&mut model(8, masky), &c),
        Err(Error::Stalled { block: 0 })
    ));
}

#[test]
fn generation_stops_at_a_settled_end_token_unless_asked_to_keep_going() {
    // Position 3 (first generated) is the surest and predicts the end token 7.
    let f = |_: &[u32], r: usize, t: usize| match (r, t) {
        (3, 7) => 10.0,
        (_, 1) => 1.0,
        _ => 0.0,
    };
    let c = LladaConfig {
        common: Common {
            eos_ids: vec![7],
            ..config().common
        },
        ..config()
    };
    let g = run_default(&mut model(8, f), &c).expect("runs");
    assert_eq!(g.tokens, Vec::<u32>::new());
    assert_eq!(g.stats.finish, Finish::Eos { index: 0, token: 7 });
    assert_eq!(g.stats.steps, 1);
    let kept = run_default(
        &mut model(8, f),
        &LladaConfig {
            common: Common {
                keep_after_eos: true,
                ..c.common
            },
            ..c
        },
    )
    .expect("runs");
    assert_eq!(kept.tokens, vec![7, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(kept.stats.finish, Finish::Completed);
}
