//! The fuzz target's contract, checked in CI too (cargo-fuzz does not run there): a valid
//! file with random bytes overwritten, inserted or cut off parses to `Ok` or a typed
//! `Err`, never a panic, and what parses has tensor data inside the file.

use lacuna_gguf::{Array, GgmlType, GgufFile, GgufWriter};
use proptest::prelude::*;

fn valid() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("n", 7u32).unwrap();
    w.add_metadata("toks", vec!["a", "bc", "<mask>"]).unwrap();
    w.add_metadata(
        "nested",
        Array::Array(vec![vec![1i64, 2].into(), vec![0.5f64].into()]),
    )
    .unwrap();
    w.add_tensor("a", &[4, 2], GgmlType::F32, vec![1u8; 32])
        .unwrap();
    w.add_tensor("q", &[32], GgmlType::Q8_0, vec![2u8; 34])
        .unwrap();
    w.add_tensor("k", &[256], GgmlType::Q4_K, vec![3u8; 144])
        .unwrap();
    w.to_vec().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn mutated_files_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut bytes = valid();
        for (at, byte, kind) in edits {
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => bytes[i] ^= 1 << (byte % 8),
            }
        }
        if do_cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(f) = GgufFile::from_vec(bytes.clone()) {
            for t in f.tensors() {
                prop_assert_eq!(f.info_data(t).len() as u64, t.n_bytes);
                prop_assert!(f.data_offset() + t.offset + t.n_bytes <= bytes.len() as u64);
            }
        }
    }
}
