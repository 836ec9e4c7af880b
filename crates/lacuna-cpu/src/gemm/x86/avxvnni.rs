//! AVX-VNNI microkernels (placeholder: runs the scalar kernels until written).

pub(crate) use crate::gemm::scalar::quant_panels;
