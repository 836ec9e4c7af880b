//! [`GgufWriter`]: builds a GGUF v3 file from metadata and tensors, used by tests and
//! fixture generators.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use lacuna_quant::GgmlType;

use crate::header::{ShapeError, shape_bytes};
use crate::{ALIGNMENT_KEY, Array, DEFAULT_ALIGNMENT, Error, MAGIC, Metadata, Result, Value};

#[derive(Debug, Clone)]
enum Data {
    Bytes(Vec<u8>),
    /// All zero: written as a hole by [`GgufWriter::write_file`].
    Zeroed,
}

#[derive(Debug, Clone)]
struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    n_bytes: u64,
    data: Data,
}

/// Builds a GGUF v3 file: metadata in insertion order, tensors in insertion order, each
/// tensor's data aligned to the file's alignment (default 32) and padded after.
///
/// ```
/// use lacuna_gguf::{GgufFile, GgufWriter};
/// use lacuna_quant::GgmlType;
///
/// let mut w = GgufWriter::new();
/// w.add_metadata("general.architecture", "llada")?;
/// let data: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
/// w.add_tensor("x", &[3], GgmlType::F32, data)?;
/// let f = GgufFile::from_vec(w.to_vec()?)?;
/// assert_eq!(f.tensor_view::<f32>("x")?, &[1.0, 2.0, 3.0]);
/// # Ok::<(), lacuna_gguf::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GgufWriter {
    metadata: Metadata,
    alignment: u64,
    tensors: Vec<PendingTensor>,
    names: HashSet<String>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl GgufWriter {
    /// An empty file with the default alignment.
    pub fn new() -> Self {
        Self {
            metadata: Metadata::new(),
            alignment: DEFAULT_ALIGNMENT,
            tensors: Vec::new(),
            names: HashSet::new(),
        }
    }

    /// Sets the data alignment and records it as `general.alignment` (u32). Must be a
    /// nonzero power of two.
    pub fn set_alignment(&mut self, alignment: u32) -> Result<&mut Self> {
        if !alignment.is_power_of_two() {
            return Err(Error::BadAlignment {
                offset: 0,
                value: alignment.into(),
            });
        }
        self.alignment = alignment.into();
        self.metadata.set(ALIGNMENT_KEY, Value::U32(alignment));
        Ok(self)
    }

    /// The metadata added so far, in insertion order.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Adds a metadata entry. Duplicate keys are an error; `general.alignment` must be a
    /// power-of-two u32 and sets the alignment.
    pub fn add_metadata(&mut self, key: &str, value: impl Into<Value>) -> Result<&mut Self> {
        let value = value.into();
        if key == ALIGNMENT_KEY {
            if self.metadata.contains_key(key) {
                return Err(Error::DuplicateKey {
                    offset: 0,
                    key: key.to_string(),
                });
            }
            return match value {
                Value::U32(a) => self.set_alignment(a),
                other => Err(Error::AlignmentType {
                    offset: 0,
                    found: other.value_type(),
                }),
            };
        }
        self.metadata
            .insert(key.to_string(), value)
            .map_err(|(key, _)| Error::DuplicateKey { offset: 0, key })?;
        Ok(self)
    }

    /// Adds a tensor with dims in ggml order (`dims[0]` = row length) and its raw bytes,
    /// which must be exactly the size the dims and type imply.
    pub fn add_tensor(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
        data: impl Into<Vec<u8>>,
    ) -> Result<&mut Self> {
        let data = data.into();
        let n_bytes = self.check_tensor(name, dims, ty)?;
        if data.len() as u64 != n_bytes {
            return Err(Error::TensorSize {
                name: name.to_string(),
                expected: n_bytes,
                got: data.len() as u64,
            });
        }
        self.push(name, dims, ty, n_bytes, Data::Bytes(data));
        Ok(self)
    }

    /// Adds an all-zero tensor. [`GgufWriter::write_file`] leaves its data as a hole in a
    /// sparse file, so multi-gigabyte test files cost no disk.
    pub fn add_tensor_zeroed(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
    ) -> Result<&mut Self> {
        let n_bytes = self.check_tensor(name, dims, ty)?;
        self.push(name, dims, ty, n_bytes, Data::Zeroed);
        Ok(self)
    }

    fn check_tensor(&self, name: &str, dims: &[u64], ty: GgmlType) -> Result<u64> {
        if self.names.contains(name) {
            return Err(Error::DuplicateTensor {
                offset: 0,
                name: name.to_string(),
            });
        }
        shape_bytes(dims, ty).map_err(|e| match e {
            ShapeError::DimCount
            | ShapeError::ZeroDim(_)
            | ShapeError::Overflow(_)
            | ShapeError::RowNotBlockMultiple => Error::InvalidShape {
                name: name.to_string(),
                dims: dims.to_vec(),
                ty,
            },
        })
    }

    fn push(&mut self, name: &str, dims: &[u64], ty: GgmlType, n_bytes: u64, data: Data) {
        self.names.insert(name.to_string());
        self.tensors.push(PendingTensor {
            name: name.to_string(),
            dims: dims.to_vec(),
            ty,
            n_bytes,
            data,
        });
    }

    /// The file as bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file to `w` (zeroed tensors as explicit zeros).
    pub fn write_to<W: Write>(&self, w: &mut W) -> Result<()> {
        self.emit(w, |w, n| write_zeros(w, n)).map(drop)
    }

    /// Writes the file to `path`, leaving zeroed tensors as holes (a sparse file).
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut w = BufWriter::new(File::create(path)?);
        let end = self.emit(&mut w, |w, n| {
            let n = i64::try_from(n).map_err(std::io::Error::other)?;
            w.seek(SeekFrom::Current(n)).map(drop)
        })?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.set_len(end)?;
        Ok(())
    }

    /// Writes everything, calling `skip(w, n)` for `n` zero bytes; returns the file length.
    fn emit<W: Write>(
        &self,
        w: &mut W,
        skip: impl Fn(&mut W, u64) -> std::io::Result<()>,
    ) -> Result<u64> {
        let mut header = Vec::new();
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&3u32.to_le_bytes());
        header.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        header.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in self.metadata.iter() {
            put_string(&mut header, key);
            header.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut header, value);
        }
        let mut offset = 0u64;
        for t in &self.tensors {
            put_string(&mut header, &t.name);
            header.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                header.extend_from_slice(&d.to_le_bytes());
            }
            header.extend_from_slice(&(t.ty as u32).to_le_bytes());
            header.extend_from_slice(&offset.to_le_bytes());
            offset = (offset + t.n_bytes).next_multiple_of(self.alignment);
        }
        w.write_all(&header)?;
        let header_len = header.len() as u64 + padding(header.len() as u64, self.alignment);
        write_zeros(w, padding(header.len() as u64, self.alignment))?;
        for t in &self.tensors {
            match &t.data {
                Data::Bytes(b) => w.write_all(b)?,
                Data::Zeroed => skip(w, t.n_bytes)?,
            }
            write_zeros(w, padding(t.n_bytes, self.alignment))?;
        }
        w.flush()?;
        Ok(header_len + offset)
    }
}

fn padding(len: u64, alignment: u64) -> u64 {
    len.next_multiple_of(alignment) - len
}

fn write_zeros<W: Write>(w: &mut W, mut n: u64) -> std::io::Result<()> {
    let zeros = [0u8; 4096];
    while n > 0 {
        let k = n.min(zeros.len() as u64) as usize;
        w.write_all(&zeros[..k])?;
        n -= k as u64;
    }
    Ok(())
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(s) => put_string(out, s),
        Value::Array(a) => put_array(out, a),
        Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
    }
}

fn put_array(out: &mut Vec<u8>, a: &Array) {
    out.extend_from_slice(&a.element_type().id().to_le_bytes());
    out.extend_from_slice(&(a.len() as u64).to_le_bytes());
    macro_rules! le {
        ($v:expr) => {
            for x in $v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        };
    }
    match a {
        Array::U8(v) => out.extend_from_slice(v),
        Array::I8(v) => le!(v),
        Array::U16(v) => le!(v),
        Array::I16(v) => le!(v),
        Array::U32(v) => le!(v),
        Array::I32(v) => le!(v),
        Array::F32(v) => le!(v),
        Array::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
        Array::String(v) => v.iter().for_each(|s| put_string(out, s)),
        Array::Array(v) => v.iter().for_each(|inner| put_array(out, inner)),
        Array::U64(v) => le!(v),
        Array::I64(v) => le!(v),
        Array::F64(v) => le!(v),
    }
}
