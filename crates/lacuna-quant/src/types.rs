//! The ggml type table: one place for every type id llama.cpp defines, with its block size
//! (elements per block) and bytes per block. Ids that ggml removed (4, 5, 31–33, 36–38) are
//! unknown here, as they are to a current ggml.

use crate::Error;

/// Elements in a K-quant super-block (`QK_K` in ggml).
pub const QK_K: usize = 256;

/// The type table, every type once. Each row: `Variant = id, "ggml name", elements per
/// block, bytes per block, block struct, whether it dequantizes, whether it has a reference
/// quantizer, the activation type its scalar `vec_dot` multiplies it with`. `-` marks a
/// column the type lacks. [`GgmlType`]'s methods and the byte-level functions in
/// `dispatch.rs` are all expanded from these rows: `ggml_type_table!(callback, args..)`
/// calls `callback! { [args..] rows }`.
macro_rules! ggml_type_table {
    ($cb:ident $(, $($arg:tt)*)?) => {
        $cb! { [$($($arg)*)?]
        //  variant  id  name       elems bytes  block        deq  quant vec_dot
            F32 =     0, "f32",     1,    4,   f32,         yes, yes, F32;
            F16 =     1, "f16",     1,    2,   f16,         yes, yes, F16;
            Q4_0 =    2, "q4_0",    32,   18,  BlockQ4_0,   yes, yes, Q8_0;
            Q4_1 =    3, "q4_1",    32,   20,  BlockQ4_1,   yes, yes, Q8_1;
            Q5_0 =    6, "q5_0",    32,   22,  BlockQ5_0,   yes, yes, Q8_0;
            Q5_1 =    7, "q5_1",    32,   24,  BlockQ5_1,   yes, yes, Q8_1;
            Q8_0 =    8, "q8_0",    32,   34,  BlockQ8_0,   yes, yes, Q8_0;
            Q8_1 =    9, "q8_1",    32,   36,  BlockQ8_1,   yes, yes, -;
            Q2_K =   10, "q2_K",    QK_K, 84,  BlockQ2K,    yes, yes, Q8_K;
            Q3_K =   11, "q3_K",    QK_K, 110, BlockQ3K,    yes, yes, Q8_K;
            Q4_K =   12, "q4_K",    QK_K, 144, BlockQ4K,    yes, yes, Q8_K;
            Q5_K =   13, "q5_K",    QK_K, 176, BlockQ5K,    yes, yes, Q8_K;
            Q6_K =   14, "q6_K",    QK_K, 210, BlockQ6K,    yes, yes, Q8_K;
            Q8_K =   15, "q8_K",    QK_K, 292, BlockQ8K,    yes, yes, -;
            IQ2_XXS = 16, "iq2_xxs", QK_K, 66,  -,           no,  no,  -;
            IQ2_XS = 17, "iq2_xs",  QK_K, 74,  -,           no,  no,  -;
            IQ3_XXS = 18, "iq3_xxs", QK_K, 98,  -,           no,  no,  -;
            IQ1_S =  19, "iq1_s",   QK_K, 50,  -,           no,  no,  -;
            IQ4_NL = 20, "iq4_nl",  32,   18,  BlockIQ4NL,  yes, yes, Q8_0;
            IQ3_S =  21, "iq3_s",   QK_K, 110, -,           no,  no,  -;
            IQ2_S =  22, "iq2_s",   QK_K, 82,  -,           no,  no,  -;
            IQ4_XS = 23, "iq4_xs",  QK_K, 136, BlockIQ4XS,  yes, yes, Q8_K;
            I8 =     24, "i8",      1,    1,   -,           no,  no,  -;
            I16 =    25, "i16",     1,    2,   -,           no,  no,  -;
            I32 =    26, "i32",     1,    4,   -,           no,  no,  -;
            I64 =    27, "i64",     1,    8,   -,           no,  no,  -;
            F64 =    28, "f64",     1,    8,   -,           no,  no,  -;
            IQ1_M =  29, "iq1_m",   QK_K, 56,  -,           no,  no,  -;
            BF16 =   30, "bf16",    1,    2,   bf16,        yes, yes, BF16;
            TQ1_0 =  34, "tq1_0",   QK_K, 54,  BlockTQ1_0,  yes, yes, Q8_K;
            TQ2_0 =  35, "tq2_0",   QK_K, 66,  BlockTQ2_0,  yes, yes, Q8_K;
            MXFP4 =  39, "mxfp4",   32,   17,  BlockMXFP4,  yes, yes, Q8_0;
            NVFP4 =  40, "nvfp4",   64,   36,  BlockNVFP4,  yes, no,  -;
            Q1_0 =   41, "q1_0",    128,  18,  BlockQ1_0,   yes, no,  -;
            Q2_0 =   42, "q2_0",    64,   18,  BlockQ2_0,   yes, no,  -;
        }
    };
}
pub(crate) use ggml_type_table;

/// `true` for `yes`, `false` for `no` (a capability column of the table).
macro_rules! flag {
    (yes) => {
        true
    };
    (no) => {
        false
    };
}
pub(crate) use flag;

macro_rules! ggml_types {
    ([] $( $variant:ident = $id:literal, $name:literal, $block:tt, $bytes:literal,
           $b:tt, $deq:ident, $quant:ident, $dot:tt; )*) => {
        /// A ggml tensor element type, with ggml's numeric id as discriminant.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u32)]
        #[allow(non_camel_case_types)]
        pub enum GgmlType {
            $(
                #[doc = concat!("`GGML_TYPE_", $name, "` (id ", stringify!($id), ").")]
                $variant = $id,
            )*
        }

        impl GgmlType {
            /// Every known type, in id order.
            pub const ALL: &'static [GgmlType] = &[$(GgmlType::$variant),*];

            /// The type for a ggml id, or [`Error::UnknownType`].
            pub fn from_id(id: u32) -> Result<Self, Error> {
                match id {
                    $($id => Ok(GgmlType::$variant),)*
                    _ => Err(Error::UnknownType { id }),
                }
            }

            /// ggml's name for the type, as `ggml_type_name` prints it (`"q4_K"` style).
            pub const fn name(self) -> &'static str {
                match self { $(GgmlType::$variant => $name,)* }
            }

            /// Elements per block (1 for plain float and integer types).
            pub const fn block_size(self) -> usize {
                match self { $(GgmlType::$variant => $block,)* }
            }

            /// Bytes per block.
            pub const fn type_size(self) -> usize {
                match self { $(GgmlType::$variant => $bytes,)* }
            }
        }
    };
}

ggml_type_table!(ggml_types);

impl GgmlType {
    /// Bytes needed for one row of `n` elements, or `None` when `n` is not a multiple of
    /// the block size or the size overflows.
    pub fn row_bytes(self, n: u64) -> Option<u64> {
        let block = self.block_size() as u64;
        if n % block != 0 {
            return None;
        }
        (n / block).checked_mul(self.type_size() as u64)
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
