#!/usr/bin/env python3
"""Checks an exported GGUF three ways, on validation text:

1. tokenization: Lacuna's tokenizer (`lacuna tokenize`, reading the GGUF) gives the same ids
   as the `tokenizers` tokenizer the model was trained with;
2. logits: PyTorch (the trained weights, F32, LLaDA's rotate_half RoPE), llama.cpp
   (`llama-oracle logits`, normal-mode RoPE on permuted Q/K) and Lacuna (`lacuna logits`)
   on a canvas with masks: max |diff| and top-1 agreement, per pair;
3. llama.cpp loads the file at all (it refuses wrong metadata/shapes).

Usage: verify.py --weights W.safetensors --tokenizer tokenizer.json --verses verses.json
                 --gguf M.gguf [--gguf M2.gguf ...] --lacuna BIN --oracle BIN --out R.json
"""
import argparse
import json
import os
import struct
import subprocess
import tempfile

import numpy as np
import torch
from tokenizers import Tokenizer

from model import Config, LLaDA


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    meta = header.pop("__metadata__")
    tensors = {}
    for name, v in header.items():
        a, b = v["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(body[a:b], "<f4").reshape(v["shape"]).copy())
    return tensors, meta


def load_model(path):
    tensors, meta = load_safetensors(path)
    c = json.loads(meta["config"])
    c.pop("arch", None)  # train_tasks.py records it; the llada model's Config has no field
    cfg = Config(**c)
    model = LLaDA(cfg)
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items()})
    model.eval()
    return model, cfg


def canvas(tk, verses, cfg, n=96):
    """BOS + a validation passage, every third token of the tail masked, EOS padding."""
    text = " ".join(v["text"] for v in verses if v["split"] == "valid")[:2000]
    ids = tk.encode(text, add_special_tokens=False).ids[: n - 10]
    bos, eos = tk.token_to_id("<|startoftext|>"), tk.token_to_id("<|endoftext|>")
    seq = [bos] + ids + [eos] * (n - 1 - len(ids))
    for i in range(len(seq) // 2, len(seq), 3):
        seq[i] = cfg.mask_token_id
    return seq


def run_logits(cmd, tokens, n_vocab):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "l.bin")
        subprocess.run(cmd + ["--tokens", ",".join(map(str, tokens)), "--out", out],
                       check=True, capture_output=True)
        return np.fromfile(out, "<f4").reshape(len(tokens), n_vocab)


def compare(a, b):
    return {"max_abs_diff": float(np.abs(a - b).max()),
            "rms_diff": float(np.sqrt(((a - b) ** 2).mean())),
            "logit_rms": float(np.sqrt((a ** 2).mean())),
            "top1_agree": float((a.argmax(1) == b.argmax(1)).mean())}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--verses", required=True)
    p.add_argument("--gguf", action="append", required=True)
    p.add_argument("--lacuna", required=True)
    p.add_argument("--oracle", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    model, cfg = load_model(a.weights)
    tk = Tokenizer.from_file(a.tokenizer)
    with open(a.verses) as f:
        verses = json.load(f)
    report = {"tokenization": [], "logits": {}}
    samples = [v["text"] for v in verses if v["split"] == "valid"][::40][:12]
    samples += ["In the beginning God created the heaven and the earth.",
                "And the LORD said unto Moses, Speak unto the children of Israel"]
    for s in samples:
        ref = tk.encode(s, add_special_tokens=False).ids
        out = subprocess.run([a.lacuna, "tokenize", "-m", a.gguf[0], "--no-bos", "--json", s],
                             check=True, capture_output=True, text=True).stdout
        got = json.loads(out)
        got = got["ids"] if isinstance(got, dict) else [t["id"] if isinstance(t, dict) else t for t in got]
        report["tokenization"].append({"text": s[:60], "same": got == ref})
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(inp, "w") as f:
            json.dump(samples, f)
        subprocess.run([a.oracle, "tokenize", "--model", a.gguf[0], "--input", inp, "--out", out,
                        "--no-add-special"], check=True, capture_output=True)
        with open(out) as f:
            ora = json.load(f)
    for rec, case, s in zip(report["tokenization"], ora["cases"], samples):
        rec["same_as_llama_cpp"] = case["ids"] == tk.encode(s, add_special_tokens=False).ids
    v = ora["vocab"]
    report["llama_cpp_vocab"] = {k: v[k] for k in ("n_vocab", "bos", "eos", "eot", "pad", "mask",
                                                   "add_bos", "add_eos")}
    tokens = canvas(tk, verses, cfg)
    with torch.no_grad():
        pt = model(torch.tensor([tokens]))[0].numpy()
    for g in a.gguf:
        name = os.path.basename(g)
        lac = run_logits([a.lacuna, "logits", "-m", g, "--threads", "2"], tokens, cfg.vocab_size)
        ora = run_logits([a.oracle, "logits", "--model", g, "--threads", "2"], tokens, cfg.vocab_size)
        report["logits"][name] = {"lacuna_vs_llama_cpp": compare(lac, ora),
                                  "lacuna_vs_pytorch": compare(lac, pt),
                                  "llama_cpp_vs_pytorch": compare(ora, pt)}
    report["canvas_tokens"] = len(tokens)
    print(json.dumps(report, indent=1))
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
