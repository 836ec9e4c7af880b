//! `lacuna pull`, `hf:` model references and `lacuna list`, through the built binary,
//! against a loopback fake Hub (`HF_ENDPOINT`) and a temporary cache (`HF_HOME`).

#[path = "../../lacuna-hub/tests/fake_hub/mod.rs"]
mod fake_hub;

use std::path::Path;
use std::process::{Command, Output};

use fake_hub::FakeHub;

const COMMIT: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// `lacuna ARGS` with the Hub settings pointing at `server` and `home`.
fn lacuna(args: &[&str], server: &FakeHub, home: &Path, offline: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lacuna"));
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_TOKEN")
        .env("HF_ENDPOINT", server.endpoint())
        .env("HF_HOME", home);
    if offline {
        c.env("HF_HUB_OFFLINE", "1");
    } else {
        c.env_remove("HF_HUB_OFFLINE");
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn pull_then_run_offline_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.gguf");
    let server = FakeHub::start();
    let home = dir.path().join("hf");
    let o = lacuna(
        &[
            "fixture",
            "--arch",
            "llada",
            "--layers",
            "1",
            "--quant",
            "q8_0",
            "--out",
            model.to_str().unwrap(),
        ],
        &server,
        &home,
        false,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let bytes = std::fs::read(&model).unwrap();
    server.add_repo(
        "owner/repo",
        COMMIT,
        &[("tiny-Q8_0.gguf", &bytes), ("tiny-F32.gguf", b"unused")],
    );

    let o = lacuna(&["pull", "owner/repo:q8_0"], &server, &home, false);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let printed = text(&o.stdout);
    let expected = home
        .join("hub/models--owner--repo/snapshots")
        .join(COMMIT)
        .join("tiny-Q8_0.gguf");
    assert_eq!(printed.trim(), expected.to_str().unwrap());
    assert_eq!(std::fs::read(&expected).unwrap(), bytes);
    let requests = server.seen().len();

    // Offline, the cached model loads with no request to the Hub.
    let run = [
        "run",
        "-m",
        "hf:owner/repo:Q8_0",
        "--raw",
        "-p",
        "hi",
        "--threads",
        "1",
        "--gen-length",
        "8",
        "--steps",
        "2",
        "--block-length",
        "8",
    ];
    let o = lacuna(&run, &server, &home, true);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = lacuna(
        &["inspect", "hf:owner/repo/tiny-Q8_0.gguf"],
        &server,
        &home,
        true,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(server.seen().len(), requests);

    let o = lacuna(&["list"], &server, &home, true);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.contains("tiny-Q8_0.gguf"))
        .unwrap_or_else(|| panic!("{out}"));
    for needle in ["owner/repo", "llada", "KiB"] {
        assert!(row.contains(needle), "{row} lacks {needle}");
    }

    // Offline and not cached: one line naming the command that fetches it.
    let o = lacuna(
        &["run", "-m", "hf:owner/repo:F16", "-p", "hi"],
        &server,
        &home,
        true,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("`lacuna pull owner/repo:F16`"), "{err}");
    assert_eq!(server.seen().len(), requests);
}

#[test]
fn bad_references_and_missing_quants_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeHub::start();
    server.add_repo(
        "owner/repo",
        COMMIT,
        &[("m-Q4_K_M.gguf", b"x"), ("m-Q8_0.gguf", b"y")],
    );
    for (args, needles) in [
        (
            &["pull", "not-a-repo"][..],
            &["invalid model reference", "OWNER/REPO"][..],
        ),
        (
            &["pull", "owner/repo:Q5_K_M"],
            &["Q5_K_M", "m-Q4_K_M.gguf, m-Q8_0.gguf"],
        ),
        (&["pull", "owner/repo"], &["several .gguf files"]),
        (
            &["tokenize", "-m", "hf:owner/absent:Q8_0", "hi"],
            &["HTTP 404"],
        ),
    ] {
        let o = lacuna(args, &server, dir.path(), false);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        for n in needles {
            assert!(err.contains(n), "{err} lacks {n}");
        }
    }
}

/// The user path for DiffusionGemma: `lacuna pull unsloth/diffusiongemma-26B-A4B-it-GGUF:Q4_K_M`
/// from a (loopback) Hub repo laid out as Unsloth's, then `lacuna run` on it. The file is a
/// tiny fixture in #24423's layout (its vocabulary is a byte-level stand-in; Gemma 4's own
/// is tested in lacuna-tokenizer).
#[test]
fn pull_and_run_a_diffusion_gemma_repo() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("dg.gguf");
    let server = FakeHub::start();
    let home = dir.path().join("hf");
    let o = lacuna(
        &[
            "fixture",
            "--arch",
            "diffusion-gemma",
            "--layers",
            "2",
            "--quant",
            "q4_k_m",
            "--out",
            model.to_str().unwrap(),
        ],
        &server,
        &home,
        false,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let bytes = std::fs::read(&model).unwrap();
    let repo = "unsloth/diffusiongemma-26B-A4B-it-GGUF";
    server.add_repo(
        repo,
        COMMIT,
        &[
            ("diffusiongemma-26B-A4B-it-Q4_K_M.gguf", &bytes),
            ("diffusiongemma-26B-A4B-it-Q8_0.gguf", b"unused"),
        ],
    );
    let o = lacuna(&["pull", &format!("{repo}:Q4_K_M")], &server, &home, false);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run = [
        "run",
        "-m",
        "hf:unsloth/diffusiongemma-26B-A4B-it-GGUF:Q4_K_M",
        "--raw",
        "-p",
        "hi",
        "--threads",
        "1",
        "--gen-length",
        "8",
        "--steps",
        "3",
        "--json",
    ];
    let o = lacuna(&run, &server, &home, true);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("\"architecture\": \"diffusion-gemma\""),
        "{out}"
    );
    // A masked-diffusion setting is refused by name, in one line.
    let mut bad = run.to_vec();
    bad.extend(["--cache", "dual"]);
    let o = lacuna(&bad, &server, &home, true);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("cache") && err.contains("diffusion-gemma"),
        "{err}"
    );
}
