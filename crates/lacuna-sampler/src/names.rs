//! The names users spell the samplers' choices with (`none`/`prefix`/`dual`,
//! `low_confidence`/`random`, `origin`/`maskgit_plus`/...): one table per type, parsed by
//! [`std::str::FromStr`] with the valid names in the error, so the CLI, the server and the
//! library read them alike.

use crate::{CachePolicy, DreamAlg, Remasking};

/// A name that is not one of a setting's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a {what} (valid: {})", valid.join(", "))]
pub struct UnknownName {
    /// What was being named (`cache policy`, `remasking strategy`, ...).
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// Every valid name.
    pub valid: &'static [&'static str],
}

/// Looks `name` up in `table` (name, value pairs in the order they are listed).
pub fn parse_name<T: Copy>(
    what: &'static str,
    name: &str,
    names: &'static [&'static str],
    values: &[T],
) -> Result<T, UnknownName> {
    names
        .iter()
        .position(|&n| n == name)
        .map(|i| values[i])
        .ok_or_else(|| UnknownName {
            what,
            name: name.to_string(),
            valid: names,
        })
}

/// Implements `NAMES`, `name()`, `FromStr` and `Display` for a fieldless enum from one table.
macro_rules! named {
    ($ty:ty, $what:literal, [$($variant:expr => $name:literal),+ $(,)?]) => {
        impl $ty {
            /// Every valid name, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($name),+];
            /// Every value.
            pub const ALL: &'static [$ty] = &[$($variant),+];

            /// The name users spell this value with.
            pub fn name(self) -> &'static str {
                let i = Self::ALL.iter().position(|&v| v == self).unwrap_or(0);
                Self::NAMES[i]
            }
        }

        impl std::str::FromStr for $ty {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                parse_name($what, s, Self::NAMES, Self::ALL)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named!(CachePolicy, "cache policy", [
    CachePolicy::None => "none",
    CachePolicy::Prefix => "prefix",
    CachePolicy::Dual => "dual",
]);

named!(Remasking, "remasking strategy", [
    Remasking::LowConfidence => "low_confidence",
    Remasking::Random => "random",
]);

named!(DreamAlg, "Dream remasking algorithm", [
    DreamAlg::Origin => "origin",
    DreamAlg::MaskgitPlus => "maskgit_plus",
    DreamAlg::TopkMargin => "topk_margin",
    DreamAlg::Entropy => "entropy",
]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_list_them() {
        for &p in CachePolicy::ALL {
            assert_eq!(p.name().parse::<CachePolicy>(), Ok(p));
        }
        for &r in Remasking::ALL {
            assert_eq!(r.to_string().parse::<Remasking>(), Ok(r));
        }
        for &a in DreamAlg::ALL {
            assert_eq!(a.name().parse::<DreamAlg>(), Ok(a));
        }
        let e = "triple".parse::<CachePolicy>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "`triple` is not a cache policy (valid: none, prefix, dual)"
        );
        let e = "greedy".parse::<DreamAlg>().unwrap_err();
        assert!(
            e.to_string()
                .contains("origin, maskgit_plus, topk_margin, entropy")
        );
    }
}
