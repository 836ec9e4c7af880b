//! Parsing and validating everything before the data section: magic, version, metadata,
//! tensor infos, alignment and the data section's start.

use std::collections::HashMap;

use lacuna_quant::GgmlType;

use crate::cursor::Cursor;
use crate::{
    ALIGNMENT_KEY, Array, DEFAULT_ALIGNMENT, Error, MAGIC, MAX_ARRAY_DEPTH, Metadata, Result,
    Value, ValueType,
};

/// The fewest bytes a metadata entry takes: key length, value type, a one-byte value.
const MIN_KV_SIZE: usize = 8 + 4 + 1;
/// The fewest bytes a tensor info takes: name length, n_dims, one dim, type, offset.
const MIN_TENSOR_INFO_SIZE: usize = 8 + 4 + 8 + 4 + 8;

/// One tensor's entry in the file's tensor table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name.
    pub name: String,
    /// Dimensions in ggml order: `dims[0]` is `ne[0]`, the contiguous row length.
    pub dims: Vec<u64>,
    /// Element type.
    pub ty: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    /// Size of the data in bytes.
    pub n_bytes: u64,
}

impl TensorInfo {
    /// Number of elements (product of the dims).
    pub fn n_elements(&self) -> u64 {
        // Validated not to overflow when parsed.
        self.dims.iter().product()
    }
}

/// Elements and bytes of a tensor of `dims` and `ty`, or which validation fails.
pub(crate) enum ShapeError {
    DimCount,
    ZeroDim(usize),
    Overflow(&'static str),
    RowNotBlockMultiple,
}

/// Checks a shape as the reader does and returns its byte size.
pub(crate) fn shape_bytes(dims: &[u64], ty: GgmlType) -> Result<u64, ShapeError> {
    if !(1..=4).contains(&dims.len()) {
        return Err(ShapeError::DimCount);
    }
    let mut elements: u64 = 1;
    for (axis, &d) in dims.iter().enumerate() {
        if d == 0 {
            return Err(ShapeError::ZeroDim(axis));
        }
        elements = elements
            .checked_mul(d)
            .filter(|&e| e <= i64::MAX as u64)
            .ok_or(ShapeError::Overflow("element count"))?;
    }
    if dims[0] % ty.block_size() as u64 != 0 {
        return Err(ShapeError::RowNotBlockMultiple);
    }
    let row = ty
        .row_bytes(dims[0])
        .ok_or(ShapeError::Overflow("row byte size"))?;
    // The product of the other dims cannot overflow: it divides `elements`.
    let rows: u64 = dims[1..].iter().product();
    row.checked_mul(rows)
        .filter(|&b| b <= i64::MAX as u64)
        .ok_or(ShapeError::Overflow("byte size"))
}

/// Everything a GGUF file holds before its tensor data, validated against the file's
/// length.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    version: u32,
    alignment: u64,
    data_offset: u64,
    metadata: Metadata,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
}

impl Header {
    /// Parses and validates `bytes`, the whole file. Tensor data is not read, only its
    /// bounds are checked against `bytes.len()`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut c = Cursor::new(bytes);
        let magic = bytes.get(..4).unwrap_or(bytes);
        if magic != MAGIC {
            return Err(Error::BadMagic {
                found: magic.to_vec(),
            });
        }
        c.take(4, "magic")?;
        let version = c.u32("version")?;
        if version != 2 && version != 3 {
            if version & 0xFFFF == 0 && version != 0 {
                return Err(Error::BigEndian { raw: version });
            }
            return Err(Error::UnsupportedVersion { version });
        }
        let n_tensors = c.count("tensor count", MIN_TENSOR_INFO_SIZE)?;
        let n_kv = c.count("metadata entry count", MIN_KV_SIZE)?;

        let mut metadata = Metadata::new();
        let mut alignment_at = None;
        for _ in 0..n_kv {
            let at = c.offset();
            let key = c.string("metadata key")?;
            let ty = value_type(&mut c)?;
            let value = read_value(&mut c, ty, 0)?;
            if key == ALIGNMENT_KEY {
                alignment_at = Some(at);
            }
            metadata
                .insert(key, value)
                .map_err(|(key, _)| Error::DuplicateKey { offset: at, key })?;
        }
        let alignment = match (alignment_at, metadata.value(ALIGNMENT_KEY)) {
            (Some(offset), Some(value)) => match *value {
                Value::U32(a) if a.is_power_of_two() => u64::from(a),
                Value::U32(a) => {
                    return Err(Error::BadAlignment {
                        offset,
                        value: a.into(),
                    });
                }
                ref other => {
                    return Err(Error::AlignmentType {
                        offset,
                        found: other.value_type(),
                    });
                }
            },
            _ => DEFAULT_ALIGNMENT,
        };

        let mut tensors = Vec::with_capacity(n_tensors);
        let mut tensor_index = HashMap::with_capacity(n_tensors);
        let mut offset_fields = Vec::with_capacity(n_tensors);
        for i in 0..n_tensors {
            let (info, offset_field) = read_tensor_info(&mut c, alignment)?;
            let at = offset_field.0;
            if tensor_index.contains_key(&info.name) {
                return Err(Error::DuplicateTensor {
                    offset: at,
                    name: info.name,
                });
            }
            tensor_index.insert(info.name.clone(), i);
            tensors.push(info);
            offset_fields.push(offset_field.1);
        }

        let data_offset = c.position_aligned(alignment);
        let file_len = bytes.len() as u64;
        check_bounds(&tensors, &offset_fields, data_offset, file_len)?;
        check_overlap(&tensors)?;

        Ok(Self {
            version,
            alignment,
            data_offset,
            metadata,
            tensors,
            tensor_index,
        })
    }

    /// The GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The alignment of tensor data (`general.alignment`, default 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Offset of the data section from the start of the file.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The metadata table.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The tensor table, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The tensor called `name`, or [`Error::MissingTensor`].
    pub fn tensor(&self, name: &str) -> Result<&TensorInfo> {
        self.tensor_index
            .get(name)
            .map(|&i| &self.tensors[i])
            .ok_or_else(|| Error::MissingTensor {
                name: name.to_string(),
            })
    }

    /// Absolute byte range of a tensor's data in the file (validated to lie inside it).
    pub fn tensor_range(&self, info: &TensorInfo) -> std::ops::Range<usize> {
        // Validated at parse time: data_offset + offset + n_bytes <= file length.
        let start = (self.data_offset + info.offset) as usize;
        start..start + info.n_bytes as usize
    }
}

fn value_type(c: &mut Cursor<'_>) -> Result<ValueType> {
    let offset = c.offset();
    let id = c.u32("value type")?;
    ValueType::from_id(id).ok_or(Error::UnknownValueType { offset, id })
}

fn read_bool(c: &mut Cursor<'_>) -> Result<bool> {
    let offset = c.offset();
    match c.u8("bool")? {
        0 => Ok(false),
        1 => Ok(true),
        value => Err(Error::InvalidBool { offset, value }),
    }
}

fn read_value(c: &mut Cursor<'_>, ty: ValueType, depth: usize) -> Result<Value> {
    Ok(match ty {
        ValueType::U8 => Value::U8(c.u8("u8")?),
        ValueType::I8 => Value::I8(c.u8("i8")? as i8),
        ValueType::U16 => Value::U16(c.u16("u16")?),
        ValueType::I16 => Value::I16(c.u16("i16")? as i16),
        ValueType::U32 => Value::U32(c.u32("u32")?),
        ValueType::I32 => Value::I32(c.u32("i32")? as i32),
        ValueType::F32 => Value::F32(f32::from_bits(c.u32("f32")?)),
        ValueType::Bool => Value::Bool(read_bool(c)?),
        ValueType::String => Value::String(c.string("string")?),
        ValueType::Array => Value::Array(read_array(c, depth + 1)?),
        ValueType::U64 => Value::U64(c.u64("u64")?),
        ValueType::I64 => Value::I64(c.u64("i64")? as i64),
        ValueType::F64 => Value::F64(f64::from_bits(c.u64("f64")?)),
    })
}

/// Reads `n` fixed-size elements of `size` bytes each; `n` was checked against the file.
fn fixed<T, const N: usize>(
    c: &mut Cursor<'_>,
    n: usize,
    what: &'static str,
    f: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    let bytes = c.take((n * N) as u64, what)?;
    Ok(bytes
        .chunks_exact(N)
        .map(|ch| {
            let mut a = [0u8; N];
            a.copy_from_slice(ch);
            f(a)
        })
        .collect())
}

/// An array at nesting `depth` (1 for a top-level array); deeper than
/// [`MAX_ARRAY_DEPTH`] is an error, so hostile nesting cannot exhaust the stack.
fn read_array(c: &mut Cursor<'_>, depth: usize) -> Result<Array> {
    let offset = c.offset();
    if depth > MAX_ARRAY_DEPTH {
        return Err(Error::NestingTooDeep {
            offset,
            max: MAX_ARRAY_DEPTH,
        });
    }
    let ty = value_type(c)?;
    let n = c.count("array length", ty.min_size())?;
    Ok(match ty {
        ValueType::U8 => Array::U8(c.take(n as u64, "u8 array")?.to_vec()),
        ValueType::I8 => Array::I8(fixed(c, n, "i8 array", i8::from_le_bytes)?),
        ValueType::U16 => Array::U16(fixed(c, n, "u16 array", u16::from_le_bytes)?),
        ValueType::I16 => Array::I16(fixed(c, n, "i16 array", i16::from_le_bytes)?),
        ValueType::U32 => Array::U32(fixed(c, n, "u32 array", u32::from_le_bytes)?),
        ValueType::I32 => Array::I32(fixed(c, n, "i32 array", i32::from_le_bytes)?),
        ValueType::F32 => Array::F32(fixed(c, n, "f32 array", f32::from_le_bytes)?),
        ValueType::U64 => Array::U64(fixed(c, n, "u64 array", u64::from_le_bytes)?),
        ValueType::I64 => Array::I64(fixed(c, n, "i64 array", i64::from_le_bytes)?),
        ValueType::F64 => Array::F64(fixed(c, n, "f64 array", f64::from_le_bytes)?),
        ValueType::Bool => Array::Bool((0..n).map(|_| read_bool(c)).collect::<Result<_>>()?),
        ValueType::String => {
            Array::String((0..n).map(|_| c.string("string")).collect::<Result<_>>()?)
        }
        ValueType::Array => Array::Array(
            (0..n)
                .map(|_| read_array(c, depth + 1))
                .collect::<Result<_>>()?,
        ),
    })
}

/// A tensor info, plus (offset of the info, offset of its data-offset field).
fn read_tensor_info(c: &mut Cursor<'_>, alignment: u64) -> Result<(TensorInfo, (u64, u64))> {
    let at = c.offset();
    let name = c.string("tensor name")?;
    let dims_at = c.offset();
    let n_dims = c.u32("tensor n_dims")?;
    if !(1..=4).contains(&n_dims) {
        return Err(Error::BadDimCount {
            offset: dims_at,
            tensor: name,
            n_dims,
        });
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for axis in 0..n_dims as usize {
        let dim_at = c.offset();
        let d = c.u64("tensor dimension")?;
        if d == 0 {
            return Err(Error::ZeroDim {
                offset: dim_at,
                tensor: name,
                axis,
            });
        }
        dims.push(d);
    }
    let type_at = c.offset();
    let id = c.u32("tensor type")?;
    let ty = GgmlType::from_id(id).map_err(|_| Error::UnknownGgmlType {
        offset: type_at,
        tensor: name.clone(),
        id,
    })?;
    let offset_at = c.offset();
    let offset = c.u64("tensor data offset")?;
    let n_bytes = match shape_bytes(&dims, ty) {
        Ok(n) => n,
        Err(ShapeError::RowNotBlockMultiple) => {
            return Err(Error::RowNotBlockMultiple {
                offset: at,
                tensor: name,
                ne0: dims[0],
                ty,
                block_size: ty.block_size(),
            });
        }
        Err(ShapeError::Overflow(what)) => {
            return Err(Error::SizeOverflow {
                offset: at,
                tensor: name,
                what,
            });
        }
        // Checked above field by field with precise offsets; kept for completeness.
        Err(ShapeError::DimCount) => {
            return Err(Error::BadDimCount {
                offset: dims_at,
                tensor: name,
                n_dims,
            });
        }
        Err(ShapeError::ZeroDim(axis)) => {
            return Err(Error::ZeroDim {
                offset: dims_at,
                tensor: name,
                axis,
            });
        }
    };
    if offset % alignment != 0 {
        return Err(Error::MisalignedTensor {
            offset: offset_at,
            tensor: name,
            data_offset: offset,
            alignment,
        });
    }
    let info = TensorInfo {
        name,
        dims,
        ty,
        offset,
        n_bytes,
    };
    Ok((info, (at, offset_at)))
}

fn check_bounds(
    tensors: &[TensorInfo],
    offset_fields: &[u64],
    data_offset: u64,
    file_len: u64,
) -> Result<()> {
    for (t, &field) in tensors.iter().zip(offset_fields) {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(t.n_bytes));
        if end.is_none_or(|e| e > file_len) {
            return Err(Error::TensorOutOfBounds {
                offset: field,
                tensor: t.name.clone(),
                data_offset: t.offset,
                n_bytes: t.n_bytes,
                file_len,
            });
        }
    }
    Ok(())
}

fn check_overlap(tensors: &[TensorInfo]) -> Result<()> {
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    for pair in order.windows(2) {
        // No overflow: both lie inside the file (checked before).
        if pair[0].offset + pair[0].n_bytes > pair[1].offset {
            return Err(Error::TensorOverlap {
                first: pair[0].name.clone(),
                second: pair[1].name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
