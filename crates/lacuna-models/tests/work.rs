//! The work a pass reports (`PartTimes`' operation and byte counters, the inputs of a
//! step's floor in `lacuna bench`) against a count made from the file's own tensor list.

use lacuna_gguf::GgufFile;
use lacuna_models::fixture::{FixtureSpec, QuantMix, Shape, build};
use lacuna_models::{Arch, CpuBackend, Model, PartTimes};

fn tiny(arch: Arch) -> Model {
    let spec = FixtureSpec::new(arch, Shape::Tiny, 2, QuantMix::Q4KM);
    let bytes = build(&spec).unwrap().to_vec().unwrap();
    Model::load(GgufFile::from_vec(bytes).unwrap(), CpuBackend::new()).unwrap()
}

/// (operations, file bytes) of one pass over `t` positions with `head_rows` rows of logits,
/// from the file: every 2-D matrix but the embedding table once (the table too when it is
/// also the LM head); the LM head, and the last layer after its attention (llama.cpp's
/// `inp_out_ids`: output projection and feed-forward), over `head_rows` rows; every other
/// matrix over `t`.
fn expected(m: &Model, t: u64, head_rows: u64) -> (u64, u64) {
    let file = m.file();
    let tied = file.tensor("output.weight").is_err();
    let last = format!("blk.{}.", m.config().n_layer - 1);
    let (mut ops, mut bytes) = (0u64, 0u64);
    for info in file.tensors() {
        if info.dims.len() != 2 || (info.name == "token_embd.weight" && !tied) {
            continue;
        }
        let (k, n) = (info.dims[0], info.dims[1]);
        let head = info.name == "output.weight"
            || info.name == "token_embd.weight"
            || (info.name.starts_with(&last)
                && (info.name.contains("attn_output") || info.name.contains("ffn_")));
        ops += 2 * if head { head_rows } else { t } * n * k;
        bytes += file.info_data(info).len() as u64;
    }
    (ops, bytes)
}

#[test]
fn dense_passes_count_every_matrix_once_and_the_head_over_its_rows() {
    let canvas: Vec<u32> = (0..12).map(|i| (i * 37 + 5) % 200).collect();
    for arch in Arch::MASKED {
        let mut m = tiny(arch);
        if m.config().moe.is_some() {
            continue;
        }
        let v = m.vocab_size();
        m.reset_part_times();
        let mut out = vec![0.0; canvas.len() * v];
        m.forward_all(&canvas, &mut out).unwrap();
        let rows = [1usize, 4, 11];
        let mut some = vec![0.0; rows.len() * v];
        m.forward(&canvas, &rows, &mut some).unwrap();
        let p = m.part_times();
        assert_eq!(p.passes_run, 2, "{arch}");
        let (ops_all, bytes) = expected(&m, canvas.len() as u64, canvas.len() as u64);
        let (ops_some, _) = expected(&m, canvas.len() as u64, rows.len() as u64);
        assert_eq!(p.matmul_ops, ops_all + ops_some, "{arch}");
        assert_eq!(p.file_bytes_read, 2 * bytes, "{arch}");
        assert!(p.held_bytes_read > 0, "{arch}");
        let (ops, file_bytes, _) = p.work_per_pass_since(&PartTimes::default());
        assert_eq!(ops, (ops_all + ops_some) as f64 / 2.0, "{arch}");
        assert_eq!(file_bytes, bytes as f64, "{arch}");
        // Since a later reading, nothing ran.
        assert_eq!(p.work_per_pass_since(&p), (0.0, 0.0, 0.0), "{arch}");
    }
}

#[test]
fn moe_passes_count_only_the_experts_tokens_were_routed_to() {
    let canvas: Vec<u32> = (0..9).map(|i| (i * 53 + 3) % 200).collect();
    for arch in Arch::MASKED {
        let mut m = tiny(arch);
        let Some(moe) = m.config().moe else { continue };
        let v = m.vocab_size();
        m.reset_part_times();
        let mut out = vec![0.0; canvas.len() * v];
        m.forward_all(&canvas, &mut out).unwrap();
        let p = m.part_times();
        let t = canvas.len() as u64;
        let (ops_max, bytes_max) = expected(&m, t, t);
        // Every expert matrix once at most, each routed token through k experts.
        let file = m.file();
        // The expert tensors are 3-D (`expected` skips them): every token runs through
        // n_expert_used distinct experts of each, each expert read at most once.
        let (mut expert_bytes, mut routed) = (0u64, 0u64);
        for info in file.tensors().iter().filter(|i| i.name.contains("_exps.")) {
            expert_bytes += file.info_data(info).len() as u64;
            routed += 2 * t * moe.n_expert_used as u64 * info.dims[0] * info.dims[1];
        }
        assert!(p.file_bytes_read <= bytes_max + expert_bytes, "{arch}");
        assert!(
            p.file_bytes_read > bytes_max,
            "{arch}: the dense part and some experts"
        );
        assert_eq!(p.matmul_ops, ops_max + routed, "{arch}");
        assert!(p.experts_run > 0, "{arch}");
    }
}
