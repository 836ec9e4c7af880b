#!/usr/bin/env python3
"""LLaDA2's forward pass in numpy (float64), transcribed from the Hugging Face modeling code
of inclusionAI/LLaDA2.0-mini (`modeling_llada2_moe.py`: LLaDA2MoeModelLM, the BailingMoE-v2
attention, gate and MoE blocks) and run on a GGUF fixture's weights, with the block-causal
attention mask LLaDA2's `generate` builds. It is the reference for the part llama.cpp cannot
check (it has no llada2 graph): attention bidirectional inside a block and causal across
blocks. The test `crates/lacuna-models/tests/block_causal.rs` compares Lacuna against the
logits this writes.

    python3 tools/llada2-ref/reference.py FIXTURE.gguf --tokens 1,2,3 --block 4 --out OUT.logits

Transcribed, not imported (no torch here). What follows the HF code:
  * fused `query_key_value` split into Q, K, V heads in that order; per-head RMSNorm of Q
    and K (`query_layernorm`, `key_layernorm`) before RoPE;
  * partial rotary embedding: the first `rope.dimension_count` elements of each head,
    `rotate_half` pairs (i, i + rot/2), `inv_freq = base^(-2i/rot)`;
  * attention `softmax(q k^T / sqrt(head_dim) + mask) v`, K/V heads repeated for GQA; mask 0
    where key block <= query block, -inf elsewhere (`tril` over blocks);
  * gate: fp32 `sigmoid(x W^T)`; selection scores plus `expert_bias`; groups scored by the sum
    of their top two; the best `topk_group` groups kept (others 0 in the HF code, -inf in
    llama.cpp: the same here, where every selection score is positive); top-k experts by the
    selection scores; weights the unbiased sigmoids, divided by their sum (+1e-20), times
    `routed_scaling_factor`;
  * experts and the shared expert `down(silu(gate(x)) * up(x))`, summed; the first
    `first_k_dense_replace` layers a dense MLP instead;
  * final RMSNorm and `lm_head`; logits are not shifted.
"""
import argparse
import sys

import numpy as np
from gguf import GGUFReader


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--block", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    r = GGUFReader(a.model)

    def kv(key):
        f = r.fields[key]
        v = f.parts[f.data[0]]
        return v.tolist()[0] if len(v) == 1 else v.tolist()

    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    if arch != "llada2":
        sys.exit(f"not a llada2 file: {arch}")
    k = lambda s: kv(f"llada2.{s}")
    n_layer, d = k("block_count"), k("embedding_length")
    nh, nkv = k("attention.head_count"), k("attention.head_count_kv")
    hd = d // nh
    rot, eps, base = k("rope.dimension_count"), k("attention.layer_norm_rms_epsilon"), k("rope.freq_base")
    n_exp, top_k = k("expert_count"), k("expert_used_count")
    n_group, topk_group = k("expert_group_count"), k("expert_group_used_count")
    scale, norm = k("expert_weights_scale"), bool(k("expert_weights_norm"))
    dense_lead = k("leading_dense_block_count")
    if k("expert_gating_func") != 2:
        sys.exit("the reference transcribes sigmoid gating only")
    W = {}
    for t in r.tensors:
        if t.tensor_type.name != "F32":
            sys.exit(f"the reference takes F32 fixtures only ({t.name} is {t.tensor_type.name})")
        W[t.name] = np.array(t.data, dtype=np.float64)

    tokens = [int(x) for x in a.tokens.split(",")]
    T = len(tokens)
    x = W["token_embd.weight"][tokens]
    blk = np.arange(T) // a.block
    mask = np.where(blk[None, :] <= blk[:, None], 0.0, -np.inf)
    inv = base ** (-np.arange(0, rot, 2) / rot)
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

    def rope(v):  # [T, heads, hd]: rotate_half on the first `rot` dims
        r_, p_ = v[..., :rot], v[..., rot:]
        h = rot // 2
        rh = np.concatenate([-r_[..., h:], r_[..., :h]], -1)
        return np.concatenate([r_ * cos[:, None, :] + rh * sin[:, None, :], p_], -1)

    def mlp(h, pre):
        g, u, dn = (W[f"{pre}_{n}.weight"] for n in ("gate", "up", "down"))
        return (silu(h @ g.T) * (h @ u.T)) @ dn.T

    for il in range(n_layer):
        p = lambda s: W[f"blk.{il}.{s}"]
        h = rms(x, p("attn_norm.weight"), eps)
        qkv = h @ p("attn_qkv.weight").T
        q = qkv[:, : nh * hd].reshape(T, nh, hd)
        kk = qkv[:, nh * hd : (nh + nkv) * hd].reshape(T, nkv, hd)
        v = qkv[:, (nh + nkv) * hd :].reshape(T, nkv, hd)
        q = rope(rms(q, p("attn_q_norm.weight"), eps))
        kk = rope(rms(kk, p("attn_k_norm.weight"), eps))
        rep = nh // nkv
        kk, v = np.repeat(kk, rep, axis=1), np.repeat(v, rep, axis=1)
        s = np.einsum("ihd,jhd->hij", q, kk) / np.sqrt(hd) + mask[None]
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hij,jhd->ihd", s, v).reshape(T, nh * hd)
        x = x + o @ p("attn_output.weight").T
        h = rms(x, p("ffn_norm.weight"), eps)
        if il < dense_lead:
            x = x + mlp(h, f"blk.{il}.ffn")
            continue
        scores = 1.0 / (1.0 + np.exp(-(h @ p("ffn_gate_inp.weight").T)))
        choice = scores + p("exp_probs_b.bias")[None, :]
        out = np.zeros_like(x)
        per = n_exp // n_group
        for t in range(T):
            gs = np.sort(choice[t].reshape(n_group, per), axis=-1)[:, -2:].sum(-1)
            keep = np.argsort(-gs, kind="stable")[:topk_group]
            c = np.full(n_exp, 0.0)
            for g in keep:
                c[g * per : (g + 1) * per] = choice[t, g * per : (g + 1) * per]
            sel = np.argsort(-c, kind="stable")[:top_k]
            wts = scores[t, sel]
            if norm and top_k > 1:
                wts = wts / (wts.sum() + 1e-20)
            wts = wts * scale
            for e, wgt in zip(sel, wts):
                g = p("ffn_gate_exps.weight")[e]
                u = p("ffn_up_exps.weight")[e]
                dn = p("ffn_down_exps.weight")[e]
                out[t] += wgt * ((silu(g @ h[t]) * (u @ h[t])) @ dn.T)
        x = x + out + (
            (silu(h @ p("ffn_gate_shexp.weight").T) * (h @ p("ffn_up_shexp.weight").T))
            @ p("ffn_down_shexp.weight").T
        )
    x = rms(x, W["output_norm.weight"], eps)
    logits = x @ W["output.weight"].T
    logits.astype("<f4").tofile(a.out)
    print(f"wrote {T} x {logits.shape[1]} logits to {a.out}")


if __name__ == "__main__":
    main()
