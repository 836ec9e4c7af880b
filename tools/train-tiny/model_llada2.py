"""A tiny LLaDA2 (BailingMoE-v2 block diffusion) in PyTorch, computing exactly what Lacuna's
`llada2` graph computes (crates/lacuna-models: `model/pass.rs`, `model/moe.rs`) so that the
trained weights export to a `llada2` GGUF whose logits match:

- token embedding; per block: RMSNorm, one fused QKV product (rows Q, K, V), per-head RMSNorm
  of Q and K, NEOX RoPE over the first `n_rot` dims of each head, attention that is
  **block-causal** (position i sees every key before `(i // block + 1) * block`), output
  product, residual; RMSNorm, then a dense SwiGLU for the first `n_dense_lead` layers and
  for the others a mixture of experts: router logits (no bias), a sigmoid per expert, the
  top-k experts by sigmoid + `exp_probs_b` (selection only; one group), their sigmoids
  divided by their sum (times `expert_weights_scale`, 1 here), each expert's SwiGLU times
  its weight, plus a shared SwiGLU expert on the same input; residual;
- final RMSNorm and an untied LM head.

Parameter names are the GGUF tensor names (`gguf_state_dict`), with expert tensors stacked as
`[expert, rows, cols]` (ggml dims `[cols, rows, expert]`).
"""
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config2:
    vocab_size: int = 270
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 8
    n_kv_heads: int = 8
    head_dim: int = 32
    n_rot: int = 32
    ffn: int = 768  # dense lead layers
    n_dense_lead: int = 1
    n_experts: int = 4
    n_experts_used: int = 2
    expert_ffn: int = 128
    shared_ffn: int = 768
    max_sequence_length: int = 128
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    mask_token_id: int = 269
    block: int = 8

    def to_dict(self):
        return asdict(self)


def rms_norm(x, w, eps):
    # Lacuna (and ggml) normalise in f32: x / sqrt(mean(x^2) + eps) * w.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_neox(x, pos, n_rot, theta):
    """NEOX RoPE on the first `n_rot` dims of each head: pairs (i, i + n_rot/2), frequency
    theta^(-2i/n_rot). x: [b, h, t, hd]; pos: [t]."""
    half = n_rot // 2
    inv = theta ** (-torch.arange(0, half, dtype=torch.float32) * 2.0 / n_rot)
    ang = pos.float()[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2, rest = x[..., :half], x[..., half:n_rot], x[..., n_rot:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], -1)


def block_causal_mask(t, block):
    """[t, t] bool: query i sees key j when j < (i // block + 1) * block."""
    i = torch.arange(t)
    return i[None, :] < ((i // block + 1) * block)[:, None]


def swiglu(x, gate, up, down):
    return F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down)


class Block(nn.Module):
    def __init__(self, cfg, il):
        super().__init__()
        self.cfg, self.il = cfg, il
        d, hd = cfg.d_model, cfg.head_dim
        qd, kvd = cfg.n_heads * hd, cfg.n_kv_heads * hd
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.attn_qkv = nn.Parameter(torch.randn(qd + 2 * kvd, d) * d ** -0.5)
        self.q_norm = nn.Parameter(torch.ones(hd))
        self.k_norm = nn.Parameter(torch.ones(hd))
        self.attn_output = nn.Parameter(torch.randn(d, qd) * qd ** -0.5 * 0.5)
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.moe = il >= cfg.n_dense_lead
        if not self.moe:
            f = cfg.ffn
            self.ffn_gate = nn.Parameter(torch.randn(f, d) * d ** -0.5)
            self.ffn_up = nn.Parameter(torch.randn(f, d) * d ** -0.5)
            self.ffn_down = nn.Parameter(torch.randn(d, f) * f ** -0.5 * 0.5)
        else:
            e, f, s = cfg.n_experts, cfg.expert_ffn, cfg.shared_ffn
            self.ffn_gate_inp = nn.Parameter(torch.randn(e, d) * d ** -0.5)
            self.register_buffer("exp_probs_b", torch.zeros(e))
            self.ffn_gate_exps = nn.Parameter(torch.randn(e, f, d) * d ** -0.5)
            self.ffn_up_exps = nn.Parameter(torch.randn(e, f, d) * d ** -0.5)
            self.ffn_down_exps = nn.Parameter(torch.randn(e, d, f) * f ** -0.5 * 0.5)
            self.ffn_gate_shexp = nn.Parameter(torch.randn(s, d) * d ** -0.5)
            self.ffn_up_shexp = nn.Parameter(torch.randn(s, d) * d ** -0.5)
            self.ffn_down_shexp = nn.Parameter(torch.randn(d, s) * s ** -0.5 * 0.5)

    def attention(self, x, pos, mask):
        cfg = self.cfg
        b, t, _ = x.shape
        hd, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
        h = rms_norm(x, self.attn_norm, cfg.rms_norm_eps)
        qkv = F.linear(h, self.attn_qkv)
        q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], -1)
        q = q.view(b, t, nh, hd).transpose(1, 2)
        k = k.view(b, t, nkv, hd).transpose(1, 2)
        if getattr(self, "calibrate", False):
            # upcycle(): the mean per-head RMS of Q and K, so that the new norms start at the
            # scale the dense model's attention logits had.
            self.q_rms = q.pow(2).mean(-1).sqrt().mean().item()
            self.k_rms = k.pow(2).mean(-1).sqrt().mean().item()
        v = v.view(b, t, nkv, hd).transpose(1, 2)
        q = rope_neox(rms_norm(q, self.q_norm, cfg.rms_norm_eps), pos, cfg.n_rot, cfg.rope_theta)
        k = rope_neox(rms_norm(k, self.k_norm, cfg.rms_norm_eps), pos, cfg.n_rot, cfg.rope_theta)
        if nkv != nh:
            k = k.repeat_interleave(nh // nkv, 1)
            v = v.repeat_interleave(nh // nkv, 1)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return x + F.linear(a.transpose(1, 2).reshape(b, t, nh * hd), self.attn_output)

    def ffn(self, x):
        cfg = self.cfg
        h = rms_norm(x, self.ffn_norm, cfg.rms_norm_eps)
        if not self.moe:
            return x + swiglu(h, self.ffn_gate, self.ffn_up, self.ffn_down)
        p = torch.sigmoid(F.linear(h, self.ffn_gate_inp))  # [b, t, e]
        sel = torch.topk(p.detach() + self.exp_probs_b, cfg.n_experts_used, -1).indices
        w = p.gather(-1, sel)
        w = w / w.sum(-1, keepdim=True)
        weights = torch.zeros_like(p).scatter(-1, sel, w)  # [b, t, e]
        g = torch.einsum("btd,efd->btef", h, self.ffn_gate_exps)
        u = torch.einsum("btd,efd->btef", h, self.ffn_up_exps)
        y = torch.einsum("btef,edf->bted", F.silu(g) * u, self.ffn_down_exps)
        routed = (y * weights[..., None]).sum(-2)
        shared = swiglu(h, self.ffn_gate_shexp, self.ffn_up_shexp, self.ffn_down_shexp)
        return x + routed + shared

    def forward(self, x, pos, mask):
        return self.ffn(self.attention(x, pos, mask))


class LLaDA2Tiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.token_embd = nn.Parameter(torch.randn(cfg.vocab_size, cfg.d_model))
        self.blocks = nn.ModuleList(Block(cfg, il) for il in range(cfg.n_layers))
        self.output_norm = nn.Parameter(torch.ones(cfg.d_model))
        self.output = nn.Parameter(torch.randn(cfg.vocab_size, cfg.d_model) * cfg.d_model ** -0.5)

    def forward(self, ids, pos=None, mask=None):
        """Logits of `ids` [b, t]; by default positions 0..t and LLaDA2's block-causal mask."""
        t = ids.shape[1]
        if pos is None:
            pos = torch.arange(t)
        if mask is None:
            mask = block_causal_mask(t, self.cfg.block)
        x = self.token_embd[ids]
        for blk in self.blocks:
            x = blk(x, pos, mask)
        return F.linear(rms_norm(x, self.output_norm, self.cfg.rms_norm_eps), self.output)


def gguf_state_dict(model):
    """The weights under their GGUF names, float32, PyTorch shapes (the exporter reverses
    them into ggml dims)."""
    out = {"token_embd.weight": model.token_embd, "output_norm.weight": model.output_norm,
           "output.weight": model.output}
    for il, blk in enumerate(model.blocks):
        for name, p in list(blk.named_parameters()) + list(blk.named_buffers()):
            suffix = "bias" if name == "exp_probs_b" else "weight"
            gg = {"q_norm": "attn_q_norm", "k_norm": "attn_k_norm"}.get(name, name)
            out[f"blk.{il}.{gg}.{suffix}"] = p
    return {k: v.detach().float().contiguous() for k, v in out.items()}


def upcycle(model, llada_state, sample=None):
    """Initialises `model` from a trained tiny LLaDA (`train_tasks.state_from_gguf` names):
    embedding, norms, LM head and attention copied (Q, K, V fused; RoPE is the same NEOX
    rotation over the whole head when n_rot = head_dim), the dense FFN copied into the lead
    layers and into every shared expert, and the routed experts' down projections zeroed, so
    the MoE layers start as the dense model's FFN. Only the Q/K norms are new: set to the
    mean per-head RMS of Q and K on `sample` (token ids [b, t]) when given, else ones."""
    s = llada_state
    with torch.no_grad():
        model.token_embd.copy_(s["transformer.wte.weight"])
        model.output_norm.copy_(s["transformer.ln_f.weight"])
        model.output.copy_(s["transformer.ff_out.weight"])
        for il, blk in enumerate(model.blocks):
            p = f"transformer.blocks.{il}."
            blk.attn_norm.copy_(s[p + "attn_norm.weight"])
            blk.attn_qkv.copy_(torch.cat([s[p + "q_proj.weight"], s[p + "k_proj.weight"],
                                          s[p + "v_proj.weight"]]))
            blk.attn_output.copy_(s[p + "attn_out.weight"])
            blk.ffn_norm.copy_(s[p + "ff_norm.weight"])
            gate, up, down = s[p + "ff_proj.weight"], s[p + "up_proj.weight"], s[p + "ff_out.weight"]
            if blk.moe:
                blk.ffn_gate_shexp.copy_(gate)
                blk.ffn_up_shexp.copy_(up)
                blk.ffn_down_shexp.copy_(down)
                blk.ffn_down_exps.zero_()
            else:
                blk.ffn_gate.copy_(gate)
                blk.ffn_up.copy_(up)
                blk.ffn_down.copy_(down)
        if sample is not None:
            # Layer by layer: each layer's norms are set before the next layer's input is
            # measured.
            for blk in model.blocks:
                blk.calibrate = True
                model(sample)
                blk.calibrate = False
                blk.q_norm.fill_(blk.q_rms)
                blk.k_norm.fill_(blk.k_rms)


EPS = 1e-3


def twin_mask(t, block):
    """The block-diffusion training mask over `[noisy (t) ; clean (t)]` (BD3-LM's vectorised
    form): noisy block b sees itself and the clean blocks before it — what block b of the
    canvas sees at inference, when every earlier block is committed — and the clean copy is
    block-causal over itself."""
    i = torch.arange(t)
    blk = i // block
    same = blk[:, None] == blk[None, :]
    before = blk[None, :] < blk[:, None]
    causal = blk[None, :] <= blk[:, None]
    top = torch.cat([same, before], 1)
    bottom = torch.cat([torch.zeros(t, t, dtype=torch.bool), causal], 1)
    return torch.cat([top, bottom], 0)


def block_diffusion_loss(model, ids, elig, mask_id, gen):
    """LLaDA2's objective on blocks: each block of each sequence masked at its own rate
    t ~ U(eps, 1] (eligible positions only), predicted from itself and the clean earlier
    blocks; cross-entropy on the masked positions weighted by 1/t, per eligible token."""
    b, n = ids.shape
    block = model.cfg.block
    nb = (n + block - 1) // block
    t = (1 - EPS) * torch.rand(b, nb, generator=gen) + EPS
    p = t.repeat_interleave(block, 1)[:, :n]
    masked = (torch.rand(b, n, generator=gen) < p) & (elig > 0)
    noisy = torch.where(masked, torch.full_like(ids, mask_id), ids)
    pos = torch.arange(n).repeat(2)
    logits = model(torch.cat([noisy, ids], 1), pos, twin_mask(n, block))[:, :n]
    ce = F.cross_entropy(logits[masked], ids[masked], reduction="none")
    w = (1.0 / p)[masked] / elig.sum(1, keepdim=True).expand(b, n)[masked]
    return (ce * w).sum() / b


@torch.no_grad()
def decode(model, ids, gen, mask_id):
    """LLaDA2-style greedy decoding with one token per step: the canvas padded to whole
    blocks, block-causal attention, and in the first block holding a mask the most confident
    masked position committed each step. Returns the generated ids."""
    block = model.cfg.block
    n = -(-(len(ids) + gen) // block) * block
    x = torch.tensor([ids + [mask_id] * (n - len(ids))])
    while (x[0] == mask_id).any():
        b = int((x[0] == mask_id).nonzero()[0]) // block
        logits = model(x)[0]
        conf, pred = torch.softmax(logits.float(), -1).max(-1)
        in_block = torch.zeros(n, dtype=torch.bool)
        in_block[b * block:(b + 1) * block] = True
        conf = torch.where((x[0] == mask_id) & in_block, conf, torch.full_like(conf, -1.0))
        i = int(conf.argmax())
        x[0, i] = pred[i]
    return x[0, len(ids):len(ids) + gen].tolist()
