//! x86-64 microkernels, one module per instruction path.

pub(crate) mod amx;
pub(crate) mod amx32;
pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod avxvnni;
mod prefetch;
