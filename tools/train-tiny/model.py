"""LLaDA's architecture at a tiny size, as llama.cpp's `llada` graph computes it.

Pre-norm transformer: RMSNorm, Q/K/V/O projections without bias, rotary embeddings, full
(non-causal) attention, SwiGLU feed-forward, final RMSNorm and an untied LM head. Module
names follow LLaDA's Hugging Face checkpoint (`model.transformer.blocks.N.q_proj`, `ff_proj`
= gate, `up_proj` = up, `ff_out` = down), and RoPE is applied the way LLaDA's modeling code
does (`rotate_half`: element i pairs with i + head_dim/2); llama.cpp's converter permutes
Q and K rows so that its normal-mode RoPE (adjacent pairs) computes the same thing, and the
exporter does the same.
"""
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    vocab_size: int = 4096
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    mlp_hidden_size: int = 768
    max_sequence_length: int = 128
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    mask_token_id: int = 4095

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n, device=None):
    hd = cfg.d_model // cfg.n_heads
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32, device=device) / hd))
    ang = torch.outer(torch.arange(n, dtype=torch.float32, device=device), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, f = cfg.d_model, cfg.mlp_hidden_size
        self.n_heads = cfg.n_heads
        self.attn_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.attn_out = nn.Linear(d, d, bias=False)
        self.ff_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.ff_proj = nn.Linear(d, f, bias=False)  # gate
        self.up_proj = nn.Linear(d, f, bias=False)
        self.ff_out = nn.Linear(f, d, bias=False)  # down

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.attn_norm(x)
        q, k, v = (p(h).view(b, t, self.n_heads, -1).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        x = x + self.attn_out(a.transpose(1, 2).reshape(b, t, d))
        h = self.ff_norm(x)
        return x + self.ff_out(F.silu(self.ff_proj(h)) * self.up_proj(h))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = RMSNorm(cfg.d_model, cfg.rms_norm_eps)
        self.ff_out = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # LM head


class LLaDA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        self.apply(self._init)
        # Scaled init of the residual-branch outputs (GPT-2 style).
        for blk in self.transformer.blocks:
            for p in (blk.attn_out.weight, blk.ff_out.weight):
                nn.init.normal_(p, std=0.02 / (2 * cfg.n_layers) ** 0.5)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def hidden(self, ids):
        """The final-normed hidden states (`result_norm` in llama.cpp's graph)."""
        tr = self.transformer
        cos, sin = rope_tables(self.cfg, ids.shape[1], ids.device)
        x = tr.wte(ids)
        for blk in tr.blocks:
            x = blk(x, cos, sin)
        return tr.ln_f(x)

    def head(self, h):
        return self.transformer.ff_out(h)

    def forward(self, ids):
        return self.head(self.hidden(ids))


def hf_state_dict(model):
    """Parameters under LLaDA's Hugging Face names (`model.transformer....`), as float32."""
    return {"model." + k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
