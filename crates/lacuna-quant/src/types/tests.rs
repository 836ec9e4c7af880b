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

/// The capability table in the crate's documentation (`lib.rs`) says what the type table
/// says, for every type once.
#[test]
fn the_documented_capabilities_are_the_table_s() {
    let lib = include_str!("../lib.rs");
    let mut seen = std::collections::BTreeSet::new();
    let rows = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//! | "))
        .filter(|l| !l.starts_with("types |") && !l.starts_with("---"));
    for row in rows {
        let cells: Vec<&str> = row.trim_end_matches(" |").split(" | ").collect();
        let [types, deq, quant, dot] = cells[..] else {
            panic!("a row of four cells: {row}")
        };
        let groups: Vec<&str> = types.split(" / ").collect();
        // `✓ (A / B)` pairs with `X / Y` types; `✓ (same type, ..)` is the type itself.
        let partners: Vec<&str> = dot
            .strip_prefix("✓ (")
            .map(|p| p.split([')', ',']).next().unwrap_or(""))
            .map_or(vec![], |p| p.split(" / ").collect());
        for (g, group) in groups.iter().enumerate() {
            for name in group.split(", ").map(|n| n.split(' ').next().unwrap_or(n)) {
                let ty = *GgmlType::ALL
                    .iter()
                    .find(|t| format!("{t:?}") == name)
                    .unwrap_or_else(|| panic!("{name} in lib.rs is no type"));
                assert!(seen.insert(ty), "{name} twice in lib.rs");
                assert_eq!(crate::can_dequantize(ty), deq == "✓", "{name} dequantize");
                assert_eq!(crate::can_quantize(ty), quant == "✓", "{name} quantize");
                let partner = match partners.get(g).or(partners.first()) {
                    None => None,
                    Some(&"same type") => Some(ty),
                    Some(p) => GgmlType::ALL
                        .iter()
                        .copied()
                        .find(|t| format!("{t:?}") == *p),
                };
                assert_eq!(crate::vec_dot_type(ty), partner, "{name} vec_dot");
            }
        }
    }
    assert_eq!(seen.len(), GgmlType::ALL.len(), "lib.rs lists every type");
}

#[test]
fn every_capability_has_a_block_that_round_trips_its_size() {
    // A type that dequantizes takes a zeroed block of `type_size` bytes; one that does not
    // says so with an error, never a panic.
    for &ty in GgmlType::ALL {
        let src = vec![0u8; ty.type_size()];
        let mut dst = vec![1f32; ty.block_size()];
        let r = crate::dequantize_row(ty, &src, &mut dst);
        assert_eq!(r.is_ok(), crate::can_dequantize(ty), "{ty}");
        if r.is_ok() {
            assert!(dst.iter().all(|&x| x == 0.0), "{ty}: zero bytes are zeros");
        }
    }
}
