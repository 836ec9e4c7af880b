//! GGUF models from the Hugging Face Hub for Lacuna.
//!
//! - [`ModelRef`] parses `OWNER/REPO`, `OWNER/REPO:QUANT` and `OWNER/REPO/FILE.gguf` (the
//!   CLI's `hf:` references);
//! - [`Hub`] resolves one to a local file: from the cache without network when it is there,
//!   else downloaded (resumed after an interruption, checked against the Hub's LFS SHA-256);
//! - [`HubCache`] is the standard Hugging Face cache (`$HF_HOME/hub`, the
//!   `models--owner--repo/blobs|snapshots|refs` layout of `huggingface_hub`, so files fetched
//!   by Python tools are reused), and lists the `.gguf` files in it; [`summarize`] reads a
//!   file's architecture and quant for that listing.
//!
//! The `hf-hub` crate supplies the cache layout (repository folders, `refs`, cached-file
//! lookup, the saved token) and the repository-listing request (endpoint, user agent,
//! authorization). The transfer itself is here: hf-hub's blocking download neither checks a
//! checksum nor names its partial files as `huggingface_hub` does.

mod cache;
mod checksum;
mod download;
mod error;
mod hub;
mod reference;
mod select;
mod summary;

pub use cache::{CachedFile, HubCache};
pub use checksum::sha256_hex;
pub use error::{Error, Result};
pub use hub::{DEFAULT_ENDPOINT, Hub, HubOptions};
pub use reference::{HF_PREFIX, ModelRef, Selector};
pub use select::select_file;
pub use summary::{GgufSummary, file_type_name, summarize};
