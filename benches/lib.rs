//! Criterion benches through the public API (`cargo bench -p lacuna-benches`):
//! `forward` (one non-causal forward pass over T tokens, all logits) and `generate` (a whole
//! generation per cache policy). They run the built-in demo model by default; set
//! `LACUNA_BENCH_MODEL=file.gguf` for a real model or a fixture (`lacuna fixture --shape
//! llada-8b --layers 4 --quant q4_k_m --out f.gguf`), and `LACUNA_BENCH_THREADS`.
//! Comparisons with llama.cpp are `tools/bench/forward.py` and `tools/bench/generate.py`.

use lacuna::{Engine, EngineOptions};

/// The engine the benches run: `LACUNA_BENCH_MODEL` or the demo model, with
/// `LACUNA_BENCH_THREADS` threads (default: all cores).
pub fn bench_engine() -> Result<(Engine, String), lacuna::Error> {
    let threads = std::env::var("LACUNA_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok());
    let options = EngineOptions {
        threads,
        ..EngineOptions::default()
    };
    match std::env::var("LACUNA_BENCH_MODEL") {
        Ok(path) => {
            let name = std::path::Path::new(&path)
                .file_stem()
                .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned());
            Ok((Engine::load(&path, &options)?, name))
        }
        Err(_) => Ok((Engine::demo(&options)?, "demo".to_string())),
    }
}
