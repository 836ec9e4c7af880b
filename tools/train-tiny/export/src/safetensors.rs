//! Reads the F32 safetensors file `train.py --export` writes (LLaDA's Hugging Face tensor
//! names).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

/// One tensor: PyTorch shape (outermost first) and row-major data.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Every tensor of the file by name, and the free-form `__metadata__` strings.
pub fn read(path: &Path) -> Result<(BTreeMap<String, Tensor>, BTreeMap<String, String>)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        bytes.len() >= 8,
        "{}: too short for a safetensors header",
        path.display()
    );
    let n = u64::from_le_bytes(bytes[..8].try_into()?) as usize;
    ensure!(
        8 + n <= bytes.len(),
        "{}: header length {n} past the end",
        path.display()
    );
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n])?;
    let body = &bytes[8 + n..];
    let obj = header
        .as_object()
        .context("safetensors header is not an object")?;
    let (mut tensors, mut meta) = (BTreeMap::new(), BTreeMap::new());
    for (name, v) in obj {
        if name == "__metadata__" {
            for (k, s) in v.as_object().context("__metadata__ is not an object")? {
                meta.insert(k.clone(), s.as_str().unwrap_or_default().to_string());
            }
            continue;
        }
        let dtype = v["dtype"].as_str().unwrap_or_default();
        if dtype != "F32" {
            bail!("{name}: dtype {dtype}, expected F32");
        }
        let shape: Vec<usize> = v["shape"]
            .as_array()
            .context("shape")?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize).context("shape entry"))
            .collect::<Result<_>>()?;
        let off = v["data_offsets"].as_array().context("data_offsets")?;
        let (a, b) = (
            off[0].as_u64().context("offset")? as usize,
            off[1].as_u64().context("offset")? as usize,
        );
        let count: usize = shape.iter().product();
        ensure!(
            a <= b && b <= body.len() && b - a == count * 4,
            "{name}: bad data_offsets"
        );
        let data = body[a..b]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        tensors.insert(name.clone(), Tensor { shape, data });
    }
    Ok((tensors, meta))
}
