#!/usr/bin/env python3
"""Checks the exported task model against PyTorch (and llama.cpp, when `--oracle` is given):

1. tokenization: `lacuna tokenize` on the GGUF gives the trained tokenizer's ids on held-out
   problems of every task (prompt and answer);
2. logits: PyTorch (trained weights, F32) vs Lacuna (`lacuna logits`) on canvases of
   held-out prompts followed by 32 masks, for each GGUF; with `--oracle`, llama.cpp too.

Usage: verify_tasks.py --weights W.safetensors --data DIR --gguf M.gguf [--gguf ...]
                       --lacuna BIN [--oracle BIN] --out R.json
"""
import argparse
import json
import os
import subprocess

import numpy as np
import torch

from tasks import TASKS, Tasks, read_problems
from verify import compare, load_model, run_logits


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--gguf", action="append", required=True)
    p.add_argument("--lacuna", required=True)
    p.add_argument("--oracle")
    p.add_argument("--per-task", type=int, default=20)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    model, cfg = load_model(a.weights)
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
            lac = run_logits([a.lacuna, "logits", "-m", g, "--threads", "2"], tokens, cfg.vocab_size)
            row = {"canvas_tokens": len(tokens), "lacuna_vs_pytorch": compare(lac, pt)}
            if a.oracle:
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
