//! Cross-check against an independent implementation: llama.cpp's Python package `gguf`
//! (via tools/gguf-py-check/gguf_check.py) must read our files as we do, and files it
//! writes must read identically in ours. Skips loudly when python3 with `gguf` and `numpy`
//! is absent, except under CI (env `CI` set), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use lacuna_gguf::{Array, GgmlType, GgufFile, GgufWriter, Value};
use serde_json::Value as Json;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/gguf-py-check/gguf_check.py")
}

/// Whether the cross-check can run; panics under CI when it cannot.
fn python_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import gguf, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but python3 with the gguf and numpy packages is unavailable \
             (pip install -r requirements-test.txt)"
        );
        eprintln!(
            "\n*** SKIPPING the gguf-py cross-check: python3 with gguf+numpy not found \
             (pip install -r requirements-test.txt) ***\n"
        );
    }
    ok
}

fn run_script(mode: &str, path: &Path) -> Vec<u8> {
    let out = Command::new("python3")
        .arg(script())
        .arg(mode)
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "gguf_check.py {mode} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn dump(path: &Path) -> Json {
    serde_json::from_slice(&run_script("dump", path)).expect("dump is JSON")
}

/// The type ids as gguf-py lists them: the array's, then the first element's, recursively.
fn type_chain(v: &Value) -> Vec<u64> {
    fn array(a: &Array, out: &mut Vec<u64>) {
        out.push(9);
        if let Array::Array(inner) = a {
            if let Some(first) = inner.first() {
                array(first, out);
            }
        } else if !a.is_empty() {
            out.push(a.element_type().id().into());
        }
    }
    let mut out = Vec::new();
    match v {
        Value::Array(a) => array(a, &mut out),
        v => out.push(v.value_type().id().into()),
    }
    out
}

/// Scalars of `v` flattened, as gguf-py's `ReaderField.contents()` gives them.
fn flatten(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(a) => {
            for i in 0..a.len() {
                flatten(&a.get(i).unwrap(), out);
            }
        }
        v => out.push(v.clone()),
    }
}

fn same_scalar(ours: &Value, theirs: &Json) -> bool {
    let int = |x: i128| {
        theirs
            .as_i64()
            .map(i128::from)
            .or(theirs.as_u64().map(i128::from))
            == Some(x)
    };
    match ours {
        Value::U8(x) => int((*x).into()),
        Value::I8(x) => int((*x).into()),
        Value::U16(x) => int((*x).into()),
        Value::I16(x) => int((*x).into()),
        Value::U32(x) => int((*x).into()),
        Value::I32(x) => int((*x).into()),
        Value::U64(x) => int((*x).into()),
        Value::I64(x) => int((*x).into()),
        Value::F32(x) => theirs.as_f64() == Some(f64::from(*x)),
        Value::F64(x) => theirs.as_f64() == Some(*x),
        Value::Bool(x) => theirs.as_bool() == Some(*x),
        Value::String(x) => theirs.as_str() == Some(x),
        Value::Array(_) => false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Asserts that gguf-py's view (`json`) of a file equals ours (`f`).
fn assert_same_view(f: &GgufFile, json: &Json) {
    assert_eq!(json["version"], u64::from(f.version()));
    assert_eq!(json["alignment"], f.alignment());
    let fields = json["fields"].as_array().unwrap();
    let ours: Vec<(&str, &Value)> = f.metadata().iter().collect();
    assert_eq!(fields.len(), ours.len(), "field count");
    for ((key, value), field) in ours.iter().zip(fields) {
        assert_eq!(field["key"], *key);
        let types: Vec<u64> = field["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        assert_eq!(types, type_chain(value), "types of {key}");
        match value {
            Value::Array(_) => {
                let mut flat = Vec::new();
                flatten(value, &mut flat);
                let theirs = field["value"].as_array().unwrap();
                assert_eq!(flat.len(), theirs.len(), "length of {key}");
                for (a, b) in flat.iter().zip(theirs) {
                    assert!(same_scalar(a, b), "{key}: ours {a:?}, gguf-py {b}");
                }
            }
            v => assert!(
                same_scalar(v, &field["value"]),
                "{key}: ours {v:?}, gguf-py {}",
                field["value"]
            ),
        }
    }
    let tensors = json["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), f.tensors().len());
    if !tensors.is_empty() {
        assert_eq!(json["data_offset"], f.data_offset());
    }
    for (t, theirs) in f.tensors().iter().zip(tensors) {
        assert_eq!(theirs["name"], t.name.as_str());
        assert_eq!(theirs["type"], t.ty as u32, "{}", t.name);
        assert_eq!(theirs["dims"], serde_json::json!(t.dims), "{}", t.name);
        assert_eq!(theirs["offset"], f.data_offset() + t.offset, "{}", t.name);
        assert_eq!(theirs["n_bytes"], t.n_bytes, "{}", t.name);
        assert_eq!(theirs["hex"], hex(f.info_data(t)), "{}", t.name);
    }
}

/// Deterministic pseudo-random bytes.
fn bytes(n: u64, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

fn our_file(alignment: Option<u32>, types: &[GgmlType]) -> GgufWriter {
    let mut w = GgufWriter::new();
    if let Some(a) = alignment {
        w.set_alignment(a).unwrap();
    }
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("u8", u8::MAX).unwrap();
    w.add_metadata("i8", i8::MIN).unwrap();
    w.add_metadata("u16", u16::MAX).unwrap();
    w.add_metadata("i16", i16::MIN).unwrap();
    w.add_metadata("u32", u32::MAX).unwrap();
    w.add_metadata("i32", i32::MIN).unwrap();
    w.add_metadata("u64", u64::MAX).unwrap();
    w.add_metadata("i64", i64::MIN).unwrap();
    w.add_metadata("f32", f32::from_bits(1)).unwrap();
    w.add_metadata("f32.neg", -1.0e30f32).unwrap();
    w.add_metadata("f64", std::f64::consts::PI).unwrap();
    w.add_metadata("bool", false).unwrap();
    w.add_metadata("str", "Grüße \u{1F600} \n\t\"q\"").unwrap();
    w.add_metadata("str.empty", "").unwrap();
    w.add_metadata("arr.str", vec!["a", "", "<|mdm_mask|>", "ü"])
        .unwrap();
    w.add_metadata("arr.f32", vec![0.5f32, -0.0, 1e-40])
        .unwrap();
    w.add_metadata("arr.i32", vec![i32::MIN, 0, i32::MAX])
        .unwrap();
    w.add_metadata("arr.u64", vec![u64::MAX, 1]).unwrap();
    w.add_metadata("arr.bool", vec![true, false, true]).unwrap();
    w.add_metadata("arr.u8.empty", Vec::<u8>::new()).unwrap();
    w.add_metadata(
        "arr.nested",
        Array::Array(vec![vec![1u16, 2].into(), vec![3u16].into()]),
    )
    .unwrap();
    w.add_metadata(
        "arr.nested.str",
        Array::Array(vec![
            Array::String(vec!["x".into()]),
            Array::String(vec!["y".into(), "z".into()]),
        ]),
    )
    .unwrap();
    for (i, &ty) in types.iter().enumerate() {
        let ne0 = ty.block_size() as u64 * (1 + i as u64 % 3);
        let dims: Vec<u64> = match i % 4 {
            0 => vec![ne0],
            1 => vec![ne0, 3],
            2 => vec![ne0, 2, 3],
            _ => vec![ne0, 1, 2, 2],
        };
        let n = ty.row_bytes(ne0).unwrap() * dims[1..].iter().product::<u64>();
        w.add_tensor(&format!("t.{}", ty.name()), &dims, ty, bytes(n, i as u64))
            .unwrap();
    }
    w
}

/// The ggml types gguf-py knows, asserting that its block and type sizes equal ours.
fn shared_types() -> Vec<GgmlType> {
    let json: Json = serde_json::from_slice(&run_script("types", Path::new("-"))).unwrap();
    let mut shared = Vec::new();
    for (id, sizes) in json.as_object().unwrap() {
        let Ok(ty) = GgmlType::from_id(id.parse().unwrap()) else {
            continue;
        };
        if ty == GgmlType::Q8_1 {
            // gguf-py keeps ggml's old Q8_1 layout (f32 d and s: 40 bytes); current
            // ggml-common.h has two ggml_half (36 bytes). Q8_1 is an activation type that
            // never appears in model files; skip it, but notice if gguf-py changes.
            assert_eq!(sizes[1], 40, "gguf-py's Q8_1 size changed: re-check");
            continue;
        }
        assert_eq!(sizes[0], ty.block_size(), "block size of {ty}");
        assert_eq!(sizes[1], ty.type_size(), "type size of {ty}");
        shared.push(ty);
    }
    assert!(
        shared.len() >= 30,
        "gguf-py shares only {} types with us",
        shared.len()
    );
    shared
}

#[test]
fn gguf_py_reads_our_files_as_we_do() {
    if !python_available() {
        return;
    }
    let types = shared_types();
    let dir = tempfile::tempdir().unwrap();
    for alignment in [None, Some(1), Some(64)] {
        let path = dir.path().join(format!("ours_{alignment:?}.gguf"));
        our_file(alignment, &types).write_file(&path).unwrap();
        let f = GgufFile::open(&path).unwrap();
        assert_eq!(f.tensors().len(), types.len());
        assert_same_view(&f, &dump(&path));
    }
}

#[test]
fn we_read_gguf_py_files_as_it_does() {
    if !python_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.gguf");
    run_script("write", &path);
    let f = GgufFile::open(&path).unwrap();
    assert_same_view(&f, &dump(&path));
    // And the values are the ones the script wrote.
    let md = f.metadata();
    assert_eq!(f.alignment(), 64);
    assert_eq!(md.get_str("general.architecture").unwrap(), "llada");
    assert_eq!(md.get_u64("t.u64").unwrap(), (1 << 63) + 5);
    assert_eq!(md.get_i16("t.i16").unwrap(), -30000);
    assert_eq!(md.get_f32("t.f32").unwrap(), 0.1);
    assert_eq!(md.get_f64("t.f64").unwrap(), 1.0 / 3.0);
    assert_eq!(md.get_str("t.str").unwrap(), "Grüße, 世界");
    assert_eq!(
        md.get_str_array("t.arr_str").unwrap(),
        ["<|mdm_mask|>", "", "é"]
    );
    assert_eq!(md.get_i32_array("t.arr_i32").unwrap(), [1, -2, 3]);
    let f32t = f.tensor("f32").unwrap();
    assert_eq!(
        (f32t.dims.as_slice(), f32t.ty),
        (&[5u64, 3][..], GgmlType::F32)
    );
    assert_eq!(f.tensor_view::<f32>("f32").unwrap().len(), 15);
    let q = f.tensor("q6k").unwrap();
    assert_eq!(
        (q.dims.as_slice(), q.ty, q.n_bytes),
        (&[256u64, 3, 2][..], GgmlType::Q6_K, 6 * 210)
    );
    assert_eq!(
        f.tensor_view::<i8>("i8").unwrap(),
        &[-4, -3, -2, -1, 0, 1, 2, 3]
    );
}
