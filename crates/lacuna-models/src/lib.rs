//! Model graphs for the GGUF architectures `llada`, `dream` and `llada-moe`: hyperparameters
//! from metadata, weights from the mapped file, and a forward pass over a whole canvas on a
//! compute backend (CPU now, CUDA later).
