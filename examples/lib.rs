//! Runnable examples of Lacuna (`cargo run -p lacuna-examples --example NAME`):
//!
//! - `embed`: load a model (a GGUF path as the first argument, or the built-in demo model),
//!   generate, print the answer and its speed;
//! - `stream_steps`: watch the canvas denoise, step by step, from the step callback;
//! - `concurrent`: several generations at once on one model with `SharedEngine`;
//! - `http_client`: start `lacuna serve`'s server in-process (or use `LACUNA_URL`) and call
//!   it with a plain HTTP/1.1 client, streamed and not.
