#!/usr/bin/env python3
"""The PyTorch bf16 anchor for the CUDA backend: a LLaDA-8B-shaped forward pass (random
weights: 32 layers, d 4096, 32 heads, FFN 12288, vocab 126464, bidirectional attention via
SDPA, RMSNorm, RoPE, SwiGLU), timed eager and under torch.compile, the way dInfer /
Fast-dLLM users run these models. Prints one JSON line per (mode, T).

Usage: torch_forward.py [--layers 32] [--tokens 160 544 1024] [--runs 5]
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, ff, bias=False)
        self.up = torch.nn.Linear(d, ff, bias=False)
        self.down = torch.nn.Linear(ff, d, bias=False)
        self.n1 = torch.nn.RMSNorm(d, eps=1e-5)
        self.n2 = torch.nn.RMSNorm(d, eps=1e-5)

    def forward(self, x, cos, sin):
        t = x.shape[1]
        q, k, v = self.qkv(self.n1(x)).view(1, t, 3, self.h, self.hd).unbind(2)

        def rope(z):
            z1, z2 = z[..., ::2], z[..., 1::2]
            return torch.stack((z1 * cos - z2 * sin, z1 * sin + z2 * cos), -1).flatten(-2)

        q, k = rope(q).transpose(1, 2), rope(k).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=False)
        x = x + self.o(a.transpose(1, 2).reshape(1, t, -1))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self, layers, d=4096, heads=32, ff=12288, vocab=126464):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Layer(d, heads, ff) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(d, eps=1e-5)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.hd = d // heads

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device, dtype=torch.float32)
        inv = 500000.0 ** (-torch.arange(0, self.hd, 2, device=ids.device) / self.hd)
        ang = torch.outer(pos, inv)[None, :, None, :]
        cos, sin = ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--tokens", type=int, nargs="+", default=[160, 544, 1024])
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    torch.manual_seed(0)
    # Built on the GPU in bf16: initialising 8B float32 parameters on the CPU takes minutes.
    torch.set_default_device("cuda")
    torch.set_default_dtype(torch.bfloat16)
    model = Model(a.layers).eval()
    modes = [("eager", model), ("compile", torch.compile(model))]
    for name, m in modes:
        for t in a.tokens:
            ids = torch.randint(0, 126464, (1, t), device="cuda")
            with torch.inference_mode():
                for _ in range(2):
                    m(ids)
                torch.cuda.synchronize()
                ms = []
                for _ in range(a.runs):
                    c = time.perf_counter()
                    m(ids)
                    torch.cuda.synchronize()
                    ms.append((time.perf_counter() - c) * 1e3)
            ms.sort()
            print(json.dumps({"backend": f"torch-bf16-{name}", "layers": a.layers, "tokens": t,
                              "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "max_ms": ms[-1],
                              "runs": a.runs, "torch": torch.__version__,
                              "gpu": torch.cuda.get_device_name()}), flush=True)


if __name__ == "__main__":
    main()
