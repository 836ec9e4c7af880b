#!/usr/bin/env bash
# After training the task model: export the checkpoint, write the shipped GGUF (Q8_0) and an
# F32 twin, check both against PyTorch (and llama.cpp when ORACLE points at a built
# llama-oracle), and copy the logs. Usage: finish_tasks.sh RUN_DIR LACUNA_BIN
# (run from tools/train-tiny; then rebuild lacuna-cli: the model is compiled in).
set -euo pipefail
cd "$(dirname "$0")"
RUN=${1:-work/tasks-run3}
LACUNA=${2:-../../target/release/lacuna}
PY=.venv/bin/python
mkdir -p results/tasks ../../models
$PY train_tasks.py --data work/tasks --out "$RUN" --export
(cd export && cargo build --release -q)
EXP=export/target/release/train-tiny-export
for ty in q8_0 f32; do
    out=../../models/lacuna-tiny-tasks.gguf
    [ "$ty" = f32 ] && out=work/lacuna-tiny-tasks-f32.gguf
    $EXP --weights "$RUN/weights.safetensors" --tokenizer work/tasks/tokenizer.json --type "$ty" \
        --name lacuna-tiny-tasks --pre qwen2 --raw-only --out "$out"
done
ORACLE_ARGS=()
[ -n "${ORACLE:-}" ] && ORACLE_ARGS=(--oracle "$ORACLE")
$PY verify_tasks.py --weights "$RUN/weights.safetensors" --data work/tasks \
    --gguf ../../models/lacuna-tiny-tasks.gguf --gguf work/lacuna-tiny-tasks-f32.gguf \
    --lacuna "$LACUNA" "${ORACLE_ARGS[@]}" --out results/tasks/verify.json
cp "$RUN/log.jsonl" results/tasks/train-log.jsonl
cp "$RUN/config.json" results/tasks/config.json
cp work/tasks/heldout.tsv work/tasks/tokenizer.json results/tasks/
