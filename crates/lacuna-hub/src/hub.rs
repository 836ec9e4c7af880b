//! The Hub client: resolves a [`ModelRef`] to a file in the cache, downloading it when it
//! is missing and the network is allowed.

use std::path::PathBuf;

use hf_hub::api::sync::{Api, ApiBuilder};
use hf_hub::{Cache, Repo, RepoType};
use serde::Deserialize;

use crate::checksum::is_sha256_hex;
use crate::download::{BlobRequest, download_blob, encode_path};
use crate::select::select_file;
use crate::{Error, HubCache, ModelRef, Result};

/// The public Hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// How to reach the Hub and where to keep files.
#[derive(Clone)]
pub struct HubOptions {
    /// The Hub's base URL (`HF_ENDPOINT`; [`DEFAULT_ENDPOINT`] by default).
    pub endpoint: String,
    /// The cache.
    pub cache: HubCache,
    /// Never contact the Hub (`HF_HUB_OFFLINE=1`): only cached files resolve.
    pub offline: bool,
    /// Access token for gated and private repositories (`HF_TOKEN`, else the token
    /// `huggingface-cli login` saved).
    pub token: Option<String>,
    /// Draw a progress bar on stderr while downloading.
    pub progress: bool,
    /// Further attempts, each resuming, after a transfer interrupted midway.
    pub retries: u32,
}

impl HubOptions {
    /// `endpoint` and `cache`, online, no token, no progress bar, 2 retries.
    pub fn new(endpoint: impl Into<String>, cache: HubCache) -> HubOptions {
        HubOptions {
            endpoint: endpoint.into(),
            cache,
            offline: false,
            token: None,
            progress: false,
            retries: 2,
        }
    }

    /// The settings `huggingface_hub` reads: `HF_ENDPOINT`, the cache of
    /// [`HubCache::from_env`], `HF_HUB_OFFLINE`, `HF_TOKEN` (else the saved token); with a
    /// progress bar.
    pub fn from_env() -> Result<HubOptions> {
        let var = |k| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let cache = HubCache::from_env()?;
        let token = var("HF_TOKEN").or_else(|| cache.token());
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_uppercase().as_str(),
                "1" | "ON" | "YES" | "TRUE"
            )
        });
        Ok(HubOptions {
            endpoint: var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned()),
            cache,
            offline,
            token,
            progress: true,
            retries: 2,
        })
    }
}

/// A client of the Hub over a cache.
pub struct Hub {
    options: HubOptions,
    api: Api,
    agent: ureq::Agent,
    headers: Vec<(String, String)>,
}

/// A repository's listing (`/api/models/{repo}/revision/main?blobs=true`), the fields used.
#[derive(Deserialize)]
struct Listing {
    sha: String,
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
    #[serde(default)]
    lfs: Option<Lfs>,
}

#[derive(Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

impl Hub {
    /// A client with `options`.
    pub fn new(mut options: HubOptions) -> Result<Hub> {
        options.endpoint = options.endpoint.trim_end_matches('/').to_owned();
        let user_agent = format!("lacuna/{}; hf-hub-rust", env!("CARGO_PKG_VERSION"));
        let api = ApiBuilder::from_cache(Cache::new(options.cache.dir().to_path_buf()))
            .with_endpoint(options.endpoint.clone())
            .with_token(options.token.clone())
            .with_user_agent("lacuna", env!("CARGO_PKG_VERSION"))
            .with_progress(false)
            .build()
            .map_err(|source| Error::Client { source })?;
        let agent = ureq::AgentBuilder::new()
            .try_proxy_from_env(true)
            .redirect_auth_headers(ureq::RedirectAuthHeaders::SameHost)
            .build();
        let mut headers = vec![("User-Agent".to_owned(), user_agent)];
        if let Some(token) = &options.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        Ok(Hub {
            options,
            api,
            agent,
            headers,
        })
    }

    /// A client with [`HubOptions::from_env`].
    pub fn from_env() -> Result<Hub> {
        Hub::new(HubOptions::from_env()?)
    }

    /// The cache.
    pub fn cache(&self) -> &HubCache {
        &self.options.cache
    }

    /// The local path of `reference`: the cached file when there is one (no network),
    /// else a download ([`Hub::pull`]); offline and not cached, [`Error::NotCached`].
    pub fn resolve(&self, reference: &ModelRef) -> Result<PathBuf> {
        if let Some(path) = self.cache().lookup(reference)? {
            return Ok(path);
        }
        if self.options.offline {
            return Err(self.not_cached(reference));
        }
        self.pull(reference)
    }

    /// Asks the Hub which file `reference` names at `main`'s latest commit and makes sure
    /// the cache has it (downloading, resuming, checking its SHA-256); returns its path.
    /// Offline, the cached file or [`Error::NotCached`].
    pub fn pull(&self, reference: &ModelRef) -> Result<PathBuf> {
        if self.options.offline {
            return self
                .cache()
                .lookup(reference)?
                .ok_or_else(|| self.not_cached(reference));
        }
        let repo = reference.repo();
        let (url, listing) = self.listing(repo)?;
        if listing.sha.is_empty() || !listing.sha.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(Error::BadCommit {
                url,
                commit: listing.sha,
            });
        }
        let files: Vec<String> = listing
            .siblings
            .iter()
            .map(|s| s.rfilename.clone())
            .collect();
        let file = select_file(repo, &files, reference.selector())?;
        let lfs = listing
            .siblings
            .iter()
            .find(|s| s.rfilename == file)
            .and_then(|s| s.lfs.as_ref())
            .filter(|lfs| is_sha256_hex(&lfs.sha256))
            .ok_or_else(|| Error::NoChecksum {
                repo: repo.to_owned(),
                file: file.clone(),
            })?;
        let sha = lfs.sha256.to_ascii_lowercase();
        let blob = self.cache().blob_path(repo, &sha);
        let cached = std::fs::metadata(&blob).is_ok_and(|m| m.len() == lfs.size);
        if !cached {
            let url = format!(
                "{}/{}/resolve/{}/{}",
                self.options.endpoint,
                encode_path(repo),
                listing.sha,
                encode_path(&file)
            );
            download_blob(&BlobRequest {
                agent: &self.agent,
                headers: &self.headers,
                url: &url,
                repo,
                file: &file,
                blob: &blob,
                sha256: &sha,
                size: lfs.size,
                progress: self.options.progress,
                retries: self.options.retries,
            })?;
        }
        self.cache().link(repo, &listing.sha, &file, &sha)
    }

    /// The repository's files at `main`, with their LFS SHA-256s, through hf-hub's request.
    fn listing(&self, repo: &str) -> Result<(String, Listing)> {
        let request = self
            .api
            .repo(Repo::new(repo.to_owned(), RepoType::Model))
            .info_request()
            .query("blobs", "true");
        let url = request.url().to_owned();
        let response = request.call().map_err(|e| Error::http(&url, e))?;
        let listing = response.into_json().map_err(|source| Error::BadListing {
            url: url.clone(),
            source,
        })?;
        Ok((url, listing))
    }

    fn not_cached(&self, reference: &ModelRef) -> Error {
        Error::NotCached {
            reference: reference.to_string(),
            cache: self.cache().dir().to_path_buf(),
        }
    }
}
