#!/usr/bin/env bash
# After training: export the checkpoint, write the shipped GGUF (Q8_0) and an F32 twin,
# check both against PyTorch and llama.cpp, measure quality, and regenerate Lacuna's greedy
# samples. Usage: finish.sh RUN_DIR LACUNA_BIN   (run from tools/train-tiny; ~10 min on 2 busy cores)
set -euo pipefail
cd "$(dirname "$0")"
RUN=${1:-work/run3}
LACUNA=${2:-../../target/release/lacuna}
ORACLE=../llama-oracle/target/release/llama-oracle
PY=.venv/bin/python
mkdir -p results ../../models
$PY train.py --data work/data --out "$RUN" --seq 256 --batch 8 --export
(cd export && cargo build --release -q)
EXP=export/target/release/train-tiny-export
$EXP --weights "$RUN/weights.safetensors" --tokenizer work/data/tokenizer.json --type q8_0 --out ../../models/lacuna-tiny-kjv.gguf
$EXP --weights "$RUN/weights.safetensors" --tokenizer work/data/tokenizer.json --type f32 --out work/lacuna-tiny-kjv-f32.gguf
$PY verify.py --weights "$RUN/weights.safetensors" --tokenizer work/data/tokenizer.json --verses work/data/verses.json \
    --gguf ../../models/lacuna-tiny-kjv.gguf --gguf work/lacuna-tiny-kjv-f32.gguf \
    --lacuna "$LACUNA" --oracle "$ORACLE" --out results/verify.json
$PY quality.py --weights "$RUN/weights.safetensors" --data work/data --out results/quality.json
cp "$RUN/log.jsonl" results/train-log.jsonl
cp "$RUN/config.json" results/config.json
