use super::*;

#[test]
fn rejects_bad_inputs_with_typed_errors() {
    assert_eq!(
        PackedWeight::new(GgmlType::IQ2_XXS, 1, 256, &[0; 66]).unwrap_err(),
        Error::UnsupportedType {
            ty: GgmlType::IQ2_XXS
        }
    );
    assert_eq!(
        PackedWeight::new(GgmlType::Q4_K, 1, 100, &[0; 144]).unwrap_err(),
        Error::RaggedK {
            ty: GgmlType::Q4_K,
            k: 100,
            block: 256
        }
    );
    assert_eq!(
        PackedWeight::new(GgmlType::Q8_0, 2, 32, &[0; 34]).unwrap_err(),
        Error::BadLength {
            what: "weight bytes",
            expected: 68,
            found: 34
        }
    );
    assert!(matches!(
        PackedWeight::new(GgmlType::F32, 0, 4, &[]),
        Err(Error::BadShape { .. })
    ));
    assert!(matches!(
        PackedWeight::new(GgmlType::F32, usize::MAX / 2, 4, &[]),
        Err(Error::BadShape { .. })
    ));
}

#[test]
fn quant_layout_interleaves_rows_by_16_and_groups_of_4() {
    // Q8_0 rows whose quant i of row r is (r * 3 + i) % 100, d = 1.
    let (n, k) = (20, 64);
    let mut bytes = Vec::new();
    for r in 0..n {
        for b in 0..k / 32 {
            bytes.extend(half::f16::from_f32(1.0).to_le_bytes());
            bytes.extend((0..32).map(|i| ((r * 3 + b * 32 + i) % 100) as u8));
        }
    }
    let w = PackedWeight::new_with(GgmlType::Q8_0, n, k, &bytes, Form::Bytes).unwrap();
    let Inner::Quant(q) = &w.inner else {
        unreachable!()
    };
    assert_eq!(q.panels, 2);
    for r in 0..n {
        for kk in 0..k {
            let (p, rr) = (r / PANEL, r % PANEL);
            let at = p * PANEL * k + ((kk / 4) * PANEL + rr) * 4 + kk % 4;
            assert_eq!(q.qs[at] as usize, (r * 3 + kk) % 100);
        }
        // Bias correction: 128 * sum of the block's quants.
        let sum0: i32 = (0..32).map(|i| ((r * 3 + i) % 100) as i32).sum();
        assert_eq!(q.corr[((r / PANEL) * 2) * PANEL + r % PANEL], 128 * sum0);
    }
    // Padding rows stay zero.
    for rr in n % PANEL..PANEL {
        for kk in 0..k {
            assert_eq!(q.qs[PANEL * k + ((kk / 4) * PANEL + rr) * 4 + kk % 4], 0);
        }
    }
    assert_eq!(w.packed_bytes(), 2 * PANEL * k + 4 * (2 * PANEL * 2 * 2));
    // The half form keeps the weights and holds `corr / 128` and `d` in 16 bits; the planar
    // form, Q8_0's bytes as they are.
    let p = PackedWeight::new_with(GgmlType::Q8_0, n, k, &bytes, Form::Planar).unwrap();
    assert_eq!(p.packed_bytes(), w.packed_bytes());
    let h = PackedWeight::new_with(GgmlType::Q8_0, n, k, &bytes, Form::Half).unwrap();
    let Inner::Quant(hq) = &h.inner else {
        unreachable!()
    };
    assert!(hq.half && hq.small && hq.corr.is_empty() && hq.d.is_empty());
    assert_eq!(q.d[0], 1.0);
    assert_eq!(hq.qs, q.qs);
    for (i, &c) in q.corr.iter().enumerate() {
        assert_eq!(i32::from(hq.corr16[i]) * 128, c, "block constant {i}");
        assert_eq!(half::f16::from_bits(hq.d16[i]).to_f32(), q.d[i]);
    }
    assert_eq!(h.packed_bytes(), 2 * PANEL * k + 2 * (2 * PANEL * 2 * 2));
}

#[test]
fn small_panels_hold_nibble_line_pairs_and_expand_back() {
    // Q4_K rows of 256 random nibbles (the values 0..=15 a byte panel holds for Q4_K).
    let mut rng = crate::testing::Rng(7);
    let (n, k) = (21, 512);
    let bytes = crate::testing::weights(GgmlType::Q4_K, n, k, &mut rng, 1.0);
    let held = PackedWeight::new_with(GgmlType::Q4_K, n, k, &bytes, Form::Bytes).unwrap();
    let small = PackedWeight::new_with(GgmlType::Q4_K, n, k, &bytes, Form::Small).unwrap();
    let (Inner::Quant(b), Inner::Quant(q)) = (&held.inner, &small.inner) else {
        panic!("quantized layouts expected");
    };
    assert!(q.nib() && !b.nib());
    assert_eq!(q.qs.len() * 2, b.qs.len());
    // Byte j of line pair l: line 2l in the low nibble, line 2l + 1 in the high one.
    let line = 4 * PANEL;
    for (l, pair) in b.qs.chunks_exact(2 * line).enumerate() {
        for j in 0..line {
            let v = q.qs[l * line + j] as u8;
            assert_eq!((v & 0xF) as i8, pair[j]);
            assert_eq!((v >> 4) as i8, pair[line + j]);
        }
    }
    // Every panel expands back to the byte panel, scales and constants included.
    let mut one = QuantPacked::one_panel(QuantKind::Q4K, k);
    for p in 0..q.panels {
        q.expand_panel(p, &mut one);
        let at = |len: usize| p * len..(p + 1) * len;
        assert_eq!(one.qs[..], b.qs[at(PANEL * k)]);
        assert_eq!(one.scales[..], b.scales[at(one.scales.len())]);
        assert_eq!(one.corr[..], b.corr[at(one.corr.len())]);
        assert_eq!(one.mins[..], b.mins[at(one.mins.len())]);
        assert_eq!(one.d[..], b.d[at(one.d.len())]);
        assert_eq!(one.dmin[..], b.dmin[at(one.dmin.len())]);
    }
    // Types without integer scales, or with float offsets, keep the byte form; Q6_K takes
    // i8 scales with its bytes.
    for (ty, is_small) in [
        (GgmlType::Q8_0, false),
        (GgmlType::Q2_K, false),
        (GgmlType::Q6_K, true),
    ] {
        let w = crate::testing::weights(ty, n, k, &mut rng, 1.0);
        let p = PackedWeight::new_with(ty, n, k, &w, Form::Small).unwrap();
        assert_eq!(p.is_small(), is_small, "{ty}");
        let Inner::Quant(q) = &p.inner else {
            panic!("quantized")
        };
        assert!(!q.nib());
    }
}

#[test]
fn planar_panels_hold_low_and_high_bits_and_expand_back() {
    let mut rng = crate::testing::Rng(5);
    let (n, k) = (19, 512);
    // Each planar form: its type, the form that holds it, its code
    // ([`QuantPacked::planar_bits`]), bits per weight, lines per group, low bits, bias, the
    // high bit of line j, and bytes per row and 256 weights (weights, i8 scales and mins,
    // `corr`, `d` and `dmin`; for the 32-weight formats 8 blocks of weights, 16-bit `corr`
    // and `d`, and Q5_1's f16 offset).
    type Case = (GgmlType, Form, [usize; 4], i8, fn(usize) -> usize, usize);
    let cases: [Case; 7] = [
        // Q2_K: no high bits; 4-bit mins two a byte and f16 `dmin` beside the i8 scales.
        (
            GgmlType::Q2_K,
            Form::Planar,
            [2, 2, 4, 2],
            0,
            |_| 0,
            64 + 16 + 8 + 8 + 2,
        ),
        // With 16-bit `corr` and `d`: 2.94 bits per weight, 1.12x the file's 2.625.
        (
            GgmlType::Q2_K,
            Form::Half,
            [2, 2, 4, 2],
            0,
            |_| 0,
            64 + 16 + 4 + 8 + 2,
        ),
        (
            GgmlType::Q6_K,
            Form::Planar,
            [6, 6, 4, 4],
            32,
            |j| 2 * j,
            192 + 16 + 8,
        ),
        (
            GgmlType::Q5_K,
            Form::Planar,
            [5, 5, 8, 4],
            0,
            |j| j,
            160 + 8 + 8 + 12,
        ),
        (
            GgmlType::Q3_K,
            Form::Planar,
            [3, 3, 8, 2],
            4,
            |j| 2 * (j % 4) + j / 4,
            96 + 16 + 8,
        ),
        (
            GgmlType::Q5_0,
            Form::Half,
            [BITS5_SIGNED, 5, 8, 4],
            16,
            |j| j,
            8 * 24,
        ),
        (GgmlType::Q5_1, Form::Half, [5, 5, 8, 4], 0, |j| j, 8 * 26),
    ];
    for (ty, form, [code, bits, g, lo], bias, hi_at, per_block) in cases {
        let bytes = crate::testing::weights(ty, n, k, &mut rng, 1.0);
        let held = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
        let planar = PackedWeight::new_with(ty, n, k, &bytes, form).unwrap();
        let (Inner::Quant(b), Inner::Quant(q)) = (&held.inner, &planar.inner) else {
            panic!("quantized layouts expected");
        };
        assert!(q.planar && q.small && !q.nib() && !b.planar && planar.is_planar());
        assert_eq!(q.planar_bits(), code);
        assert_eq!(q.qs.len() * 8, b.qs.len() * bits);
        // Group i of g lines: low lines (line j in low line j / per at bits lo * (j % per)),
        // then one line of the high bits of q + bias (none for Q2_K).
        let (line, per) = (4 * PANEL, 8 / lo);
        let lo_lines = g / per;
        let group_lines = lo_lines + usize::from(bits > lo);
        assert_eq!(planes(code).lines(), group_lines, "{ty}");
        let mut seen = [false; 64];
        for (i, lines) in b.qs.chunks_exact(g * line).enumerate() {
            let out = &q.qs[i * group_lines * line..][..group_lines * line];
            for j in 0..g {
                for x in 0..line {
                    let u = (lines[j * line + x] + bias) as u8;
                    seen[usize::from(u)] = true;
                    let low = out[j / per * line + x] as u8 >> (lo * (j % per)) & ((1 << lo) - 1);
                    assert_eq!(low, u & ((1 << lo) - 1), "{ty} group {i} line {j} byte {x}");
                    if bits > lo {
                        let top =
                            (out[lo_lines * line + x] as u8 >> hi_at(j)) & ((1 << (bits - lo)) - 1);
                        assert_eq!(top, u >> lo, "{ty} group {i} line {j} byte {x}");
                    }
                }
            }
        }
        // Random weights reach both ends of the range, so every bit is exercised.
        let top = (1usize << bits) - 1;
        assert!(
            seen[0] && seen[top] && seen[top + 1..].iter().all(|&s| !s),
            "{ty}"
        );
        let mut one = QuantPacked::one_panel(b.kind, k);
        for p in 0..q.panels {
            q.expand_panel(p, &mut one);
            let at = |len: usize| p * len..(p + 1) * len;
            assert_eq!(one.qs[..], b.qs[at(PANEL * k)]);
            assert_eq!(one.scales[..], b.scales[at(one.scales.len())]);
            assert_eq!(one.mins[..], b.mins[at(one.mins.len())]);
            assert_eq!(one.corr[..], b.corr[at(one.corr.len())]);
            assert_eq!(one.d[..], b.d[at(one.d.len())]);
            assert_eq!(one.dmin[..], b.dmin[at(one.dmin.len())]);
        }
        let rows = n.div_ceil(PANEL) * PANEL;
        assert_eq!(planar.packed_bytes(), rows * (k / 256) * per_block, "{ty}");
    }
}

#[test]
fn offset_formats_hold_narrow_offsets_that_widen_to_the_byte_forms() {
    let mut rng = crate::testing::Rng(13);
    let (n, k) = (21, 256);
    for (ty, weight_bytes) in [
        (GgmlType::Q4_1, 16),
        (GgmlType::Q5_1, 20),
        (GgmlType::Q2_K, 0),
    ] {
        let bytes = crate::testing::weights(ty, n, k, &mut rng, 1.0);
        let held = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
        let half = PackedWeight::new_with(ty, n, k, &bytes, Form::Half).unwrap();
        let (Inner::Quant(b), Inner::Quant(q)) = (&held.inner, &half.inner) else {
            panic!("quantized layouts expected");
        };
        let m = b.affine.as_ref().expect("the byte form's f32 offsets");
        if ty == GgmlType::Q2_K {
            // 4-bit mins two a byte and f16 `dmin`, widened to the byte form's `-(dmin * m)`.
            assert!(q.planar && q.half && q.affine.is_none() && q.affine16.is_empty());
            assert_eq!(
                (q.mins4.len(), q.dmin16.len()),
                (m.w.len() / 2, m.w.len() / 16)
            );
            let mut one = FloatPacked::empty();
            let mut drawn = std::collections::HashSet::new();
            for p in (0..q.panels).step_by(2) {
                let two = (q.panels - p).min(2);
                q.offsets_panels(p, two, &mut one);
                let want = &m.w[p * PANEL * m.k..][..two * PANEL * m.k];
                // Padding rows (never stored) are -0.0 here, 0.0 there.
                assert_eq!(one.w.len(), want.len());
                for (e, (a, b)) in one.w.iter().zip(want).enumerate() {
                    let row = (p + e / (PANEL * m.k)) * PANEL + e % PANEL;
                    let same = a.to_bits() == b.to_bits() || row >= n && a == b;
                    assert!(same, "{ty} panels {p}.., element {e}: {a} against {b}");
                }
                drawn.extend(one.w.iter().map(|v| v.to_bits()));
            }
            assert!(drawn.len() > 100, "{ty}: random offsets expected");
            continue;
        }
        assert!(
            q.half && q.affine.is_none() && b.affine16.is_empty(),
            "{ty}"
        );
        assert_eq!(q.affine16.len(), m.w.len(), "{ty}");
        // Q4_1 two weights a byte, Q5_1 in Q5_K's planes.
        let q4 = ty == GgmlType::Q4_1;
        assert_eq!((q.nib(), q.planar), (q4, !q4), "{ty}");
        let mut one = FloatPacked::empty();
        let mut wide = QuantPacked::one_panel(b.kind, k);
        let mut drawn = std::collections::HashSet::new();
        for p in 0..q.panels {
            q.offsets_panels(p, 1, &mut one);
            assert_eq!(
                one.w[..],
                m.w[p * PANEL * m.k..][..PANEL * m.k],
                "{ty} panel {p}"
            );
            drawn.extend(one.w.iter().map(|v| v.to_bits()));
            q.expand_panel(p, &mut wide);
            assert_eq!(
                wide.qs[..],
                b.qs[p * PANEL * k..][..PANEL * k],
                "{ty} panel {p}"
            );
            assert_eq!(
                wide.corr[..],
                b.corr[p * PANEL * (k / 32)..][..PANEL * (k / 32)]
            );
            assert_eq!(wide.d[..], b.d[p * PANEL * (k / 32)..][..PANEL * (k / 32)]);
        }
        assert!(drawn.len() > 100, "{ty}: random offsets expected");
        // Weights, 16-bit `corr` and `d`, f16 offset: 22 bytes a block for Q4_1 (1.10x its
        // 20), 26 for Q5_1 (1.08x its 24).
        let rows = n.div_ceil(PANEL) * PANEL;
        assert_eq!(
            half.packed_bytes(),
            rows * (k / 32) * (weight_bytes + 6),
            "{ty}"
        );
    }
}

#[test]
fn level_formats_hold_level_indices_as_nibbles_and_expand_back() {
    let mut rng = crate::testing::Rng(9);
    let (n, k) = (32, 512);
    for ty in [
        GgmlType::IQ4_XS,
        GgmlType::IQ4_NL,
        GgmlType::Q4_0,
        GgmlType::MXFP4,
    ] {
        let bytes = crate::testing::weights(ty, n, k, &mut rng, 1.0);
        let held = PackedWeight::new_with(ty, n, k, &bytes, Form::Bytes).unwrap();
        let lut = PackedWeight::new_with(ty, n, k, &bytes, Form::Planar).unwrap();
        let (Inner::Quant(b), Inner::Quant(q)) = (&held.inner, &lut.inner) else {
            panic!("quantized layouts expected");
        };
        assert!(
            q.lut && q.nib() && !b.lut && q.qs.len() * 2 == b.qs.len(),
            "{ty}"
        );
        // Byte j of line pair l: the indices of lines 2l (low) and 2l + 1 (high).
        let lv = levels(b.kind);
        let line = 4 * PANEL;
        let mut used = [false; 16];
        for (l, pair) in b.qs.chunks_exact(2 * line).enumerate() {
            for j in 0..line {
                let v = q.qs[l * line + j] as u8;
                assert_eq!(lv[usize::from(v & 0xF)], pair[j], "{ty}");
                assert_eq!(lv[usize::from(v >> 4)], pair[line + j], "{ty}");
                used[usize::from(v & 0xF)] = true;
            }
        }
        // MXFP4's zero is level 0 and 8: packing writes 8.
        let mxfp4 = ty == GgmlType::MXFP4;
        assert!(
            used.iter()
                .enumerate()
                .all(|(i, &u)| u != (mxfp4 && i == 0)),
            "{ty}: every level drawn"
        );
        let mut one = QuantPacked::one_panel(b.kind, k);
        for p in 0..q.panels {
            q.expand_panel(p, &mut one);
            assert_eq!(one.qs[..], b.qs[p * PANEL * k..(p + 1) * PANEL * k], "{ty}");
        }
    }
}

#[test]
fn mxfp4_half_form_holds_the_files_exponent_bytes() {
    // Every E8M0 byte (the subnormal 0 and 1 included), one a block, in rows that fill one
    // panel and part of a second.
    let (n, k) = (20, 512);
    let mut rng = crate::testing::Rng(13);
    let mut bytes = crate::testing::weights(GgmlType::MXFP4, n, k, &mut rng, 1.0);
    let block = size_of::<lacuna_quant::BlockMXFP4>();
    for (i, b) in bytes.chunks_exact_mut(block).enumerate() {
        b[0] = (i * 37 % 256) as u8;
    }
    let held = PackedWeight::new_with(GgmlType::MXFP4, n, k, &bytes, Form::Bytes).unwrap();
    let half = PackedWeight::new_with(GgmlType::MXFP4, n, k, &bytes, Form::Half).unwrap();
    let (Inner::Quant(b), Inner::Quant(h)) = (&held.inner, &half.inner) else {
        panic!("quantized layouts expected");
    };
    assert!(h.half && h.lut && h.d16.is_empty() && h.d.is_empty() && h.corr.is_empty());
    let nblk = k / 32;
    let mut seen = [false; 256];
    for r in 0..n {
        for blk in 0..nblk {
            let at = ((r / PANEL) * nblk + blk) * PANEL + r % PANEL;
            let e = bytes[(r * nblk + blk) * block];
            assert_eq!(h.e8[at], e, "row {r} block {blk}");
            assert_eq!(
                lacuna_quant::e8m0_to_fp32_half(e).to_bits(),
                b.d[at].to_bits(),
                "row {r} block {blk}"
            );
            assert_eq!(
                i32::from(h.corr16[at]) * 128,
                b.corr[at],
                "row {r} block {blk}"
            );
            seen[usize::from(e)] = true;
        }
    }
    assert!(seen.iter().all(|&s| s), "every exponent byte drawn");
    // 4 bits a weight, 24 bits of constants a block: 4.75 bits a weight.
    assert_eq!(half.packed_bytes(), 2 * PANEL * (k / 2 + nblk * 3));
    // Expanded back: the byte form's constants (padding rows, never stored, aside: their
    // zero byte widens to 2^-128 where the byte form holds 0).
    let mut one = QuantPacked::one_panel(b.kind, k);
    for p in 0..h.panels {
        h.expand_panel(p, &mut one);
        let c = PANEL * nblk;
        assert_eq!(one.corr[..], b.corr[p * c..(p + 1) * c]);
        for (i, d) in one.d.iter().enumerate() {
            if p * PANEL + i % PANEL < n {
                assert_eq!(
                    d.to_bits(),
                    b.d[p * c + i].to_bits(),
                    "panel {p} constant {i}"
                );
            }
        }
    }
}

#[test]
fn repacked_bytes_are_what_packing_holds() {
    let mut rng = crate::testing::Rng(11);
    let types = QuantKind::ALL.into_iter().map(QuantKind::ty).chain([
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
    ]);
    for ty in types {
        for (n, kb) in [(1, 1), (17, 2), (40, 3)] {
            let k = kb * ty.block_size().max(64);
            let bytes = crate::testing::weights(ty, n, k, &mut rng, 1.0);
            for form in [Form::Bytes, Form::Small, Form::Planar, Form::Half] {
                let held = PackedWeight::new_with(ty, n, k, &bytes, form)
                    .unwrap()
                    .packed_bytes();
                let said = PackedWeight::repacked_bytes_with(ty, n, k, form, form != Form::Bytes);
                assert_eq!(said, Some(held), "{ty} {n}x{k} {form:?}");
            }
        }
    }
    assert_eq!(PackedWeight::repacked_bytes(GgmlType::Q4_K, 4, 100), None);
    assert_eq!(
        PackedWeight::repacked_bytes(GgmlType::IQ2_XXS, 4, 256),
        None
    );
}
