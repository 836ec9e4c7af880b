//! Metadata values: the thirteen GGUF value types, scalars and (nested) arrays.
//!
//! Arrays of scalars are stored as typed vectors (`Vec<u32>`, not `Vec<Value>`), so a
//! parsed array never takes more memory than a small constant times its size in the file.

use std::fmt;

/// A GGUF metadata value type, with the id GGUF gives it as discriminant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ValueType {
    /// `GGUF_TYPE_UINT8`.
    U8 = 0,
    /// `GGUF_TYPE_INT8`.
    I8 = 1,
    /// `GGUF_TYPE_UINT16`.
    U16 = 2,
    /// `GGUF_TYPE_INT16`.
    I16 = 3,
    /// `GGUF_TYPE_UINT32`.
    U32 = 4,
    /// `GGUF_TYPE_INT32`.
    I32 = 5,
    /// `GGUF_TYPE_FLOAT32`.
    F32 = 6,
    /// `GGUF_TYPE_BOOL` (one byte, 0 or 1).
    Bool = 7,
    /// `GGUF_TYPE_STRING` (u64 length, UTF-8 bytes).
    String = 8,
    /// `GGUF_TYPE_ARRAY` (u32 element type, u64 count, elements).
    Array = 9,
    /// `GGUF_TYPE_UINT64`.
    U64 = 10,
    /// `GGUF_TYPE_INT64`.
    I64 = 11,
    /// `GGUF_TYPE_FLOAT64`.
    F64 = 12,
}

impl ValueType {
    /// The type for a GGUF id, or `None` for an id GGUF does not define.
    pub fn from_id(id: u32) -> Option<Self> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The GGUF id.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Bytes one value takes in the file, for fixed-size types (`None` for strings and
    /// arrays).
    pub fn fixed_size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// The fewest bytes one value can take in the file: a string needs its u64 length, an
    /// array its u32 type and u64 count.
    pub fn min_size(self) -> usize {
        match self {
            ValueType::String => 8,
            ValueType::Array => 12,
            t => t.fixed_size().unwrap_or(1),
        }
    }

    /// A short lowercase name (`"u32"`, `"string"`, `"array"`).
    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// `bool`.
    Bool(bool),
    /// UTF-8 string.
    String(String),
    /// Array, possibly of arrays.
    Array(Array),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
}

impl Value {
    /// The value's GGUF type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// A description of the type for error messages: `"u32"`, or `"array of string"`.
    pub fn type_description(&self) -> String {
        match self {
            Value::Array(a) => format!("array of {}", a.element_type()),
            v => v.value_type().name().to_string(),
        }
    }

    /// The value as an unsigned integer when it is an integer of any width that is not
    /// negative (llama.cpp-style leniency for counts written with varying types).
    pub fn as_u64_lenient(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// An array value: a typed vector per element type. Empty arrays keep their element type.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    /// `u8` elements.
    U8(Vec<u8>),
    /// `i8` elements.
    I8(Vec<i8>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `i16` elements.
    I16(Vec<i16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `f32` elements.
    F32(Vec<f32>),
    /// `bool` elements.
    Bool(Vec<bool>),
    /// String elements.
    String(Vec<String>),
    /// Array elements; each inner array has its own element type.
    Array(Vec<Array>),
    /// `u64` elements.
    U64(Vec<u64>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `f64` elements.
    F64(Vec<f64>),
}

macro_rules! for_each_array {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            Array::U8($v) => $body,
            Array::I8($v) => $body,
            Array::U16($v) => $body,
            Array::I16($v) => $body,
            Array::U32($v) => $body,
            Array::I32($v) => $body,
            Array::F32($v) => $body,
            Array::Bool($v) => $body,
            Array::String($v) => $body,
            Array::Array($v) => $body,
            Array::U64($v) => $body,
            Array::I64($v) => $body,
            Array::F64($v) => $body,
        }
    };
}

impl Array {
    /// The element type.
    pub fn element_type(&self) -> ValueType {
        match self {
            Array::U8(_) => ValueType::U8,
            Array::I8(_) => ValueType::I8,
            Array::U16(_) => ValueType::U16,
            Array::I16(_) => ValueType::I16,
            Array::U32(_) => ValueType::U32,
            Array::I32(_) => ValueType::I32,
            Array::F32(_) => ValueType::F32,
            Array::Bool(_) => ValueType::Bool,
            Array::String(_) => ValueType::String,
            Array::Array(_) => ValueType::Array,
            Array::U64(_) => ValueType::U64,
            Array::I64(_) => ValueType::I64,
            Array::F64(_) => ValueType::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        for_each_array!(self, v => v.len())
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `index` as a [`Value`] (cloned), or `None` past the end.
    pub fn get(&self, index: usize) -> Option<Value> {
        Some(match self {
            Array::U8(v) => Value::U8(*v.get(index)?),
            Array::I8(v) => Value::I8(*v.get(index)?),
            Array::U16(v) => Value::U16(*v.get(index)?),
            Array::I16(v) => Value::I16(*v.get(index)?),
            Array::U32(v) => Value::U32(*v.get(index)?),
            Array::I32(v) => Value::I32(*v.get(index)?),
            Array::F32(v) => Value::F32(*v.get(index)?),
            Array::Bool(v) => Value::Bool(*v.get(index)?),
            Array::String(v) => Value::String(v.get(index)?.clone()),
            Array::Array(v) => Value::Array(v.get(index)?.clone()),
            Array::U64(v) => Value::U64(*v.get(index)?),
            Array::I64(v) => Value::I64(*v.get(index)?),
            Array::F64(v) => Value::F64(*v.get(index)?),
        })
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),* $(,)?) => {
        $(
            impl From<$t> for Value {
                fn from(v: $t) -> Self {
                    Value::$variant(v)
                }
            }
            impl From<Vec<$t>> for Array {
                fn from(v: Vec<$t>) -> Self {
                    Array::$variant(v)
                }
            }
            impl From<Vec<$t>> for Value {
                fn from(v: Vec<$t>) -> Self {
                    Value::Array(Array::$variant(v))
                }
            }
        )*
    };
}

value_from! {
    u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, f32 => F32,
    bool => Bool, String => String, u64 => U64, i64 => I64, f64 => F64,
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_string())
    }
}

impl From<Array> for Value {
    fn from(v: Array) -> Self {
        Value::Array(v)
    }
}

impl From<Vec<Array>> for Array {
    fn from(v: Vec<Array>) -> Self {
        Array::Array(v)
    }
}

impl From<Vec<&str>> for Value {
    fn from(v: Vec<&str>) -> Self {
        Value::Array(Array::String(v.into_iter().map(str::to_string).collect()))
    }
}
