#!/usr/bin/env bash
# Builds ggml's reference (de)quantizers (ggml/src/ggml-quants.c, as vendored by the
# llama-cpp-sys-2 crate) into a shared library for gen_vectors.py. Flags follow a release
# build of ggml-base: -O3 -DNDEBUG, no -march (ggml-base has no ISA-specific code).
#
# Usage: tools/quant-vectors/build_ggml_ref.sh [path/to/llama.cpp] -> target/ggml-quants-ref/libggml_quants_ref.so
# Without an argument it looks for llama-cpp-sys-2 in ~/.cargo/registry/src (fetched by any
# crate depending on it, e.g. the llama.cpp oracle).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
src="${1:-}"
if [[ -z "$src" ]]; then
    src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-*/llama.cpp 2>/dev/null | sort -V | tail -1)"
fi
[[ -f "$src/ggml/src/ggml-quants.c" ]] || { echo "ggml-quants.c not found under '$src'" >&2; exit 1; }
out="$root/target/ggml-quants-ref"
mkdir -p "$out"
g="$src/ggml"
cc -O3 -DNDEBUG -fPIC -shared -std=gnu11 -I"$g/include" -I"$g/src" -I"$g/src/ggml-cpu" \
    "$g/src/ggml-quants.c" "$here/shim.c" -lm -o "$out/libggml_quants_ref.so"
echo "$src" > "$out/SOURCE"
echo "$out/libggml_quants_ref.so (from $src)"
