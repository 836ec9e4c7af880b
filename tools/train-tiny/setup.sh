#!/usr/bin/env bash
# Creates tools/train-tiny/.venv with what the trainer needs, from PyPI.
# (PyPI's Linux torch wheel is the CUDA build: ~5 GB of nvidia-* wheels; it runs on CPU.)
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/pip install --upgrade pip >/dev/null
.venv/bin/pip install "torch==2.15.0" "tokenizers==0.23.3" "numpy>=2" "gguf==0.19.0"
command -v bible >/dev/null || { echo "install the corpus: apt-get install -y bible-kjv bible-kjv-text" >&2; exit 1; }
