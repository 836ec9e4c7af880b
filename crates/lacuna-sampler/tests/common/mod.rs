//! The toy model shared by the API tests; `tools/sampler-ref/official.py` implements the
//! same one (`ToyModel`), so logits agree bit for bit.

#![allow(dead_code, unreachable_pub)]

use lacuna_sampler::{Denoiser, Pass};
use std::convert::Infallible;

pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Logits that depend on the whole canvas and are exact in f32.
#[derive(Debug, Clone)]
pub struct ToyModel {
    pub vocab: usize,
    pub seed: u64,
    /// Every `rows` argument received, in order.
    pub requests: Vec<Vec<usize>>,
}

impl ToyModel {
    pub fn new(vocab: usize, seed: u64) -> Self {
        Self {
            vocab,
            seed,
            requests: Vec::new(),
        }
    }

    pub fn hash(&self, canvas: &[u32]) -> u64 {
        canvas.iter().fold(self.seed, |h, &t| {
            mix64((h ^ u64::from(t)).wrapping_add(0x9E37_79B9_7F4A_7C15))
        })
    }

    pub fn row(&self, h: u64, row: usize, out: &mut [f32]) {
        let r = row as u64 + 1;
        for (tok, o) in out.iter_mut().enumerate() {
            let t = tok as u64 + 1;
            let k = mix64(
                h ^ r.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ t.wrapping_mul(0xABC9_8388_FB8F_AC03),
            ) >> 44;
            *o = (k as f64 * 2f64.powi(-16) - 8.0) as f32;
        }
        let bonus = mix64(self.seed ^ r.wrapping_mul(0x9E6C_63D0_676A_9A99)) % 9;
        let pref =
            (mix64(self.seed ^ r.wrapping_mul(0xC13F_A9A9_02A6_328F)) % self.vocab as u64) as usize;
        out[pref] += bonus as f32;
    }
}

impl Denoiser for ToyModel {
    type Error = Infallible;
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn forward(
        &mut self,
        canvas: &[u32],
        _pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<(), Infallible> {
        self.requests.push(rows.to_vec());
        let h = self.hash(canvas);
        for (i, &r) in rows.iter().enumerate() {
            self.row(h, r, &mut out[i * self.vocab..(i + 1) * self.vocab]);
        }
        Ok(())
    }
}
