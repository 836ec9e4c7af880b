//! What `lacuna list` shows of a GGUF file: its architecture and quant, from its metadata.

use std::collections::HashMap;
use std::path::Path;

use lacuna_gguf::GgufFile;

use crate::Result;

/// A GGUF file's architecture and quant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufSummary {
    /// `general.architecture`, if present.
    pub architecture: Option<String>,
    /// The quant: `general.file_type` as llama.cpp names it (`Q4_K_M`), else the ggml type
    /// holding most of the tensor bytes (`q8_0`), else `None`.
    pub quant: Option<String>,
}

/// Reads the metadata of the GGUF file at `path` (memory-mapped; no tensor data is read).
pub fn summarize(path: &Path) -> Result<GgufSummary> {
    let file = GgufFile::open(path)?;
    let md = file.metadata();
    let architecture = md
        .get_opt::<&str>("general.architecture")?
        .map(str::to_owned);
    let from_file_type = md
        .value("general.file_type")
        .and_then(|v| v.as_u64_lenient())
        .and_then(file_type_name)
        .map(str::to_owned);
    let quant = from_file_type.or_else(|| {
        let mut bytes = HashMap::new();
        for t in file.tensors() {
            *bytes.entry(t.ty).or_insert(0u64) += t.n_bytes;
        }
        bytes
            .into_iter()
            .max_by_key(|&(ty, n)| (n, std::cmp::Reverse(ty)))
            .map(|(ty, _)| ty.name().to_owned())
    });
    Ok(GgufSummary {
        architecture,
        quant,
    })
}

/// llama.cpp's name for a `general.file_type` (`enum llama_ftype`), `None` for ids it
/// removed or does not know.
pub fn file_type_name(id: u64) -> Option<&'static str> {
    Some(match id {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => return None,
    })
}
