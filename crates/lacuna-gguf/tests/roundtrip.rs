//! Property: whatever the writer writes, the reader reads back with the same metadata
//! (floats bit for bit, NaN payloads included), tensor table and tensor bytes.

use lacuna_gguf::{Array, GgmlType, GgufFile, GgufWriter, Value};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u8>().prop_map(Value::U8),
        any::<i8>().prop_map(Value::I8),
        any::<u16>().prop_map(Value::U16),
        any::<i16>().prop_map(Value::I16),
        any::<u32>().prop_map(Value::U32),
        any::<i32>().prop_map(Value::I32),
        any::<u32>().prop_map(|b| Value::F32(f32::from_bits(b))),
        any::<bool>().prop_map(Value::Bool),
        any::<String>().prop_map(Value::String),
        any::<u64>().prop_map(Value::U64),
        any::<i64>().prop_map(Value::I64),
        any::<u64>().prop_map(|b| Value::F64(f64::from_bits(b))),
    ]
}

fn flat_array() -> impl Strategy<Value = Array> {
    use proptest::collection::vec;
    let n = 0..6usize;
    prop_oneof![
        vec(any::<u8>(), n.clone()).prop_map(Array::U8),
        vec(any::<i8>(), n.clone()).prop_map(Array::I8),
        vec(any::<u16>(), n.clone()).prop_map(Array::U16),
        vec(any::<i16>(), n.clone()).prop_map(Array::I16),
        vec(any::<u32>(), n.clone()).prop_map(Array::U32),
        vec(any::<i32>(), n.clone()).prop_map(Array::I32),
        vec(any::<u32>().prop_map(f32::from_bits), n.clone()).prop_map(Array::F32),
        vec(any::<bool>(), n.clone()).prop_map(Array::Bool),
        vec(any::<String>(), n.clone()).prop_map(Array::String),
        vec(any::<u64>(), n.clone()).prop_map(Array::U64),
        vec(any::<i64>(), n.clone()).prop_map(Array::I64),
        vec(any::<u64>().prop_map(f64::from_bits), n).prop_map(Array::F64),
    ]
}

fn array() -> impl Strategy<Value = Array> {
    flat_array().prop_recursive(3, 24, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(Array::Array)
    })
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![3 => scalar(), 1 => array().prop_map(Value::Array)]
}

/// (name, dims, type, bytes) with a valid shape for the type.
fn tensor() -> impl Strategy<Value = (Vec<u64>, GgmlType, Vec<u8>)> {
    (
        proptest::sample::select(GgmlType::ALL),
        1..4u64,
        proptest::collection::vec(1..4u64, 0..4),
    )
        .prop_flat_map(|(ty, blocks, rest)| {
            let mut dims = vec![blocks * ty.block_size() as u64];
            dims.extend(rest);
            let n = ty.row_bytes(dims[0]).unwrap() * dims[1..].iter().product::<u64>();
            let bytes = proptest::collection::vec(any::<u8>(), n as usize);
            (Just(dims), Just(ty), bytes)
        })
}

/// Float-bit-exact equality (NaN == NaN when the bits agree).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(x), Value::Array(y)) => same_array(x, y),
        _ => a == b,
    }
}

fn same_array(a: &Array, b: &Array) -> bool {
    match (a, b) {
        (Array::F32(x), Array::F32(y)) => x
            .iter()
            .map(|v| v.to_bits())
            .eq(y.iter().map(|v| v.to_bits())),
        (Array::F64(x), Array::F64(y)) => x
            .iter()
            .map(|v| v.to_bits())
            .eq(y.iter().map(|v| v.to_bits())),
        (Array::Array(x), Array::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_array(p, q))
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn write_then_read_gives_back_the_same(
        kvs in proptest::collection::btree_map("[a-z_.]{1,24}|\\PC{0,12}", value(), 0..10),
        tensors in proptest::collection::btree_map("[a-z_.0-9]{1,20}|\\PC{0,10}", tensor(), 0..6),
        alignment in proptest::option::of(proptest::sample::select(vec![1u32, 2, 8, 32, 64, 256])),
    ) {
        let mut w = GgufWriter::new();
        if let Some(a) = alignment {
            w.set_alignment(a).unwrap();
        }
        for (k, v) in &kvs {
            if k != "general.alignment" {
                w.add_metadata(k, v.clone()).unwrap();
            }
        }
        for (name, (dims, ty, bytes)) in &tensors {
            w.add_tensor(name, dims, *ty, bytes.clone()).unwrap();
        }
        let bytes = w.to_vec().unwrap();
        let f = GgufFile::from_vec(bytes.clone()).unwrap();
        prop_assert_eq!(f.version(), 3);
        prop_assert_eq!(f.alignment(), u64::from(alignment.unwrap_or(32)));
        let md = f.metadata();
        prop_assert_eq!(md.len(), kvs.len() + usize::from(alignment.is_some()) - usize::from(kvs.contains_key("general.alignment")));
        for (k, v) in &kvs {
            if k != "general.alignment" {
                prop_assert!(same_value(md.value(k).unwrap(), v), "key {:?}", k);
            }
        }
        prop_assert_eq!(f.tensors().len(), tensors.len());
        let names: Vec<&str> = f.tensors().iter().map(|t| t.name.as_str()).collect();
        prop_assert_eq!(names, tensors.keys().map(String::as_str).collect::<Vec<_>>());
        for (name, (dims, ty, data)) in &tensors {
            let t = f.tensor(name).unwrap();
            prop_assert_eq!(&t.dims, dims);
            prop_assert_eq!(t.ty, *ty);
            prop_assert_eq!(t.n_bytes, data.len() as u64);
            prop_assert_eq!((f.data_offset() + t.offset) % f.alignment(), 0);
            prop_assert_eq!(f.tensor_data(name).unwrap(), data.as_slice());
        }
        // The file on disk through the mmap reads the same.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.gguf");
        w.write_file(&path).unwrap();
        prop_assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let g = GgufFile::open(&path).unwrap();
        prop_assert_eq!(g.tensors(), f.tensors());
    }
}
