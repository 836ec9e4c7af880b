//! A `tokenizers::Tokenizer` built from a GGUF file's `tokenizer.ggml.*` metadata, token
//! for token identical to llama.cpp, plus chat-template rendering.
