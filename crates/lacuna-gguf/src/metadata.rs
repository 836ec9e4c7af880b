//! The metadata table with typed accessors that name the key on error.

use std::collections::HashMap;

use crate::{Array, Error, Result, Value};

/// The key-value metadata of a GGUF file, in file order, with lookup by key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    entries: Vec<(String, Value)>,
    index: HashMap<String, usize>,
}

impl Metadata {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key`; gives the value back when the key is already present.
    pub(crate) fn insert(&mut self, key: String, value: Value) -> Result<(), (String, Value)> {
        if self.index.contains_key(&key) {
            return Err((key, value));
        }
        self.index.insert(key.clone(), self.entries.len());
        self.entries.push((key, value));
        Ok(())
    }

    /// Replaces the value of `key`, or adds it at the end.
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        match self.index.get(key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.to_string(), self.entries.len());
                self.entries.push((key.to_string(), value));
            }
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// The keys and values in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The raw value of `key`, if present.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// The value of `key` as `T`: [`Error::MissingKey`] when absent, [`Error::WrongType`]
    /// (naming the key, the expected and the found type) when of another type.
    ///
    /// ```
    /// # use lacuna_gguf::{GgufWriter, GgufFile};
    /// let mut w = GgufWriter::new();
    /// w.add_metadata("llada.block_count", 32u32)?;
    /// let f = GgufFile::from_vec(w.to_vec()?)?;
    /// let n: u32 = f.metadata().get("llada.block_count")?;
    /// assert_eq!(n, 32);
    /// assert!(f.metadata().get::<&str>("llada.block_count").is_err());
    /// # Ok::<(), lacuna_gguf::Error>(())
    /// ```
    pub fn get<'a, T: FromValue<'a>>(&'a self, key: &str) -> Result<T> {
        self.get_opt(key)?.ok_or_else(|| Error::MissingKey {
            key: key.to_string(),
        })
    }

    /// Like [`Metadata::get`] but `Ok(None)` when the key is absent (still an error when
    /// present with another type).
    pub fn get_opt<'a, T: FromValue<'a>>(&'a self, key: &str) -> Result<Option<T>> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        T::from_value(value)
            .map(Some)
            .ok_or_else(|| Error::WrongType {
                key: key.to_string(),
                expected: T::EXPECTED,
                found: value.type_description(),
            })
    }

    /// Any non-negative integer value of `key` (u8 through i64) as `u64`, for keys that
    /// writers store with varying integer types.
    pub fn get_u64_lenient(&self, key: &str) -> Result<u64> {
        let value = self.value(key).ok_or_else(|| Error::MissingKey {
            key: key.to_string(),
        })?;
        value.as_u64_lenient().ok_or_else(|| Error::WrongType {
            key: key.to_string(),
            expected: "non-negative integer",
            found: value.type_description(),
        })
    }
}

macro_rules! getters {
    ($($name:ident, $opt:ident => $t:ty;)*) => {
        impl Metadata {
            $(
                #[doc = concat!("The value of `key` as `", stringify!($t), "` (see [`Metadata::get`]).")]
                pub fn $name(&self, key: &str) -> Result<$t> {
                    self.get(key)
                }
                #[doc = concat!("The value of `key` as `", stringify!($t), "`, `None` when absent (see [`Metadata::get_opt`]).")]
                pub fn $opt(&self, key: &str) -> Result<Option<$t>> {
                    self.get_opt(key)
                }
            )*
        }
    };
}

getters! {
    get_u8, get_u8_opt => u8;
    get_i8, get_i8_opt => i8;
    get_u16, get_u16_opt => u16;
    get_i16, get_i16_opt => i16;
    get_u32, get_u32_opt => u32;
    get_i32, get_i32_opt => i32;
    get_u64, get_u64_opt => u64;
    get_i64, get_i64_opt => i64;
    get_f32, get_f32_opt => f32;
    get_f64, get_f64_opt => f64;
    get_bool, get_bool_opt => bool;
    get_str, get_str_opt => &str;
    get_array, get_array_opt => &Array;
    get_str_array, get_str_array_opt => &[String];
    get_f32_array, get_f32_array_opt => &[f32];
    get_i32_array, get_i32_array_opt => &[i32];
    get_u32_array, get_u32_array_opt => &[u32];
}

/// A Rust type a metadata value can be read as, exactly (no numeric conversion).
pub trait FromValue<'a>: Sized {
    /// How the type is named in [`Error::WrongType`].
    const EXPECTED: &'static str;
    /// The value as `Self`, or `None` when it has another type.
    fn from_value(value: &'a Value) -> Option<Self>;
}

macro_rules! scalar_from_value {
    ($($t:ty => $variant:ident, $name:literal;)*) => {
        $(
            impl FromValue<'_> for $t {
                const EXPECTED: &'static str = $name;
                fn from_value(value: &Value) -> Option<Self> {
                    match value {
                        Value::$variant(v) => Some(*v),
                        _ => None,
                    }
                }
            }
        )*
    };
}

scalar_from_value! {
    u8 => U8, "u8"; i8 => I8, "i8"; u16 => U16, "u16"; i16 => I16, "i16";
    u32 => U32, "u32"; i32 => I32, "i32"; u64 => U64, "u64"; i64 => I64, "i64";
    f32 => F32, "f32"; f64 => F64, "f64"; bool => Bool, "bool";
}

macro_rules! slice_from_value {
    ($($t:ty => $variant:ident, $name:literal;)*) => {
        $(
            impl<'a> FromValue<'a> for &'a [$t] {
                const EXPECTED: &'static str = $name;
                fn from_value(value: &'a Value) -> Option<Self> {
                    match value {
                        Value::Array(Array::$variant(v)) => Some(v.as_slice()),
                        _ => None,
                    }
                }
            }
        )*
    };
}

slice_from_value! {
    u8 => U8, "array of u8"; i8 => I8, "array of i8"; u16 => U16, "array of u16";
    i16 => I16, "array of i16"; u32 => U32, "array of u32"; i32 => I32, "array of i32";
    u64 => U64, "array of u64"; i64 => I64, "array of i64"; f32 => F32, "array of f32";
    f64 => F64, "array of f64"; bool => Bool, "array of bool";
    String => String, "array of string"; Array => Array, "array of array";
}

impl<'a> FromValue<'a> for &'a str {
    const EXPECTED: &'static str = "string";
    fn from_value(value: &'a Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl<'a> FromValue<'a> for &'a Array {
    const EXPECTED: &'static str = "array";
    fn from_value(value: &'a Value) -> Option<Self> {
        match value {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

impl<'a> FromValue<'a> for &'a Value {
    const EXPECTED: &'static str = "any";
    fn from_value(value: &'a Value) -> Option<Self> {
        Some(value)
    }
}
