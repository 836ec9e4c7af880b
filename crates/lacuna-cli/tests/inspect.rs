//! `lacuna inspect` and `lacuna tensor` end to end, on files written by the GGUF writer.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lacuna::gguf::{GgmlType, GgufWriter};

fn lacuna(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lacuna"))
        .args(args)
        .output()
        .expect("lacuna runs")
}

fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A small model-like file; returns its path.
fn fixture(dir: &Path) -> PathBuf {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("llada.block_count", 2u32).unwrap();
    w.add_metadata("llada.rope.freq_base", f32::NAN).unwrap();
    let tokens: Vec<String> = (0..20).map(|i| format!("tok{i}")).collect();
    w.add_metadata("tokenizer.ggml.tokens", tokens).unwrap();
    w.add_metadata("x.long", "y".repeat(500)).unwrap();
    w.add_tensor(
        "a.f32",
        &[3, 2],
        GgmlType::F32,
        f32_bytes(&[1., -2., 3.5, 0., 1e-3, 7.]),
    )
    .unwrap();
    // f16: 1.0, -2.0, 0.5, 0.0
    let f16: Vec<u8> = [0x3C00u16, 0xC000, 0x3800, 0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    w.add_tensor("b.f16", &[4], GgmlType::F16, f16).unwrap();
    // One Q8_0 block: d = 0.5 (f16 0x3800), q = -16..16.
    let mut q8 = 0x3800u16.to_le_bytes().to_vec();
    q8.extend((-16i8..16).map(|q| q as u8));
    w.add_tensor("c.q8_0", &[32], GgmlType::Q8_0, q8).unwrap();
    w.add_tensor("d.i32", &[2], GgmlType::I32, vec![0u8; 8])
        .unwrap();
    let path = dir.join("model.gguf");
    w.write_file(&path).unwrap();
    path
}

#[test]
fn inspect_prints_header_metadata_tensors_and_totals() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let out = lacuna(&["inspect", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("GGUF v3"), "{text}");
    assert!(text.contains("metadata (5 keys)"), "{text}");
    assert!(text.contains("\"llada\""), "{text}");
    assert!(text.contains("[string; 20]"), "{text}");
    assert!(text.contains("\"tok7\", …]"), "{text}");
    assert!(!text.contains("tok8"), "arrays are summarised: {text}");
    assert!(text.contains("… (500 chars)"), "{text}");
    assert!(text.contains("tensors (4)"), "{text}");
    assert!(text.contains("c.q8_0") && text.contains("q8_0"), "{text}");
    assert!(text.contains("totals: 4 tensors, 44 parameters"), "{text}");
}

#[test]
fn inspect_json_has_the_same_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let out = lacuna(&["inspect", "--json", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["version"], 3);
    assert_eq!(j["alignment"], 32);
    let md = j["metadata"].as_array().unwrap();
    assert_eq!(md.len(), 5);
    assert_eq!(md[1]["key"], "llada.block_count");
    assert_eq!(md[1]["type"], "u32");
    assert_eq!(md[1]["value"], 2);
    assert_eq!(md[2]["value"], "NaN");
    assert_eq!(md[3]["value"]["len"], 20);
    assert_eq!(md[3]["value"]["element_type"], "string");
    assert_eq!(md[3]["value"]["head"].as_array().unwrap().len(), 8);
    let t = &j["tensors"][0];
    assert_eq!(t["name"], "a.f32");
    assert_eq!(t["dims"], serde_json::json!([3, 2]));
    assert_eq!(t["type"], "f32");
    assert_eq!(t["n_bytes"], 24);
    assert_eq!(j["totals"]["parameters"], 44);
    assert_eq!(j["totals"]["by_type"].as_array().unwrap().len(), 4);
}

#[test]
fn invalid_files_give_one_error_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixture(dir.path())).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "magic.gguf",
            b"NOPE and more bytes".to_vec(),
            "not a GGUF file",
        ),
        ("trunc.gguf", good[..good.len() / 3].to_vec(), "truncated"),
        // The last tensor (8 bytes) is followed by 24 bytes of padding.
        (
            "short.gguf",
            good[..good.len() - 30].to_vec(),
            "past the end",
        ),
        ("empty.gguf", Vec::new(), "not a GGUF file"),
    ];
    for (name, bytes, expect) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        for json in [false, true] {
            let mut args = vec!["inspect", path.to_str().unwrap()];
            if json {
                args.push("--json");
            }
            let out = lacuna(&args);
            assert_eq!(out.status.code(), Some(1), "{name}");
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
            assert!(err.contains(expect), "{name}: {err}");
            assert!(out.stdout.is_empty(), "{name}");
        }
    }
    let out = lacuna(&["inspect", "/nonexistent/model.gguf"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("/nonexistent/model.gguf")
    );
}

#[test]
fn tensor_writes_dequantized_f32() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let model = path.to_str().unwrap();
    let out_path = dir.path().join("out.f32");
    let out = out_path.to_str().unwrap();
    let expected: Vec<(&str, Vec<f32>)> = vec![
        ("a.f32", vec![1., -2., 3.5, 0., 1e-3, 7.]),
        ("b.f16", vec![1.0, -2.0, 0.5, 0.0]),
        ("c.q8_0", (-16..16).map(|q| q as f32 * 0.5).collect()),
    ];
    for (name, values) in expected {
        let r = lacuna(&["tensor", model, name, "--out", out]);
        assert!(
            r.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(read_f32(&out_path), values, "{name}");
    }
}

#[test]
fn tensor_larger_than_one_chunk_is_exact() {
    // 2 rows of 80,000 Q8_0 values (2,500 blocks each): 160,000 values, several chunks.
    let blocks = 5000usize;
    let mut q8 = Vec::with_capacity(blocks * 34);
    let mut expected = Vec::with_capacity(blocks * 32);
    for b in 0..blocks {
        q8.extend(0x3C00u16.to_le_bytes()); // d = 1.0
        for i in 0..32 {
            let q = ((b * 7 + i * 13) % 256) as u8 as i8;
            q8.push(q as u8);
            expected.push(f32::from(q));
        }
    }
    let f32_values: Vec<f32> = (0..100_003).map(|i| i as f32 * 0.25 - 7.0).collect();
    let mut w = GgufWriter::new();
    w.add_tensor("big.q8_0", &[80_000, 2], GgmlType::Q8_0, q8)
        .unwrap();
    w.add_tensor("big.f32", &[100_003], GgmlType::F32, f32_bytes(&f32_values))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("big.gguf");
    w.write_file(&model).unwrap();
    let out = dir.path().join("o.f32");
    for (name, values) in [("big.q8_0", expected), ("big.f32", f32_values)] {
        let r = lacuna(&[
            "tensor",
            model.to_str().unwrap(),
            name,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(read_f32(&out), values, "{name}");
    }
}

#[test]
fn tensor_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let model = path.to_str().unwrap();
    let out = dir.path().join("o.f32");
    let r = lacuna(&["tensor", model, "d.i32", "--out", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8(r.stderr).unwrap();
    assert!(err.contains("i32"), "{err}");
    let r = lacuna(&["tensor", model, "nope", "--out", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8(r.stderr)
            .unwrap()
            .contains("no tensor named \"nope\"")
    );
}
