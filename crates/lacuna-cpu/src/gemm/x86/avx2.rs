//! AVX2 + FMA microkernels (placeholder: runs the scalar kernels until written).

pub(crate) use crate::gemm::scalar::{float_panels, quant_panels};
