//! The `run`, `chat`, `doctor` and generate-`bench` commands, through the built binary:
//! exit codes, one-line errors, and the shape of the JSON they print.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{lacuna, stderr};

/// Asserts exit code 1 and a single `error:` line containing every `needle`.
fn assert_one_line_error(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("demo model:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    for n in needles {
        assert!(lines[0].contains(n), "{err} lacks {n}");
    }
}

const SMALL: &[&str] = &[
    "--threads",
    "1",
    "--gen-length",
    "16",
    "--steps",
    "4",
    "--block-length",
    "8",
];

#[test]
fn missing_model_file_is_one_line_and_exit_1() {
    let o = lacuna(&["run", "-m", "/nonexistent/model.gguf", "-p", "hi"]);
    assert_one_line_error(&o, &["/nonexistent/model.gguf", "No such file"]);
}

#[test]
fn unreadable_model_file_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.gguf");
    std::fs::write(&path, b"definitely not gguf").unwrap();
    let o = lacuna(&["run", "-m", path.to_str().unwrap(), "-p", "hi"]);
    assert_one_line_error(&o, &["junk.gguf", "not a valid GGUF"]);
}

#[test]
fn bad_settings_are_clear_errors() {
    let cases: [(&[&str], &[&str]); 7] = [
        (&["--fast", "--cfg-scale", "1"], &["--fast", "--cfg-scale"]),
        (
            &["--cache", "dual", "--cfg-scale", "1"],
            &["cache policy 'dual'", "cfg_scale"],
        ),
        (&["--threshold", "0.8"], &["need --parallel"]),
        (
            &["--gen-length", "30", "--block-length", "8"],
            &["gen_length 30 is not a multiple of block_length 8"],
        ),
        (
            &["--gen-length", "32", "--block-length", "8", "--steps", "6"],
            &["steps 6 is not a multiple of the number of blocks 4"],
        ),
        (&["--steps", "0"], &["steps must be at least 1"]),
        (
            &[
                "--gen-length",
                "5000",
                "--block-length",
                "5000",
                "--steps",
                "5000",
            ],
            &["exceeds the model's context length 256"],
        ),
    ];
    for (extra, needles) in cases {
        let mut args = vec!["run", "--demo", "-p", "hi", "--threads", "1"];
        args.extend_from_slice(extra);
        assert_one_line_error(&lacuna(&args), needles);
    }
    // A Dream-only setting on the (LLaDA) demo model.
    let mut args = vec!["run", "--demo", "-p", "hi", "--top-p", "0.9"];
    args.extend_from_slice(SMALL);
    assert_one_line_error(&lacuna(&args), &["top_p", "llada"]);
}

#[test]
fn the_task_demo_reverses_with_its_own_schedule() {
    let out = lacuna(&["run", "--demo", "tasks", "--raw", "-p", "rev: lantern ="]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "nretnal");
    // The check: the task model adds (since its second training session).
    let out = lacuna(&["run", "--demo", "tasks", "--raw", "-p", "add: 12+30="]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    // Its llada2 twin, with LLaDA2's sampler and its own schedule (8 steps per block of 8).
    let out = lacuna(&[
        "run",
        "--demo",
        "tasks-llada2",
        "--raw",
        "-p",
        "rev: lantern =",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "nretnal");
    let out = lacuna(&["run", "--demo", "psalms", "-p", "x"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown demo model \"psalms\": expected one of kjv, tasks"),
        "{err}"
    );
}

#[test]
fn cached_runs_report_forwards_and_smaller_windows() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--demo",
            "-p",
            "And God said,",
            "--raw",
            "--json",
            "--threads",
            "1",
            "--gen-length",
            "32",
            "--steps",
            "32",
            "--block-length",
            "8",
        ];
        args.extend_from_slice(extra);
        let o = lacuna(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let exact = run(&["--cache", "none"]);
    let dual = run(&["--cache", "dual"]);
    let fast = run(&["--fast"]);
    assert_eq!(exact["cache"], "none");
    assert_eq!(dual["cache"], "dual");
    assert_eq!(fast["cache"], "dual");
    let ppf = |v: &serde_json::Value| v["positions_per_forward"].as_f64().unwrap();
    let canvas = (exact["prompt_tokens"].as_array().unwrap().len() + 32) as f64;
    if exact["finish"] == "completed" {
        assert_eq!(ppf(&exact), canvas);
    }
    assert!(ppf(&dual) < ppf(&exact), "{dual}");
    assert!(dual["cache_fills"].as_u64().unwrap() >= 1);
    assert!(fast["tokens_per_forward"].as_f64().unwrap() >= 1.0);
}

#[test]
fn demo_json_has_tokens_text_and_timings() {
    let mut args = vec!["run", "--demo", "-p", "Hello", "--json"];
    args.extend_from_slice(SMALL);
    let o = lacuna(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("King James Bible"),
        "the demo says what it is"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["architecture"], "llada");
    assert_eq!(v["demo_model"], true);
    // A real model may settle an end token early: the run then stops before step 4.
    let steps = v["steps"].as_u64().unwrap() as usize;
    assert!((1..=4).contains(&steps), "{v}");
    let tokens = v["tokens"].as_array().unwrap();
    assert!(tokens.len() <= 16);
    assert!(v["text"].is_string());
    assert!(!v["prompt_tokens"].as_array().unwrap().is_empty());
    let t = &v["timings"];
    assert_eq!(t["step_ms"].as_array().unwrap().len(), steps);
    for key in [
        "load_s",
        "prepare_s",
        "step_ms_median",
        "total_s",
        "tokens_per_s",
    ] {
        assert!(t[key].as_f64().unwrap() > 0.0, "{key}: {t}");
    }
}

#[test]
fn visual_draws_a_frame_per_step() {
    let mut args = vec!["run", "--demo", "-p", "Hello", "--visual"];
    args.extend_from_slice(SMALL);
    let o = lacuna(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // One frame per step run (the demo model may settle an end token and stop early).
    let frames = err.matches("/4  block").count();
    assert!((1..=4).contains(&frames), "{err}");
    for step in 1..=frames {
        assert!(err.contains(&format!("step {step}/4  block")), "{err}");
    }
    assert!(err.contains("masks left 12/16"), "{err}");
    assert!(err.contains(&format!("{frames} steps in")), "{err}");
}

#[test]
fn chat_answers_each_line_until_exit() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lacuna"))
        .args(["chat", "--demo"])
        .args(SMALL)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\nand again\n/exit\nnever read\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("King James Bible"));
}

#[test]
fn doctor_reports_paths_and_cuda() {
    let o = lacuna(&["doctor", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let paths = v["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 5);
    assert_eq!(paths[0]["name"], "scalar");
    assert_eq!(paths[0]["available"], true);
    for p in paths {
        assert_eq!(
            p["available"].as_bool().unwrap(),
            p["missing"].is_null(),
            "{p}"
        );
    }
    assert!(v["active_path"].is_string());
    // Either a GPU with its compute capability and test-kernel result, or why there is none;
    // both name NVRTC (its version, or why it did not load).
    let cuda = v["cuda"].as_str().unwrap();
    if v["cuda_driver"].as_bool().unwrap() {
        assert!(
            cuda.contains("sm_") && cuda.contains("test kernel"),
            "{cuda}"
        );
    } else {
        assert!(
            cuda.contains("no usable NVIDIA GPU") || cuda.contains("unusable"),
            "{cuda}"
        );
    }
    assert!(cuda.contains("NVRTC"), "{cuda}");
    let text = lacuna(&["doctor"]);
    assert!(text.status.success());
    let out = String::from_utf8_lossy(&text.stdout);
    for needle in ["CPU", "kernel paths", "active", "threads", "memory", "CUDA"] {
        assert!(out.contains(needle), "{out}");
    }
}

#[test]
fn generate_bench_writes_a_v1_result() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-llada.gguf");
    let o = lacuna(&[
        "fixture",
        "--arch",
        "llada",
        "--layers",
        "1",
        "--out",
        model.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = lacuna(&[
        "bench",
        "-m",
        model.to_str().unwrap(),
        "--gen-length",
        "8",
        "--steps",
        "2",
        "--block-length",
        "8",
        "--prompt-tokens",
        "4",
        "--runs",
        "2",
        "--threads",
        "1",
        "--json",
        "--save",
        dir.path().to_str().unwrap(),
        "--machine-id",
        "test-box",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["ms_per_step"].as_array().unwrap().len(),
        4,
        "2 runs x 2 steps"
    );
    for key in ["ms_per_step_median", "tokens_per_s", "startup_s"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}");
    }
    // The tiny model's peak, not the bandwidth probe's 512 MiB buffer (the kernel's
    // high-water mark reset after the probe: Linux 4.0+).
    let peak = v["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak > 0);
    assert_eq!(v["result"]["figures"]["peak_rss_excludes_probe"], true);
    assert!(peak < 400 << 20, "peak RSS {peak} holds the probe's buffer");
    let saved = dir
        .path()
        .join("bench-results/test-box/tiny-llada-generate-g8-none-t1.json");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(r, v["result"]);
    assert_eq!(r["schema"], "lacuna.bench.v1");
    assert_eq!(r["workload"]["kind"], "generate");
    assert_eq!(r["workload"]["gen_tokens"], 8);
    assert_eq!(r["workload"]["cache"], "none");
    assert!(r["figures"]["forwards"].as_u64().unwrap() > 0);
    assert_eq!(r["model"]["synthetic"], true);
    assert_eq!(r["machine"]["threads"], 1);
    let s = &r["figures"]["step_ms"];
    assert!(s["min"].as_f64() <= s["median"].as_f64() && s["median"].as_f64() <= s["max"].as_f64());
}

/// `lacuna bench --forward --batch`: one row per batch size, each batched step timed, the
/// speedup against the canvases alone; bad sizes are refused. `--batch` alone: generations
/// at once.
#[test]
fn batch_bench_times_each_batch_size() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-llada.gguf");
    let m = model.to_str().unwrap();
    let o = lacuna(&["fixture", "--arch", "llada", "--layers", "1", "--out", m]);
    assert!(o.status.success(), "{}", stderr(&o));
    let args = [
        "bench",
        "-m",
        m,
        "--gen-length",
        "16",
        "--block-length",
        "8",
        "--prompt-tokens",
        "4",
        "--runs",
        "2",
        "--threads",
        "1",
        "--json",
        "--forward",
        "--batch",
    ];
    let o = lacuna(&[&args[..], &["1,3"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["canvas"], 20);
    assert_eq!(v["window"], 8);
    let rows = v["batches"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["batch"], 3);
    assert_eq!(rows[1]["ms_per_batched_step"].as_array().unwrap().len(), 2);
    assert_eq!(rows[0]["speedup_vs_alone"], 1.0);
    assert!(rows[1]["speedup_vs_alone"].as_f64().unwrap() > 0.0);
    let o = lacuna(&[&args[..], &["0"]].concat());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--batch sizes"), "{}", stderr(&o));
    // Without --forward: whole generations, two at once on a shared engine.
    let whole = [&args[..args.len() - 2], &["--steps", "4", "--batch", "1,2"]].concat();
    let o = lacuna(&whole);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["batches"].as_array().unwrap();
    assert_eq!(rows[1]["batch"], 2);
    assert_eq!(rows[1]["wall_s"].as_array().unwrap().len(), 2);
    assert!(rows[1]["generated_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(rows[1]["passes_per_forward"].as_f64().unwrap() >= 1.0);
}

/// The binary names the commit it was built from, which benchmark results record.
#[test]
fn version_names_the_build_commit() {
    let out = common::lacuna(&["version"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        // Built in this checkout: HEAD is the commit (a later commit would rebuild it).
        Some(sha) => assert!(text.contains(&format!("commit {sha}")), "{text}"),
        None => assert!(text.contains("commit unknown"), "{text}"),
    }
}

#[test]
fn json_logprobs_per_token_with_and_without_a_cache() {
    for cache in ["none", "dual"] {
        let mut args = vec!["run", "--demo", "-p", "And God said,", "--raw", "--json"];
        args.extend_from_slice(SMALL);
        args.extend_from_slice(&["--logprobs", "3", "--cache", cache]);
        let o = lacuna(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let tokens = j["tokens"].as_array().unwrap();
        let lp = j["logprobs"].as_array().unwrap();
        assert!(!tokens.is_empty());
        assert_eq!(lp.len(), tokens.len(), "{cache}");
        for (e, t) in lp.iter().zip(tokens) {
            assert_eq!(&e["id"], t);
            let v = e["logprob"].as_f64().unwrap();
            assert!(v <= 0.0, "{e}");
            let top: Vec<f64> = e["top_logprobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["logprob"].as_f64().unwrap())
                .collect();
            assert_eq!(top.len(), 3);
            assert!(top.windows(2).all(|w| w[0] >= w[1]), "{e}");
            assert!(v <= top[0] + 1e-6, "{e}");
        }
    }
    let mut args = vec!["run", "--demo", "-p", "x", "--json", "--logprobs", "21"];
    args.extend_from_slice(SMALL);
    assert_one_line_error(&lacuna(&args), &["--logprobs", "20"]);
    let mut args = vec!["run", "--demo", "-p", "x", "--logprobs", "2"];
    args.extend_from_slice(SMALL);
    assert_one_line_error(&lacuna(&args), &["--logprobs", "--json"]);
}
