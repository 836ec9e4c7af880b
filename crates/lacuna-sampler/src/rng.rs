//! The one source of randomness every sampler draws from.
//!
//! The official samplers draw from PyTorch's generators (Philox on CUDA, MT19937 on CPU),
//! whose streams cannot be reproduced bit for bit outside PyTorch. Lacuna instead draws every
//! random number from one [`UniformSource`], in an order documented by each sampler, so that
//!
//! * the same seed gives the same tokens on every run, platform and thread count (the
//!   samplers draw on one thread, in row order, before a step's rows spread over threads;
//!   the generator has no platform-dependent behaviour), and
//! * tests can inject the exact draws a transcription of the official code consumed
//!   ([`ReplayDraws`]), making even the random paths comparable number for number.
//!
//! The default generator is xoshiro256++ (Blackman and Vigna, 2019) seeded through
//! SplitMix64, the combination both authors recommend; see [`Xoshiro256PlusPlus`].

/// A stream of uniform random numbers in `[0, 1)`.
///
/// Samplers call [`next_f64`](Self::next_f64) where the official code draws in float64
/// (LLaDA's Gumbel noise, categorical sampling) and [`next_f32`](Self::next_f32) where it
/// draws `torch.rand` in float32 (random remasking, Dream's `origin` transfer draws).
pub trait UniformSource {
    /// A uniform draw in `[0, 1)` with 53 bits of precision.
    fn next_f64(&mut self) -> f64;
    /// A uniform draw in `[0, 1)` with 24 bits of precision.
    fn next_f32(&mut self) -> f32;
}

impl<U: UniformSource + ?Sized> UniformSource for &mut U {
    fn next_f64(&mut self) -> f64 {
        (**self).next_f64()
    }
    fn next_f32(&mut self) -> f32 {
        (**self).next_f32()
    }
}

/// xoshiro256++ 1.0, seeded by SplitMix64: small, fast, well studied, and the same on every
/// platform (only wrapping 64-bit integer arithmetic).
///
/// `next_f64` takes the top 53 bits of the next output (`(x >> 11) * 2^-53`), `next_f32`
/// the top 24 (`(x >> 40) * 2^-24`); both lie in `[0, 1)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xoshiro256PlusPlus {
    s: [u64; 4],
}

/// One step of SplitMix64 (Steele, Lea and Flood, 2014), used to expand a seed.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Xoshiro256PlusPlus {
    /// The generator whose state is four successive SplitMix64 outputs of `seed`.
    pub fn seed_from_u64(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Self { s }
    }

    /// The generator with this raw state (not all zero, or it only yields zeros).
    pub fn from_state(s: [u64; 4]) -> Self {
        Self { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
}

impl UniformSource for Xoshiro256PlusPlus {
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }
}

/// Replays a fixed list of draws, for tests that compare against a transcription of the
/// official code fed the same numbers.
///
/// `next_f32` returns the next value rounded to `f32` (give values that are multiples of
/// 2^-24 to make that exact). When the list runs out it returns `0.5` and remembers the
/// overrun, so a test can assert [`overrun`](Self::overrun) is zero instead of the sampler
/// panicking.
#[derive(Clone, Debug)]
pub struct ReplayDraws {
    draws: Vec<f64>,
    next: usize,
    overrun: usize,
}

impl ReplayDraws {
    /// A source that yields `draws` in order.
    pub fn new(draws: Vec<f64>) -> Self {
        Self {
            draws,
            next: 0,
            overrun: 0,
        }
    }

    /// How many draws were consumed from the list.
    pub fn consumed(&self) -> usize {
        self.next
    }

    /// How many draws were asked for after the list ran out.
    pub fn overrun(&self) -> usize {
        self.overrun
    }

    fn take(&mut self) -> f64 {
        match self.draws.get(self.next) {
            Some(&v) => {
                self.next += 1;
                v
            }
            None => {
                self.overrun += 1;
                0.5
            }
        }
    }
}

impl UniformSource for ReplayDraws {
    fn next_f64(&mut self) -> f64 {
        self.take()
    }
    fn next_f32(&mut self) -> f32 {
        self.take() as f32
    }
}

#[cfg(test)]
mod tests;
