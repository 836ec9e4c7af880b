#!/bin/sh
# Regenerates the reference logits the parity tests compare against: for each architecture
# and quant mix, the tiny 2-layer fixture (`lacuna fixture`, deterministic) is run through
# llama.cpp (`tools/llama-oracle`, AVX-512 reference build, flash attention off) over TOKENS:
# non-causal for the diffusion architectures llama.cpp has; for LLaDA2, which it lacks, the
# same weights written as llama.cpp's autoregressive `bailingmoe2` and run causally (LLaDA2's
# block-causal attention with blocks of 1 is causal attention; K/V cache kept in F32).
# Run from the repository root after building both binaries:
#   cargo build --release -p lacuna-cli && tools/llama-oracle/build-ref.sh
set -e
TOKENS=1,2,3,4,5,511,511,7,300,42,0,255
OUT=crates/lacuna-models/tests/data
TMP=$(mktemp -d)
# FNV-1a 64 of a fixture's bytes: the tests check the generator still writes this file.
fnv64() {
  python3 -c 'import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print("%016x" % h)' "$1"
}
for arch in llada dream llada-moe rnd1 llada2; do
  for quant in f32 f16 bf16 q8_0 q4_k_m; do
    name="$arch-$quant"
    target/release/lacuna fixture --arch "$arch" --shape tiny --layers 2 --quant "$quant" \
      --out "$TMP/$name.gguf"
    fnv64 "$TMP/$name.gguf" > "$OUT/$name.fnv64"
    if [ "$arch" = llada2 ]; then
      target/release/lacuna fixture --arch llada2 --shape tiny --layers 2 --quant "$quant" \
        --bailingmoe2-twin --out "$TMP/twin.gguf"
      fnv64 "$TMP/twin.gguf" > "$OUT/bailingmoe2-$quant.fnv64"
      tools/llama-oracle/target/release/llama-oracle logits --model "$TMP/twin.gguf" \
        --tokens "$TOKENS" --threads 2 --causal --out "$OUT/$name.logits"
      # Blocks longer than 1 (bidirectional inside a block): the numpy transcription of the
      # Hugging Face modeling code, on the F32 weights.
      if [ "$quant" = f32 ]; then
        for block in 4 5; do
          python3 tools/llada2-ref/reference.py "$TMP/$name.gguf" --tokens "$TOKENS" \
            --block "$block" --out "$OUT/llada2-f32-block$block.logits"
        done
      fi
    else
      tools/llama-oracle/target/release/llama-oracle logits --model "$TMP/$name.gguf" \
        --tokens "$TOKENS" --threads 2 --out "$OUT/$name.logits"
    fi
  done
done
rm -rf "$TMP"
