#!/usr/bin/env bash
# The CUDA issue's one GPU-machine run (at most ~8 minutes), prepared here, run there with
# the binaries built here (that machine has no Rust toolchain and no network):
#
#   # here, before the run:
#   tools/bench/cuda-device.sh --build     # builds into target/cuda-device/ (carried)
#   # then: run(command="bash tools/bench/cuda-device.sh", carry=["target/cuda-device"])
#
# On the GPU machine it writes, under $OUT:
#   doctor.txt             `lacuna doctor` (GPU, compute capability, driver, NVRTC, test kernel)
#   parity.txt             the CUDA parity tests (every GEMM kernel vs its host twin; whole
#                          forwards of the LLaDA/Dream/LLaDA-MoE/LLaDA2 fixtures vs the CPU
#                          backend: per-row relative L2 and top-1 agreement); must pass
#   bench-results/$MACHINE/*.json
#                          lacuna.bench.v1 files: the forward pass of the 32-layer
#                          LLaDA-8B-shaped Q4_K_M fixture at T = 160, 544, 1024
#                          (tools/bench/forward.py --lacuna-device cuda), and generation of
#                          128 and 256 tokens, block 32, without and with the prefix cache
#                          (`lacuna bench --device cuda --save`)
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
export LACUNA_REQUIRE_GPU=1 LACUNA_CUDA_CACHE=/tmp/lacuna-cuda-cache
# NVRTC: the toolkit's, else PyTorch's wheel.
if ! ldconfig -p | grep -q libnvrtc.so; then
  export LACUNA_NVRTC=$(python3 -c 'import nvidia.cuda_nvrtc, os; print(os.path.join(nvidia.cuda_nvrtc.__path__[0], "lib"))' 2>/dev/null || true)
fi
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
"$DEST/lacuna" doctor > "$OUT/doctor.txt" 2>&1 || true
timeout 180 "$DEST/cuda_parity" --test-threads=1 --nocapture > "$OUT/parity.txt" 2>&1; parity=$?
echo "parity exit $parity" >> "$OUT/parity.txt"
MACHINE=${MACHINE:-h200-cuda}
F=/tmp/llada8b-32l-q4km.gguf
"$DEST/lacuna" fixture --arch llada --shape llada-8b --layers 32 --quant q4_k_m --out "$F"
# forward.py runs target/release/lacuna.
mkdir -p target/release && cp "$DEST/lacuna" target/release/lacuna
timeout 150 python3 tools/bench/forward.py --model "$F" --model-id llada-8b-shape-32l-q4km --layers 32 \
  --seq-len 160 544 1024 --threads 16 --runs 5 --skip-llama --lacuna-device cuda \
  --machine-id "$MACHINE" --tag cuda > "$OUT/forward.txt" 2>&1 || true
for g in 128 256; do
  for cache in none prefix; do
    timeout 60 "$DEST/lacuna" bench -m "$F" --device cuda --gen-length $g --steps $g --block-length 32 \
      --cache $cache --runs 2 --machine-id "$MACHINE" --model-id llada-8b-shape-32l-q4km-g$g-$cache \
      --save . >> "$OUT/generate.txt" 2>&1 || true
  done
done
mkdir -p "$OUT/bench-results" && cp -r "bench-results/$MACHINE" "$OUT/bench-results/" 2>/dev/null || true
timeout 150 python3 tools/bench/torch_forward.py --tokens 160 544 1024 > "$OUT/torch-forward.jsonl" 2>&1 || true
tail -n 3 "$OUT"/*.txt "$OUT"/*.jsonl
exit "$parity"
