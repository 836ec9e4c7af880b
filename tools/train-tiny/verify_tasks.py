#!/usr/bin/env python3
"""Checks the exported task model against PyTorch (and llama.cpp, when `--oracle` is given):

1. tokenization: `lacuna tokenize` on the GGUF gives the trained tokenizer's ids on held-out
   problems of every task (prompt and answer);
2. logits: PyTorch (trained weights, F32) vs Lacuna (`lacuna logits`) on canvases of
   held-out prompts followed by 32 masks, for each GGUF; with `--oracle`, llama.cpp too (the
   llada model; llama.cpp has no llada2 graph, so the twin's weights written as its
   autoregressive `bailingmoe2` (`--oracle-gguf`) run causal against Lacuna's llada2 with
   attention blocks of 1; its block-causal attention is checked against PyTorch).

Usage: verify_tasks.py --weights W.safetensors --data DIR --gguf M.gguf [--gguf ...]
                       --lacuna BIN [--oracle BIN] --out R.json
"""
import argparse
import json
import os
import subprocess

import numpy as np
import torch

from model_llada2 import Config2, LLaDA2Tiny
from tasks import TASKS, Tasks, read_problems
from verify import compare, load_model, load_safetensors, run_logits


def load_any(path):
    """The trained model of `path` (the llada task model or its llada2 twin) and the extra
    `lacuna logits` flags its graph needs (the twin's block-causal attention block)."""
    tensors, meta = load_safetensors(path)
    cfg = json.loads(meta["config"])
    if cfg.pop("arch", "llada") != "llada2":
        model, cfg = load_model(path)
        return model, cfg, []
    cfg = Config2(**cfg)
    model = LLaDA2Tiny(cfg)
    state = {}
    for name, t in tensors.items():
        if name in ("token_embd.weight", "output_norm.weight", "output.weight"):
            state[name.removesuffix(".weight")] = t
        else:
            _, il, rest = name.split(".", 2)
            key = rest.removesuffix(".weight").removesuffix(".bias")
            key = {"attn_q_norm": "q_norm", "attn_k_norm": "k_norm"}.get(key, key)
            state[f"blocks.{il}.{key}"] = t
    model.load_state_dict(state)
    model.eval()
    return model, cfg, ["--attention-block", str(cfg.block)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--gguf", action="append", required=True)
    p.add_argument("--lacuna", required=True)
    p.add_argument("--oracle")
    p.add_argument("--oracle-gguf", help="llada2 twin: the same weights as llama.cpp's bailingmoe2 "
                   "(exporter --bailingmoe2), run causal against Lacuna's attention blocks of 1")
    p.add_argument("--per-task", type=int, default=20)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    model, cfg, extra = load_any(a.weights)
    held = read_problems(os.path.join(a.data, "heldout.tsv"))
    t = Tasks(os.path.join(a.data, "tokenizer.json"), held)
    report = {"tokenization": {}, "logits": {}}
    for task in TASKS:
        probs = [h for h in held if h["task"] == task][:a.per_task]
        same = 0
        for h in probs:
            s = h["prompt"] + h["answer"]
            out = subprocess.run([a.lacuna, "tokenize", "-m", a.gguf[0], "--no-bos", "--json", s],
                                 check=True, capture_output=True, text=True).stdout
            got = json.loads(out)
            got = got["ids"] if isinstance(got, dict) else [x["id"] if isinstance(x, dict) else x for x in got]
            same += got == t.enc(s)
        report["tokenization"][task] = {"texts": len(probs), "same_ids": same}
    canvases = []
    for task in TASKS:
        h = [h for h in held if h["task"] == task][0]
        canvases.append([t.bos] + t.enc(h["prompt"]) + [t.mask] * 32)
    for g in a.gguf:
        name = os.path.basename(g)
        rows = []
        for tokens in canvases:
            with torch.no_grad():
                pt = model(torch.tensor([tokens]))[0].numpy()
            lac = run_logits([a.lacuna, "logits", "-m", g, "--threads", "2", *extra], tokens, cfg.vocab_size)
            row = {"canvas_tokens": len(tokens), "lacuna_vs_pytorch": compare(lac, pt)}
            if a.oracle and a.oracle_gguf:
                ora = run_logits([a.oracle, "logits", "--model", a.oracle_gguf, "--threads", "2", "--causal"],
                                 tokens, cfg.vocab_size)
                causal = run_logits([a.lacuna, "logits", "-m", g, "--threads", "2", "--attention-block", "1"],
                                    tokens, cfg.vocab_size)
                row["lacuna_block1_vs_llama_cpp_bailingmoe2_causal"] = compare(causal, ora)
            elif a.oracle:
                ora = run_logits([a.oracle, "logits", "--model", g, "--threads", "2"], tokens, cfg.vocab_size)
                row["lacuna_vs_llama_cpp"] = compare(lac, ora)
                row["llama_cpp_vs_pytorch"] = compare(ora, pt)
            rows.append(row)
        report["logits"][name] = rows
    print(json.dumps(report, indent=1))
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
