//! The Hugging Face cache, in `huggingface_hub`'s layout, so files fetched by Python tools are
//! found and files fetched here are found by them:
//!
//! ```text
//! {cache}/models--{owner}--{repo}/blobs/{sha256}            the bytes (LFS files: by SHA-256)
//! {cache}/models--{owner}--{repo}/blobs/{sha256}.incomplete a download under way
//! {cache}/models--{owner}--{repo}/snapshots/{commit}/{file} → ../../blobs/{sha256}
//! {cache}/models--{owner}--{repo}/refs/main                 the commit `main` was at
//! ```

use std::path::{Path, PathBuf};

use hf_hub::{Cache, Repo};

use crate::select::{is_gguf, select_file};
use crate::{Error, ModelRef, Result, Selector};

/// A Hugging Face cache directory (the `hub` directory itself).
#[derive(Debug, Clone)]
pub struct HubCache {
    cache: Cache,
}

/// A `.gguf` file found in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedFile {
    /// The repository, `OWNER/REPO`.
    pub repo: String,
    /// The snapshot (commit) it belongs to.
    pub commit: String,
    /// Its path inside the repository.
    pub file: String,
    /// Its path on disk (in `snapshots/`).
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

impl HubCache {
    /// The cache at `dir` (the `hub` directory: it holds the `models--*` directories).
    pub fn new(dir: impl Into<PathBuf>) -> HubCache {
        HubCache {
            cache: Cache::new(dir.into()),
        }
    }

    /// The cache `huggingface_hub` uses: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
    pub fn from_env() -> Result<HubCache> {
        let var = |k| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = if let Some(dir) = var("HF_HUB_CACHE") {
            dir
        } else if let Some(home) = var("HF_HOME") {
            home.join("hub")
        } else if let Some(xdg) = var("XDG_CACHE_HOME") {
            xdg.join("huggingface").join("hub")
        } else if let Some(home) = var("HOME").or_else(|| var("USERPROFILE")) {
            home.join(".cache").join("huggingface").join("hub")
        } else {
            return Err(Error::NoCacheDir);
        };
        Ok(HubCache::new(dir))
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        self.cache.path()
    }

    /// The token `huggingface-cli login` saved beside the cache (`{cache}/../token`).
    pub(crate) fn token(&self) -> Option<String> {
        self.cache.token()
    }

    /// `models--{owner}--{repo}`.
    pub(crate) fn repo_dir(&self, repo: &str) -> PathBuf {
        self.dir().join(Repo::model(repo.to_owned()).folder_name())
    }

    /// Where the blob of SHA-256 `sha` of `repo` lives.
    pub(crate) fn blob_path(&self, repo: &str, sha: &str) -> PathBuf {
        self.repo_dir(repo).join("blobs").join(sha)
    }

    /// The file `reference` names, if the cache has it at the commit `refs/main` records.
    /// Never touches the network. `Ok(None)` when it is not cached; an error when the cached
    /// files make the reference ambiguous or name a split GGUF.
    pub fn lookup(&self, reference: &ModelRef) -> Result<Option<PathBuf>> {
        let repo = reference.repo();
        if let Selector::File(file) = reference.selector() {
            let found = self.cache.model(repo.to_owned()).get(file);
            if found.is_some() {
                // Refuses a part of a split GGUF, as a download would.
                select_file(repo, std::slice::from_ref(file), reference.selector())?;
            }
            return Ok(found);
        }
        let Some(commit) = self.main_commit(repo) else {
            return Ok(None);
        };
        let snapshot = self.repo_dir(repo).join("snapshots").join(&commit);
        let files: Vec<String> = gguf_files(&snapshot)?
            .into_iter()
            .map(|(file, _, _)| file)
            .collect();
        match select_file(repo, &files, reference.selector()) {
            Ok(file) => Ok(Some(snapshot.join(file))),
            Err(Error::NoGguf { .. } | Error::QuantNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The commit `refs/main` of `repo` records.
    fn main_commit(&self, repo: &str) -> Option<String> {
        let commit = std::fs::read_to_string(self.repo_dir(repo).join("refs").join("main")).ok()?;
        let commit = commit.trim();
        (!commit.is_empty() && !commit.contains(['/', '\\']) && commit != "..")
            .then(|| commit.to_owned())
    }

    /// Points `snapshots/{commit}/{file}` of `repo` at the blob `sha` and `refs/main` at
    /// `commit`; returns the snapshot path.
    pub(crate) fn link(&self, repo: &str, commit: &str, file: &str, sha: &str) -> Result<PathBuf> {
        let repo_dir = self.repo_dir(repo);
        let pointer = repo_dir.join("snapshots").join(commit).join(file);
        if let Some(parent) = pointer.parent() {
            std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
        }
        if std::fs::symlink_metadata(&pointer).is_ok() {
            std::fs::remove_file(&pointer).map_err(Error::io(&pointer))?;
        }
        let depth = file.split('/').count() + 1;
        let target: PathBuf = std::iter::repeat_n("..", depth)
            .chain(["blobs", sha])
            .collect();
        link_file(&target, &self.blob_path(repo, sha), &pointer).map_err(Error::io(&pointer))?;
        self.cache
            .model(repo.to_owned())
            .create_ref(commit)
            .map_err(Error::io(repo_dir.join("refs").join("main")))?;
        Ok(pointer)
    }

    /// Every `.gguf` file in every snapshot of every model repository, sorted by repository
    /// and file. An absent cache directory lists nothing.
    pub fn list(&self) -> Result<Vec<CachedFile>> {
        let mut out = Vec::new();
        for repo_dir in sorted_dir(self.dir())? {
            let Some(name) = repo_dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(repo) = name.strip_prefix("models--") else {
                continue;
            };
            let repo = repo.replacen("--", "/", 1);
            for snapshot in sorted_dir(&repo_dir.join("snapshots"))? {
                let Some(commit) = snapshot.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                for (file, path, size) in gguf_files(&snapshot)? {
                    out.push(CachedFile {
                        repo: repo.clone(),
                        commit: commit.to_owned(),
                        file,
                        path,
                        size,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// The entries of `dir`, sorted; none when it does not exist.
fn sorted_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir)(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        paths.push(entry.map_err(Error::io(dir))?.path());
    }
    paths.sort();
    Ok(paths)
}

/// `(path inside the snapshot, path on disk, size)` of every `.gguf` file under `snapshot`
/// whose link resolves (a dangling link is a file that is not cached).
fn gguf_files(snapshot: &Path) -> Result<Vec<(String, PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut stack = vec![(snapshot.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for path in sorted_dir(&dir)? {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push((path, format!("{rel}/")));
            } else if is_gguf(&rel) {
                out.push((rel, path, meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Makes `pointer` a link to `target` (relative to the pointer's directory), as
/// `huggingface_hub` does; where symbolic links are unavailable, a hard link to `blob`.
#[cfg(unix)]
fn link_file(target: &Path, _blob: &Path, pointer: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, pointer)
}

#[cfg(not(unix))]
fn link_file(_target: &Path, blob: &Path, pointer: &Path) -> std::io::Result<()> {
    std::fs::hard_link(blob, pointer).or_else(|_| std::fs::copy(blob, pointer).map(|_| ()))
}
