//! The sampler's own cost per denoising step at real vocabulary sizes (LLaDA 126464, Dream
//! 152064, DiffusionGemma 262144), with a denoiser that only copies precomputed logits (that
//! copy, 32 rows, is included). One step over 32 positions per iteration; throughput in rows.

#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lacuna_sampler::{
    CanvasDenoiser, Common, Denoiser, DreamAlg, DreamConfig, EntropyBoundConfig, LladaConfig, Pass,
    UniformSource, Xoshiro256PlusPlus, diffusion_gemma, dream, llada,
};
use std::convert::Infallible;
use std::hint::black_box;

const ROWS: usize = 32;

struct Fixed {
    vocab: usize,
    logits: Vec<f32>,
}

impl Fixed {
    fn new(vocab: usize) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut logits: Vec<f32> = (0..ROWS * vocab)
            .map(|_| rng.next_f32() * 20.0 - 10.0)
            .collect();
        for r in 0..ROWS {
            logits[r * vocab + (r * 7919) % vocab] += 8.0;
        }
        Self { vocab, logits }
    }
}

impl Denoiser for Fixed {
    type Error = Infallible;
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn forward(
        &mut self,
        _: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Infallible> {
        for (i, _) in rows.iter().enumerate() {
            let r = i % ROWS;
            out[i * self.vocab..(i + 1) * self.vocab]
                .copy_from_slice(&self.logits[r * self.vocab..(r + 1) * self.vocab]);
        }
        Ok(())
    }
}

/// DiffusionGemma's decoder: every row of a canvas of `ROWS`, from the same logits.
impl CanvasDenoiser for Fixed {
    fn encode(&mut self, _: &[u32]) -> Result<(), Infallible> {
        Ok(())
    }
    fn decode(&mut self, _: &[u32], _: bool, out: &mut [f32]) -> Result<(), Infallible> {
        out.copy_from_slice(&self.logits[..out.len()]);
        Ok(())
    }
    fn canvas_length(&self) -> usize {
        ROWS
    }
}

fn bench(c: &mut Criterion) {
    let prompt: Vec<u32> = (0..16).collect();
    let mut g = c.benchmark_group("sampler_step_32_rows");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ROWS as u64));

    let mut model = Fixed::new(126_464);
    for (name, temperature) in [("llada_greedy", 0.0), ("llada_gumbel_t1", 1.0)] {
        let config = LladaConfig {
            common: Common {
                gen_length: ROWS,
                mask_id: Some(126_336),
                ..Common::default()
            },
            block_length: ROWS,
            steps: 1,
            temperature,
            ..LladaConfig::default()
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        g.bench_function(name, |b| {
            b.iter(|| {
                llada::generate(&mut model, black_box(&prompt), &config, &mut rng, |_| {})
                    .expect("runs")
            })
        });
    }

    let mut model = Fixed::new(152_064);
    for (name, temperature, top_p) in [
        ("dream_entropy_greedy", 0.0, None),
        ("dream_entropy_t02_top_p095", 0.2, Some(0.95)),
    ] {
        let config = DreamConfig {
            common: Common {
                gen_length: ROWS,
                mask_id: Some(151_666),
                ..Common::default()
            },
            steps: 1,
            alg: DreamAlg::Entropy,
            temperature,
            top_p,
            ..DreamConfig::default()
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        g.bench_function(name, |b| {
            b.iter(|| {
                dream::generate(&mut model, black_box(&prompt), &config, &mut rng, |_| {})
                    .expect("runs")
            })
        });
    }

    // DiffusionGemma (262,144 tokens): one step of its sampler over a canvas of 32.
    let mut model = Fixed::new(262_144);
    let config = EntropyBoundConfig {
        common: Common {
            gen_length: ROWS,
            ..Common::default()
        },
        max_steps: 1,
        ..EntropyBoundConfig::default()
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    g.bench_function("diffusion_gemma_step", |b| {
        b.iter(|| {
            diffusion_gemma::generate(&mut model, black_box(&prompt), &config, &mut rng, |_| {})
                .expect("runs")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
