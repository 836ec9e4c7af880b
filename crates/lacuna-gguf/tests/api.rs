//! The public API end to end: write a file with the writer, open it, read it back.

use lacuna_gguf::{Array, Error, GgmlType, GgufFile, GgufWriter, Value, ValueType};

fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn sample() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_metadata("llada.block_count", 32u32).unwrap();
    w.add_metadata("llada.rope.freq_base", 500000.0f32).unwrap();
    w.add_metadata("tokenizer.ggml.tokens", vec!["a", "b", "<|mdm_mask|>"])
        .unwrap();
    w.add_metadata("tokenizer.ggml.token_type", vec![1i32, 1, 3])
        .unwrap();
    w.add_metadata(
        "x.nested",
        Array::Array(vec![vec![1u8, 2].into(), vec![true].into()]),
    )
    .unwrap();
    w.add_tensor(
        "a",
        &[4, 2],
        GgmlType::F32,
        f32_bytes(&[1., 2., 3., 4., 5., 6., 7., 8.]),
    )
    .unwrap();
    w.add_tensor("q", &[32], GgmlType::Q8_0, vec![7u8; 34])
        .unwrap();
    w
}

#[test]
fn open_reads_what_the_writer_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    sample().write_file(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.version(), 3);
    assert_eq!(f.alignment(), 32);
    let md = f.metadata();
    assert_eq!(md.get_str("general.architecture").unwrap(), "llada");
    assert_eq!(md.get_u32("llada.block_count").unwrap(), 32);
    assert_eq!(md.get_f32("llada.rope.freq_base").unwrap(), 500000.0);
    assert_eq!(
        md.get_str_array("tokenizer.ggml.tokens").unwrap()[2],
        "<|mdm_mask|>"
    );
    assert_eq!(
        md.get_i32_array("tokenizer.ggml.token_type").unwrap(),
        &[1, 1, 3]
    );
    let nested = md.get_array("x.nested").unwrap();
    assert_eq!(nested.get(1), Some(Value::Array(Array::Bool(vec![true]))));
    assert_eq!(md.get_u32_opt("absent").unwrap(), None);

    let a = f.tensor("a").unwrap();
    assert_eq!(
        (a.dims.as_slice(), a.ty, a.n_bytes),
        (&[4u64, 2][..], GgmlType::F32, 32)
    );
    assert_eq!(
        f.tensor_view::<f32>("a").unwrap(),
        &[1., 2., 3., 4., 5., 6., 7., 8.]
    );
    let q = f.tensor("q").unwrap();
    assert_eq!(q.offset % 32, 0);
    assert_eq!(f.tensor_data("q").unwrap(), &[7u8; 34][..]);
    assert_eq!((f.data_offset() + q.offset) % 32, 0);
}

#[test]
fn typed_getters_name_key_and_types() {
    let f = GgufFile::from_vec(sample().to_vec().unwrap()).unwrap();
    let md = f.metadata();
    match md.get_u64("llada.block_count") {
        Err(Error::WrongType {
            key,
            expected,
            found,
        }) => {
            assert_eq!(
                (key.as_str(), expected, found.as_str()),
                ("llada.block_count", "u64", "u32")
            );
        }
        other => panic!("expected WrongType, got {other:?}"),
    }
    match md.get_f32_array("tokenizer.ggml.tokens") {
        Err(Error::WrongType { found, .. }) => assert_eq!(found, "array of string"),
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert!(matches!(md.get_u32("nope"), Err(Error::MissingKey { key }) if key == "nope"));
    assert!(matches!(
        md.get_str_opt("llada.block_count"),
        Err(Error::WrongType { .. })
    ));
    assert_eq!(md.get_u64_lenient("llada.block_count").unwrap(), 32);
    assert!(matches!(f.tensor_data("nope"), Err(Error::MissingTensor { name }) if name == "nope"));
    assert!(matches!(
        f.tensor_view::<f64>("q"),
        Err(Error::TensorView { .. })
    ));
    assert_eq!(
        md.value("llada.block_count").unwrap().value_type(),
        ValueType::U32
    );
}

#[test]
fn custom_alignment_is_written_and_honoured() {
    let mut w = sample();
    w.set_alignment(64).unwrap();
    let f = GgufFile::from_vec(w.to_vec().unwrap()).unwrap();
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.metadata().get_u32("general.alignment").unwrap(), 64);
    for t in f.tensors() {
        assert_eq!((f.data_offset() + t.offset) % 64, 0);
    }
}

#[test]
fn writer_rejects_bad_input() {
    let mut w = GgufWriter::new();
    w.add_metadata("k", 1u8).unwrap();
    assert!(matches!(
        w.add_metadata("k", 2u8),
        Err(Error::DuplicateKey { .. })
    ));
    assert!(matches!(
        w.set_alignment(24),
        Err(Error::BadAlignment { value: 24, .. })
    ));
    assert!(matches!(
        w.add_metadata("general.alignment", 32u64),
        Err(Error::AlignmentType { .. })
    ));
    assert!(matches!(
        w.add_tensor("t", &[3], GgmlType::F32, vec![0u8; 11]),
        Err(Error::TensorSize {
            expected: 12,
            got: 11,
            ..
        })
    ));
    assert!(matches!(
        w.add_tensor("t", &[33], GgmlType::Q8_0, vec![]),
        Err(Error::InvalidShape { .. })
    ));
    assert!(matches!(
        w.add_tensor("t", &[1, 1, 1, 1, 1], GgmlType::F32, vec![0u8; 4]),
        Err(Error::InvalidShape { .. })
    ));
    w.add_tensor("t", &[1], GgmlType::F32, vec![0u8; 4])
        .unwrap();
    assert!(matches!(
        w.add_tensor("t", &[1], GgmlType::F32, vec![0u8; 4]),
        Err(Error::DuplicateTensor { .. })
    ));
}

#[test]
fn sparse_file_reads_zeroes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.gguf");
    let mut w = GgufWriter::new();
    w.add_tensor_zeroed("big", &[1 << 20], GgmlType::F16)
        .unwrap();
    w.add_tensor("after", &[1], GgmlType::F32, f32_bytes(&[42.0]))
        .unwrap();
    w.write_file(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert!(f.tensor_data("big").unwrap().iter().all(|&b| b == 0));
    assert_eq!(f.tensor_view::<f32>("after").unwrap(), &[42.0]);
    assert_eq!(
        GgufWriter::to_vec(&w).unwrap(),
        std::fs::read(&path).unwrap()
    );
}

#[test]
fn open_missing_file_is_io_error() {
    assert!(matches!(
        GgufFile::open("/nonexistent/x.gguf"),
        Err(Error::Io { .. })
    ));
}

#[test]
fn released_tensor_bytes_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.gguf");
    // Several pages of data, so whole pages are dropped.
    let data: Vec<u8> = (0..5 * 4096 + 100).map(|i| (i * 31 % 251) as u8).collect();
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llada").unwrap();
    w.add_tensor("t", &[data.len() as u64], GgmlType::I8, data.clone())
        .unwrap();
    w.write_file(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    let bytes = f.tensor_data("t").unwrap();
    assert_eq!(bytes, &data[..]);
    f.release(bytes);
    assert_eq!(
        f.tensor_data("t").unwrap(),
        &data[..],
        "re-read from the file"
    );
    // Slices from elsewhere and owned storage are left alone.
    f.release(&data);
    let owned = GgufFile::from_vec(std::fs::read(&path).unwrap()).unwrap();
    owned.release(owned.tensor_data("t").unwrap());
    assert_eq!(owned.tensor_data("t").unwrap(), &data[..]);
}
