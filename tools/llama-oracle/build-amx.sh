#!/bin/sh
# llama.cpp's fastest CPU path here (AMX), for speed comparisons only; see /work/shared/ORACLE.md.
# Its logits differ visibly from the AVX-512 build: compare logits against build-ref.sh's binary.
set -e
cd "$(dirname "$0")"
LLAMA_ORACLE_FLAVOUR=amx CC=clang CXX=clang++ \
CFLAGS="-D__AMX_INT8__ -D__AMX_TILE__" CXXFLAGS="-D__AMX_INT8__ -D__AMX_TILE__" \
GGML_AMX_INT8=ON GGML_AMX_TILE=ON GGML_AVX512=ON GGML_AVX512_VNNI=ON GGML_AVX512_VBMI=ON \
GGML_AVX512_BF16=ON GGML_AVX_VNNI=ON \
CARGO_TARGET_DIR="$PWD/target-amx" nice -n 10 cargo build --release "$@"
