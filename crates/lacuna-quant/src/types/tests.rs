use super::*;

#[test]
fn ids_round_trip_and_gaps_are_unknown() {
    for &t in GgmlType::ALL {
        assert_eq!(GgmlType::from_id(t as u32), Ok(t));
    }
    for id in [4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, u32::MAX] {
        assert_eq!(GgmlType::from_id(id), Err(Error::UnknownType { id }));
    }
}

#[test]
fn sizes_match_ggml_block_structs() {
    // 2-byte f16 scale(s) plus packed quants, as in ggml-common.h.
    assert_eq!(GgmlType::Q4_K.type_size(), 2 + 2 + 12 + QK_K / 2);
    assert_eq!(
        GgmlType::Q6_K.type_size(),
        QK_K / 2 + QK_K / 4 + QK_K / 16 + 2
    );
    assert_eq!(GgmlType::Q8_K.type_size(), 4 + QK_K + QK_K / 16 * 2);
    assert_eq!(GgmlType::Q8_0.type_size(), 2 + 32);
}

#[test]
fn row_bytes_rejects_partial_blocks_and_overflow() {
    assert_eq!(GgmlType::Q4_K.row_bytes(4096), Some(16 * 144));
    assert_eq!(GgmlType::Q4_K.row_bytes(100), None);
    assert_eq!(GgmlType::F32.row_bytes(u64::MAX), None);
}
