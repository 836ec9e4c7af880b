//! The integer decoding of ggml's block formats ([`lacuna_quant::int_blocks`]), under the
//! name the kernels use.

pub(crate) use lacuna_quant::int_blocks::*;

#[cfg(test)]
mod tests;
