//! The hub client against a loopback fake Hub: downloads into the HF cache layout, resume,
//! checksum, quant selection, offline resolution and the cache listing.

mod fake_hub;

use std::path::Path;

use fake_hub::FakeHub;
use lacuna::gguf::GgufWriter;
use lacuna::models::Arch;
use lacuna::models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna::quant::GgmlType;
use lacuna_hub::{Error, Hub, HubCache, HubOptions, ModelRef, summarize};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// A small valid LLaDA GGUF with Q8_0 matrices.
fn gguf(seed: u64) -> Vec<u8> {
    let mut spec = FixtureSpec::new(Arch::Llada, Shape::Tiny, 1, QuantMix::Q8_0);
    spec.seed = seed;
    build(&spec).unwrap().to_vec().unwrap()
}

fn hub(server: &FakeHub, cache: &Path, offline: bool, retries: u32) -> Hub {
    let mut o = HubOptions::new(server.endpoint(), HubCache::new(cache));
    o.offline = offline;
    o.retries = retries;
    Hub::new(o).unwrap()
}

fn r(s: &str) -> ModelRef {
    ModelRef::parse(s).unwrap()
}

fn downloads(server: &FakeHub) -> Vec<fake_hub::Seen> {
    server
        .seen()
        .into_iter()
        .filter(|s| s.path.contains("/resolve/"))
        .collect()
}

#[test]
fn pull_downloads_verifies_and_links_like_huggingface_hub() {
    let server = FakeHub::start();
    let bytes = gguf(1);
    server.add_repo("owner/model-GGUF", COMMIT, &[("model-Q8_0.gguf", &bytes)]);
    let dir = tempfile::tempdir().unwrap();
    let path = hub(&server, dir.path(), false, 2)
        .pull(&r("owner/model-GGUF:q8_0"))
        .unwrap();

    let repo = dir.path().join("models--owner--model-GGUF");
    assert_eq!(
        path,
        repo.join("snapshots").join(COMMIT).join("model-Q8_0.gguf")
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let sha = fake_hub::sha256(&bytes);
    #[cfg(unix)]
    assert_eq!(
        std::fs::read_link(&path).unwrap(),
        Path::new("../../blobs").join(&sha)
    );
    assert_eq!(std::fs::read(repo.join("blobs").join(&sha)).unwrap(), bytes);
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    let blobs: Vec<_> = std::fs::read_dir(repo.join("blobs")).unwrap().collect();
    assert_eq!(blobs.len(), 1, "no .incomplete left behind");
    // The listing was asked for with its LFS metadata; one plain GET fetched the file.
    assert!(
        server.seen()[0]
            .path
            .starts_with("/api/models/owner/model-GGUF/revision/main")
    );
    assert!(server.seen()[0].path.contains("blobs=true"));
    let d = downloads(&server);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].range, None);
}

#[test]
fn an_interrupted_download_resumes_from_the_partial_file() {
    let server = FakeHub::start();
    let bytes = gguf(2);
    server.add_repo("owner/m", COMMIT, &[("m.Q8_0.gguf", &bytes)]);
    let dir = tempfile::tempdir().unwrap();
    let cut = bytes.len() / 2;
    server.cut_next_download_at(cut);

    // No retries: the first attempt fails and keeps its bytes as huggingface_hub names them.
    let err = hub(&server, dir.path(), false, 0)
        .pull(&r("owner/m:Q8_0"))
        .unwrap_err();
    match &err {
        Error::Interrupted {
            received, expected, ..
        } => assert_eq!((*received, *expected), (cut as u64, bytes.len() as u64)),
        other => panic!("{other:?}"),
    }
    let partial = dir
        .path()
        .join("models--owner--m/blobs")
        .join(format!("{}.incomplete", fake_hub::sha256(&bytes)));
    assert_eq!(std::fs::metadata(&partial).unwrap().len(), cut as u64);

    // The next attempt asks for the rest only.
    let path = hub(&server, dir.path(), false, 0)
        .pull(&r("owner/m:Q8_0"))
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let d = downloads(&server);
    assert_eq!(d.len(), 2);
    assert_eq!(
        d[1].range.as_deref(),
        Some(format!("bytes={cut}-").as_str())
    );
    assert!(!partial.exists());
}

#[test]
fn a_dropped_connection_is_resumed_within_one_pull() {
    let server = FakeHub::start();
    let bytes = gguf(3);
    server.add_repo("owner/m", COMMIT, &[("m-Q8_0.gguf", &bytes)]);
    let dir = tempfile::tempdir().unwrap();
    server.cut_next_download_at(1000);
    let path = hub(&server, dir.path(), false, 2)
        .pull(&r("owner/m:Q8_0"))
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let ranges: Vec<_> = downloads(&server).into_iter().map(|s| s.range).collect();
    assert_eq!(ranges, [None, Some("bytes=1000-".to_string())]);
}

#[test]
fn corrupted_bytes_are_a_checksum_error_and_leave_nothing() {
    let server = FakeHub::start();
    let bytes = gguf(4);
    server.add_repo("owner/m", COMMIT, &[("m-Q8_0.gguf", &bytes)]);
    server.corrupt_downloads(true);
    let dir = tempfile::tempdir().unwrap();
    let err = hub(&server, dir.path(), false, 2)
        .pull(&r("owner/m:Q8_0"))
        .unwrap_err();
    match &err {
        Error::ChecksumMismatch {
            expected,
            actual,
            file,
            ..
        } => {
            assert_eq!(expected, &fake_hub::sha256(&bytes));
            assert_ne!(actual, expected);
            assert_eq!(file, "m-Q8_0.gguf");
        }
        other => panic!("{other:?}"),
    }
    let repo = dir.path().join("models--owner--m");
    assert!(!repo.join("snapshots").exists());
    let blobs: Vec<_> = std::fs::read_dir(repo.join("blobs")).unwrap().collect();
    assert!(blobs.is_empty(), "{blobs:?}");

    // Once the server is fixed, the same pull works from scratch.
    server.corrupt_downloads(false);
    let path = hub(&server, dir.path(), false, 2)
        .pull(&r("owner/m:Q8_0"))
        .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), bytes);
}

#[test]
fn quant_selects_among_the_repos_files() {
    let server = FakeHub::start();
    let (a, b, c) = (gguf(5), gguf(6), gguf(7));
    server.add_repo(
        "owner/m",
        COMMIT,
        &[
            ("m-Q4_K_M.gguf", &a),
            ("m-Q4_K_S.gguf", &b),
            ("m-Q8_0.gguf", &c),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let h = hub(&server, dir.path(), false, 2);
    let path = h.pull(&r("owner/m:Q4_K_S")).unwrap();
    assert!(path.ends_with("m-Q4_K_S.gguf"));
    assert_eq!(std::fs::read(path).unwrap(), b);
    let path = h.pull(&r("owner/m/m-Q8_0.gguf")).unwrap();
    assert_eq!(std::fs::read(path).unwrap(), c);

    match h.pull(&r("owner/m:Q4_K")).unwrap_err() {
        Error::AmbiguousQuant { matches, .. } => {
            assert_eq!(matches, ["m-Q4_K_M.gguf", "m-Q4_K_S.gguf"])
        }
        other => panic!("{other:?}"),
    }
    let err = h.pull(&r("owner/m:Q5_K_M")).unwrap_err();
    assert!(matches!(&err, Error::QuantNotFound { files, .. } if files.len() == 3));
    let msg = err.to_string();
    assert!(
        msg.contains("Q5_K_M") && msg.contains("m-Q4_K_M.gguf, m-Q4_K_S.gguf, m-Q8_0.gguf"),
        "{msg}"
    );
    assert!(matches!(
        h.pull(&r("owner/m")).unwrap_err(),
        Error::QuantRequired { .. }
    ));
}

#[test]
fn a_cached_model_resolves_without_any_request_online_or_offline() {
    let server = FakeHub::start();
    let bytes = gguf(8);
    server.add_repo(
        "owner/m",
        COMMIT,
        &[("m-Q8_0.gguf", &bytes), ("m-F16.gguf", &bytes)],
    );
    let dir = tempfile::tempdir().unwrap();
    let pulled = hub(&server, dir.path(), false, 2)
        .pull(&r("owner/m:Q8_0"))
        .unwrap();
    let before = server.seen().len();

    for offline in [false, true] {
        let h = hub(&server, dir.path(), offline, 2);
        assert_eq!(h.resolve(&r("owner/m:q8_0")).unwrap(), pulled);
        assert_eq!(h.resolve(&r("hf:owner/m/m-Q8_0.gguf")).unwrap(), pulled);
    }
    // Offline `pull` of a cached file is the cached file too.
    assert_eq!(
        hub(&server, dir.path(), true, 2)
            .pull(&r("owner/m:Q8_0"))
            .unwrap(),
        pulled
    );
    assert_eq!(server.seen().len(), before, "no request after the pull");

    // Online, a quant not cached yet is downloaded.
    let f16 = hub(&server, dir.path(), false, 2)
        .resolve(&r("owner/m:F16"))
        .unwrap();
    assert!(f16.ends_with("m-F16.gguf"));
    assert!(server.seen().len() > before);
}

#[test]
fn offline_and_missing_names_the_pull_command() {
    let server = FakeHub::start();
    server.add_repo("owner/m", COMMIT, &[("m-Q8_0.gguf", &gguf(9))]);
    let dir = tempfile::tempdir().unwrap();
    let h = hub(&server, dir.path(), true, 2);
    for reference in ["hf:owner/m:Q8_0", "owner/m/m-Q8_0.gguf"] {
        let err = h.resolve(&r(reference)).unwrap_err();
        assert!(matches!(err, Error::NotCached { .. }), "{err:?}");
        let wanted = format!("`lacuna pull {}`", reference.trim_start_matches("hf:"));
        assert!(err.to_string().contains(&wanted), "{err}");
    }
    assert!(server.seen().is_empty());
}

#[test]
fn listing_shows_cached_files_with_architecture_and_quant() {
    let server = FakeHub::start();
    let bytes = gguf(10);
    server.add_repo("owner/m", COMMIT, &[("sub/m-Q8_0.gguf", &bytes)]);
    let dir = tempfile::tempdir().unwrap();
    hub(&server, dir.path(), false, 2)
        .pull(&r("owner/m:Q8_0"))
        .unwrap();
    // A file that is not GGUF, as another tool might have left.
    let junk = dir.path().join("models--other--junk/snapshots/abc");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(junk.join("broken.gguf"), b"not a gguf").unwrap();
    std::fs::write(junk.join("notes.txt"), b"ignored").unwrap();

    let list = HubCache::new(dir.path()).list().unwrap();
    let names: Vec<_> = list
        .iter()
        .map(|f| (f.repo.as_str(), f.file.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("other/junk", "broken.gguf"),
            ("owner/m", "sub/m-Q8_0.gguf")
        ]
    );
    assert_eq!(list[1].size, bytes.len() as u64);
    assert_eq!(list[1].commit, COMMIT);
    let s = summarize(&list[1].path).unwrap();
    assert_eq!(s.architecture.as_deref(), Some("llada"));
    // The fixture declares `general.file_type` 1 (llama.cpp's MOSTLY_F16) whatever its types.
    assert_eq!(s.quant.as_deref(), Some("F16"));
    assert!(matches!(summarize(&list[0].path), Err(Error::Gguf(_))));

    // Without `general.file_type`, the type holding most tensor bytes names the quant.
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "dream").unwrap();
    w.add_tensor_zeroed("big", &[256, 8], GgmlType::Q8_0)
        .unwrap();
    w.add_tensor_zeroed("norm", &[256], GgmlType::F32).unwrap();
    let plain = dir.path().join("plain.gguf");
    w.write_file(&plain).unwrap();
    let s = summarize(&plain).unwrap();
    assert_eq!(s.architecture.as_deref(), Some("dream"));
    assert_eq!(s.quant.as_deref(), Some("q8_0"));

    assert!(
        HubCache::new(dir.path().join("absent"))
            .list()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bad_hub_answers_are_typed_errors() {
    let server = FakeHub::start();
    server.add_repo("owner/m", COMMIT, &[]);
    server.add_plain_file("owner/m", "plain-Q8_0.gguf", &gguf(11));
    server.set_raw_listing("owner/badjson", "{\"sha\": 12, \"siblings\": ");
    server.set_raw_listing("owner/badsha", r#"{"sha":"../../x","siblings":[]}"#);
    let dir = tempfile::tempdir().unwrap();
    let h = hub(&server, dir.path(), false, 2);

    assert!(matches!(
        h.pull(&r("owner/absent:Q8_0")).unwrap_err(),
        Error::Status { status: 404, .. }
    ));
    assert!(matches!(
        h.pull(&r("owner/badjson:Q8_0")).unwrap_err(),
        Error::BadListing { .. }
    ));
    assert!(matches!(
        h.pull(&r("owner/badsha:Q8_0")).unwrap_err(),
        Error::BadCommit { .. }
    ));
    assert!(matches!(
        h.pull(&r("owner/m:Q8_0")).unwrap_err(),
        Error::NoChecksum { file, .. } if file == "plain-Q8_0.gguf"
    ));

    // Nothing listens on this port any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let h = Hub::new(HubOptions::new(endpoint, HubCache::new(dir.path()))).unwrap();
    assert!(matches!(
        h.pull(&r("owner/m:Q8_0")).unwrap_err(),
        Error::Transport { .. }
    ));
}
