#!/usr/bin/env python3
"""Lacuna against llama.cpp's own DiffusionGemma (pull request #24423, as the fork
warshanks/llama.cpp carries it) on one GGUF: the canvas logits of the unified pass
([prompt | canvas], the last `diffusion.canvas_length` rows), without and with
self-conditioning.

llama.cpp side: the PR's `llama-diffusion-gemma-eval` harness (built from the fork; see
README.md). Lacuna side: `lacuna logits` (the same unified pass) and, for the
self-conditioned pass, `lacuna logits --self-cond` is not a CLI flag, so only the plain pass
is compared here; the self-conditioned one is compared in the Rust test against the committed
llama.cpp output.

Usage: llama_parity.py EVAL_BIN LACUNA_BIN MODEL.gguf OUT_DIR [--prompt-len N] [--seed S]
Writes OUT_DIR/{prompt,canvas}.i32, llama.logits, lacuna.logits and prints per-row
relative L2 and top-1 agreement (JSON).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_bin")
    ap.add_argument("lacuna")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--prompt-len", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prev", help="self-conditioning input for llama.cpp ([C, vocab] f32)")
    a = ap.parse_args()
    r = GGUFReader(a.model)
    f = r.fields
    c = int(f["diffusion.canvas_length"].parts[-1][0])
    n_vocab = len(f["tokenizer.ggml.tokens"].data)
    rng = np.random.default_rng(a.seed)
    # Ids above the specials and byte tokens: ordinary text tokens of any vocabulary here.
    prompt = rng.integers(300, min(n_vocab, 4000), size=a.prompt_len).astype(np.int32)
    canvas = rng.integers(300, min(n_vocab, 4000), size=c).astype(np.int32)
    os.makedirs(a.out, exist_ok=True)
    prompt.tofile(os.path.join(a.out, "prompt.i32"))
    canvas.tofile(os.path.join(a.out, "canvas.i32"))
    llama_out = os.path.join(a.out, "llama.logits")
    cmd = [a.eval_bin, a.model, os.path.join(a.out, "prompt.i32"), os.path.join(a.out, "canvas.i32"), llama_out]
    if a.prev:
        cmd.append(a.prev)
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    lac_out = os.path.join(a.out, "lacuna-all.logits")
    ids = ",".join(str(int(t)) for t in np.concatenate([prompt, canvas]))
    subprocess.run([a.lacuna, "logits", "-m", a.model, "--tokens", ids, "--out", lac_out,
                    "--threads", str(a.threads)], check=True, stderr=subprocess.DEVNULL)
    ours = np.fromfile(lac_out, dtype=np.float32).reshape(-1, n_vocab)[-c:]
    ours.tofile(os.path.join(a.out, "lacuna.logits"))
    theirs = np.fromfile(llama_out, dtype=np.float32).reshape(-1, n_vocab)
    assert theirs.shape == ours.shape, (theirs.shape, ours.shape)
    rel = np.linalg.norm(ours - theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    top1 = (ours.argmax(1) == theirs.argmax(1)).mean()
    res = {"model": os.path.basename(a.model), "canvas": c, "prompt": a.prompt_len,
           "max_rel_l2": float(rel.max()), "median_rel_l2": float(np.median(rel)),
           "max_abs": float(np.abs(ours - theirs).max()), "top1": float(top1)}
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
