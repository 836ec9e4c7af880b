//! SHA-256 of downloads, fed as bytes arrive, and of files already on disk (a resumed
//! download's first part).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// A running SHA-256.
#[derive(Default)]
pub(crate) struct Checksum(Sha256);

impl Checksum {
    /// Adds `bytes`.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Adds the first `len` bytes of the file at `path`.
    pub(crate) fn update_from_file(&mut self, path: &Path, len: u64) -> Result<()> {
        let file = std::fs::File::open(path).map_err(Error::io(path))?;
        let mut reader = file.take(len);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = reader.read(&mut buf).map_err(Error::io(path))?;
            if n == 0 {
                return Ok(());
            }
            self.update(&buf[..n]);
        }
    }

    /// The digest as 64 lowercase hex digits.
    pub(crate) fn hex(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Whether `s` looks like a SHA-256 in hex (the Hub's LFS object ids).
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The SHA-256 of `bytes` in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut c = Checksum::default();
    c.update(bytes);
    c.hex()
}
