//! Properties of whole generations on random settings, with the toy model: per-step commit
//! counts follow the official schedules, positions outside the current block are never
//! chosen, every mask is filled, and a seed fixes the output across runs and threads.

mod common;

use common::ToyModel;
use lacuna_sampler::schedule::{dream_timesteps, dream_transfer_count, llada_transfer_counts};
use lacuna_sampler::{
    Common, DreamAlg, DreamConfig, LladaConfig, ParallelConfig, ParallelRule, Remasking,
    Xoshiro256PlusPlus, dream, llada,
};
use proptest::prelude::*;

const VOCAB: usize = 12;
const MASK: u32 = VOCAB as u32;

fn llada_config() -> impl Strategy<Value = LladaConfig> {
    (
        1usize..4,
        1usize..6,
        1usize..4,
        prop_oneof![Just(0.0), Just(0.5), Just(1.0)],
        prop_oneof![Just(0.0f32), Just(1.0)],
        any::<bool>(),
        prop_oneof![
            3 => Just(None),
            1 => (0.2f64..1.0).prop_map(|t| Some(ParallelRule::Threshold(t))),
            1 => (0.2f64..3.0).prop_map(|f| Some(ParallelRule::Factor(f))),
        ],
    )
        .prop_map(
            |(blocks, block_length, steps_per_block, temperature, cfg_scale, random, rule)| {
                LladaConfig {
                    common: Common {
                        gen_length: blocks * block_length,
                        mask_id: Some(MASK),
                        ..Common::default()
                    },
                    block_length,
                    steps: blocks * steps_per_block,
                    temperature,
                    cfg_scale,
                    remasking: if random {
                        Remasking::Random
                    } else {
                        Remasking::LowConfidence
                    },
                    parallel: rule.map(|rule| ParallelConfig { rule }),
                    ..LladaConfig::default()
                }
            },
        )
}

fn dream_config() -> impl Strategy<Value = DreamConfig> {
    (
        1usize..14,
        1usize..10,
        prop_oneof![
            Just(DreamAlg::Origin),
            Just(DreamAlg::MaskgitPlus),
            Just(DreamAlg::TopkMargin),
            Just(DreamAlg::Entropy)
        ],
        prop_oneof![Just(0.0f32), Just(0.5)],
        prop_oneof![Just(0.0f32), Just(0.8)],
        prop_oneof![Just(None), Just(Some(0.9f64))],
        prop_oneof![Just(None), Just(Some(4usize))],
    )
        .prop_map(
            |(gen_length, steps, alg, alg_temp, temperature, top_p, top_k)| DreamConfig {
                common: Common {
                    gen_length,
                    mask_id: Some(MASK),
                    ..Common::default()
                },
                steps,
                alg,
                alg_temp,
                temperature,
                top_p,
                top_k,
                ..DreamConfig::default()
            },
        )
}

fn prompt() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(0u32..VOCAB as u32, 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn llada_follows_its_schedule_and_stays_in_the_block(
        c in llada_config(), prompt in prompt(), seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let mut views = Vec::new();
        let g = llada::generate(
            &mut ToyModel::new(VOCAB, model_seed), &prompt, &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |v| views.push((v.block, v.step, v.committed.to_vec())),
        ).expect("runs");
        prop_assert!(!g.canvas.contains(&MASK), "every mask is filled");
        prop_assert_eq!(&g.canvas[..prompt.len()], &prompt[..]);
        let spb = c.steps / (c.common.gen_length / c.block_length);
        let counts = llada_transfer_counts(c.block_length, spb);
        for (block, step, committed) in &views {
            let start = prompt.len() + block * c.block_length;
            prop_assert!(committed.iter().all(|&p| (start..start + c.block_length).contains(&p)));
            prop_assert!(!committed.is_empty());
            if c.parallel.is_none() {
                prop_assert_eq!(committed.len(), counts[step - block * spb]);
            }
        }
        // The same seed again, on another thread: the same tokens.
        let (c2, p2) = (c.clone(), prompt.clone());
        let again = std::thread::spawn(move || {
            llada::generate(&mut ToyModel::new(VOCAB, model_seed), &p2, &c2,
                &mut Xoshiro256PlusPlus::seed_from_u64(seed), |_| {}).expect("runs")
        }).join().expect("thread");
        prop_assert_eq!(again, g);
    }

    #[test]
    fn dream_follows_its_schedule(
        c in dream_config(), prompt in prompt(), seed in any::<u64>(), model_seed in any::<u64>(),
    ) {
        let mut views = Vec::new();
        let g = dream::generate(
            &mut ToyModel::new(VOCAB, model_seed), &prompt, &c,
            &mut Xoshiro256PlusPlus::seed_from_u64(seed),
            |v| views.push((v.step, v.committed.len())),
        ).expect("runs");
        prop_assert!(!g.canvas.contains(&MASK), "every mask is filled by the last step");
        prop_assert_eq!(&g.canvas[..prompt.len()], &prompt[..]);
        if c.alg != DreamAlg::Origin {
            let ts = dream_timesteps(c.steps, c.eps);
            let mut left = c.common.gen_length;
            let mut want = Vec::new();
            for i in 0..c.steps {
                let k = dream_transfer_count(left, ts[i], ts[i + 1], i + 1 == c.steps);
                left -= k;
                if k > 0 {
                    want.push((i, k));
                }
            }
            prop_assert_eq!(views, want);
        }
        let (c2, p2) = (c.clone(), prompt.clone());
        let again = std::thread::spawn(move || {
            dream::generate(&mut ToyModel::new(VOCAB, model_seed), &p2, &c2,
                &mut Xoshiro256PlusPlus::seed_from_u64(seed), |_| {}).expect("runs")
        }).join().expect("thread");
        prop_assert_eq!(again, g);
    }
}
