#!/usr/bin/env python3
"""Trains the task model (`tasks.py`): the tiny LLaDA of `model.py` with LLaDA's
masked-diffusion loss (`train.diffusion_loss`), on the answer only (SFT) for part of the
sequences and on the whole sequence for the rest. Resumable like `train.py` (`ckpt.pt`
every `--ckpt-minutes`; the same command resumes), warmup-stable-decay learning rate on the
larger of step and wall-time progress. Every `--eval-every` steps it decodes held-out
problems with LLaDA's official sampler (low-confidence remasking, one token per step,
gen 32) and logs exact-match accuracy per task.

Usage: train_tasks.py --data DIR --out DIR [--max-minutes M] [--export]
"""
import argparse
import json
import os
import time

import numpy as np
import torch

from model import Config, LLaDA, hf_state_dict
from model_llada2 import Config2, LLaDA2Tiny, block_diffusion_loss, gguf_state_dict, upcycle
from model_llada2 import decode as decode_llada2
from tasks import TASKS, Tasks, batch, read_problems
from train import diffusion_loss, lr_at, save_safetensors

GEN = 32


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=1000000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--decay-frac", type=float, default=0.25)
    p.add_argument("--whole-frac", type=float, default=0.3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--ckpt-minutes", type=float, default=3.0)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-n", type=int, default=40, help="held-out problems per task per eval")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=768)
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--seed", type=int, default=4321)
    p.add_argument("--tasks", nargs="+", default=list(TASKS), help="train on these tasks only")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (default: F32)")
    p.add_argument("--curriculum", type=float, default=0.3,
                   help="share of training over which problem sizes grow to the full ranges")
    p.add_argument("--full-frac", type=float, default=0.3,
                   help="share of batches padded to the generation canvas (prompt + 32)")
    p.add_argument("--export", action="store_true")
    p.add_argument("--max-minutes", type=float, default=1e9)
    p.add_argument("--init-gguf", help="start from this GGUF's weights (a warm start: a fresh "
                   "optimizer and schedule; ignored when the run has a checkpoint)")
    p.add_argument("--arch", choices=["llada", "llada2"], default="llada",
                   help="llada2: the block-diffusion twin (model_llada2.py); --init-gguf then "
                   "upcycles a trained llada GGUF")
    p.add_argument("--block", type=int, default=8, help="llada2: block length")
    p.add_argument("--mix", default="", help="task weights, e.g. add=2,sort=2,rev=1 (default: equal)")
    p.add_argument("--six-digit-sums", type=float, default=0.0,
                   help="this fraction of additions are two 5-digit operands with a 6-digit sum "
                        "(about 2%% of a uniform draw; run 6 missed all 8 held-out ones)")
    return p.parse_args()


@torch.no_grad()
def decode(model, tasks, prompt, gen=GEN):
    """LLaDA's `generate` with steps = gen_length = block_length, low-confidence
    remasking, temperature 0: each step commits the most confident masked position."""
    ids = [tasks.bos] + tasks.enc(prompt)
    if isinstance(model, LLaDA2Tiny):
        out = decode_llada2(model, ids, gen, tasks.mask)
        if tasks.eos in out:
            out = out[:out.index(tasks.eos)]
        return tasks.tok.decode(out)
    x = torch.tensor([ids + [tasks.mask] * gen])
    for _ in range(gen):
        logits = model(x)[0].float()
        probs = torch.softmax(logits, -1)
        conf, pred = probs.max(-1)
        masked = x[0] == tasks.mask
        conf = torch.where(masked, conf, torch.full_like(conf, -1.0))
        i = int(conf.argmax())
        x[0, i] = pred[i]
    out = x[0, len(ids):].tolist()
    if tasks.eos in out:
        out = out[:out.index(tasks.eos)]
    return tasks.tok.decode(out)


@torch.no_grad()
def one_shot(model, tasks, held, n=60):
    """Answer-token accuracy with the whole answer masked (one forward, argmax): a cheap
    progress signal (the decoder's accuracy lags it)."""
    model.eval()
    out = {}
    for task in tasks.tasks:
        ok = total = 0
        for h in [h for h in held if h["task"] == task][:n]:
            pi, ai = [tasks.bos] + tasks.enc(h["prompt"]), tasks.enc(h["answer"])
            logits = model(torch.tensor([pi + [tasks.mask] * GEN]))[0, len(pi):len(pi) + len(ai)]
            ok += sum(int(p == q) for p, q in zip(logits.argmax(-1).tolist(), ai))
            total += len(ai)
        out[f"tok_{task}"] = round(ok / total, 4)
    model.train()
    return out


def accuracy(model, tasks, held, n):
    model.eval()
    acc = {}
    for task in tasks.tasks:
        probs = [h for h in held if h["task"] == task][:n]
        ok = sum(decode(model, tasks, h["prompt"]).strip() == h["answer"].strip() for h in probs)
        acc[f"acc_{task}"] = ok / len(probs)
    model.train()
    return acc


def state_from_gguf(path, cfg):
    """The model's state dict from a GGUF this exporter wrote (any type gguf-py dequantizes):
    names mapped back, shapes as PyTorch's, and Q/K rows un-permuted (the exporter's
    `permute_rows` inverse: ggml row `h*hd + 2i + j` is PyTorch row `h*hd + j*hd/2 + i`)."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    names = {"token_embd": "transformer.wte", "output_norm": "transformer.ln_f",
             "output": "transformer.ff_out"}
    per_layer = {"attn_norm": "attn_norm", "attn_q": "q_proj", "attn_k": "k_proj",
                 "attn_v": "v_proj", "attn_output": "attn_out", "ffn_norm": "ff_norm",
                 "ffn_gate": "ff_proj", "ffn_up": "up_proj", "ffn_down": "ff_out"}
    state = {}
    for t in GGUFReader(path).tensors:
        base = t.name.removesuffix(".weight")
        if base.startswith("blk."):
            _, il, part = base.split(".", 2)
            key = f"transformer.blocks.{il}.{per_layer[part]}.weight"
        else:
            key = names[base] + ".weight"
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape)]) if w.ndim > 1 or len(t.shape) > 1 else w.reshape(-1)
        if key.endswith(("q_proj.weight", "k_proj.weight")):
            rows, cols = w.shape
            hd = rows // cfg.n_heads
            w = w.reshape(cfg.n_heads, hd // 2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)
        state[key] = torch.from_numpy(np.array(w, dtype=np.float32, copy=True))
    return state


def gguf_arch(path):
    """`general.architecture` of a GGUF."""
    from gguf import GGUFReader
    f = GGUFReader(path).fields["general.architecture"]
    return bytes(f.parts[f.data[0]]).decode()


def twin_state_from_gguf(path, model):
    """A twin's state dict from its own `llada2` export: the exporter writes every tensor
    under its GGUF name with PyTorch's dims reversed and nothing permuted (NEOX RoPE), so
    this is `model_llada2.gguf_state_dict` read backwards."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    by_gguf = {}
    for key in model.state_dict():
        if key.startswith("blocks."):
            _, il, name = key.split(".", 2)
            suffix = "bias" if name == "exp_probs_b" else "weight"
            gg = {"q_norm": "attn_q_norm", "k_norm": "attn_k_norm"}.get(name, name)
            by_gguf[f"blk.{il}.{gg}.{suffix}"] = key
        else:
            by_gguf[f"{key}.weight"] = key
    state = {}
    for t in GGUFReader(path).tensors:
        key = by_gguf[t.name]
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape)])
        state[key] = torch.from_numpy(np.array(w, dtype=np.float32, copy=True))
    missing = set(by_gguf.values()) - set(state)
    assert not missing, f"{path} lacks {sorted(missing)}"
    return state


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    held = read_problems(os.path.join(a.data, "heldout.tsv"))
    mix = dict((k, float(v)) for k, v in (kv.split("=") for kv in a.mix.split(",") if kv))
    tasks = Tasks(os.path.join(a.data, "tokenizer.json"), held, a.tasks, mix, a.six_digit_sums)
    torch.manual_seed(a.seed)
    if a.arch == "llada2":
        cfg = Config2(vocab_size=tasks.tok.get_vocab_size(), d_model=a.d_model, n_layers=a.layers,
                      n_heads=a.heads, n_kv_heads=a.heads, head_dim=a.d_model // a.heads,
                      n_rot=a.d_model // a.heads, ffn=a.ffn, shared_ffn=a.ffn,
                      max_sequence_length=a.ctx, mask_token_id=tasks.mask, block=a.block)
        model = LLaDA2Tiny(cfg)
    else:
        cfg = Config(vocab_size=tasks.tok.get_vocab_size(), d_model=a.d_model, n_layers=a.layers,
                     n_heads=a.heads, mlp_hidden_size=a.ffn, max_sequence_length=a.ctx,
                     mask_token_id=tasks.mask)
        model = LLaDA(cfg)
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    ckpt = os.path.join(a.out, "ckpt.pt")
    step, spent = 0, 0.0
    rng, gen = np.random.default_rng(a.seed), torch.Generator().manual_seed(a.seed)
    if os.path.exists(ckpt):
        st = torch.load(ckpt, weights_only=False)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step, spent = st["step"], st.get("spent_s", 0.0)
        rng.bit_generator.state = st["np_rng"]
        gen.set_state(st["torch_rng"])
        print(f"resumed at step {step}", flush=True)
    elif a.init_gguf and a.arch == "llada2" and gguf_arch(a.init_gguf) == "llada2":
        # A twin continued from its own export (a fresh optimizer), not upcycled again.
        model.load_state_dict(twin_state_from_gguf(a.init_gguf, model))
        print(f"continued from {a.init_gguf}", flush=True)
    elif a.init_gguf and a.arch == "llada2":
        heads = Config(n_heads=a.heads)
        # Q/K norms calibrated on a batch of full-level problems (a fixed seed, not the run's).
        sample, _ = batch(tasks, np.random.default_rng(1), 64, GEN, a.whole_frac, 1.0, 1.0)
        upcycle(model, state_from_gguf(a.init_gguf, heads), torch.from_numpy(sample))
        print(f"upcycled from {a.init_gguf}", flush=True)
    elif a.init_gguf:
        model.load_state_dict(state_from_gguf(a.init_gguf, cfg))
        print(f"initialised from {a.init_gguf}", flush=True)
    if a.export:
        meta = {"config": json.dumps({**cfg.to_dict(), "arch": a.arch}), "step": str(step)}
        weights = gguf_state_dict(model) if a.arch == "llada2" else hf_state_dict(model)
        save_safetensors(os.path.join(a.out, "weights.safetensors"), weights, meta)
        # The training run's arguments (args.json), not this export call's defaults.
        args_at = os.path.join(a.out, "args.json")
        args = json.load(open(args_at)) if os.path.exists(args_at) else vars(a)
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump({**cfg.to_dict(), "step": step, "args": args}, f, indent=1)
        print(f"exported step {step}")
        return
    print(f"config {cfg.to_dict()} params {sum(p.numel() for p in model.parameters())}", flush=True)
    with open(os.path.join(a.out, "args.json"), "w") as f:
        json.dump(vars(a), f, indent=1)
    log = open(os.path.join(a.out, "log.jsonl"), "a")

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "spent_s": spent + time.time() - t0, "np_rng": rng.bit_generator.state,
                    "torch_rng": gen.get_state(), "config": cfg.to_dict(), "args": vars(a)},
                   ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    t0 = last_ckpt = time.time()
    tokens, run_loss, run_n = 0, 0.0, 0

    def progress():
        return max(step / a.steps, (spent + time.time() - t0) / (a.max_minutes * 60))

    while progress() < 1.0:
        level = min(1.0, progress() / a.curriculum) if a.curriculum > 0 else 1.0
        ids, elig = batch(tasks, rng, a.batch, GEN, a.whole_frac, level, a.full_frac)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, progress(), a)
        if a.arch == "llada2":
            loss = block_diffusion_loss(model, torch.from_numpy(ids), torch.from_numpy(elig),
                                        cfg.mask_token_id, gen)
        else:
            loss = diffusion_loss(model, torch.from_numpy(ids), torch.from_numpy(elig), cfg.mask_token_id,
                                  gen, bf16=a.bf16)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += ids.size
        run_loss, run_n = run_loss + loss.item(), run_n + 1
        if step % 50 == 0:
            el = time.time() - t0
            rec = {"step": step, "loss": run_loss / run_n, "lr": lr_at(step, progress(), a), "level": round(level, 3),
                   "tok_per_s": tokens / el, "elapsed_s": spent + el}
            if step % a.eval_every == 0:
                rec.update(one_shot(model, tasks, held))
                if a.eval_n:
                    rec.update(accuracy(model, tasks, held, a.eval_n))
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            run_loss, run_n = 0.0, 0
        if time.time() - last_ckpt > a.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    save()
    rec = {"step": step, "final": True, **accuracy(model, tasks, held, 100)}
    print(json.dumps(rec), flush=True)
    log.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
