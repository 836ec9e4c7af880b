#!/bin/sh
# llama.cpp's AVX2-only CPU builds (what an AMD Zen 2/3 or a pre-VNNI Intel CPU runs), GCC and
# clang, for speed comparisons of Lacuna's AVX2 path on any AVX2 machine; see
# tools/llama-oracle/README.md. `build-avx2.sh gcc` or `build-avx2.sh clang` (default: both).
set -e
cd "$(dirname "$0")"
AVX2="GGML_AVX=ON GGML_AVX2=ON GGML_FMA=ON GGML_F16C=ON GGML_BMI2=ON"
for cc in ${1:-gcc clang}; do
  case $cc in
    gcc) env LLAMA_ORACLE_FLAVOUR=avx2 $AVX2 CARGO_TARGET_DIR="$PWD/target-avx2" \
           nice -n 10 cargo build --release ;;
    clang) env LLAMA_ORACLE_FLAVOUR=avx2-clang CC=clang CXX=clang++ $AVX2 \
           CARGO_TARGET_DIR="$PWD/target-avx2-clang" nice -n 10 cargo build --release ;;
    *) echo "unknown compiler $cc (gcc or clang)" >&2; exit 2 ;;
  esac
done
