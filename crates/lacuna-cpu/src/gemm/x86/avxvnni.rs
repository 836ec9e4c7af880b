//! AVX-VNNI microkernels: the 256-bit body of [`super::avx2`] with `vpdpbusd` ymm.

pub(crate) use super::avx2::quant_panels_vnni as quant_panels;
