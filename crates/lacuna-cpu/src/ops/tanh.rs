//! A vectorizable `tanh` (Cephes `tanhf`: an odd polynomial below 0.625, `1 - 2 / (e^2x + 1)`
//! above it, both computed and one selected, so loops over it vectorize) and the logit
//! softcap built on it, `cap * tanh(x / cap)` (Gemma's final logits: 67 million a step for a
//! 256-token DiffusionGemma canvas, where libm's scalar `tanhf` took a sixth of the step).

use rayon::prelude::*;

use crate::ops::exp::exp;
use crate::ops::multiversion;

/// Elements of [`softcap`] per parallel task.
const CHUNK: usize = 1 << 15;

/// `tanh(x)`, within a few ulp of the true value, branch-free; NaN for NaN.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let z = x.abs();
    // |x| >= 0.625: 1 - 2 / (e^2z + 1), which is 1 once e^2z overflows.
    let big = 1.0 - 2.0 / (exp(z + z) + 1.0);
    // |x| < 0.625: x + x^3 P(x^2).
    let s = x * x;
    let small =
        ((((-5.704_988_7e-3 * s + 2.063_909e-2) * s - 5.373_971_6e-2) * s + 1.333_144_2e-1) * s
            - 3.333_328e-1)
            * s
            * x
            + x;
    if z >= 0.625 { big.copysign(x) } else { small }
}

/// `x = cap * tanh(x / cap)`, element-wise, in parallel (the same bits on every path).
pub fn softcap(x: &mut [f32], cap: f32) {
    x.par_chunks_mut(CHUNK).for_each(|c| softcap_body(c, cap));
}

multiversion! {
    fn softcap_body(x: &mut [f32], cap: f32) {
        for v in x.iter_mut() {
            *v = cap * tanh(*v / cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within 3 ulp of f64's tanh (the ulp of the smallest normal f32 near zero) over the
    /// f32 range that matters, both branches and the switch between them.
    #[test]
    fn tanh_is_within_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -20.0f32;
        while x <= 20.0 {
            let want = f64::from(x).tanh();
            let got = f64::from(tanh(x));
            let ulp = f64::from(f32::EPSILON) * want.abs().max(f64::from(f32::MIN_POSITIVE));
            worst = worst.max((got - want).abs() / ulp);
            x += 0.000_37;
        }
        assert!(worst <= 3.0, "worst {worst} ulp");
        assert_eq!(tanh(0.0), 0.0);
        assert_eq!(tanh(100.0), 1.0);
        assert_eq!(tanh(-100.0), -1.0);
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(1e-20), 1e-20);
    }

    /// Within 1e-6 relative of the formula in f64 (the bits on every path: `ops::tests`).
    #[test]
    fn softcap_is_the_formula() {
        let x: Vec<f32> = (0..100_000)
            .map(|i| ((i * 7919 % 20011) as f32 - 10005.0) / 97.0)
            .collect();
        let mut y = x.clone();
        softcap(&mut y, 30.0);
        for (&a, &b) in x.iter().zip(&y) {
            let want = 30.0 * (f64::from(a) / 30.0).tanh();
            let err = (f64::from(b) - want).abs();
            assert!(err <= 1e-6 * (1.0 + want.abs()), "{a}: {b} vs {want}");
        }
    }
}
