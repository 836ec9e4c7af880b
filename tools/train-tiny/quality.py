#!/usr/bin/env python3
"""Quality of the trained model, in PyTorch (F32 weights as exported):

- validation masked-token cross-entropy and accuracy on held-out chapters, at mask ratios
  0.1/0.3/0.5/0.7/0.9 (the same fixed masks `train.py` evaluates), overall and on text
  positions only (EOS padding excluded), plus LLaDA's bound on the per-token NLL;
- sample generations with LLaDA's official `generate()` (transcribed below: greedy,
  low-confidence remasking, semi-autoregressive blocks) at 16, 32 and 64 steps.

Usage: quality.py --weights W.safetensors --data DIR --out quality.json
"""
import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from data import Corpus
from train import evaluate, fixed_validation
from verify import load_model

PROMPTS = [
    "In the beginning God created",
    "And the LORD spake unto Moses, saying,",
    "The LORD is my shepherd;",
    "Blessed are the",
    "And Jesus answered and said unto them,",
]
CHAT = "And God said, Let there be light: and there was light."
GEN_LENGTH, BLOCK_LENGTH = 64, 32


def num_transfer_tokens(mask_index, steps):
    mask_num = mask_index.sum(dim=1, keepdim=True)
    base, rem = mask_num // steps, mask_num % steps
    out = torch.zeros(mask_num.size(0), steps, dtype=torch.int64) + base
    for i in range(mask_num.size(0)):
        out[i, :rem[i]] += 1
    return out


@torch.no_grad()
def generate(model, prompt, steps, gen_length, block_length, mask_id):
    """LLaDA's official `generate` at temperature 0, cfg 0, low_confidence remasking."""
    x = torch.full((1, len(prompt) + gen_length), mask_id, dtype=torch.long)
    x[0, :len(prompt)] = torch.tensor(prompt)
    n_blocks = gen_length // block_length
    steps //= n_blocks
    p0 = len(prompt)
    for b in range(n_blocks):
        blk = x[:, p0 + b * block_length: p0 + (b + 1) * block_length] == mask_id
        ntt = num_transfer_tokens(blk, steps)
        for i in range(steps):
            mask_index = x == mask_id
            logits = model(x)
            x0 = logits.argmax(-1)
            p = F.softmax(logits.double(), dim=-1)
            x0_p = torch.gather(p, -1, x0.unsqueeze(-1)).squeeze(-1)
            x0_p[:, p0 + (b + 1) * block_length:] = -np.inf
            x0 = torch.where(mask_index, x0, x)
            conf = torch.where(mask_index, x0_p, torch.tensor(-np.inf, dtype=x0_p.dtype))
            _, sel = torch.topk(conf[0], k=int(ntt[0, i]))
            x[0, sel] = x0[0, sel]
    return x[0, p0:].tolist()


def decode(tk, ids, stop):
    cut = next((i for i, t in enumerate(ids) if t in stop), len(ids))
    return tk.decode(ids[:cut]), cut < len(ids)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    model, cfg = load_model(a.weights)
    tk = Tokenizer.from_file(f"{a.data}/tokenizer.json")
    valid = Corpus(f"{a.data}/verses.json", f"{a.data}/tokenizer.json", "valid")
    val = fixed_validation(valid, cfg.max_sequence_length)
    metrics = evaluate(model, valid, val)
    bos, eos, eot = valid.bos, valid.eos, valid.eot
    samples = []
    enc = lambda s: tk.encode(s, add_special_tokens=False).ids
    chat_prompt = ([bos, valid.sh] + enc("user") + [valid.eh] + enc("\n\n") + enc(CHAT)
                   + [eot, valid.sh] + enc("assistant") + [valid.eh] + enc("\n\n"))
    cases = [("text", s, [bos] + enc(s)) for s in PROMPTS] + [("chat", CHAT, chat_prompt)]
    for kind, text, prompt in cases:
        for steps in (16, 32, 64):
            ids = generate(model, prompt, steps, GEN_LENGTH, BLOCK_LENGTH, cfg.mask_token_id)
            out, stopped = decode(tk, ids, {eos, eot})
            samples.append({"kind": kind, "prompt": text, "steps": steps, "output": out,
                            "stopped_at_end_token": stopped, "tokens": ids})
            print(f"[{kind} {steps:2d}] {text} -> {out}", flush=True)
    res = {"validation": metrics,
           "sampler": {"name": "LLaDA official generate (PyTorch, F32)", "gen_length": GEN_LENGTH,
                       "block_length": BLOCK_LENGTH, "temperature": 0.0,
                       "remasking": "low_confidence"},
           "samples": samples}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
