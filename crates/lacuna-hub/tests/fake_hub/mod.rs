//! A loopback stand-in for the Hugging Face Hub, on `std::net`: the two routes Lacuna uses
//! (`/api/models/{repo}/revision/main?blobs=true` and `/{repo}/resolve/{commit}/{file}`, with
//! `Range`), one connection per request. It records every request, and can cut one
//! download short or corrupt the bytes it serves. Shared with lacuna-cli's tests.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Path and query.
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
}

/// A repository's files: name, bytes, stored with LFS or not.
type Files = Vec<(String, Vec<u8>, bool)>;

#[derive(Default)]
struct State {
    /// repo → (commit, files).
    repos: HashMap<String, (String, Files)>,
    /// Raw listing bodies that replace the generated one.
    raw_listing: HashMap<String, String>,
    seen: Vec<Seen>,
    /// Serve only this many bytes of the next download, then close.
    cut_next_at: Option<usize>,
    /// Flip a byte of every file served.
    corrupt: bool,
}

/// The server; it runs until the test process ends.
#[derive(Clone)]
pub struct FakeHub {
    addr: String,
    state: Arc<Mutex<State>>,
}

/// `hex(sha256(bytes))`.
pub fn sha256(bytes: &[u8]) -> String {
    lacuna_hub::sha256_hex(bytes)
}

impl FakeHub {
    /// Starts a server on a free loopback port.
    pub fn start() -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let hub = FakeHub {
            addr: format!("http://{}", listener.local_addr().unwrap()),
            state: Arc::default(),
        };
        let server = hub.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let server = server.clone();
                std::thread::spawn(move || server.serve(stream));
            }
        });
        hub
    }

    /// The endpoint URL (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> &str {
        &self.addr
    }

    /// Adds a repository at `commit` with LFS `files`.
    pub fn add_repo(&self, repo: &str, commit: &str, files: &[(&str, &[u8])]) {
        let files = files
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_vec(), true))
            .chain([("README.md".to_string(), b"# model\n".to_vec(), false)])
            .collect();
        self.state
            .lock()
            .unwrap()
            .repos
            .insert(repo.to_string(), (commit.to_string(), files));
    }

    /// Makes a file of `repo` a plain git file (no LFS metadata).
    pub fn add_plain_file(&self, repo: &str, name: &str, bytes: &[u8]) {
        let mut s = self.state.lock().unwrap();
        let entry = s.repos.get_mut(repo).unwrap();
        entry.1.push((name.to_string(), bytes.to_vec(), false));
    }

    /// Serves `body` as the listing of `repo`.
    pub fn set_raw_listing(&self, repo: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        s.raw_listing.insert(repo.to_string(), body.to_string());
    }

    /// The next download sends `n` bytes of its body, then the connection drops.
    pub fn cut_next_download_at(&self, n: usize) {
        self.state.lock().unwrap().cut_next_at = Some(n);
    }

    /// Serve every file with one byte flipped.
    pub fn corrupt_downloads(&self, on: bool) {
        self.state.lock().unwrap().corrupt = on;
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut range = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("range")
            {
                range = Some(v.trim().to_string());
            }
        }
        let mut s = self.state.lock().unwrap();
        s.seen.push(Seen {
            path: path.clone(),
            range: range.clone(),
        });
        let mut out = stream;
        if let Some(rest) = path.strip_prefix("/api/models/") {
            let repo = rest.split("/revision/").next().unwrap_or("");
            if let Some(raw) = s.raw_listing.get(repo) {
                return respond(&mut out, "200 OK", &[], raw.as_bytes());
            }
            let Some((commit, files)) = s.repos.get(repo) else {
                return respond(
                    &mut out,
                    "404 Not Found",
                    &[],
                    b"{\"error\":\"Repository not found\"}",
                );
            };
            let siblings: Vec<String> = files
                .iter()
                .map(|(name, bytes, lfs)| {
                    if *lfs {
                        format!(
                            r#"{{"rfilename":"{name}","size":{n},"blobId":"x","lfs":{{"sha256":"{sha}","size":{n},"pointerSize":134}}}}"#,
                            n = bytes.len(),
                            sha = sha256(bytes)
                        )
                    } else {
                        format!(r#"{{"rfilename":"{name}","size":{},"blobId":"x"}}"#, bytes.len())
                    }
                })
                .collect();
            let body = format!(
                r#"{{"id":"{repo}","sha":"{commit}","siblings":[{}]}}"#,
                siblings.join(",")
            );
            return respond(&mut out, "200 OK", &[], body.as_bytes());
        }
        // /{owner}/{repo}/resolve/{commit}/{file}
        let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
        let found = match parts.as_slice() {
            [owner, name, "resolve", commit, file] => s
                .repos
                .get(&format!("{owner}/{name}"))
                .filter(|(c, _)| c == commit)
                .and_then(|(_, files)| files.iter().find(|(n, _, _)| n == file))
                .map(|(_, bytes, _)| bytes.clone()),
            _ => None,
        };
        let Some(mut bytes) = found else {
            return respond(&mut out, "404 Not Found", &[], b"not found");
        };
        let etag = sha256(&bytes);
        if s.corrupt {
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
        }
        let total = bytes.len();
        let start = range
            .as_deref()
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0)
            .min(total);
        let cut = s.cut_next_at.take();
        drop(s);
        let headers = vec![
            ("X-Repo-Commit".to_string(), parts[3].to_string()),
            ("X-Linked-Etag".to_string(), format!("\"{etag}\"")),
            ("X-Linked-Size".to_string(), total.to_string()),
        ];
        let (status, mut headers, body) = if range.is_some() {
            let mut h = headers;
            h.push((
                "Content-Range".to_string(),
                format!("bytes {start}-{}/{total}", total.saturating_sub(1)),
            ));
            ("206 Partial Content", h, &bytes[start..])
        } else {
            ("200 OK", headers, &bytes[..])
        };
        if let Some(n) = cut {
            // Promise the whole body, send part of it, hang up.
            headers.push(("Content-Length".to_string(), body.len().to_string()));
            let head = head(status, &headers);
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(&body[..n.min(body.len())]);
            let _ = out.flush();
            let _ = out.shutdown(std::net::Shutdown::Both);
            return;
        }
        let hdrs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        respond(&mut out, status, &hdrs, body);
    }
}

fn head(status: &str, headers: &[(String, String)]) -> String {
    let mut s = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s
}

fn respond(out: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut h: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    h.push(("Content-Length".to_string(), body.len().to_string()));
    let _ = out.write_all(head(status, &h).as_bytes());
    let _ = out.write_all(body);
    let _ = out.flush();
}
