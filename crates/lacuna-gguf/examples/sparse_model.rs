//! Writes a sparse 5 GB model-shaped GGUF file, for timing `lacuna inspect` on a large
//! file: `cargo run --release -p lacuna-gguf --example sparse_model -- /tmp/model-5gb.gguf`
//! then `time lacuna inspect /tmp/model-5gb.gguf`.

#[path = "common/model_shaped.rs"]
mod model_shaped;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "model-5gb.gguf".to_string());
    model_shaped::model_shaped(std::path::Path::new(&path));
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("wrote {path}: {len} bytes (sparse)");
}
