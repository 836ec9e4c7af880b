//! `lacuna inspect MODEL.gguf` (header, metadata, tensor table, totals; `--json`) and
//! `lacuna tensor MODEL.gguf NAME --out FILE` (one tensor dequantized to f32).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use lacuna::gguf::{Array, GgmlType, GgufFile, TensorInfo, Value};
use serde_json::{Value as Json, json};

/// Arguments of `lacuna inspect`.
#[derive(Args)]
pub(crate) struct InspectArgs {
    /// The GGUF file, or hf:OWNER/REPO:QUANT.
    model: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// How many leading items of each metadata array to show.
    #[arg(long, default_value_t = 8)]
    array_items: usize,
}

/// Arguments of `lacuna tensor`.
#[derive(Args)]
pub(crate) struct TensorArgs {
    /// The GGUF file, or hf:OWNER/REPO:QUANT.
    model: PathBuf,
    /// The tensor's name, as `lacuna inspect` lists it.
    name: String,
    /// Where to write the values: f32 little-endian, row-major in ggml order (ne[0]
    /// contiguous).
    #[arg(long)]
    out: PathBuf,
}

fn open(path: &Path) -> Result<GgufFile> {
    let path = &crate::pull::resolve_model(path)?;
    GgufFile::open(path).with_context(|| format!("invalid GGUF file {}", path.display()))
}

/// Runs `lacuna inspect`.
pub(crate) fn run_inspect(args: InspectArgs) -> Result<()> {
    let f = open(&args.model)?;
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&to_json(&f, &args))?;
        s.push('\n');
        s
    } else {
        to_text(&f, &args)
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}

/// Runs `lacuna tensor`.
pub(crate) fn run_tensor(args: TensorArgs) -> Result<()> {
    let f = open(&args.model)?;
    let info = f.tensor(&args.name)?;
    let data = f.info_data(info);
    // Rows are whole blocks and lie back to back, so the tensor can be dequantized in
    // block-aligned chunks of ~64k values whatever its row length: memory stays bounded
    // even for a huge 1-D tensor.
    let block_elems = info.ty.block_size();
    let blocks_per_chunk = (65_536 / block_elems).max(1);
    let chunk_bytes = blocks_per_chunk * info.ty.type_size();
    let file = std::fs::File::create(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut w = BufWriter::new(file);
    let mut values = vec![0f32; blocks_per_chunk * block_elems];
    let mut bytes = Vec::with_capacity(values.len() * 4);
    for src in data.chunks(chunk_bytes) {
        let n = src.len() / info.ty.type_size() * block_elems;
        let out = &mut values[..n];
        lacuna::quant::dequantize_row(info.ty, src, out)
            .with_context(|| format!("tensor {:?} ({})", info.name, info.ty))?;
        bytes.clear();
        bytes.extend(out.iter().flat_map(|x| x.to_le_bytes()));
        w.write_all(&bytes)?;
    }
    w.flush()
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    eprintln!(
        "wrote {} {:?} {} as {} f32 values to {}",
        info.name,
        info.dims,
        info.ty,
        info.n_elements(),
        args.out.display()
    );
    Ok(())
}

/// Per-type totals: (tensors, elements, bytes).
fn totals(f: &GgufFile) -> BTreeMap<GgmlType, (u64, u64, u64)> {
    let mut by_type = BTreeMap::new();
    for t in f.tensors() {
        let e = by_type.entry(t.ty).or_insert((0, 0, 0));
        e.0 += 1;
        e.1 += t.n_elements();
        e.2 += t.n_bytes;
    }
    by_type
}

fn to_text(f: &GgufFile, args: &InspectArgs) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: GGUF v{}, {} bytes, alignment {}, data section at offset {}",
        args.model.display(),
        f.version(),
        f.bytes().len(),
        f.alignment(),
        f.data_offset()
    );
    let _ = write!(s, "\n{}", crate::quant_summary::text(f));
    let md = f.metadata();
    let _ = writeln!(s, "\nmetadata ({} keys):", md.len());
    let key_width = md.iter().map(|(k, _)| k.len()).max().unwrap_or(0).min(48);
    for (key, value) in md.iter() {
        // Escaped so that a hostile key cannot break the layout or the terminal.
        let key = key.escape_debug().to_string();
        let _ = writeln!(
            s,
            "  {key:key_width$}  {:<16} {}",
            type_text(value),
            value_text(value, args.array_items)
        );
    }
    let _ = writeln!(s, "\ntensors ({}):", f.tensors().len());
    let name_width = f
        .tensors()
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        s,
        "  {:name_width$}  {:<28} {:<8} {:>14} {:>14}",
        "name", "shape (ne0 first)", "type", "bytes", "offset"
    );
    for t in f.tensors() {
        let _ = writeln!(
            s,
            "  {:name_width$}  {:<28} {:<8} {:>14} {:>14}",
            t.name.escape_debug().to_string(),
            format!("{:?}", t.dims),
            t.ty.name(),
            t.n_bytes,
            t.offset
        );
    }
    let by_type = totals(f);
    let params: u64 = by_type.values().map(|v| v.1).sum();
    let bytes: u64 = by_type.values().map(|v| v.2).sum();
    let _ = writeln!(
        s,
        "\ntotals: {} tensors, {params} parameters ({:.3} B), {bytes} bytes of tensor data",
        f.tensors().len(),
        params as f64 / 1e9
    );
    for (ty, (n, elements, bytes)) in &by_type {
        let _ = writeln!(
            s,
            "  {:<8} {n:>5} tensors {elements:>14} parameters {bytes:>14} bytes",
            ty.name()
        );
    }
    s
}

fn type_text(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}; {}]", array_type(a), a.len()),
        v => v.value_type().name().to_string(),
    }
}

fn array_type(a: &Array) -> String {
    match a {
        Array::Array(inner) => match inner.first() {
            Some(first) => format!("[{}]", array_type(first)),
            None => "array".to_string(),
        },
        a => a.element_type().name().to_string(),
    }
}

/// Strings longer than this are cut in text output.
const MAX_STRING_CHARS: usize = 96;

fn value_text(v: &Value, items: usize) -> String {
    match v {
        Value::String(s) => {
            let n = s.chars().count();
            if n > MAX_STRING_CHARS {
                let head: String = s.chars().take(MAX_STRING_CHARS).collect();
                format!("{head:?}… ({n} chars)")
            } else {
                format!("{s:?}")
            }
        }
        Value::Array(a) => {
            let shown: Vec<String> = (0..a.len().min(items))
                .filter_map(|i| a.get(i))
                .map(|x| value_text(&x, items))
                .collect();
            let more = if a.len() > items { ", …" } else { "" };
            format!("[{}{more}]", shown.join(", "))
        }
        Value::U8(x) => x.to_string(),
        Value::I8(x) => x.to_string(),
        Value::U16(x) => x.to_string(),
        Value::I16(x) => x.to_string(),
        Value::U32(x) => x.to_string(),
        Value::I32(x) => x.to_string(),
        Value::U64(x) => x.to_string(),
        Value::I64(x) => x.to_string(),
        Value::F32(x) => x.to_string(),
        Value::F64(x) => x.to_string(),
        Value::Bool(x) => x.to_string(),
    }
}

fn float_json(x: f64) -> Json {
    if x.is_finite() {
        json!(x)
    } else {
        // JSON has no NaN or infinity.
        json!(x.to_string())
    }
}

fn value_json(v: &Value, items: usize) -> Json {
    match v {
        Value::Array(a) => json!({
            "element_type": array_type(a),
            "len": a.len(),
            "head": (0..a.len().min(items))
                .filter_map(|i| a.get(i))
                .map(|x| value_json(&x, items))
                .collect::<Vec<_>>(),
        }),
        Value::String(s) => json!(s),
        Value::U8(x) => json!(x),
        Value::I8(x) => json!(x),
        Value::U16(x) => json!(x),
        Value::I16(x) => json!(x),
        Value::U32(x) => json!(x),
        Value::I32(x) => json!(x),
        Value::U64(x) => json!(x),
        Value::I64(x) => json!(x),
        Value::F32(x) => float_json(f64::from(*x)),
        Value::F64(x) => float_json(*x),
        Value::Bool(x) => json!(x),
    }
}

fn tensor_json(t: &TensorInfo) -> Json {
    json!({
        "name": t.name,
        "dims": t.dims,
        "type": t.ty.name(),
        "n_elements": t.n_elements(),
        "n_bytes": t.n_bytes,
        "offset": t.offset,
    })
}

fn to_json(f: &GgufFile, args: &InspectArgs) -> Json {
    let by_type = totals(f);
    json!({
        "path": args.model.display().to_string(),
        "version": f.version(),
        "file_bytes": f.bytes().len(),
        "alignment": f.alignment(),
        "data_offset": f.data_offset(),
        "metadata": f.metadata().iter().map(|(k, v)| json!({
            "key": k,
            "type": v.value_type().name(),
            "value": value_json(v, args.array_items),
        })).collect::<Vec<_>>(),
        "tensors": f.tensors().iter().map(tensor_json).collect::<Vec<_>>(),
        "quantization": crate::quant_summary::json(f),
        "totals": {
            "tensors": f.tensors().len(),
            "parameters": by_type.values().map(|v| v.1).sum::<u64>(),
            "bytes": by_type.values().map(|v| v.2).sum::<u64>(),
            "by_type": by_type.iter().map(|(ty, (n, e, b))| json!({
                "type": ty.name(), "tensors": n, "parameters": e, "bytes": b,
            })).collect::<Vec<_>>(),
        },
    })
}
