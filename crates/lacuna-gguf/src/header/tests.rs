//! One test per class of malformed file, each built byte by byte and asserting the error
//! variant (and offset where it is meaningful).

use super::*;

/// A raw GGUF byte builder that can write anything, including what the writer refuses.
#[derive(Clone)]
struct Raw(Vec<u8>);

impl Raw {
    fn new(version: u32, n_tensors: u64, n_kv: u64) -> Self {
        let mut r = Raw(b"GGUF".to_vec());
        r = r.u32(version).u64(n_tensors).u64(n_kv);
        r
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, s: &str) -> Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }
    fn kv_u32(self, key: &str, v: u32) -> Self {
        self.str(key).u32(4).u32(v)
    }
    fn tensor(self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        let mut r = self.str(name).u32(dims.len() as u32);
        for &d in dims {
            r = r.u64(d);
        }
        r.u32(ty).u64(offset)
    }
    /// Pads to 32 and appends `n` data bytes.
    fn data(mut self, n: usize) -> Self {
        let len = self.0.len().next_multiple_of(32);
        self.0.resize(len + n, 0xAB);
        self
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn parse(&self) -> Result<Header> {
        Header::parse(&self.0)
    }
}

#[test]
fn minimal_valid_file_parses() {
    let h = Raw::new(3, 1, 1)
        .kv_u32("a", 7)
        .tensor("t", &[4], 0, 0)
        .data(16)
        .parse()
        .unwrap();
    assert_eq!(h.version(), 3);
    assert_eq!(h.metadata().get_u32("a").unwrap(), 7);
    assert_eq!(h.tensor("t").unwrap().n_bytes, 16);
    assert_eq!(h.data_offset() % 32, 0);
    // Version 2 has the same layout.
    assert!(Raw::new(2, 0, 0).parse().is_ok());
}

#[test]
fn bad_magic() {
    let mut r = Raw::new(3, 0, 0);
    r.0[3] = b'X';
    assert!(matches!(r.parse(), Err(Error::BadMagic { found }) if found == b"GGUX"));
    assert!(matches!(Header::parse(b"GG"), Err(Error::BadMagic { found }) if found == b"GG"));
    assert!(matches!(Header::parse(b""), Err(Error::BadMagic { .. })));
}

#[test]
fn big_endian_is_unsupported() {
    let mut r = Raw::new(3, 0, 0);
    r.0[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(matches!(
        r.parse(),
        Err(Error::BigEndian { raw: 0x0300_0000 })
    ));
}

#[test]
fn unsupported_version() {
    for v in [0, 1, 4, 0xFFFF_FFFF] {
        let r = Raw::new(v, 0, 0);
        assert!(matches!(r.parse(), Err(Error::UnsupportedVersion { version }) if version == v));
    }
}

#[test]
fn truncation_anywhere_is_an_error() {
    let full = Raw::new(3, 2, 3)
        .kv_u32("general.alignment", 32)
        .str("s")
        .u32(8)
        .str("hello")
        .str("arr")
        .u32(9)
        .u32(5)
        .u64(2)
        .u32(1)
        .u32(2)
        .tensor("a", &[8], 0, 0)
        .tensor("b", &[32, 2], 8, 32)
        .data(32 + 68);
    assert!(full.parse().is_ok());
    for cut in 0..full.0.len() {
        let err = Header::parse(&full.0[..cut]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::BadMagic { .. }
                    | Error::Truncated { .. }
                    | Error::CountTooLarge { .. }
                    | Error::TensorOutOfBounds { .. }
            ),
            "cut at {cut}: {err:?}"
        );
    }
    // A cut inside the header is reported as truncation at the field's offset.
    assert!(matches!(
        Header::parse(&full.0[..10]),
        Err(Error::Truncated {
            offset: 8,
            what: "tensor count",
            needed: 8,
            available: 2
        })
    ));
}

#[test]
fn counts_that_cannot_fit_are_rejected_before_allocating() {
    let r = Raw::new(3, u64::MAX, 0);
    assert!(matches!(
        r.parse(),
        Err(Error::CountTooLarge {
            offset: 8,
            what: "tensor count",
            ..
        })
    ));
    let r = Raw::new(3, 0, 1 << 40);
    assert!(matches!(
        r.parse(),
        Err(Error::CountTooLarge { offset: 16, .. })
    ));
    // A string length larger than the file.
    let r = Raw::new(3, 0, 1).u64(u64::MAX).bytes(b"key and more bytes");
    assert!(matches!(
        r.parse(),
        Err(Error::CountTooLarge {
            offset: 24,
            what: "metadata key",
            ..
        })
    ));
    // An array of u32 whose count needs more bytes than are left.
    let r = Raw::new(3, 0, 1)
        .str("a")
        .u32(9)
        .u32(4)
        .u64(3)
        .u32(1)
        .u32(2)
        .u32(3);
    assert!(r.parse().is_ok());
    let r = Raw::new(3, 0, 1)
        .str("a")
        .u32(9)
        .u32(4)
        .u64(4)
        .u32(1)
        .u32(2)
        .u32(3);
    assert!(matches!(
        r.parse(),
        Err(Error::CountTooLarge {
            what: "array length",
            count: 4,
            available: 12,
            ..
        })
    ));
    // An array of strings: each needs at least 8 bytes.
    let r = Raw::new(3, 0, 1).str("a").u32(9).u32(8).u64(1 << 50);
    assert!(matches!(r.parse(), Err(Error::CountTooLarge { .. })));
}

#[test]
fn unknown_value_type() {
    let r = Raw::new(3, 0, 1).str("k").u32(13).u32(0);
    assert!(matches!(
        r.parse(),
        Err(Error::UnknownValueType { offset: 33, id: 13 })
    ));
    let r = Raw::new(3, 0, 1).str("k").u32(9).u32(99).u64(0);
    assert!(matches!(
        r.parse(),
        Err(Error::UnknownValueType { offset: 37, id: 99 })
    ));
}

#[test]
fn unknown_ggml_type() {
    for id in [4, 31, 1000, u32::MAX] {
        let r = Raw::new(3, 1, 0).tensor("t", &[32], id, 0).data(64);
        let err = r.parse();
        assert!(
            matches!(err, Err(Error::UnknownGgmlType { id: found, ref tensor, .. }) if found == id && tensor == "t"),
            "{err:?}"
        );
    }
}

#[test]
fn invalid_utf8() {
    let r = Raw::new(3, 0, 1).u64(2).bytes(&[0xC3, 0x28]).u32(0).u8(0);
    assert!(matches!(r.parse(), Err(Error::InvalidUtf8 { offset: 32 })));
    let r = Raw::new(3, 0, 1).str("k").u32(8).u64(1).u8(0xFF);
    assert!(matches!(r.parse(), Err(Error::InvalidUtf8 { offset: 45 })));
    let r = Raw::new(3, 1, 0)
        .u64(1)
        .u8(0x80)
        .u32(1)
        .u64(1)
        .u32(0)
        .u64(0)
        .data(4);
    assert!(matches!(r.parse(), Err(Error::InvalidUtf8 { offset: 32 })));
}

#[test]
fn invalid_bool() {
    let r = Raw::new(3, 0, 1).str("k").u32(7).u8(2);
    assert!(matches!(
        r.parse(),
        Err(Error::InvalidBool {
            offset: 37,
            value: 2
        })
    ));
}

#[test]
fn duplicate_key() {
    let r = Raw::new(3, 0, 2).kv_u32("k", 1).kv_u32("k", 2);
    assert!(matches!(r.parse(), Err(Error::DuplicateKey { offset: 41, ref key }) if key == "k"));
}

#[test]
fn duplicate_tensor() {
    let r = Raw::new(3, 2, 0)
        .tensor("t", &[8], 0, 0)
        .tensor("t", &[8], 0, 32)
        .data(64);
    assert!(
        matches!(r.parse(), Err(Error::DuplicateTensor { offset: 57, ref name }) if name == "t")
    );
}

#[test]
fn n_dims_outside_one_to_four() {
    for n in [0u32, 5, u32::MAX] {
        let r = Raw::new(3, 1, 0)
            .str("t")
            .u32(n)
            .u64(1)
            .u64(1)
            .u64(1)
            .u64(1)
            .u64(1);
        assert!(
            matches!(r.parse(), Err(Error::BadDimCount { offset: 33, n_dims, .. }) if n_dims == n)
        );
    }
}

#[test]
fn zero_dim() {
    let r = Raw::new(3, 1, 0).tensor("t", &[4, 0], 0, 0).data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::ZeroDim {
            offset: 45,
            axis: 1,
            ..
        })
    ));
}

#[test]
fn element_count_and_byte_size_overflow() {
    let r = Raw::new(3, 1, 0)
        .tensor("t", &[1 << 32, 1 << 32], 0, 0)
        .data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::SizeOverflow {
            what: "element count",
            ..
        })
    ));
    let r = Raw::new(3, 1, 0).tensor("t", &[u64::MAX], 24, 0).data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::SizeOverflow {
            what: "element count",
            ..
        })
    ));
    // 2^62 f32 elements fit in i64 but their 2^64 bytes do not.
    let r = Raw::new(3, 1, 0)
        .tensor("t", &[1 << 31, 1 << 31], 0, 0)
        .data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::SizeOverflow {
            what: "byte size",
            ..
        })
    ));
}

#[test]
fn row_not_multiple_of_block() {
    let r = Raw::new(3, 1, 0).tensor("t", &[33, 2], 8, 0).data(128);
    assert!(matches!(
        r.parse(),
        Err(Error::RowNotBlockMultiple {
            ne0: 33,
            ty: GgmlType::Q8_0,
            block_size: 32,
            ..
        })
    ));
}

#[test]
fn misaligned_offset() {
    let r = Raw::new(3, 1, 0).tensor("t", &[1], 0, 4).data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::MisalignedTensor {
            data_offset: 4,
            alignment: 32,
            ..
        })
    ));
    // With general.alignment = 4 the same offset is fine.
    let r = Raw::new(3, 1, 1)
        .kv_u32("general.alignment", 4)
        .tensor("t", &[1], 0, 4)
        .data(64);
    assert_eq!(r.parse().unwrap().alignment(), 4);
}

#[test]
fn tensor_past_end_of_file() {
    let r = Raw::new(3, 1, 0).tensor("t", &[8], 0, 0).data(31);
    let file_len = r.len();
    assert!(matches!(
        r.parse(),
        Err(Error::TensorOutOfBounds { n_bytes: 32, file_len: l, .. }) if l == file_len
    ));
    let r = Raw::new(3, 1, 0).tensor("t", &[8], 0, 64).data(64);
    assert!(matches!(
        r.parse(),
        Err(Error::TensorOutOfBounds {
            data_offset: 64,
            ..
        })
    ));
}

#[test]
fn tensor_offset_overflowing() {
    let off = u64::MAX - 31; // a multiple of 32; adding the data start overflows
    let r = Raw::new(3, 1, 0).tensor("t", &[8], 0, off).data(32);
    assert!(
        matches!(r.parse(), Err(Error::TensorOutOfBounds { data_offset, .. }) if data_offset == off)
    );
}

#[test]
fn overlapping_tensors() {
    let r = Raw::new(3, 2, 0)
        .tensor("a", &[16], 0, 0)
        .tensor("b", &[8], 0, 32)
        .data(96);
    assert!(
        matches!(r.parse(), Err(Error::TensorOverlap { ref first, ref second }) if first == "a" && second == "b")
    );
    // Same start.
    let r = Raw::new(3, 2, 0)
        .tensor("a", &[8], 0, 0)
        .tensor("b", &[8], 0, 0)
        .data(32);
    assert!(matches!(r.parse(), Err(Error::TensorOverlap { .. })));
    // Adjacent is fine, in any order.
    let r = Raw::new(3, 2, 0)
        .tensor("a", &[8], 0, 32)
        .tensor("b", &[8], 0, 0)
        .data(64);
    assert!(r.parse().is_ok());
}

#[test]
fn bad_alignment() {
    for a in [0u32, 3, 48, u32::MAX] {
        let r = Raw::new(3, 0, 1).kv_u32("general.alignment", a);
        assert!(
            matches!(r.parse(), Err(Error::BadAlignment { offset: 24, value }) if value == u64::from(a))
        );
    }
    let r = Raw::new(3, 0, 1).str("general.alignment").u32(10).u64(32);
    assert!(matches!(
        r.parse(),
        Err(Error::AlignmentType {
            offset: 24,
            found: ValueType::U64
        })
    ));
}

#[test]
fn deep_nesting_is_refused_without_recursion_blowup() {
    // Array of array of ... nested far deeper than the limit, in little space.
    let mut r = Raw::new(3, 0, 1).str("k").u32(9);
    for _ in 0..100_000 {
        r = r.u32(9).u64(1);
    }
    assert!(matches!(
        r.parse(),
        Err(Error::NestingTooDeep {
            max: MAX_ARRAY_DEPTH,
            ..
        })
    ));
    // Exactly at the limit is fine.
    let mut r = Raw::new(3, 0, 1).str("k").u32(9);
    for _ in 0..MAX_ARRAY_DEPTH - 1 {
        r = r.u32(9).u64(1);
    }
    r = r.u32(0).u64(1).u8(5);
    assert!(r.parse().is_ok());
}

#[test]
fn all_value_types_parse() {
    let r = Raw::new(3, 0, 13)
        .str("u8")
        .u32(0)
        .u8(1)
        .str("i8")
        .u32(1)
        .u8(0xFF)
        .str("u16")
        .u32(2)
        .bytes(&2u16.to_le_bytes())
        .str("i16")
        .u32(3)
        .bytes(&(-2i16).to_le_bytes())
        .str("u32")
        .u32(4)
        .u32(3)
        .str("i32")
        .u32(5)
        .u32((-3i32) as u32)
        .str("f32")
        .u32(6)
        .u32(1.5f32.to_bits())
        .str("bool")
        .u32(7)
        .u8(1)
        .str("str")
        .u32(8)
        .str("ü")
        .str("arr")
        .u32(9)
        .u32(7)
        .u64(2)
        .u8(0)
        .u8(1)
        .str("u64")
        .u32(10)
        .u64(4)
        .str("i64")
        .u32(11)
        .u64((-4i64) as u64)
        .str("f64")
        .u32(12)
        .u64(2.5f64.to_bits());
    let h = r.parse().unwrap();
    let md = h.metadata();
    assert_eq!(md.get_u8("u8").unwrap(), 1);
    assert_eq!(md.get_i8("i8").unwrap(), -1);
    assert_eq!(md.get_u16("u16").unwrap(), 2);
    assert_eq!(md.get_i16("i16").unwrap(), -2);
    assert_eq!(md.get_u32("u32").unwrap(), 3);
    assert_eq!(md.get_i32("i32").unwrap(), -3);
    assert_eq!(md.get_f32("f32").unwrap(), 1.5);
    assert!(md.get_bool("bool").unwrap());
    assert_eq!(md.get_str("str").unwrap(), "ü");
    assert_eq!(md.get::<&[bool]>("arr").unwrap(), &[false, true]);
    assert_eq!(md.get_u64("u64").unwrap(), 4);
    assert_eq!(md.get_i64("i64").unwrap(), -4);
    assert_eq!(md.get_f64("f64").unwrap(), 2.5);
    let keys: Vec<&str> = md.iter().map(|(k, _)| k).collect();
    assert_eq!(keys[..3], ["u8", "i8", "u16"]);
}
