use std::path::Path;

use super::*;
use crate::generated::{FULL, HEADLINE, HEADLINE_DETAIL};

fn sample(engine: &str, threads: u32, median: f64) -> serde_json::Value {
    serde_json::json!({
        "schema": "lacuna.bench.v1",
        "engine": {"name": engine, "version": "0.1.0", "build": "avx512vnni"},
        "repo_commit": "c3a643f",
        "date": "2026-11-30T06:00:00Z",
        "machine": {"id": "test-box", "cpu_model": "Test CPU", "cores": 2, "threads": threads,
                    "simd": ["avx2", "avx512vnni"], "ram_bytes": 25769803776u64, "gpu": null},
        "model": {"id": "llada-8b-shape-4l-q4km", "architecture": "llada", "layers": 4,
                  "d_model": 4096, "heads": 32, "kv_heads": 32, "ffn": 12288, "vocab": 126464,
                  "quant": "Q4_K_M", "file_bytes": 1900000000u64, "synthetic": true},
        "workload": {"kind": "forward", "prompt_tokens": 160, "gen_tokens": 0,
                     "steps": null, "block_length": null, "sampler": null},
        "figures": {"runs": 5, "step_ms": {"median": median, "min": median * 0.9, "max": median * 1.1},
                    "forward_tokens_per_s": 160.0 / median * 1000.0,
                    "generated_tokens_per_s": null, "startup_s": null, "peak_rss_bytes": null}
    })
}

fn repo(files: &[(&str, serde_json::Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, value) in files {
        let path = dir.path().join("bench-results/test-box").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    }
    // Each file holds its sections' markers around stale text, in order.
    for file in [HEADLINE.file, FULL.file] {
        let mut text = "# Title\n".to_string();
        for section in [HEADLINE, HEADLINE_DETAIL, FULL] {
            if section.file == file {
                text.push_str(&format!("\n{}\nstale\n{}\n", section.begin, section.end));
            }
        }
        text.push_str("\nRest of the file.\n");
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The full table's file.
fn table(root: &Path) -> String {
    std::fs::read_to_string(root.join(FULL.file)).unwrap()
}

/// The headline's file.
fn readme(root: &Path) -> String {
    std::fs::read_to_string(root.join(HEADLINE.file)).unwrap()
}

#[test]
fn render_then_verify_passes_and_keeps_the_rest_of_the_readme() {
    let dir = repo(&[
        ("lacuna-t2.json", sample("lacuna", 2, 400.0)),
        ("llama-t1.json", sample("llama.cpp", 1, 2700.0)),
        ("llama-t2.json", sample("llama.cpp", 2, 1300.0)),
    ]);
    assert!(
        verify(dir.path()).is_err(),
        "stale table must fail before rendering"
    );
    assert_eq!(
        render_readme(dir.path()).unwrap(),
        ["README.md", "bench-results/README.md"]
    );
    assert!(
        render_readme(dir.path()).unwrap().is_empty(),
        "second render is a no-op"
    );
    assert_eq!(verify(dir.path()).unwrap(), 3);
    for text in [readme(dir.path()), table(dir.path())] {
        assert!(text.starts_with("# Title\n"));
        assert!(text.ends_with("\n\nRest of the file.\n"));
    }
    let text = table(dir.path());
    // llama.cpp's best thread count (2) is the one compared: 1300 / 400.
    assert!(text.contains("| 3.25× |"), "{text}");
    assert!(text.contains("1300.0 (2 thr, avx512vnni)"), "{text}");
    // Links are relative to bench-results/README.md.
    assert!(
        text.contains("[llama-t1](test-box/llama-t1.json)"),
        "{text}"
    );
    // The headline's detail, beside the full table, cites the files.
    assert!(
        text.contains("| forward pass | `llada-8b-shape-4l-q4km`, T=160 | 400.0 ms/step | llama.cpp 1300.0 ms/step | 3.25× | 1 row | [Lacuna](test-box/lacuna-t2.json) [llama.cpp](test-box/llama-t2.json) |"),
        "{text}"
    );
    // The README's headline is short and links the detail.
    let text = readme(dir.path());
    assert!(
        text.contains("| forward pass | `llada-8b-shape-4l-q4km`, T=160 | 400.0 ms/step | llama.cpp 1300.0 ms/step | 3.25× | 1 row |\n"),
        "{text}"
    );
    assert!(
        text.contains("[bench-results/README.md](bench-results/README.md#headline-rows)"),
        "{text}"
    );
}

#[test]
fn a_hand_edited_number_is_drift() {
    let dir = repo(&[
        ("lacuna.json", sample("lacuna", 2, 400.0)),
        ("llama.json", sample("llama.cpp", 2, 1300.0)),
    ]);
    render_readme(dir.path()).unwrap();
    let edited = table(dir.path()).replace("400.0 (2 thr", "300.0 (2 thr");
    std::fs::write(dir.path().join(FULL.file), edited).unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("run cargo xtask bench-render and commit"),
        "{err}"
    );
    assert!(err.starts_with("bench-results/README.md "), "{err}");
    assert!(err.contains("300.0"), "{err}");
    render_readme(dir.path()).unwrap();
    verify(dir.path()).unwrap();

    // The same for the headline in README.md.
    let edited = readme(dir.path()).replace("400.0 ms/step", "300.0 ms/step");
    std::fs::write(dir.path().join(HEADLINE.file), edited).unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("run cargo xtask bench-render and commit"),
        "{err}"
    );
    assert!(err.starts_with("README.md "), "{err}");
    assert!(err.contains("300.0 ms/step"), "{err}");
    render_readme(dir.path()).unwrap();
    verify(dir.path()).unwrap();
}

#[test]
fn missing_markers_name_the_file() {
    let dir = repo(&[("lacuna.json", sample("lacuna", 2, 400.0))]);
    std::fs::write(dir.path().join(HEADLINE.file), "# No markers\n").unwrap();
    let err = render_readme(dir.path()).unwrap_err().to_string();
    assert!(err.starts_with("README.md lacks the markers"), "{err}");
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(err.starts_with("README.md lacks the markers"), "{err}");
}

#[test]
fn a_row_citing_a_missing_file_fails() {
    let dir = repo(&[("lacuna.json", sample("lacuna", 2, 400.0))]);
    render_readme(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join("bench-results/test-box/lacuna.json")).unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("bench-results/test-box/lacuna.json, which does not exist"),
        "{err}"
    );
}

#[test]
fn a_headline_citing_a_missing_file_fails() {
    let dir = repo(&[
        ("lacuna.json", sample("lacuna", 2, 400.0)),
        ("llama.json", sample("llama.cpp", 2, 1300.0)),
    ]);
    render_readme(dir.path()).unwrap();
    let edited = table(dir.path()).replace("test-box/llama.json", "test-box/gone.json");
    std::fs::write(dir.path().join(HEADLINE_DETAIL.file), edited).unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        "bench-results/README.md: a benchmark row cites bench-results/test-box/gone.json, which does not exist"
    );
}

#[test]
fn the_readme_headline_must_link_an_existing_detail() {
    let dir = repo(&[
        ("lacuna.json", sample("lacuna", 2, 400.0)),
        ("llama.json", sample("llama.cpp", 2, 1300.0)),
    ]);
    render_readme(dir.path()).unwrap();
    verify(dir.path()).unwrap();
    // Its anchor is not part of the file it cites.
    let moved = dir.path().join("bench-results/README.md");
    std::fs::rename(&moved, dir.path().join("bench-results/OTHER.md")).unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        "README.md: a benchmark row cites bench-results/README.md, which does not exist"
    );
}

#[test]
fn schema_errors_name_file_and_field() {
    let mut v = sample("lacuna", 2, 400.0);
    v["figures"]["step_ms"]["median"] = serde_json::json!("fast");
    let dir = repo(&[("bad.json", v)]);
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("bench-results/test-box/bad.json: field `figures.step_ms.median`"),
        "{err}"
    );

    let mut v = sample("lacuna", 2, 400.0);
    v["figures"]["step_ms"]["min"] = serde_json::json!(500.0);
    let dir = repo(&[("bad.json", v)]);
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("field `figures.step_ms`: needs min <= median <= max"),
        "{err}"
    );

    let mut v = sample("lacuna", 2, 400.0);
    v["machine"]["id"] = serde_json::json!("other-box");
    let dir = repo(&[("bad.json", v)]);
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(err.contains("does not match its folder"), "{err}");

    let mut v = sample("lacuna", 2, 400.0);
    v.as_object_mut()
        .unwrap()
        .insert("speedup".into(), serde_json::json!(9));
    let dir = repo(&[("bad.json", v)]);
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(err.contains("unknown field `speedup`"), "{err}");

    let mut v = sample("lacuna", 2, 400.0);
    v["workload"]["kind"] = serde_json::json!("generate");
    let dir = repo(&[("bad.json", v)]);
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(err.contains("field `workload.gen_tokens`"), "{err}");
}

#[test]
fn raw_data_below_a_machine_folder_must_be_json_but_is_not_rendered() {
    let dir = repo(&[("lacuna.json", sample("lacuna", 2, 400.0))]);
    let raw = dir.path().join("bench-results/test-box/kernels");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(raw.join("gemm.json"), r#"{"anything": [1, 2]}"#).unwrap();
    render_readme(dir.path()).unwrap();
    assert_eq!(verify(dir.path()).unwrap(), 1);
    std::fs::write(raw.join("gemm.json"), "{not json").unwrap();
    let err = format!("{:#}", verify(dir.path()).unwrap_err());
    assert!(err.contains("kernels/gemm.json: not valid JSON"), "{err}");
}

#[test]
fn no_results_renders_an_honest_placeholder() {
    let dir = repo(&[]);
    render_readme(dir.path()).unwrap();
    assert!(table(dir.path()).contains("_No benchmark results yet._"));
    assert!(readme(dir.path()).contains("_No compared benchmark results yet._"));
    assert_eq!(verify(dir.path()).unwrap(), 0);
}

#[test]
fn amx_off_runs_get_their_own_row() {
    let with = |mut v: serde_json::Value, build: &str| {
        v["engine"]["build"] = build.into();
        v["machine"]["simd"] = serde_json::json!(["avx512vnni", "amx-int8"]);
        v
    };
    let dir = repo(&[
        (
            "lacuna-amx.json",
            with(sample("lacuna", 2, 400.0), "cpu-amx"),
        ),
        (
            "llama-amx.json",
            with(sample("llama.cpp", 2, 1000.0), "amx"),
        ),
        (
            "lacuna-avx512.json",
            with(sample("lacuna", 2, 600.0), "cpu-avx512vnni"),
        ),
        (
            "llama-avx512.json",
            with(sample("llama.cpp", 2, 1800.0), "avx512-no-amx"),
        ),
        (
            "lacuna-avx2.json",
            with(sample("lacuna", 2, 900.0), "cpu-avx2"),
        ),
        (
            "llama-avx2.json",
            with(sample("llama.cpp", 2, 2000.0), "avx2"),
        ),
        (
            "llama-avx2-clang.json",
            with(sample("llama.cpp", 2, 1800.0), "avx2-clang"),
        ),
    ]);
    render_readme(dir.path()).unwrap();
    let text = table(dir.path());
    // AMX against AMX (1000 / 400), AVX-512 against AVX-512 (1800 / 600).
    assert!(
        text.contains("| forward, T=160 | 400.0 (2 thr, cpu-amx) | 1000.0 (2 thr, amx) | 2.50× |"),
        "{text}"
    );
    assert!(text.contains("| forward, T=160, AMX off (AVX-512 kernels) | 600.0 (2 thr, cpu-avx512vnni) | 1800.0 (2 thr, avx512-no-amx) | 3.00× |"), "{text}");
    // AVX2 against the better AVX2 build (1800 / 900).
    assert!(text.contains("| forward, T=160, AVX2 only (AVX-512 and AMX off) | 900.0 (2 thr, cpu-avx2) | 1800.0 (2 thr, avx2-clang) | 2.00× |"), "{text}");
}

#[test]
fn cached_generate_rows_compare_with_llama_cpps_uncached_run() {
    let generate = |engine: &str, median: f64, cache: Option<&str>| {
        let mut v = sample(engine, 2, median);
        v["workload"] = serde_json::json!({"kind": "generate", "prompt_tokens": 32,
            "gen_tokens": 128, "steps": 128, "block_length": 32, "sampler": "llada"});
        if let Some(c) = cache {
            v["workload"]["cache"] = c.into();
            v["figures"]["forwards"] = 128.into();
            v["figures"]["positions_per_forward"] = 40.0.into();
        }
        v["figures"]["generated_tokens_per_s"] = (128.0 / (median * 0.128)).into();
        v["figures"]["startup_s"] = 1.0.into();
        v
    };
    let dir = repo(&[
        ("lacuna-none.json", generate("lacuna", 500.0, Some("none"))),
        ("lacuna-dual.json", generate("lacuna", 100.0, Some("dual"))),
        ("llama.json", generate("llama.cpp", 1500.0, None)),
    ]);
    render_readme(dir.path()).unwrap();
    let text = table(dir.path());
    assert!(
        text.contains(
            "block 32, llada | 500.0 (2 thr, avx512vnni) | 1500.0 (2 thr, avx512vnni) | 3.00× |"
        ),
        "{text}"
    );
    assert!(
        text.contains("block 32, llada, cache dual | 100.0 (2 thr, avx512vnni) | 1500.0 (2 thr, avx512vnni) | 15.00× |"),
        "{text}"
    );
    verify(dir.path()).unwrap();
}

fn serve_load(concurrency: u32, tokens_per_s: f64) -> serde_json::Value {
    serde_json::json!({
        "kind": "lacuna.serve-load.raw.v0",
        "note": "fields the tables do not read are ignored",
        "machine": {"id": "test-box", "threads": 2, "cores": 2},
        "model": {"id": "lacuna-demo", "architecture": "llada"},
        "workload": {"endpoint": "chat", "stream": true, "concurrency": concurrency,
                     "requests": 20,
                     "request": {"max_tokens": 64, "diffusion": {"steps": 16, "cache": "dual"}}},
        "figures": {"requests": 20, "ok": 20, "errors": 0, "rejected_429": 0,
                    "requests_per_s": 2.5, "generated_tokens_per_s": tokens_per_s,
                    "latency_ms": {"p50": 152.04, "p90": 160.0},
                    "time_to_first_content_ms": {"p50": 21.37}}
    })
}

#[test]
fn serve_load_tests_are_read_rendered_and_headlined() {
    let dir = repo(&[
        ("serve-load/demo-c1.json", serve_load(1, 400.0)),
        ("serve-load/demo-c4.json", serve_load(4, 500.0)),
        // Another series (a server setting): its own baseline, not demo-c1's.
        ("serve-load/demo-c1-nobatch.json", serve_load(1, 300.0)),
        ("serve-load/demo-c4-nobatch.json", serve_load(4, 330.0)),
        // Not a load test: only checked to be JSON.
        (
            "serve-load/scaling.json",
            serde_json::json!({"what": "rows"}),
        ),
    ]);
    render_readme(dir.path()).unwrap();
    assert_eq!(verify(dir.path()).unwrap(), 4);
    let text = table(dir.path());
    assert!(
        text.contains("| 1.10× | [demo-c4-nobatch](test-box/serve-load/demo-c4-nobatch.json) |"),
        "{text}"
    );
    assert!(
        text.contains("| `lacuna-demo` | chat, stream, max_tokens 64, cache dual, steps 16, 4 concurrent, 20 requests, 2 thr | 500.0 | 2.500 | 152 ms | 21 ms | 20 / 0 / 0 | 1.25× | [demo-c4](test-box/serve-load/demo-c4.json) |"),
        "{text}"
    );
    assert!(text.contains("| baseline | [demo-c1]"), "{text}");
    let text = readme(dir.path());
    assert!(
        text.contains("| `lacuna serve`, 4 concurrent vs 1 | `lacuna-demo`, chat, stream | 500.0 tokens/s | 1 at a time 400.0 tokens/s | 1.25× |"),
        "{text}"
    );

    let mut bad = serve_load(4, 500.0);
    bad["figures"]["latency_ms"] = serde_json::json!({"p90": 1.0});
    std::fs::write(
        dir.path()
            .join("bench-results/test-box/serve-load/demo-c4.json"),
        bad.to_string(),
    )
    .unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("serve-load/demo-c4.json: field `figures.latency_ms`: missing field `p50`"),
        "{err}"
    );
}

/// The committed tables are what `cargo xtask bench-render` writes (rust-analyzer's
/// `ensure_file_contents`): `cargo test` fails on drift as `bench-verify` does.
#[test]
fn the_committed_tables_are_up_to_date() {
    let root = crate::repo_root();
    if let Err(err) = verify(&root) {
        panic!("{err:#}");
    }
}

/// A floor object as `lacuna bench` writes it: 40 ms of bandwidth, 60 of compute.
fn floor(step_ms: f64) -> serde_json::Value {
    serde_json::json!({"read_gb_s": 25.0, "int8_tops": 1.5, "ops_per_step": 9.0e10,
        "file_bytes_per_step": 1.0e9, "held_bytes_per_step": 1.7e9, "bandwidth_ms": 40.0,
        "compute_ms": 60.0, "floor_ms": 60.0, "binds": "compute", "ratio": step_ms / 60.0})
}

#[test]
fn floors_render_beside_the_step_and_inconsistent_floors_are_refused() {
    let mut v = sample("lacuna", 2, 150.0);
    v["figures"]["floor"] = floor(150.0);
    v["figures"]["dense_weights"] = "repacked".into();
    let dir = repo(&[("lacuna-t2.json", v.clone())]);
    render_readme(dir.path()).unwrap();
    let text = table(dir.path());
    assert!(
        text.contains("| 150.0 (2 thr, avx512vnni; 2.5× floor, compute) |"),
        "{text}"
    );
    let refused = |f: serde_json::Value, field: &str| {
        let mut bad = v.clone();
        bad["figures"]["floor"] = f;
        let err = crate::schema::parse(&bad.to_string()).unwrap_err();
        assert_eq!(err.field, field, "{err:?}");
    };
    let mut f = floor(150.0);
    f["floor_ms"] = 40.0.into();
    refused(f, "figures.floor.floor_ms");
    let mut f = floor(150.0);
    f["binds"] = "bandwidth".into();
    refused(f, "figures.floor.binds");
    let mut f = floor(150.0);
    f["read_gb_s"] = 0.0.into();
    refused(f, "figures.floor.read_gb_s");
    let mut f = floor(150.0);
    f["typo"] = 1.0.into();
    let mut bad = v.clone();
    bad["figures"]["floor"] = f;
    assert!(crate::schema::parse(&bad.to_string()).is_err());
}
