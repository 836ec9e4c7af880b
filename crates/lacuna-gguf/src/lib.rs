//! The GGUF container: a zero-copy reader over a memory-mapped file and a writer used by
//! tests and fixture generators.
//!
//! This is the only crate that touches `memmap2`. It validates every count, length and
//! offset of a file before it allocates or slices, so a truncated or hostile file yields a
//! typed error, never a panic. The ggml type table itself lives in [`lacuna_quant`].
