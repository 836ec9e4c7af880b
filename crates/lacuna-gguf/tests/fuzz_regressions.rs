//! Every input the fuzzer (fuzz/, `cargo +nightly fuzz run gguf_reader`) found a problem
//! with, kept as a regression test with the outcome it must have now.

use lacuna_gguf::{GgufFile, GgufWriter, Value};

fn input(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fuzz_regressions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

/// Re-writes a parsed file with the writer, as the fuzz target does.
fn rewrite_into<W: std::io::Write>(f: &GgufFile, out: &mut W) {
    let mut w = GgufWriter::new();
    for (key, value) in f.metadata().iter() {
        match (key, value) {
            ("general.alignment", Value::U32(a)) => drop(w.set_alignment(*a).unwrap()),
            _ => drop(w.add_metadata(key, value.clone()).unwrap()),
        }
    }
    for t in f.tensors() {
        w.add_tensor(&t.name, &t.dims, t.ty, f.info_data(t).to_vec())
            .unwrap();
    }
    w.write_to(out).unwrap();
}

/// Counts bytes without storing them.
struct Count(u64);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Finding 1 (libFuzzer out-of-memory, malloc > 256 MiB): a valid file with
/// `general.alignment` = 2^29 and no tensors. The reader was fine; the writer allocated
/// the whole padding as one buffer. It now streams padding in 4 KiB pieces.
#[test]
fn huge_alignment_parses_and_rewrites_without_a_huge_buffer() {
    let f = GgufFile::from_vec(input("oom_alignment_2p29.gguf")).unwrap();
    assert_eq!(f.alignment(), 1 << 29);
    assert_eq!(f.data_offset(), 1 << 29);
    assert!(f.tensors().is_empty());
    let mut count = Count(0);
    rewrite_into(&f, &mut count);
    assert_eq!(count.0, 1 << 29);
}
