#!/bin/sh
# Regenerates the reference logits the parity tests compare against: for each architecture
# and quant mix, the tiny 2-layer fixture (`lacuna fixture`, deterministic) is run through
# llama.cpp (`tools/llama-oracle`, AVX-512 reference build, flash attention off, non-causal)
# over TOKENS. Run from the repository root after building both binaries:
#   cargo build --release -p lacuna-cli && tools/llama-oracle/build-ref.sh
set -e
TOKENS=1,2,3,4,5,511,511,7,300,42,0,255
OUT=crates/lacuna-models/tests/data
TMP=$(mktemp -d)
for arch in llada dream llada-moe; do
  for quant in f32 f16 bf16 q8_0 q4_k_m; do
    target/release/lacuna fixture --arch "$arch" --shape tiny --layers 2 --quant "$quant" \
      --out "$TMP/$arch-$quant.gguf"
    tools/llama-oracle/target/release/llama-oracle logits --model "$TMP/$arch-$quant.gguf" \
      --tokens "$TOKENS" --threads 2 --out "$OUT/$arch-$quant.logits"
    # FNV-1a 64 of the fixture bytes: the tests check the generator still writes this file.
    python3 -c 'import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print("%016x" % h)' "$TMP/$arch-$quant.gguf" > "$OUT/$arch-$quant.fnv64"
  done
done
rm -rf "$TMP"
