#!/bin/sh
# Reference build for parity (AVX-512, no AMX); see /work/shared/ORACLE.md.
set -e
cd "$(dirname "$0")"
LLAMA_ORACLE_FLAVOUR=avx512-no-amx GGML_AVX512=ON GGML_AVX512_VNNI=ON GGML_AVX512_VBMI=ON GGML_AVX512_BF16=ON GGML_AVX_VNNI=ON \
CARGO_TARGET_DIR="$PWD/target" nice -n 10 cargo build --release "$@"
