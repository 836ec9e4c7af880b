//! `lacuna quantize`, `lacuna fixture --preset` and the quantization summary of `lacuna
//! inspect`, through the built binary; a file of a type Lacuna cannot multiply by is a
//! one-line error naming the tensor, its type and what works.

mod common;

use std::path::Path;
use std::process::Output;

use common::{lacuna, stderr};

use lacuna::gguf::{GgmlType, GgufFile, GgufWriter};

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

fn fixture(dir: &Path, arch: &str, extra: &[&str]) -> String {
    let out = dir.join(format!("{arch}{}.gguf", extra.join("")));
    let out = out.to_str().unwrap().to_string();
    let mut args = vec!["fixture", "--arch", arch, "--layers", "2", "--out", &out];
    args.extend_from_slice(extra);
    ok(lacuna(&args));
    out
}

fn generate(model: &str) -> serde_json::Value {
    let o = ok(lacuna(&[
        "run",
        "-m",
        model,
        "-p",
        "1 2 3",
        "--raw",
        "--json",
        "--threads",
        "1",
        "--gen-length",
        "8",
        "--steps",
        "4",
    ]));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn quantize_inspect_and_generate() {
    let dir = tempfile::tempdir().unwrap();
    let f32 = fixture(dir.path(), "dream", &[]);
    let q = dir.path().join("q.gguf");
    let q = q.to_str().unwrap();
    ok(lacuna(&["quantize", &f32, q, "iq4_xs"]));
    let text = String::from_utf8(ok(lacuna(&["inspect", q])).stdout).unwrap();
    assert!(
        text.contains("quantization: IQ4_XS (general.file_type 30)"),
        "{text}"
    );
    assert!(text.contains("iq4_xs"), "{text}");
    // Dream has 2 KV groups: attn_v stays IQ4_XS, ffn_down of layer 0 (< n/8 = 0) too.
    let j: serde_json::Value =
        serde_json::from_slice(&ok(lacuna(&["inspect", q, "--json"])).stdout).unwrap();
    assert_eq!(j["quantization"]["preset"], "IQ4_XS");
    assert!(
        j["quantization"]["by_type"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["runs"] == true)
    );
    let out = generate(q);
    assert_eq!(out["tokens"].as_array().map(Vec::len), Some(8), "{out}");

    // The same through `fixture --preset`, byte for byte.
    let p = fixture(dir.path(), "dream", &["--preset", "IQ4_XS"]);
    assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(q).unwrap());
}

#[test]
fn bad_quantize_requests_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let q = fixture(dir.path(), "llada", &["--quant", "q4_k_m"]);
    let out = dir.path().join("o.gguf");
    let out = out.to_str().unwrap();
    let o = lacuna(&["quantize", &q, out, "Q4_0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is already q4_K"), "{}", stderr(&o));
    let o = lacuna(&["quantize", &q, out, "Q9_K"]);
    assert!(stderr(&o).contains("unknown preset \"Q9_K\"") && stderr(&o).contains("IQ4_XS"));
}

/// A matrix of a type with no kernel (IQ2_XXS) names the tensor, the type and the presets.
#[test]
fn unsupported_matrix_type_names_tensor_type_and_presets() {
    let dir = tempfile::tempdir().unwrap();
    let src = GgufFile::open(fixture(dir.path(), "llada", &[])).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in src.metadata().iter() {
        w.add_metadata(k, v.clone()).unwrap();
    }
    for t in src.tensors() {
        if t.name == "blk.1.attn_q.weight" {
            w.add_tensor_zeroed(&t.name, &t.dims, GgmlType::IQ2_XXS)
                .unwrap();
        } else {
            w.add_tensor(&t.name, &t.dims, t.ty, src.info_data(t).to_vec())
                .unwrap();
        }
    }
    let path = dir.path().join("iq2.gguf");
    w.write_file(&path).unwrap();
    let path = path.to_str().unwrap();
    let text = String::from_utf8(ok(lacuna(&["inspect", path])).stdout).unwrap();
    assert!(
        text.contains("Lacuna cannot multiply by this type yet"),
        "{text}"
    );
    let o = lacuna(&[
        "run",
        "-m",
        path,
        "-p",
        "1",
        "--raw",
        "--gen-length",
        "8",
        "--steps",
        "4",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    for needle in ["blk.1.attn_q.weight", "iq2_xxs", "q2_K", "IQ2_*"] {
        assert!(err.contains(needle), "{err} lacks {needle}");
    }
}
