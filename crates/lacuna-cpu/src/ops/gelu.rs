//! GELU-gated products (Gemma's feed-forward blocks) and scaling, split into parallel runs
//! of elements whose arithmetic does not depend on the split.

use rayon::prelude::*;

use crate::Error;
use crate::ops::multiversion;

/// Elements of [`geglu`] and [`scale`] per parallel task.
const CHUNK: usize = 1 << 14;

/// `sqrt(2 / pi)`, the tanh approximation's constant.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// GELU with the tanh approximation (PyTorch's `gelu(approximate="tanh")`, Hugging Face's
/// `gelu_pytorch_tanh`): `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, in f32.
pub fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// `out = gelu_tanh(gate) * up`, element-wise.
pub fn geglu(gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<(), Error> {
    for (what, len) in [("geglu up", up.len()), ("geglu out", out.len())] {
        if len != gate.len() {
            return Err(Error::BadLength {
                what,
                expected: gate.len(),
                found: len,
            });
        }
    }
    out.par_chunks_mut(CHUNK)
        .zip(gate.par_chunks(CHUNK).zip(up.par_chunks(CHUNK)))
        .for_each(|(o, (g, u))| geglu_body(g, u, o));
    Ok(())
}

multiversion! {
    fn geglu_body(gate: &[f32], up: &[f32], out: &mut [f32]) {
        for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
            *o = gelu_tanh(g) * u;
        }
    }
}

/// `x *= s`, element-wise.
pub fn scale(x: &mut [f32], s: f32) {
    x.par_chunks_mut(CHUNK).for_each(|c| {
        for v in c {
            *v *= s;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_tanh_matches_its_formula_in_f64() {
        for i in -400..=400 {
            let x = i as f32 / 40.0;
            let xd = f64::from(x);
            let want = 0.5
                * xd
                * (1.0
                    + ((2.0 / std::f64::consts::PI).sqrt() * (xd + 0.044715 * xd.powi(3))).tanh());
            let got = f64::from(gelu_tanh(x));
            assert!(
                (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "x={x}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn geglu_is_gelu_of_gate_times_up_and_checks_lengths() {
        let gate: Vec<f32> = (0..40_000)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 9.0)
            .collect();
        let up: Vec<f32> = (0..40_000)
            .map(|i| ((i * 13 % 29) as f32 - 14.0) / 3.0)
            .collect();
        let mut out = vec![0.0; gate.len()];
        geglu(&gate, &up, &mut out).unwrap();
        for ((o, g), u) in out.iter().zip(&gate).zip(&up) {
            assert_eq!(*o, gelu_tanh(*g) * u);
        }
        assert!(geglu(&gate, &up[1..], &mut out).is_err());
        let mut x = gate.clone();
        scale(&mut x, -0.5);
        assert!(x.iter().zip(&gate).all(|(a, b)| *a == b * -0.5));
    }
}
