#!/bin/sh
# Preset parity table: for each architecture and llama-quantize preset, the tiny 4-layer
# fixture (seed 0) quantized by `lacuna quantize` (= llama-quantize, tested byte for byte),
# then Lacuna's logits on the given CPU path against each llama.cpp build given, over 12
# tokens. Prints one TSV row per (arch, preset, lacuna path, oracle): per-row relative L2
# median and max, top-1 agreement. Usage (repository root, release binaries built):
#   tools/bench/preset_parity.sh "avx2 amx" tools/llama-oracle/target/release/llama-oracle \
#       tools/llama-oracle/target-avx2/release/llama-oracle
set -e
PATHS=$1
shift
TOKENS=1,2,3,4,5,511,511,7,300,42,0,255
PRESETS="Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K Q8_0 IQ4_NL IQ4_XS MXFP4_MOE"
TMP=$(mktemp -d)
L=target/release/lacuna
printf 'arch\tpreset\tlacuna_path\toracle\tmedian_rel\tmax_rel\ttop1\n'
for arch in llada dream llada-moe; do
  $L fixture --arch "$arch" --shape tiny --layers 4 --quant f32 --out "$TMP/f32.gguf" 2>/dev/null
  for preset in $PRESETS; do
    $L quantize "$TMP/f32.gguf" "$TMP/q.gguf" "$preset" 2>/dev/null
    for oracle in "$@"; do
      "$oracle" logits --model "$TMP/q.gguf" --tokens "$TOKENS" --threads 2 --out "$TMP/ref.logits" >/dev/null 2>&1
      for path in $PATHS; do
        LACUNA_CPU_PATH=$path $L logits -m "$TMP/q.gguf" --tokens "$TOKENS" --out "$TMP/ours.logits" >/dev/null 2>&1
        python3 - "$TMP/ours.logits" "$TMP/ref.logits" "$arch" "$preset" "$path" "$oracle" <<'PY'
import sys
import numpy as np
a = np.fromfile(sys.argv[1], "<f4").reshape(12, -1)
b = np.fromfile(sys.argv[2], "<f4").reshape(12, -1)
rel = np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)
top1 = (a.argmax(1) == b.argmax(1)).mean()
flav = sys.argv[6].split("/")[-3]
print(f"{sys.argv[3]}\t{sys.argv[4]}\t{sys.argv[5]}\t{flav}\t{np.median(rel):.1e}\t{rel.max():.1e}\t{top1:.3f}")
PY
      done
    done
  done
done
rm -rf "$TMP"
