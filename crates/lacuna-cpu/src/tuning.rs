//! The kernels' tuning: thresholds and panel forms that are chosen per CPU by default and
//! that A/B benchmarks set otherwise. One process-wide setting, fixed at the first kernel
//! call (weights are packed for it): [`set`] it before loading a model, or leave it.
//!
//! Nothing here reads the environment unless asked: [`Tuning::from_env`] is for benchmark
//! drivers (the CLI calls it, so `LACUNA_TILE_TOKENS=4 lacuna bench ...` works).

use std::sync::OnceLock;

/// How the x86 kernels run; `None` and `true` fields are the defaults for the CPU in hand.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tuning {
    /// Tokens per register tile of the AVX-512 integer kernel, 1 to 6 (default: 4 on AMD,
    /// 6 elsewhere). `LACUNA_TILE_TOKENS`.
    pub tile_tokens: Option<usize>,
    /// From how many tokens small-form panels are rebuilt into bytes once per matmul rather
    /// than per tile (default 24). `LACUNA_EXPAND_TOKENS`.
    pub expand_tokens: Option<usize>,
    /// From how many tokens Q8_0 in the half form runs widened panels (default 8).
    /// `LACUNA_WIDEN_TOKENS`.
    pub widen_tokens_q8_0: Option<usize>,
    /// Pack the small forms on the x86 paths (default true). `LACUNA_SMALL_PANELS=0`.
    pub small_panels: bool,
    /// Hold Q3_K/Q5_K/Q6_K as bit planes and the level formats as indices within the small
    /// form (default true). `LACUNA_PLANAR_PANELS=0`.
    pub planar_panels: bool,
    /// Keep the planar form's 32-bit block constants instead of the half form's 16-bit ones
    /// (default false). `LACUNA_PLANAR_PANELS=1`.
    pub wide_constants: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            tile_tokens: None,
            expand_tokens: None,
            widen_tokens_q8_0: None,
            small_panels: true,
            planar_panels: true,
            wide_constants: false,
        }
    }
}

/// A tuning that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TuningError {
    /// A value out of its range or not a number.
    #[error("{name}={value}: {why}")]
    Invalid {
        /// The setting (its environment variable's name).
        name: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        why: &'static str,
    },
    /// The kernels already run under another tuning.
    #[error("the kernel tuning is already fixed (set it before the first model loads)")]
    AlreadySet,
}

impl Tuning {
    /// The defaults with the `LACUNA_*` variables above applied.
    pub fn from_env() -> Result<Tuning, TuningError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// The defaults with the variables `var` gives applied.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Tuning, TuningError> {
        let mut t = Tuning::default();
        let count = |name: &'static str, range: std::ops::RangeInclusive<usize>| match var(name) {
            None => Ok(None),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if range.contains(&n) => Ok(Some(n)),
                _ => Err(TuningError::Invalid {
                    name,
                    value: v,
                    why: "must be a whole number in its range",
                }),
            },
        };
        t.tile_tokens = count("LACUNA_TILE_TOKENS", 1..=6)?;
        t.expand_tokens = count("LACUNA_EXPAND_TOKENS", 0..=1 << 20)?;
        t.widen_tokens_q8_0 = count("LACUNA_WIDEN_TOKENS", 0..=1 << 20)?;
        t.small_panels = var("LACUNA_SMALL_PANELS").is_none_or(|v| v != "0");
        match var("LACUNA_PLANAR_PANELS").as_deref() {
            Some("0") => t.planar_panels = false,
            Some("1") => t.wide_constants = true,
            Some(v) if !v.is_empty() => {
                return Err(TuningError::Invalid {
                    name: "LACUNA_PLANAR_PANELS",
                    value: v.to_string(),
                    why: "must be 0 (no planes) or 1 (32-bit constants)",
                });
            }
            _ => {}
        }
        Ok(t)
    }
}

static TUNING: OnceLock<Tuning> = OnceLock::new();

/// Fixes the kernels' tuning for this process; an error once a kernel has run (or `set` was
/// called) with another.
pub fn set(tuning: Tuning) -> Result<(), TuningError> {
    let got = TUNING.get_or_init(|| tuning.clone());
    if *got == tuning {
        Ok(())
    } else {
        Err(TuningError::AlreadySet)
    }
}

/// The tuning in force (the default unless [`set`] came first).
pub fn get() -> &'static Tuning {
    TUNING.get_or_init(Tuning::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Result<Tuning, TuningError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Tuning::from_vars(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn variables_set_the_fields_and_bad_values_are_named() {
        assert_eq!(vars(&[]).unwrap(), Tuning::default());
        let t = vars(&[
            ("LACUNA_TILE_TOKENS", "4"),
            ("LACUNA_SMALL_PANELS", "0"),
            ("LACUNA_PLANAR_PANELS", "1"),
        ])
        .unwrap();
        assert_eq!(t.tile_tokens, Some(4));
        assert!(!t.small_panels && t.planar_panels && t.wide_constants);
        assert!(
            !vars(&[("LACUNA_PLANAR_PANELS", "0")])
                .unwrap()
                .planar_panels
        );
        for (k, v) in [
            ("LACUNA_TILE_TOKENS", "7"),
            ("LACUNA_TILE_TOKENS", "x"),
            ("LACUNA_PLANAR_PANELS", "2"),
        ] {
            let e = vars(&[(k, v)]).unwrap_err();
            assert!(e.to_string().starts_with(&format!("{k}={v}")), "{e}");
        }
    }
}
