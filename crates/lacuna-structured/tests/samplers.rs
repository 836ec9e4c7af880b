//! Every sampler, cache policy and parallel rule under a constraint: on a toy model with
//! arbitrary logits, every answer is a word of the language (checked by the `regex` crate),
//! for many seeds. The toy's logits depend on the whole canvas, so commit order matters.

use std::sync::Arc;

use lacuna_sampler::{
    CachePolicy, CanvasDenoiser, Common, ConstraintRef, Denoiser, DreamAlg, DreamConfig, Editing,
    EntropyBoundConfig, Generation, Llada2Config, LladaConfig, ParallelConfig, ParallelRule, Pass,
    Remasking, Rnd1Config, Xoshiro256PlusPlus, diffusion_gemma, dream, llada, llada2, rnd1,
};
use lacuna_structured::{Limits, Spec, Vocabulary, compile};

/// Token 0 ends an answer, 1 is a control token, the last one is the mask.
const PIECES: &[&str] = &[
    "a", "b", "ab", "ba", "c", "1", "12", "{", "}", "\"", ":", ",", " ", "{\"", "\":", "aa", "x",
];
const END: u32 = 0;
const VOCAB: usize = PIECES.len() + 3;
const MASK: u32 = VOCAB as u32 - 1;

fn vocab() -> Vocabulary {
    let mut tokens = vec![None, None];
    tokens.extend(PIECES.iter().map(|p| Some(p.as_bytes().to_vec())));
    tokens.push(None);
    Vocabulary::new(tokens, vec![END])
}

fn text(tokens: &[u32]) -> String {
    tokens
        .iter()
        .map(|&t| {
            PIECES
                .get((t as usize).wrapping_sub(2))
                .copied()
                .unwrap_or("<?>")
        })
        .collect()
}

/// Logits from a hash of the whole canvas and the row: any sampler's choices depend on what
/// it committed before.
struct Toy {
    vocab: usize,
}

impl Toy {
    fn row(&self, canvas: &[u32], r: usize, out: &mut [f32]) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ r as u64;
        for &t in canvas {
            h = (h ^ u64::from(t)).wrapping_mul(0x100_0000_01b3);
        }
        for (t, o) in out.iter_mut().enumerate() {
            let x = (h ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .wrapping_mul(0xff51_afd7_ed55_8ccd);
            *o = ((x >> 40) % 1000) as f32 / 150.0;
        }
    }
}

impl Denoiser for Toy {
    type Error = std::convert::Infallible;
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn supports_cache(&self) -> bool {
        true
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        for (i, &r) in rows.iter().enumerate() {
            self.row(canvas, r, &mut out[i * self.vocab..(i + 1) * self.vocab]);
        }
        Ok(())
    }
}

/// DiffusionGemma's denoiser: a context, and every canvas position from the toy.
struct ToyCanvas {
    toy: Toy,
    context: Vec<u32>,
}

impl Denoiser for ToyCanvas {
    type Error = std::convert::Infallible;
    fn vocab_size(&self) -> usize {
        self.toy.vocab
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Self::Error> {
        self.toy.forward(canvas, pass, rows, out)
    }
}

impl CanvasDenoiser for ToyCanvas {
    fn encode(&mut self, tokens: &[u32]) -> Result<(), Self::Error> {
        self.context.extend_from_slice(tokens);
        Ok(())
    }
    fn decode(&mut self, canvas: &[u32], _sc: bool, logits: &mut [f32]) -> Result<(), Self::Error> {
        let all: Vec<u32> = self.context.iter().chain(canvas).copied().collect();
        let rows: Vec<usize> = (self.context.len()..all.len()).collect();
        self.toy.forward(&all, &Pass::Full, &rows, logits)
    }
    fn canvas_length(&self) -> usize {
        8
    }
}

const PATTERNS: &[&str] = &[
    "\\{\"a\":(1|12)(,\"b\":\"[abc]{0,3}\")?\\}",
    "(ab|ba)+1",
    "a[bc]*x?",
    "c|12|aa",
];

fn common(pattern: &str, gen_length: usize) -> Common {
    let compiled = compile(&Spec::Regex(pattern.into()), &vocab(), &Limits::default()).unwrap();
    Common {
        gen_length,
        mask_id: Some(MASK),
        eos_ids: vec![END],
        constraint: Some(ConstraintRef::new(Arc::new(compiled))),
        ..Common::default()
    }
}

fn check(pattern: &str, what: &str, g: &Generation) {
    let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let t = text(&g.tokens);
    assert!(re.is_match(&t), "{what}: {t:?} does not match {pattern}");
}

const PROMPT: &[u32] = &[2, 3];

#[test]
fn llada_schedules_caches_and_parallel_rules_keep_the_language() {
    let parallel = [
        None,
        Some(ParallelConfig {
            rule: ParallelRule::Threshold(0.3),
        }),
        Some(ParallelConfig {
            rule: ParallelRule::Factor(1.0),
        }),
        Some(ParallelConfig {
            rule: ParallelRule::EntropyBound(2.0),
        }),
    ];
    for pattern in PATTERNS {
        for (cache, par) in [CachePolicy::None, CachePolicy::Prefix, CachePolicy::Dual]
            .into_iter()
            .flat_map(|c| parallel.iter().map(move |p| (c, *p)))
        {
            for (remasking, temperature) in [
                (Remasking::LowConfidence, 0.0),
                (Remasking::Random, 0.0),
                (Remasking::LowConfidence, 1.0),
            ] {
                for seed in 0..6 {
                    let config = LladaConfig {
                        common: common(pattern, 16),
                        block_length: 8,
                        steps: 16,
                        temperature,
                        remasking,
                        parallel: par,
                        cache,
                        ..LladaConfig::default()
                    };
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                    let g = llada::generate(
                        &mut Toy { vocab: VOCAB },
                        PROMPT,
                        &config,
                        &mut rng,
                        |_| {},
                    )
                    .unwrap();
                    check(
                        pattern,
                        &format!(
                            "llada {cache:?} {par:?} {remasking:?} t{temperature} seed {seed}"
                        ),
                        &g,
                    );
                }
            }
        }
    }
}

#[test]
fn dream_algorithms_keep_the_language() {
    for pattern in PATTERNS {
        for alg in [
            DreamAlg::Origin,
            DreamAlg::MaskgitPlus,
            DreamAlg::TopkMargin,
            DreamAlg::Entropy,
        ] {
            for (temperature, alg_temp) in [(0.0, 0.0), (1.0, 0.5)] {
                for seed in 0..6 {
                    let config = DreamConfig {
                        common: common(pattern, 12),
                        steps: 12,
                        alg,
                        temperature,
                        alg_temp,
                        ..DreamConfig::default()
                    };
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                    let g = dream::generate(
                        &mut Toy { vocab: VOCAB },
                        PROMPT,
                        &config,
                        &mut rng,
                        |_| {},
                    )
                    .unwrap();
                    check(
                        pattern,
                        &format!("dream {alg:?} t{temperature} seed {seed}"),
                        &g,
                    );
                }
            }
        }
        let config = DreamConfig {
            common: common(pattern, 16),
            steps: 16,
            parallel: Some(ParallelConfig::default()),
            block_length: Some(8),
            cache: CachePolicy::Dual,
            ..DreamConfig::default()
        };
        let g = dream::generate(
            &mut Toy { vocab: VOCAB },
            PROMPT,
            &config,
            &mut Xoshiro256PlusPlus::seed_from_u64(3),
            |_| {},
        )
        .unwrap();
        check(pattern, "dream parallel dual", &g);
    }
}

#[test]
fn llada2_with_and_without_editing_keeps_the_language() {
    for pattern in PATTERNS {
        for editing in [
            None,
            Some(Editing {
                threshold: 0.05,
                ..Editing::default()
            }),
        ] {
            for (threshold, cache) in [(1.0, CachePolicy::None), (0.2, CachePolicy::Prefix)] {
                for seed in 0..6 {
                    let config = Llada2Config {
                        common: common(pattern, 16),
                        block_length: 8,
                        steps: 8,
                        threshold,
                        temperature: if seed % 2 == 0 { 0.0 } else { 1.0 },
                        editing,
                        cache,
                        ..Llada2Config::default()
                    };
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                    let g = llada2::generate(
                        &mut Toy { vocab: VOCAB },
                        PROMPT,
                        &config,
                        &mut rng,
                        |_| {},
                    )
                    .unwrap();
                    check(
                        pattern,
                        &format!(
                            "llada2 editing {} threshold {threshold} seed {seed}",
                            editing.is_some()
                        ),
                        &g,
                    );
                }
            }
        }
    }
}

#[test]
fn rnd1_keeps_the_language() {
    for pattern in PATTERNS {
        for (greedy, temperature) in [(true, 0.0), (false, 1.0)] {
            for seed in 0..6 {
                let config = Rnd1Config {
                    common: common(pattern, 12),
                    steps: 12,
                    greedy,
                    temperature,
                    ..Rnd1Config::default()
                };
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let g =
                    rnd1::generate(&mut Toy { vocab: VOCAB }, PROMPT, &config, &mut rng, |_| {})
                        .unwrap();
                check(pattern, &format!("rnd1 greedy {greedy} seed {seed}"), &g);
            }
        }
    }
}

#[test]
fn diffusion_gemma_commits_the_most_likely_valid_canvas() {
    for pattern in PATTERNS {
        for gen_length in [8, 13, 24] {
            for seed in 0..6 {
                let config = EntropyBoundConfig {
                    common: common(pattern, gen_length),
                    max_steps: 6,
                    ..EntropyBoundConfig::default()
                };
                let mut d = ToyCanvas {
                    toy: Toy { vocab: VOCAB },
                    context: Vec::new(),
                };
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let g =
                    diffusion_gemma::generate(&mut d, PROMPT, &config, &mut rng, |_| {}).unwrap();
                check(
                    pattern,
                    &format!("diffusion-gemma gen {gen_length} seed {seed}"),
                    &g,
                );
            }
        }
    }
}

#[test]
fn a_region_too_short_for_the_language_is_refused() {
    let config = LladaConfig {
        common: common("(ab){5}", 4),
        block_length: 4,
        steps: 4,
        ..LladaConfig::default()
    };
    let e = llada::generate(
        &mut Toy { vocab: VOCAB },
        PROMPT,
        &config,
        &mut Xoshiro256PlusPlus::seed_from_u64(0),
        |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("no output of 4 tokens"), "{e}");
}
