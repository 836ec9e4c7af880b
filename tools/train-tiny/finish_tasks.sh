#!/usr/bin/env bash
# After training a task model: export the checkpoint, write the shipped GGUF (Q8_0) and an
# F32 copy, check both against PyTorch (and llama.cpp when ORACLE points at a built
# llama-oracle: the llada model directly, the llada2 twin as llama.cpp's bailingmoe2, causal),
# and copy the logs.
# Usage: finish_tasks.sh RUN_DIR LACUNA_BIN [NAME]
#   NAME lacuna-tiny-tasks (default: the llada model, results under results/tasks) or
#   lacuna-tiny-tasks-llada2 (the block-diffusion twin, results under results/tasks-llada2).
# (run from tools/train-tiny; then rebuild lacuna-cli: the models are compiled in).
set -euo pipefail
cd "$(dirname "$0")"
RUN=${1:-work/tasks-run3}
LACUNA=${2:-../../target/release/lacuna}
NAME=${3:-lacuna-tiny-tasks}
RESULTS=results/tasks
[ "$NAME" = lacuna-tiny-tasks ] || RESULTS=results/${NAME#lacuna-tiny-}
ARCH=()
[ "$NAME" = lacuna-tiny-tasks ] || ARCH=(--arch llada2 --block "${BLOCK:-8}")
PY=.venv/bin/python
mkdir -p "$RESULTS" ../../models
$PY train_tasks.py --data work/tasks --out "$RUN" "${ARCH[@]}" --export
(cd export && cargo build --release -q)
EXP=export/target/release/train-tiny-export
for ty in q8_0 f32; do
    out=../../models/$NAME.gguf
    [ "$ty" = f32 ] && out=work/$NAME-f32.gguf
    $EXP --weights "$RUN/weights.safetensors" --tokenizer work/tasks/tokenizer.json --type "$ty" \
        --name "$NAME" --pre qwen2 --raw-only --out "$out"
done
ORACLE_ARGS=()
[ -n "${ORACLE:-}" ] && ORACLE_ARGS=(--oracle "$ORACLE")
if [ -n "${ORACLE:-}" ] && [ "$NAME" != lacuna-tiny-tasks ]; then
    $EXP --weights "$RUN/weights.safetensors" --tokenizer work/tasks/tokenizer.json --type f32 \
        --name "$NAME" --pre qwen2 --raw-only --bailingmoe2 --out work/$NAME-bailingmoe2-f32.gguf
    ORACLE_ARGS+=(--oracle-gguf work/$NAME-bailingmoe2-f32.gguf)
fi
$PY verify_tasks.py --weights "$RUN/weights.safetensors" --data work/tasks \
    --gguf ../../models/$NAME.gguf --gguf work/$NAME-f32.gguf \
    --lacuna "$LACUNA" "${ORACLE_ARGS[@]}" --out "$RESULTS/verify.json"
cp "$RUN/log.jsonl" "$RESULTS/train-log.jsonl"
cp "$RUN/config.json" "$RESULTS/config.json"
cp work/tasks/heldout.tsv work/tasks/tokenizer.json results/tasks/
