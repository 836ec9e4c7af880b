//! Fixture helpers shared by the API tests.

#![allow(dead_code)]

use lacuna::gguf::{GgufFile, GgufWriter, Value};
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::{Engine, EngineOptions};

/// Bytes of the tiny fixture of `arch` (one layer, F32 weights, no chat template).
pub(crate) fn tiny_bytes(arch: Arch) -> Vec<u8> {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 1, QuantMix::F32);
    fixture::build(&spec).unwrap().to_vec().unwrap()
}

/// An engine over the tiny fixture of `arch`, one thread.
pub(crate) fn tiny_engine(arch: Arch) -> Engine {
    let file = GgufFile::from_vec(tiny_bytes(arch)).unwrap();
    Engine::from_gguf(file, &one_thread()).unwrap()
}

/// Options with one worker thread.
pub(crate) fn one_thread() -> EngineOptions {
    EngineOptions {
        threads: Some(1),
        ..Default::default()
    }
}

/// `bytes` rewritten with metadata `key` removed (everything else copied).
pub(crate) fn without_key(bytes: Vec<u8>, key: &str) -> Vec<u8> {
    let file = GgufFile::from_vec(bytes).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in file.metadata().iter() {
        if k != key && k != "general.alignment" {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    for t in file.tensors() {
        w.add_tensor(&t.name, &t.dims, t.ty, file.info_data(t).to_vec())
            .unwrap();
    }
    w.to_vec().unwrap()
}

/// `bytes` with metadata `key` set to `value` (replacing it).
pub(crate) fn with_key(bytes: Vec<u8>, key: &str, value: Value) -> Vec<u8> {
    let stripped = without_key(bytes, key);
    let file = GgufFile::from_vec(stripped).unwrap();
    let mut w = GgufWriter::new();
    for (k, v) in file.metadata().iter() {
        if k != "general.alignment" {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    w.add_metadata(key, value).unwrap();
    for t in file.tensors() {
        w.add_tensor(&t.name, &t.dims, t.ty, file.info_data(t).to_vec())
            .unwrap();
    }
    w.to_vec().unwrap()
}
