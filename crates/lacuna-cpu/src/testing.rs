//! Test data shared by the unit tests of every module: a small deterministic generator and
//! random weight bytes of any type.

use lacuna_quant::GgmlType;

/// A small deterministic generator for bulk test data (proptest picks the seed).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Random weights of `ty`: random bytes for the quants and scales, finite f16 super-scales
/// of magnitude `scale` (so large and small values are both exercised).
pub(crate) fn weights(ty: GgmlType, n: usize, k: usize, rng: &mut Rng, scale: f32) -> Vec<u8> {
    let mut out = Vec::new();
    match ty {
        GgmlType::F32 => (0..n * k).for_each(|_| out.extend((rng.f32() * scale).to_le_bytes())),
        GgmlType::F16 => (0..n * k)
            .for_each(|_| out.extend(half::f16::from_f32(rng.f32() * scale).to_le_bytes())),
        GgmlType::BF16 => (0..n * k)
            .for_each(|_| out.extend(half::bf16::from_f32(rng.f32() * scale).to_le_bytes())),
        _ => {
            let bsize = ty.type_size();
            for _ in 0..n * k / ty.block_size() {
                let mut b: Vec<u8> = (0..bsize).map(|_| rng.next() as u8).collect();
                let mut put = |at: usize, v: f32| {
                    b[at..at + 2].copy_from_slice(&half::f16::from_f32(v).to_le_bytes());
                };
                match ty {
                    GgmlType::Q4_K | GgmlType::Q5_K => {
                        put(0, rng.f32() * scale / 64.0);
                        put(2, rng.f32() * scale / 64.0);
                    }
                    GgmlType::Q6_K => put(208, rng.f32() * scale / 64.0),
                    GgmlType::Q3_K => put(108, rng.f32() * scale / 64.0),
                    GgmlType::Q2_K => {
                        put(80, rng.f32() * scale / 16.0);
                        put(82, rng.f32() * scale / 16.0);
                    }
                    GgmlType::IQ4_XS => put(0, rng.f32() * scale / 2048.0),
                    GgmlType::IQ4_NL => put(0, rng.f32() * scale / 128.0),
                    GgmlType::Q4_1 | GgmlType::Q5_1 => {
                        put(0, rng.f32() * scale / 16.0);
                        put(2, rng.f32() * scale);
                    }
                    GgmlType::MXFP4 => {
                        // E8M0 exponent near `scale / 8` (2^(e - 128) per level).
                        let e = 128.0 + (scale / 8.0).log2() + (rng.next() % 5) as f32 - 2.0;
                        b[0] = e.round() as u8;
                    }
                    _ => put(0, rng.f32() * scale / 16.0),
                }
                out.extend(b);
            }
        }
    }
    out
}
