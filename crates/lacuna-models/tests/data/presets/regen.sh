#!/bin/sh
# Regenerates what tests/presets.rs compares against: for each architecture, the tiny 4-layer
# F32 fixture (`lacuna fixture`, deterministic) quantized by llama.cpp itself
# (`llama-oracle quantize` = llama_model_quantize, as llama-quantize runs it without an
# imatrix) under every preset; for each result the type and SHA-256 of every tensor
# (`*.manifest`: what Lacuna's own quantizer must reproduce byte for byte) and llama.cpp's
# logits over TOKENS (`*.logits`, AVX-512 reference build, flash attention off, non-causal).
# Run from the repository root after building both binaries:
#   cargo build --release -p lacuna-cli && tools/llama-oracle/build-ref.sh
set -e
TOKENS=1,2,3,4,5,511,511,7,300,42,0,255
OUT=crates/lacuna-models/tests/data/presets
ORACLE=tools/llama-oracle/target/release/llama-oracle
TMP=$(mktemp -d)
PRESETS="Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K Q8_0 IQ4_NL IQ4_XS MXFP4_MOE"
for arch in llada dream llada-moe; do
  target/release/lacuna fixture --arch "$arch" --shape tiny --layers 4 --quant f32 \
    --out "$TMP/$arch-f32.gguf"
  sha256sum "$TMP/$arch-f32.gguf" | cut -c1-16 > "$OUT/$arch-f32.sha256"
  for preset in $PRESETS; do
    name=$(echo "$preset" | tr 'A-Z' 'a-z')
    "$ORACLE" quantize --model "$TMP/$arch-f32.gguf" --out "$TMP/$arch-$name.gguf" \
      --preset "$preset" --threads 2
    python3 - "$TMP/$arch-$name.gguf" > "$OUT/$arch-$name.manifest" <<'PY'
import hashlib, sys
import gguf
r = gguf.GGUFReader(sys.argv[1])
for t in sorted(r.tensors, key=lambda t: t.name):
    digest = hashlib.sha256(t.data.tobytes()).hexdigest()[:16]
    print(t.name, t.tensor_type.name.lower(), digest)
PY
    "$ORACLE" logits --model "$TMP/$arch-$name.gguf" --tokens "$TOKENS" --threads 2 \
      --out "$OUT/$arch-$name.logits"
  done
done

# Per preset, the first (seed, architecture) whose Lacuna logits match llama.cpp's to 1e-6 on
# every row: a fixture where no activation lands on a quantization boundary between the two
# engines' rounding, so the test can hold that preset to rounding-level agreement.
: > "$OUT/exact.txt"
for preset in $PRESETS; do
  name=$(echo "$preset" | tr 'A-Z' 'a-z')
  found=
  for seed in 1 2 3 4 5 6 7 8; do
    for arch in llada dream llada-moe; do
      [ -n "$found" ] && break
      target/release/lacuna fixture --arch "$arch" --shape tiny --layers 4 --quant f32 \
        --seed "$seed" --out "$TMP/s.gguf"
      "$ORACLE" quantize --model "$TMP/s.gguf" --out "$TMP/q.gguf" --preset "$preset" --threads 2
      "$ORACLE" logits --model "$TMP/q.gguf" --tokens "$TOKENS" --threads 2 --out "$TMP/ref.logits"
      target/release/lacuna logits -m "$TMP/q.gguf" --tokens "$TOKENS" --out "$TMP/ours.logits"
      if python3 - "$TMP/ours.logits" "$TMP/ref.logits" <<'PY'
import sys
import numpy as np
a = np.fromfile(sys.argv[1], "<f4").reshape(12, -1)
b = np.fromfile(sys.argv[2], "<f4").reshape(12, -1)
rel = np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)
sys.exit(0 if rel.max() <= 1e-6 else 1)
PY
      then
        echo "$preset $arch $seed" >> "$OUT/exact.txt"
        cp "$TMP/ref.logits" "$OUT/exact-$name.logits"
        found=1
      fi
    done
  done
  [ -n "$found" ] || echo "$preset: no exact fixture in 8 seeds" >&2
done
rm -rf "$TMP"
