//! Errors of the hub crate.

use std::path::PathBuf;

/// Everything that can go wrong resolving, downloading or listing a Hub model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model reference that is not `OWNER/REPO[:QUANT | /FILE.gguf]`.
    #[error(
        "invalid model reference {reference:?}: {reason} (expected OWNER/REPO[:QUANT | /FILE.gguf])"
    )]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The repository holds no `.gguf` file.
    #[error("{repo} has no .gguf file")]
    NoGguf {
        /// The repository.
        repo: String,
    },
    /// No `.gguf` file of the repository matches the quant.
    #[error("{repo} has no .gguf file for quant {quant}; its .gguf files: {}", files.join(", "))]
    QuantNotFound {
        /// The repository.
        repo: String,
        /// The quant asked for.
        quant: String,
        /// Every `.gguf` file of the repository.
        files: Vec<String>,
    },
    /// More than one `.gguf` file of the repository matches the quant.
    #[error("quant {quant} is ambiguous in {repo}: it matches {}; name the file as {repo}/FILE.gguf", matches.join(", "))]
    AmbiguousQuant {
        /// The repository.
        repo: String,
        /// The quant asked for.
        quant: String,
        /// The files it matches.
        matches: Vec<String>,
    },
    /// No quant or file was given and the repository has several `.gguf` files.
    #[error("{repo} has several .gguf files ({}); pick one with {repo}:QUANT or {repo}/FILE.gguf", files.join(", "))]
    QuantRequired {
        /// The repository.
        repo: String,
        /// Every `.gguf` file of the repository.
        files: Vec<String>,
    },
    /// The named file is not in the repository.
    #[error("{repo} has no file {file}; its .gguf files: {}", files.join(", "))]
    FileNotFound {
        /// The repository.
        repo: String,
        /// The file asked for.
        file: String,
        /// Every `.gguf` file of the repository.
        files: Vec<String>,
    },
    /// The selection is a GGUF split into several files, which Lacuna cannot load.
    #[error("{file} in {repo} is one part of a split GGUF ({}); split GGUFs are unsupported: merge them with llama.cpp's `llama-gguf-split --merge` or pick a single-file quant", parts.join(", "))]
    SplitGguf {
        /// The repository.
        repo: String,
        /// The file selected.
        file: String,
        /// Every part of the split.
        parts: Vec<String>,
    },
    /// The model is not in the cache and the Hub may not be contacted (`HF_HUB_OFFLINE`).
    #[error(
        "{reference} is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE is set; fetch it first with `lacuna pull {reference}`"
    )]
    NotCached {
        /// The reference, as `lacuna pull` takes it.
        reference: String,
        /// The cache directory searched.
        cache: PathBuf,
    },
    /// The Hub answered with an error status.
    #[error("{url}: HTTP {status}{}", status_hint(*status))]
    Status {
        /// The request.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The request could not be made or its answer not read.
    #[error("{url}: {source}")]
    Transport {
        /// The request.
        url: String,
        /// The underlying error.
        source: Box<ureq::Transport>,
    },
    /// The Hub's repository listing is not the JSON expected.
    #[error("{url}: unexpected answer from the Hub: {source}")]
    BadListing {
        /// The request.
        url: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An HTTP header is missing or malformed.
    #[error("{url}: bad or missing {header} header")]
    BadHeader {
        /// The request.
        url: String,
        /// The header.
        header: &'static str,
    },
    /// The Hub gives no SHA-256 for the file (it is not stored with Git LFS).
    #[error("{repo}/{file}: the Hub gives no LFS SHA-256 for this file, so it cannot be verified")]
    NoChecksum {
        /// The repository.
        repo: String,
        /// The file.
        file: String,
    },
    /// The download ended before the file's size; the partial file is kept for resuming.
    #[error(
        "{repo}/{file}: download interrupted at {received} of {expected} bytes ({source}); run the command again to resume"
    )]
    Interrupted {
        /// The repository.
        repo: String,
        /// The file.
        file: String,
        /// Bytes on disk.
        received: u64,
        /// The file's size.
        expected: u64,
        /// Why the transfer stopped.
        source: std::io::Error,
    },
    /// The downloaded bytes do not hash to the Hub's SHA-256; they were deleted.
    #[error(
        "{repo}/{file}: SHA-256 mismatch (expected {expected}, got {actual}); the download was deleted"
    )]
    ChecksumMismatch {
        /// The repository.
        repo: String,
        /// The file.
        file: String,
        /// The Hub's SHA-256.
        expected: String,
        /// The SHA-256 of the bytes received.
        actual: String,
    },
    /// A file or directory of the cache could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The Hub's listing names a commit that is not a plain hash.
    #[error("{url}: the Hub's listing gives an invalid commit {commit:?}")]
    BadCommit {
        /// The request.
        url: String,
        /// The commit given.
        commit: String,
    },
    /// The hub client could not be built.
    #[error("cannot build the Hub client: {source}")]
    Client {
        /// The underlying error.
        source: hf_hub::api::sync::ApiError,
    },
    /// No cache directory: neither `HF_HUB_CACHE`, `HF_HOME`, `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("cannot locate the Hugging Face cache: set HF_HOME (or HF_HUB_CACHE)")]
    NoCacheDir,
    /// A cached file is not a readable GGUF file.
    #[error(transparent)]
    Gguf(#[from] lacuna_gguf::Error),
}

/// What a status usually means on the Hub.
fn status_hint(status: u16) -> &'static str {
    match status {
        401 => " (the repository is gated or private: set HF_TOKEN)",
        403 => " (access denied: accept the repository's terms on the Hub, set HF_TOKEN)",
        404 => " (no such repository, revision or file)",
        _ => "",
    }
}

/// A `Result` of [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    /// An error of a ureq request to `url`.
    pub(crate) fn http(url: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Status(status, _) => Error::Status {
                url: url.to_owned(),
                status,
            },
            ureq::Error::Transport(t) => Error::Transport {
                url: url.to_owned(),
                source: Box::new(t),
            },
        }
    }
}
