//! The device's kernel test (`lacuna doctor`): one quantized matmul against its host twin.

use super::Gpu;
use super::buffers::DevBuf;
use crate::repack::Repacked;
use crate::{Error, Result};

impl Gpu {
    /// Runs one Q4_K matmul (quantize, int8 mma, min term) on a 70 x 512 weight and 3
    /// tokens against its host twin; returns the relative L2 error (doctor's kernel test).
    pub fn self_test(&mut self) -> Result<f64> {
        let (n, k, t) = (70usize, 512usize, 3usize);
        let vals = |seed: u32, len: usize| -> Vec<f32> {
            (0..len)
                .map(|i| {
                    (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0
                })
                .collect()
        };
        let ty = lacuna_quant::GgmlType::Q4_K;
        let row = k / 256 * ty.type_size();
        let mut bytes = vec![0u8; n * row];
        for (src, dst) in vals(7, n * k)
            .chunks_exact(k)
            .zip(bytes.chunks_exact_mut(row))
        {
            lacuna_quant::quantize_row(ty, src, dst)
                .map_err(|e| Error::Shape(format!("self-test weights: {e}")))?;
        }
        let r = Repacked::new(ty, n, k, &bytes)?;
        let x = vals(11, t * k);
        let want = r.reference_matmul(&x, t);
        let w = self.weight(&r)?;
        let xb = self.vector(&x)?;
        let mut yb = DevBuf::default();
        self.ensure_f32(&mut yb, t * n)?;
        self.matmul(xb.view(0..t * k), t, &w, yb.view(0..t * n))?;
        let mut got = vec![0.0f32; t * n];
        self.download(yb.view(0..t * n), &mut got)?;
        let num: f64 = got
            .iter()
            .zip(&want)
            .map(|(a, b)| f64::from(a - b).powi(2))
            .sum();
        let den: f64 = want.iter().map(|b| f64::from(*b).powi(2)).sum();
        Ok((num / den.max(1e-30)).sqrt())
    }
}
