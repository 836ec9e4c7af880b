#!/usr/bin/env python3
"""Reference logits for DiffusionGemma's quantized presets, from Hugging Face transformers.

Lacuna's own tiny `diffusion-gemma` fixture (`lacuna fixture --arch diffusion-gemma --shape
tiny --layers 2`: one sliding and one global layer, d 256, 4 heads of 64 / 128, 8 experts
top 2, window 16, canvas 32: every matrix width a multiple of 256, so the K-quant presets
keep their K-quants) is quantized by `lacuna quantize` under every llama-quantize preset.
Each file is read back with gguf-py, its weights dequantized (the values the file holds),
its query norms scaled by Q_NORM_SCALE (as the test scales them: the random fixture's
attention is otherwise so peaked that rounding is magnified), loaded into transformers'
`DiffusionGemmaForBlockDiffusion` and run in float64, with every matmul over a quantized
weight reading its input rounded as ggml rounds it (`Rounded`): the encoder over a prompt
longer than the window, the decoder over a canvas, the decoder self-conditioned on the
reference's own first rows, and the decoder over a next canvas after the encoder's commit
pass.

`crates/lacuna-models/tests/diffusion_gemma_presets.rs` holds Lacuna to it (its comment
gives the bounds and why). The F32 file is checked too, at 1e-5: it is what says the
GGUF-to-transformers mapping here is right.

    tools/train-tiny/.venv/bin/python tools/diffusion-gemma-ref/quant_ref.py \
        target/release/lacuna crates/lacuna-models/tests/data/diffusion-gemma-presets

Writes `cases.txt` (the fixture's hash, the tokens, each file's committed ids and its rows
at a routing near-tie) and, per file, its rows [encoder | decoder | decoder
self-conditioned | decoder after the commit]: `f32.logits` as f32, `<preset>.f16` as f16
(agreement to rounding is then ~2e-4).
"""
import hashlib
import importlib.metadata
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
import torch
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion
from transformers.cache_utils import DynamicCache

LACUNA = sys.argv[1] if len(sys.argv) > 1 else "target/release/lacuna"
OUT = Path(sys.argv[2] if len(sys.argv) > 2 else "crates/lacuna-models/tests/data/diffusion-gemma-presets")
PRESETS = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_S",
           "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_NL", "IQ4_XS", "MXFP4_MOE"]
PROMPT = 20
SC_T = np.float32(0.8)
A = "diffusion-gemma"


def field(r, key):
    f = r.fields[key]
    if len(f.data) == 1:
        v = f.parts[f.data[0]]
        return v.tobytes().decode() if f.types[0] == gguf.GGUFValueType.STRING else v[0].item()
    return [f.parts[i][0].item() for i in f.data]


def weights(r):
    """Every tensor of the file, dequantized, in numpy's (reversed ggml) shape."""
    out = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = np.asarray(a, dtype=np.float32).reshape([int(x) for x in reversed(t.shape)])
    return out


Q_NORM_SCALE = np.float32(0.25)


def build(r):
    pattern = field(r, f"{A}.attention.sliding_window_pattern")
    kv = field(r, f"{A}.attention.head_count_kv")
    n = len(pattern)
    kv_swa = next(k for k, s in zip(kv, pattern) if s)
    kv_full = next(k for k, s in zip(kv, pattern) if not s)
    text = dict(
        vocab_size=len(r.fields["tokenizer.ggml.tokens"].data),
        hidden_size=field(r, f"{A}.embedding_length"),
        intermediate_size=field(r, f"{A}.feed_forward_length"),
        num_hidden_layers=n,
        num_attention_heads=field(r, f"{A}.attention.head_count"),
        num_key_value_heads=kv_swa, num_global_key_value_heads=kv_full,
        head_dim=field(r, f"{A}.attention.key_length_swa"),
        global_head_dim=field(r, f"{A}.attention.key_length"),
        layer_types=["sliding_attention" if s else "full_attention" for s in pattern],
        sliding_window=field(r, f"{A}.attention.sliding_window"),
        num_experts=field(r, f"{A}.expert_count"), top_k_experts=field(r, f"{A}.expert_used_count"),
        moe_intermediate_size=field(r, f"{A}.expert_feed_forward_length"),
        max_position_embeddings=1024, rms_norm_eps=field(r, f"{A}.attention.layer_norm_rms_epsilon"),
        final_logit_softcapping=field(r, f"{A}.final_logit_softcapping"),
    )
    assert field(r, f"{A}.rope.freq_base") == 1e6 and field(r, f"{A}.rope.freq_base_swa") == 1e4
    vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32,
                  num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=8)
    config = DiffusionGemmaConfig(text_config=text, vision_config=vision,
                                  canvas_length=field(r, "diffusion.canvas_length"))
    model = DiffusionGemmaForBlockDiffusion(config).eval()
    w = weights(r)
    for name in w:
        if name.endswith("attn_q_norm.weight"):
            w[name] = w[name] * Q_NORM_SCALE
    # Proportional RoPE: the file's rope_freqs must say what transformers' default does
    # (a quarter of the global head's pairs rotate).
    rot = int(text["global_head_dim"] * 0.25 / 2)
    assert np.array_equal(w["rope_freqs.weight"] == 1.0, np.arange(text["global_head_dim"] // 2) < rot)
    dec = model.model.decoder
    enc = model.model.encoder.language_model
    used = {"rope_freqs.weight"}
    loaded = []

    def put(param, name):
        v = torch.from_numpy(w[name])
        assert tuple(param.shape) == tuple(v.shape), (name, param.shape, v.shape)
        param.data.copy_(v.to(param.dtype))
        used.add(name)
        loaded.append((param, name))

    put(dec.embed_tokens.weight, "token_embd.weight")
    put(dec.norm.weight, "output_norm.weight")
    sc = dec.self_conditioning
    put(sc.pre_norm.weight, "self_cond_pre_norm.weight")
    put(sc.gate_proj.weight, "self_cond_gate.weight")
    put(sc.up_proj.weight, "self_cond_up.weight")
    put(sc.down_proj.weight, "self_cond_down.weight")
    for il, (dl, el) in enumerate(zip(dec.layers, enc.layers)):
        p = lambda s: f"blk.{il}.{s}"
        a = dl.self_attn
        put(dl.input_layernorm.weight, p("attn_norm.weight"))
        put(a.q_proj.weight, p("attn_q.weight"))
        put(a.k_proj.weight, p("attn_k.weight"))
        assert (a.v_proj is not None) == (p("attn_v.weight") in w)
        if a.v_proj is not None:
            put(a.v_proj.weight, p("attn_v.weight"))
        put(a.o_proj.weight, p("attn_output.weight"))
        put(a.q_norm.weight, p("attn_q_norm.weight"))
        put(a.k_norm.weight, p("attn_k_norm.weight"))
        put(dl.post_attention_layernorm.weight, p("post_attention_norm.weight"))
        put(dl.pre_feedforward_layernorm.weight, p("ffn_norm.weight"))
        put(dl.mlp.gate_proj.weight, p("ffn_gate.weight"))
        put(dl.mlp.up_proj.weight, p("ffn_up.weight"))
        put(dl.mlp.down_proj.weight, p("ffn_down.weight"))
        put(dl.post_feedforward_layernorm_1.weight, p("post_ffw_norm_1.weight"))
        put(dl.pre_feedforward_layernorm_2.weight, p("pre_ffw_norm_2.weight"))
        put(dl.post_feedforward_layernorm_2.weight, p("post_ffw_norm_2.weight"))
        put(dl.post_feedforward_layernorm.weight, p("post_ffw_norm.weight"))
        put(dl.router.proj.weight, p("ffn_gate_inp.weight"))
        put(dl.router.scale, p("ffn_gate_inp.scale"))
        put(dl.experts.gate_up_proj, p("ffn_gate_up_exps.weight"))
        put(dl.experts.down_proj, p("ffn_down_exps.weight"))
        put(dl.router.per_expert_scale, p("ffn_down_exps.scale"))
        put(dl.layer_scalar, p("layer_output_scale.weight"))
        put(el.layer_scalar, p("enc_layer_output_scale.weight"))
    # Encoder and decoder share every weight but their layer scalars.
    assert enc.layers[0].self_attn.q_proj.weight is dec.layers[0].self_attn.q_proj.weight
    assert used == set(w), f"tensors not loaded: {set(w) - used}"
    model = model.double()
    for m in model.modules():
        if hasattr(m, "config") and hasattr(m.config, "_experts_implementation"):
            m.config._experts_implementation = "eager"
    types = {t.name: t.tensor_type.name for t in r.tensors}
    raw = {t.name: t for t in r.tensors}
    kinds, offsets = {}, {}
    for param, name in loaded:
        ptr = param.untyped_storage().data_ptr()
        kinds[ptr] = types[name]
        if types[name] in Q8_1_TYPES:
            # Each block opens with f16 d, f16 m: the offsets, [.., rows, k / 32].
            t = raw[name]
            blocks = np.asarray(t.data).reshape(-1, {"Q4_1": 20, "Q5_1": 24}[types[name]])
            m = blocks[:, 2:4].copy().view(np.float16).astype(np.float64)
            offsets[ptr] = torch.from_numpy(m.reshape(*param.shape[:-1], param.shape[-1] // 32))
    table = types["token_embd.weight"]
    sc_table = None if table in ("F32", "F16", "BF16") else dec.embed_tokens.weight.untyped_storage().data_ptr()
    return model, config, Rounded(kinds, offsets, sc_table)


# ---- ggml's activation rounding ----
# A matmul over quantized weights reads its input rounded to 8 bits, per row, in the format
# the weight type pairs with (ggml's `vec_dot_type`; `lacuna-cpu`'s `acts.rs`): Q8_K for the
# 256-element types, Q8_0 for the 32-element ones, Q8_1 for Q4_1/Q5_1. The reference rounds
# the same inputs the same way (in float64, so a value within ~1e-7 of a rounding boundary
# may land on the other side: the residual the test's bounds allow for).
Q8_K_TYPES = {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"}
Q8_0_TYPES = {"Q8_0", "Q4_0", "Q5_0", "IQ4_NL", "MXFP4"}
Q8_1_TYPES = {"Q4_1", "Q5_1"}


def f16(x):
    return x.to(torch.float16).to(x.dtype)


def act_q8_k(x):
    """Q8_K: per 256, `iscale = -127 / max` (max: the element of largest magnitude, its
    sign kept), q = round-half-even(iscale * x) capped at 127, d = 1 / iscale."""
    b = x.reshape(-1, 256)
    idx = b.abs().argmax(-1, keepdim=True)
    mx = torch.gather(b, -1, idx)
    iscale = torch.where(mx != 0, -127.0 / torch.where(mx != 0, mx, 1.0), 0.0)
    q = torch.round(b * iscale).clamp(max=127)
    d = torch.where(iscale != 0, 1.0 / torch.where(iscale != 0, iscale, 1.0), 0.0)
    return (q * d).reshape(x.shape)


def q8_0_quants(b):
    """ggml's x86 Q8_0 quants of `b` (blocks of 32 on the last axis): id = 127 / amax,
    q = round-half-even(b * id); with the unrounded d = amax / 127."""
    amax = b.abs().amax(-1, keepdim=True)
    q = torch.round(b * torch.where(amax != 0, 127.0 / torch.where(amax != 0, amax, 1.0), 0.0))
    return q, amax / 127.0


def act_q8_0(x):
    """Q8_0 activations: the quants times d rounded to f16, as ggml stores it. (Q8_1 has
    the same quants and d: `Rounded.affine` adds its `s` term.)"""
    q, d = q8_0_quants(x.reshape(-1, 32))
    return (q * f16(d)).reshape(x.shape)


def weight_q8_0(w):
    """ggml's reference Q8_0 quantizer (what Lacuna's `quantize_row` does), quantize then
    dequantize, per 32 along the last axis: d = amax / 127, q = round-half-away(x / d)."""
    b = w.reshape(-1, 32)
    d = b.abs().amax(-1, keepdim=True) / 127.0
    idv = torch.where(d != 0, 1.0 / torch.where(d != 0, d, 1.0), 0.0)
    v = b * idv
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return (q * f16(d)).reshape(w.shape)


class Rounded(torch.overrides.TorchFunctionMode):
    """Rounds the input of every matmul over a quantized weight as ggml does. `kinds` maps a
    weight's storage to its GGUF type name; `offsets` a Q4_1/Q5_1 weight's storage to its
    per-block offsets `m` ([rows, k / 32]); `sc_table` is the embedding's storage when the
    self-conditioning product reads a requantized transpose (`embd_t`, Q8_0)."""

    def __init__(self, kinds, offsets, sc_table):
        super().__init__()
        self.kinds, self.offsets, self.sc_table = kinds, offsets, sc_table

    def kind(self, w):
        return self.kinds.get(w.untyped_storage().data_ptr())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.linear:
            x, w = args[0], args[1]
            kind = self.kind(w)
            if kind in Q8_K_TYPES:
                x = act_q8_k(x)
            elif kind in Q8_0_TYPES:
                x = act_q8_0(x)
            elif kind in Q8_1_TYPES:
                return self.affine(x, w, *args[2:], **kwargs)
            return func(x, w, *args[2:], **kwargs)
        if func is torch.matmul and self.sc_table is not None:
            p, e = args
            if e.untyped_storage().data_ptr() == self.sc_table:
                # `softmax(logits) @ E`: Lacuna multiplies Q8_0 probabilities by E's transpose
                # requantized to Q8_0 along the vocabulary.
                return func(act_q8_0(p), weight_q8_0(e.transpose(0, 1)).transpose(0, 1))
        return func(*args, **kwargs)

    def affine(self, x, w, bias=None):
        """Q4_1/Q5_1 over Q8_1: sum over blocks of d_w d_x isum + m_w s_x, where
        s_x = f16(d_x_unrounded * sum(q)) replaces the dequantized sum f16(d_x) sum(q)."""
        assert bias is None
        m = self.offsets[w.untyped_storage().data_ptr()]
        if m.dim() == 3:
            m = m[w.storage_offset() // w.numel()]
        q, d = q8_0_quants(x.reshape(*x.shape[:-1], -1, 32))
        xq = q * f16(d)
        qsum = q.sum(-1)
        s = f16(d[..., 0] * qsum)
        # (d q + m) . x_q = the dequantized product; swap its offset term's sum for s.
        out = torch.nn.functional.linear(xq.reshape(x.shape), w)
        corr = s - f16(d[..., 0]) * qsum
        return out + torch.einsum("...b,nb->...n", corr, m)


def softcap(x, cap):
    return cap * torch.tanh(x / cap)


# A token whose second and third router scores are closer than this (in any layer) may be
# routed otherwise by an engine whose rounding differs by ~1e-3 there: its row is listed, and
# the test holds it to a looser bound.
TIE = 0.005


def passes(model, config, mode, prompt, canvas, canvas_b, round_sc):
    """The four passes' logits (float64), the committed ids, and the rows (of the four
    passes, in order) at a routing near-tie, with the commit pass's near-ties."""
    cap = config.get_text_config(decoder=True).final_logit_softcapping
    scores = []
    hooks = [l.router.proj.register_forward_hook(lambda m, i, o: scores.append(o.detach().reshape(-1, o.shape[-1])))
             for stack in (model.model.encoder.language_model.layers, model.model.decoder.layers) for l in stack]
    with torch.no_grad(), mode:
        cache = DynamicCache(config=model.config.get_text_config(decoder=True))
        h = model.model.encoder(input_ids=prompt, cache=cache).last_hidden_state
        enc = softcap(model.lm_head(h), cap)[0]
        dec = model(decoder_input_ids=canvas, cache=cache).logits[0]
        # The self-conditioning input both sides compute from the stored decoder rows:
        # those rows as stored, over the temperature, in f32.
        sc_in = torch.from_numpy(round_sc(dec.numpy()) / SC_T).to(torch.float64)[None]
        sc = model(decoder_input_ids=canvas, cache=cache, self_conditioning_logits=sc_in).logits[0]
        committed = dec.argmax(-1)[None]
        model.model.encoder(input_ids=committed, cache=cache)
        nxt = model(decoder_input_ids=canvas_b, cache=cache).logits[0]
    for h in hooks:
        h.remove()
    n_layer = len(model.model.decoder.layers)
    assert len(scores) == 5 * n_layer
    ties, base = [], 0
    for p in range(5):
        gap = None
        for s in scores[p * n_layer:(p + 1) * n_layer]:
            top = torch.sort(s, -1, descending=True).values
            g = top[:, 1] - top[:, 2]
            gap = g if gap is None else torch.minimum(gap, g)
        near = [int(i) for i in torch.nonzero(gap < TIE)[:, 0]]
        if p == 3:
            commit_ties = near
            continue
        ties += [base + i for i in near]
        base += len(gap)
    return torch.cat([enc, dec, sc, nxt]).numpy(), committed[0].tolist(), ties, commit_ties


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    src = tmp / "f32.gguf"
    subprocess.run([LACUNA, "fixture", "--arch", A, "--shape", "tiny", "--layers", "2",
                    "--quant", "f32", "--out", str(src)], check=True)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    r = gguf.GGUFReader(str(src))
    vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    canvas_len = field(r, "diffusion.canvas_length")
    gen = torch.Generator().manual_seed(7)
    prompt = torch.randint(0, vocab, (1, PROMPT), generator=gen)
    canvas = torch.randint(0, vocab, (1, canvas_len), generator=gen)
    canvas_b = torch.randint(0, vocab, (1, canvas_len), generator=gen)
    lines = [f"fixture_sha16 {sha}", f"prompt {' '.join(map(str, prompt[0].tolist()))}",
             f"canvas {' '.join(map(str, canvas[0].tolist()))}",
             f"canvas_b {' '.join(map(str, canvas_b[0].tolist()))}",
             f"sc_temperature {SC_T}",
             f"transformers {__import__('transformers').__version__}", f"torch {torch.__version__}",
             f"gguf {importlib.metadata.version('gguf')}"]
    files = [("F32", src)]
    for preset in PRESETS:
        dst = tmp / f"{preset}.gguf"
        subprocess.run([LACUNA, "quantize", str(src), str(dst), preset], check=True,
                       stdout=subprocess.DEVNULL)
        files.append((preset, dst))
    for name, path in files:
        model, config, mode = build(gguf.GGUFReader(str(path)))
        if name == "F32":
            rnd = lambda x: x.astype(np.float32)
        else:
            rnd = lambda x: x.astype(np.float16).astype(np.float32)
        rows, committed, ties, commit_ties = passes(model, config, mode, prompt, canvas, canvas_b, rnd)
        if name == "F32":
            rows.astype("<f4").tofile(OUT / "f32.logits")
        else:
            rows.astype("<f2").tofile(OUT / f"{name.lower()}.f16")
        lines.append(f"committed_{name} {' '.join(map(str, committed))}")
        lines.append(f"ties_{name} {' '.join(map(str, ties))}".rstrip())
        print(name, "near-ties at rows", ties, "in the commit pass", commit_ties, flush=True)
    (OUT / "cases.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
