#!/usr/bin/env bash
# The CUDA issue's one GPU-machine run (at most ~8 minutes), prepared here, run there with
# the binaries built here (that machine has no Rust toolchain and no network):
#
#   # here, before the run:
#   tools/bench/cuda-device.sh --build     # builds into target/cuda-device/ (carried)
#   # then: run(command="bash tools/bench/cuda-device.sh [parity|bench|all]", carry=["target/cuda-device"])
#   # parity: doctor, the parity tests and the 32-layer fixture (~2 min); bench: the timings
#   # (reusing the fixture while the machine is warm); all: both (the default)
#
# On the GPU machine it writes, under $OUT:
#   doctor.txt             `lacuna doctor` (GPU, compute capability, driver, NVRTC, test kernel)
#   parity.txt             the CUDA parity tests (every GEMM kernel vs its host twin; whole
#                          forwards of the LLaDA/Dream/LLaDA-MoE/LLaDA2 fixtures vs the CPU
#                          backend: per-row relative L2 and top-1 agreement); must pass
#   bench-results.tgz      bench-results/$MACHINE/*.json (one archive: the tool returns at most 8 files)
#                          lacuna.bench.v1 files: the forward pass of the 32-layer
#                          LLaDA-8B-shaped Q4_K_M fixture at T = 32, 160, 544, 1024
#                          (tools/bench/forward.py --lacuna-device cuda), and generation of
#                          128 tokens, block 32, with no, prefix and dual cache
#                          (`lacuna bench --device cuda --save`)
#   batch.txt              a cached step batched over 1, 2, 4, 8 canvases (`--forward --batch`)
#   torch-forward.jsonl    the same shape in PyTorch bf16, eager and torch.compile, one JSON
#                          line per (mode, T) (tools/bench/torch_forward.py)
#   nvidia-smi.txt
# The bench-results files are committed as they come back; the PyTorch lines are the anchor
# the issue's targets compare against (>= 1.5x eager and >= 1x compile at T = 160).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=target/cuda-device

if [ "${1:-}" = "--build" ]; then
  mkdir -p "$DEST"
  cargo build --release -p lacuna-cli
  cp target/release/lacuna "$DEST/"
  # The parity test binary (its hashed name varies): ask cargo for it.
  bin=$(cargo test --release -p lacuna-models --test cuda_parity --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' | tail -1)
  cp "$bin" "$DEST/cuda_parity"
  # Without debug info: the carry limit is 64 MiB.
  strip "$DEST/lacuna" "$DEST/cuda_parity"
  du -sh "$DEST"; ls -la "$DEST"
  exit 0
fi

OUT=${OUT:-/tmp/cuda-device-out}
mkdir -p "$OUT"
PHASE=${1:-all}
MACHINE=${MACHINE:-h200-cuda}
F=/tmp/llada8b-32l-q4km.gguf
export LACUNA_REQUIRE_GPU=1 LACUNA_CUDA_CACHE=/tmp/lacuna-cuda-cache
# NVRTC: lacuna finds the toolkit's or PyTorch's wheel's libnvrtc.so.13 (or .12) itself.
if [ "$PHASE" = parity ] || [ "$PHASE" = all ]; then
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
  timeout 60 "$DEST/lacuna" doctor > "$OUT/doctor.txt" 2>&1 || true
  set +e
  timeout 150 "$DEST/cuda_parity" --test-threads=1 --nocapture > "$OUT/parity.txt" 2>&1; parity=$?
  set -e
  echo "parity exit $parity" >> "$OUT/parity.txt"
  # The bench phase reuses the fixture while the machine stays warm.
  [ -f "$F" ] || timeout 120 "$DEST/lacuna" fixture --arch llada --shape llada-8b --layers 32 --quant q4_k_m --out "$F" > "$OUT/fixture.txt" 2>&1 || true
  tail -n 4 "$OUT"/*.txt
  [ "$PHASE" = parity ] && exit "$parity"
fi

[ -f "$F" ] || timeout 120 "$DEST/lacuna" fixture --arch llada --shape llada-8b --layers 32 --quant q4_k_m --out "$F" > "$OUT/fixture.txt" 2>&1
# forward.py runs target/release/lacuna.
mkdir -p target/release && cp "$DEST/lacuna" target/release/lacuna
timeout 90 python3 tools/bench/forward.py --model "$F" --model-id llada-8b-shape-32l-q4km --layers 32 \
  --seq-len 32 160 544 1024 --threads 16 --runs 5 --skip-llama --lacuna-device cuda \
  --machine-id "$MACHINE" --tag cuda > "$OUT/forward.txt" 2>&1 || true
timeout 100 python3 tools/bench/torch_forward.py --tokens 32 160 544 1024 > "$OUT/torch-forward.jsonl" 2>&1 || true
for cache in none prefix dual; do
  timeout 40 "$DEST/lacuna" bench -m "$F" --device cuda --gen-length 128 --steps 128 --block-length 32 \
    --cache $cache --runs 2 --machine-id "$MACHINE" --model-id llada-8b-shape-32l-q4km-g128-$cache \
    --save . >> "$OUT/generate.txt" 2>&1 || true
done
timeout 40 "$DEST/lacuna" bench -m "$F" --device cuda --forward --batch 1,2,4,8 --gen-length 128 \
  --block-length 32 --runs 3 > "$OUT/batch.txt" 2>&1 || true
# One archive: the tool brings back at most 8 files from $OUT.
tar czf "$OUT/bench-results.tgz" "bench-results/$MACHINE" 2>/dev/null || true
tail -n 3 "$OUT"/*.txt "$OUT"/*.jsonl
