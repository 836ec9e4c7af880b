//! `diffusion-gemma` under every llama-quantize preset, against Hugging Face transformers'
//! DiffusionGemma run in float64 on the same file's weights, dequantized, with its matmul
//! inputs rounded to 8 bits as ggml rounds them (`tools/diffusion-gemma-ref/quant_ref.py`;
//! data in `tests/data/diffusion-gemma-presets`).
//!
//! The file is Lacuna's tiny `diffusion-gemma` fixture (2 layers: one sliding, one global;
//! d 256, 8 experts top 2, window 16 under a 20-token prompt, canvas 32; every width a
//! multiple of 256, so the K-quant presets keep their K-quants), quantized here by
//! [`lacuna_models::quantize`] (llama-quantize's bytes: `presets.rs`), with its query norms
//! scaled by [`Q_NORM_SCALE`] on both sides (the random fixture's attention is otherwise so
//! peaked that f32 rounding alone moves its decoder rows by 1e-4). Four passes, as
//! `diffusion_gemma.rs` runs them: the encoder over the prompt, the decoder over a canvas,
//! the decoder self-conditioned on the reference's own decoder rows, and, after the
//! encoder's commit pass over the reference's arg-max, the decoder over a next canvas: 116
//! rows.
//!
//! # Bounds
//! The reference rounds what Lacuna rounds (Q8_K, Q8_0 and Q8_1 activations, the Q8_0
//! transpose of the embedding the self-conditioning reads), so where no rounded value lands
//! on the other side of a boundary the two agree to the f16 the reference rows are stored in
//! (~2e-4). Where one does (Lacuna's f32 and the reference's float64 differ by ~1e-7 before
//! each rounding), it moves by one step and the decoder's bidirectional attention spreads
//! that to other rows: ~1e-2 (`presets.rs` sees the same against llama.cpp). And a token
//! whose second and third router scores are within 0.005 of each other (the reference lists
//! those rows in `cases.txt`) may be routed to another expert: its row moves by up to 0.43.
//! Measured over the 17 presets: off the near-ties, worst row 8.6e-3 (MXFP4_MOE) to 4.5e-2
//! (Q3_K_L's self-conditioned pass); 20 (Q5_1) to 110 (MXFP4_MOE) of the 116 rows at
//! rounding; no arg-max lost; the F32 file 4.6e-6. So, per quantized file:
//! - every row off the near-ties within [`FLIP_REL`] = 6e-2 (`presets.rs` holds llama.cpp to
//!   4e-2 on 12 rows of one pass; the worst here is 4.5e-2), a near-tie's within 1;
//! - at least [`ROUNDING_ROWS`] = 10 rows within [`ROUNDING`] = 1e-3: a systematic
//!   difference (a wrong type, scale or transpose anywhere) moves every row;
//! - at most [`FLIP_TOP1`] = 2 rows losing the reference's arg-max.
//!
//! A mutation check: the self-conditioning's transposed embedding kept as F16 instead of
//! Q8_0 (closer to the file, not what the reference rounds) fails five presets.

mod common;

use lacuna_gguf::{GgmlType, GgufFile, GgufWriter};
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, KvCache, Model, Preset, quantize};
use sha2::{Digest, Sha256};

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/diffusion-gemma-presets"
);

/// Per-row relative L2 bound on a quantized file, off the routing near-ties.
const FLIP_REL: f64 = 6e-2;
/// Per-row bound at a routing near-tie (the row of a token routed to another expert).
const TIE_REL: f64 = 1.0;
/// Rows (of the 116) that may lose the reference's arg-max on a quantized file.
const FLIP_TOP1: usize = 2;
/// Agreement to rounding: the f16 the reference rows are stored in (~3e-4), with margin.
const ROUNDING: f64 = 1e-3;
/// Rows of a quantized file that must agree to rounding.
const ROUNDING_ROWS: usize = 10;
/// Per-row bound on the F32 file.
const REL_F32: f64 = 1e-5;

/// `key value...` lines of `cases.txt`.
struct Cases(String);

impl Cases {
    fn load() -> Self {
        Cases(std::fs::read_to_string(format!("{DATA}/cases.txt")).unwrap())
    }

    fn field(&self, k: &str) -> Vec<&str> {
        let line = self
            .0
            .lines()
            .find(|l| l.split(' ').next() == Some(k))
            .unwrap_or_else(|| panic!("cases.txt has no {k}"));
        line.split(' ').skip(1).collect()
    }

    fn ids(&self, k: &str) -> Vec<u32> {
        self.field(k).iter().map(|x| x.parse().unwrap()).collect()
    }
}

fn f32_fixture(cases: &Cases) -> GgufFile {
    let spec = FixtureSpec::new(Arch::DiffusionGemma, Shape::Tiny, 2, QuantMix::F32);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        sha,
        cases.field("fixture_sha16")[0],
        "the fixture generator no longer writes the file the reference read: rerun \
         tools/diffusion-gemma-ref/quant_ref.py"
    );
    GgufFile::from_vec(bytes).unwrap()
}

/// The factor on every query norm (see the module's comment), applied by the reference too
/// (`Q_NORM_SCALE` in `quant_ref.py`).
const Q_NORM_SCALE: f32 = 0.25;

/// `file` with its query norms scaled by [`Q_NORM_SCALE`] (F32 in every preset), as the
/// reference scales them after reading the file.
fn calmed(file: &GgufFile) -> GgufFile {
    let mut w = GgufWriter::new();
    for (k, v) in file.metadata().iter() {
        if k != "general.alignment" {
            w.add_metadata(k, v.clone()).unwrap();
        }
    }
    for info in file.tensors() {
        let mut data = file.info_data(info).to_vec();
        if info.name.ends_with("attn_q_norm.weight") {
            assert_eq!(info.ty, GgmlType::F32, "{}", info.name);
            for c in data.chunks_exact_mut(4) {
                let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * Q_NORM_SCALE;
                c.copy_from_slice(&x.to_le_bytes());
            }
        }
        w.add_tensor(&info.name, &info.dims, info.ty, data).unwrap();
    }
    GgufFile::from_vec(w.to_vec().unwrap()).unwrap()
}

/// The reference's rows for `name` ("F32" or a preset's name).
fn reference(name: &str) -> Vec<f32> {
    if name == "F32" {
        return common::read_logits(&format!("{DATA}/f32.logits"));
    }
    let path = format!("{DATA}/{}.f16", name.to_lowercase());
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .chunks_exact(2)
        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect()
}

/// Lacuna's rows for the four passes: [encoder | decoder | self-conditioned | next].
fn lacuna_rows(m: &mut Model, cases: &Cases, name: &str, want: &[f32]) -> Vec<f32> {
    let v = m.vocab_size();
    let (prompt, canvas) = (cases.ids("prompt"), cases.ids("canvas"));
    let temp: f32 = cases.field("sc_temperature")[0].parse().unwrap();
    let mut cache = KvCache::new();
    let mut enc = vec![0.0; prompt.len() * v];
    m.gemma_encode(&mut cache, &prompt, Some(&mut enc)).unwrap();
    let mut dec = vec![0.0; canvas.len() * v];
    m.gemma_decode(&mut cache, &canvas, None, &mut dec).unwrap();
    // The self-conditioning input the reference read: its own decoder rows as stored, over
    // the temperature, in f32.
    let stored = &want[enc.len()..enc.len() + dec.len()];
    let sc_in: Vec<f32> = stored.iter().map(|x| x / temp).collect();
    let mut sc = vec![0.0; dec.len()];
    m.gemma_decode(&mut cache, &canvas, Some(&sc_in), &mut sc)
        .unwrap();
    m.gemma_encode(&mut cache, &cases.ids(&format!("committed_{name}")), None)
        .unwrap();
    let canvas_b = cases.ids("canvas_b");
    let mut next = vec![0.0; canvas_b.len() * v];
    m.gemma_decode(&mut cache, &canvas_b, None, &mut next)
        .unwrap();
    [enc, dec, sc, next].concat()
}

fn check(preset: Option<Preset>) {
    let cases = Cases::load();
    let src = f32_fixture(&cases);
    let name = preset.map_or("F32", Preset::name);
    let file = match preset {
        None => src,
        Some(p) => GgufFile::from_vec(quantize(&src, p).unwrap().to_vec().unwrap()).unwrap(),
    };
    let mut m = Model::load(calmed(&file), CpuBackend::new()).unwrap();
    let want = reference(name);
    let got = lacuna_rows(&mut m, &cases, name, &want);
    assert_eq!(got.len(), want.len(), "{name}");
    let rows = common::rows(&got, &want, m.vocab_size());
    let ties = cases.ids(&format!("ties_{name}"));
    let worst = rows.iter().map(|r| r.0).fold(0.0, f64::max);
    let flips = rows.iter().filter(|r| !r.1).count();
    let settled = |i: &usize| !ties.contains(&(*i as u32));
    let worst_settled = (0..rows.len())
        .filter(settled)
        .map(|i| rows[i].0)
        .fold(0.0, f64::max);
    let rounding = rows.iter().filter(|r| r.0 <= ROUNDING).count();
    eprintln!(
        "{name}: worst row {worst:.2e}, worst off the {} near-ties {worst_settled:.2e}, \
         {rounding} of {} rows to rounding, arg-max lost on {flips}",
        ties.len(),
        rows.len()
    );
    if preset.is_none() {
        assert!(
            worst <= REL_F32,
            "F32: relative L2 {worst:.2e} > {REL_F32:.0e}"
        );
        assert_eq!(flips, 0, "F32: arg-max lost");
        return;
    }
    for (i, &(r, _)) in rows.iter().enumerate() {
        let bound = if settled(&i) { FLIP_REL } else { TIE_REL };
        assert!(
            r <= bound,
            "{name} row {i}: relative L2 {r:.2e} > {bound:.0e}"
        );
    }
    assert!(
        rounding >= ROUNDING_ROWS,
        "{name}: only {rounding} rows agree to rounding (at least {ROUNDING_ROWS})"
    );
    assert!(
        flips <= FLIP_TOP1,
        "{name}: {flips} rows lost the arg-max (at most {FLIP_TOP1})"
    );
}

#[test]
fn f32_matches_the_reference_reading_of_the_file() {
    check(None);
}

macro_rules! presets {
    ($($test:ident => $preset:ident),* $(,)?) => {
        $( #[test] fn $test() { check(Some(Preset::$preset)); } )*
    };
}

presets! {
    q2_k => Q2K,
    q3_k_s => Q3KS,
    q3_k_m => Q3KM,
    q3_k_l => Q3KL,
    q4_0 => Q4_0,
    q4_1 => Q4_1,
    q5_0 => Q5_0,
    q5_1 => Q5_1,
    q4_k_s => Q4KS,
    q4_k_m => Q4KM,
    q5_k_s => Q5KS,
    q5_k_m => Q5KM,
    q6_k => Q6K,
    q8_0 => Q8_0,
    iq4_nl => IQ4NL,
    iq4_xs => IQ4XS,
    mxfp4_moe => MXFP4Moe,
}
