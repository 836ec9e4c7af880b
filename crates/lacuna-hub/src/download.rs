//! One file from the Hub into a blob of the cache: streamed to `blobs/{sha256}.incomplete`,
//! resumed from what that file already holds (`Range: bytes=N-`), hashed as it arrives and
//! renamed to `blobs/{sha256}` only when its SHA-256 is the Hub's.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::checksum::Checksum;
use crate::{Error, Result};

/// What to fetch and where.
pub(crate) struct BlobRequest<'a> {
    /// The agent requests go through.
    pub(crate) agent: &'a ureq::Agent,
    /// Headers of every request (user agent, authorization).
    pub(crate) headers: &'a [(String, String)],
    /// The file's `resolve` URL.
    pub(crate) url: &'a str,
    /// The repository, for errors.
    pub(crate) repo: &'a str,
    /// The file inside the repository, for errors and the progress bar.
    pub(crate) file: &'a str,
    /// The blob to write.
    pub(crate) blob: &'a Path,
    /// The Hub's SHA-256 of the file (lowercase hex).
    pub(crate) sha256: &'a str,
    /// The file's size.
    pub(crate) size: u64,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub(crate) progress: bool,
    /// Further attempts after an interrupted one that received bytes.
    pub(crate) retries: u32,
}

/// Downloads the blob (resuming a partial one), checks its SHA-256 and moves it in place.
pub(crate) fn download_blob(req: &BlobRequest<'_>) -> Result<()> {
    let incomplete = incomplete_path(req.blob);
    if let Some(dir) = incomplete.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    }
    let bar = progress_bar(req);
    let mut attempt = 0;
    let result = loop {
        let (result, received) = attempt_once(req, &incomplete, &bar);
        match result {
            Err(Error::Interrupted { .. } | Error::Transport { .. })
                if received > 0 && attempt < req.retries =>
            {
                attempt += 1;
                if req.progress {
                    eprintln!(
                        "note: {}/{}: connection lost, resuming (attempt {})",
                        req.repo,
                        req.file,
                        attempt + 1
                    );
                }
            }
            other => break other,
        }
    };
    match &result {
        Ok(()) => bar.finish(),
        Err(_) => bar.abandon(),
    }
    result?;
    std::fs::rename(&incomplete, req.blob).map_err(Error::io(req.blob))
}

/// `blobs/{sha256}.incomplete`, the name `huggingface_hub` gives a download under way.
pub(crate) fn incomplete_path(blob: &Path) -> PathBuf {
    let mut name = blob.as_os_str().to_owned();
    name.push(".incomplete");
    PathBuf::from(name)
}

fn progress_bar(req: &BlobRequest<'_>) -> ProgressBar {
    if !req.progress {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(req.size), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} [{elapsed_precise}] [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} ({eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(req.file.rsplit('/').next().unwrap_or(req.file).to_owned());
    bar
}

/// One request: appends to `incomplete` from its current length, then verifies it when
/// complete. Returns the outcome and the bytes this attempt received.
fn attempt_once(req: &BlobRequest<'_>, incomplete: &Path, bar: &ProgressBar) -> (Result<()>, u64) {
    let mut received = 0;
    let result = (|| {
        let mut have = match std::fs::metadata(incomplete) {
            Ok(m) if m.len() <= req.size => m.len(),
            _ => 0,
        };
        let mut sum = Checksum::default();
        let mut file;
        if have < req.size {
            let mut request = req.agent.get(req.url);
            for (k, v) in req.headers {
                request = request.set(k, v);
            }
            if have > 0 {
                request = request.set("Range", &format!("bytes={have}-"));
            }
            let response = request.call().map_err(|e| Error::http(req.url, e))?;
            if have > 0 && response.status() == 206 {
                let start = content_range_start(response.header("Content-Range"));
                if start != Some(have) {
                    return Err(Error::BadHeader {
                        url: req.url.to_owned(),
                        header: "Content-Range",
                    });
                }
                file = OpenOptions::new()
                    .append(true)
                    .open(incomplete)
                    .map_err(Error::io(incomplete))?;
                sum.update_from_file(incomplete, have)?;
            } else {
                // A full answer (no range asked, or the server ignored it): start over.
                have = 0;
                file = File::create(incomplete).map_err(Error::io(incomplete))?;
            }
            bar.set_position(have);
            let mut body = response.into_reader().take(req.size - have);
            let mut buf = vec![0u8; 256 * 1024];
            let end = loop {
                match body.read(&mut buf) {
                    Ok(0) => break None,
                    Ok(n) => {
                        file.write_all(&buf[..n]).map_err(Error::io(incomplete))?;
                        sum.update(&buf[..n]);
                        received += n as u64;
                        bar.inc(n as u64);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Some(e),
                }
            };
            file.flush().map_err(Error::io(incomplete))?;
            drop(file);
            let now = have + received;
            if now < req.size {
                return Err(Error::Interrupted {
                    repo: req.repo.to_owned(),
                    file: req.file.to_owned(),
                    received: now,
                    expected: req.size,
                    source: end.unwrap_or_else(|| std::io::ErrorKind::UnexpectedEof.into()),
                });
            }
        } else {
            sum.update_from_file(incomplete, req.size)?;
        }
        verify(req, incomplete, sum)
    })();
    (result, received)
}

/// Compares the SHA-256 of the complete `incomplete` file with the Hub's; a mismatch
/// deletes the file.
fn verify(req: &BlobRequest<'_>, incomplete: &Path, sum: Checksum) -> Result<()> {
    let actual = sum.hex();
    if actual != req.sha256 {
        std::fs::remove_file(incomplete).map_err(Error::io(incomplete))?;
        return Err(Error::ChecksumMismatch {
            repo: req.repo.to_owned(),
            file: req.file.to_owned(),
            expected: req.sha256.to_owned(),
            actual,
        });
    }
    Ok(())
}

/// `N` of `Content-Range: bytes N-M/T`.
fn content_range_start(header: Option<&str>) -> Option<u64> {
    let range = header?.trim().strip_prefix("bytes ")?;
    range.split_once('-')?.0.trim().parse().ok()
}

/// `s` with every byte outside `A-Za-z0-9-._~/` percent-encoded (a URL path).
pub(crate) fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
