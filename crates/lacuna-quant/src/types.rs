//! The ggml type table: one place for every type id llama.cpp defines, with its block size
//! (elements per block) and bytes per block. Ids that ggml removed (4, 5, 31–33, 36–38) are
//! unknown here, as they are to a current ggml.

use crate::Error;

/// Elements in a K-quant super-block (`QK_K` in ggml).
pub const QK_K: usize = 256;

macro_rules! ggml_types {
    ($( $variant:ident = $id:literal, $name:literal, $block:expr, $bytes:expr; )*) => {
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

ggml_types! {
    F32 = 0, "f32", 1, 4;
    F16 = 1, "f16", 1, 2;
    Q4_0 = 2, "q4_0", 32, 18;
    Q4_1 = 3, "q4_1", 32, 20;
    Q5_0 = 6, "q5_0", 32, 22;
    Q5_1 = 7, "q5_1", 32, 24;
    Q8_0 = 8, "q8_0", 32, 34;
    Q8_1 = 9, "q8_1", 32, 36;
    Q2_K = 10, "q2_K", QK_K, 84;
    Q3_K = 11, "q3_K", QK_K, 110;
    Q4_K = 12, "q4_K", QK_K, 144;
    Q5_K = 13, "q5_K", QK_K, 176;
    Q6_K = 14, "q6_K", QK_K, 210;
    Q8_K = 15, "q8_K", QK_K, 292;
    IQ2_XXS = 16, "iq2_xxs", QK_K, 66;
    IQ2_XS = 17, "iq2_xs", QK_K, 74;
    IQ3_XXS = 18, "iq3_xxs", QK_K, 98;
    IQ1_S = 19, "iq1_s", QK_K, 50;
    IQ4_NL = 20, "iq4_nl", 32, 18;
    IQ3_S = 21, "iq3_s", QK_K, 110;
    IQ2_S = 22, "iq2_s", QK_K, 82;
    IQ4_XS = 23, "iq4_xs", QK_K, 136;
    I8 = 24, "i8", 1, 1;
    I16 = 25, "i16", 1, 2;
    I32 = 26, "i32", 1, 4;
    I64 = 27, "i64", 1, 8;
    F64 = 28, "f64", 1, 8;
    IQ1_M = 29, "iq1_m", QK_K, 56;
    BF16 = 30, "bf16", 1, 2;
    TQ1_0 = 34, "tq1_0", QK_K, 54;
    TQ2_0 = 35, "tq2_0", QK_K, 66;
    MXFP4 = 39, "mxfp4", 32, 17;
    NVFP4 = 40, "nvfp4", 64, 36;
    Q1_0 = 41, "q1_0", 128, 18;
    Q2_0 = 42, "q2_0", 64, 18;
}

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
