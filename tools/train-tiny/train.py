#!/usr/bin/env python3
"""Trains the tiny LLaDA with LLaDA's masked-diffusion objective, resumably.

Objective (LLaDA, Nie et al. 2025, Algorithm 1 / the official pretraining snippet): per
sequence draw t ~ U(0, 1), mask each eligible token with probability p = (1 - eps) t + eps,
and minimise the cross-entropy on masked positions weighted by 1/p, summed and divided by
the number of eligible positions. Optimiser AdamW; learning rate warmup-stable-decay (the
schedule LLaDA used), so `--steps` can be raised on resume before the decay starts.

Checkpoints (`ckpt.pt`, written atomically every `--ckpt-minutes`) hold model, optimiser,
step and RNG state; rerunning the same command resumes. `log.jsonl` gets one line per
report. `--export` writes `weights.safetensors` (LLaDA's Hugging Face tensor names, F32)
and `config.json` from the checkpoint and exits.

Usage: train.py --data DIR --out DIR [--steps N] [--export]
"""
import argparse
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

from data import Corpus, batch
from model import Config, LLaDA, hf_state_dict

EPS = 1e-3


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--decay-frac", type=float, default=0.2)
    p.add_argument("--chat-frac", type=float, default=0.2)
    p.add_argument("--short-frac", type=float, default=0.15)
    p.add_argument("--packed-frac", type=float, default=0.0,
                   help="share of non-chat sequences in the packed layout (see data.py)")
    p.add_argument("--init", help="start from this checkpoint's weights (fresh optimiser, step 0)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ckpt-minutes", type=float, default=3.0)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=768)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--export", action="store_true")
    p.add_argument("--max-minutes", type=float, default=1e9)
    return p.parse_args()


def lr_at(step, progress, a):
    """Warmup over `--warmup` steps, constant, then a cosine decay to 5% over the last
    `--decay-frac` of training; progress (0..1) is the larger of the step and time fractions,
    so a run bounded by `--max-minutes` still ends with its decay."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    decay_start = 1 - a.decay_frac
    if progress < decay_start:
        return a.lr
    frac = min(1.0, (progress - decay_start) / a.decay_frac)
    return a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))


def diffusion_loss(model, ids, elig, mask_id, gen, bf16=True):
    b, n = ids.shape
    t = torch.rand(b, 1, generator=gen)
    p = (1 - EPS) * t + EPS
    masked = (torch.rand(b, n, generator=gen) < p) & (elig > 0)
    noisy = torch.where(masked, torch.full_like(ids, mask_id), ids)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        h = model.hidden(noisy)
        # The LM head only where the loss is taken (the masked positions).
        logits = model.head(h[masked]).float()
    ce = F.cross_entropy(logits, ids[masked], reduction="none")
    w = (1.0 / p).expand(b, n)[masked] / elig.sum(1, keepdim=True).expand(b, n)[masked]
    return (ce * w).sum() / b


def fixed_validation(corpus, seq, n=192, seed=7):
    rng = np.random.default_rng(seed)
    ids, elig = batch(corpus, rng, n, seq, 0.0, None)
    g = torch.Generator().manual_seed(seed)
    ratios = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9]).repeat_interleave(n // 5 + 1)[:n]
    masked = (torch.rand(n, seq, generator=g) < ratios[:, None]) & (torch.from_numpy(elig) > 0)
    # Skip EOS padding in the accuracy (it is trivially predicted): text tokens and the first EOS.
    ids_t = torch.from_numpy(ids)
    pad = ids_t == corpus.eos
    first_eos = pad & ~torch.cat([torch.zeros(n, 1, dtype=torch.bool), pad[:, :-1]], 1)
    text = masked & (~pad | first_eos)
    return ids_t, masked, text


@torch.no_grad()
def evaluate(model, corpus, val):
    ids, masked, text = val
    model.eval()
    ces, accs, ces_t, accs_t = [], [], [], []
    for i in range(0, ids.shape[0], 32):
        x, m, tx = ids[i:i + 32], masked[i:i + 32], text[i:i + 32]
        logits = model(torch.where(m, torch.full_like(x, corpus.mask), x))
        ce = F.cross_entropy(logits.transpose(1, 2), x, reduction="none")
        ok = (logits.argmax(-1) == x).float()
        ces.append(ce[m]); accs.append(ok[m]); ces_t.append(ce[tx]); accs_t.append(ok[tx])
    model.train()
    cat = torch.cat
    return {"val_ce": cat(ces).mean().item(), "val_acc": cat(accs).mean().item(),
            "val_text_ce": cat(ces_t).mean().item(), "val_text_acc": cat(accs_t).mean().item()}


def save_safetensors(path, tensors, meta):
    header, off, blobs = {"__metadata__": meta}, 0, []
    for name, t in tensors.items():
        b = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    tok_json = os.path.join(a.data, "tokenizer.json")
    verses = os.path.join(a.data, "verses.json")
    train, valid = Corpus(verses, tok_json, "train"), Corpus(verses, tok_json, "valid")
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(tok_json)
    enc = lambda s: tk.encode(s, add_special_tokens=False).ids
    chat_ids = (enc("user"), enc("assistant"), enc("\n\n"))
    cfg = Config(vocab_size=tk.get_vocab_size(), d_model=a.d_model, n_layers=a.layers,
                 n_heads=a.heads, mlp_hidden_size=a.ffn, max_sequence_length=a.seq,
                 mask_token_id=train.mask)
    torch.manual_seed(a.seed)
    model = LLaDA(cfg)
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    ckpt = os.path.join(a.out, "ckpt.pt")
    step, spent, rng, gen = 0, 0.0, np.random.default_rng(a.seed), torch.Generator().manual_seed(a.seed)
    if a.init and not os.path.exists(ckpt):
        model.load_state_dict(torch.load(a.init, weights_only=False)["model"])
        print(f"initialised from {a.init}", flush=True)
    if os.path.exists(ckpt):
        st = torch.load(ckpt, weights_only=False)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
        spent = st.get("spent_s", 0.0)
        rng.bit_generator.state = st["np_rng"]
        gen.set_state(st["torch_rng"])
        print(f"resumed at step {step}", flush=True)
    if a.export:
        meta = {"config": json.dumps(cfg.to_dict()), "step": str(step)}
        save_safetensors(os.path.join(a.out, "weights.safetensors"), hf_state_dict(model), meta)
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump({**cfg.to_dict(), "step": step}, f, indent=1)
        print(f"exported step {step}")
        return
    n_params = sum(p.numel() for p in model.parameters())
    print(f"config {cfg.to_dict()} params {n_params}", flush=True)
    val = fixed_validation(valid, a.seq)
    log = open(os.path.join(a.out, "log.jsonl"), "a")

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "spent_s": spent + time.time() - t0, "np_rng": rng.bit_generator.state, "torch_rng": gen.get_state(),
                    "config": cfg.to_dict(), "args": vars(a)}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    t0 = last_ckpt = time.time()
    tokens, run_loss, run_n = 0, 0.0, 0
    def progress():
        return max(step / a.steps, (spent + time.time() - t0) / (a.max_minutes * 60))

    while progress() < 1.0:
        length = a.seq if rng.random() >= a.short_frac else int(rng.integers(24, a.seq))
        ids, elig = batch(train, rng, a.batch, length, a.chat_frac, chat_ids, a.packed_frac)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, progress(), a)
        loss = diffusion_loss(model, torch.from_numpy(ids), torch.from_numpy(elig), cfg.mask_token_id, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += ids.size
        run_loss, run_n = run_loss + loss.item(), run_n + 1
        if step % 50 == 0:
            el = time.time() - t0
            rec = {"step": step, "loss": run_loss / run_n, "lr": lr_at(step, progress(), a),
                   "tok_per_s": tokens / el, "elapsed_s": spent + el}
            if step % a.eval_every == 0 or step == a.steps:
                rec.update(evaluate(model, valid, val))
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            run_loss, run_n = 0.0, 0
        if time.time() - last_ckpt > a.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    save()
    rec = {"step": step, "final": True, **evaluate(model, valid, val)}
    print(json.dumps(rec), flush=True)
    log.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
