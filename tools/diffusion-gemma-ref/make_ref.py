#!/usr/bin/env python3
"""Reference data for Lacuna's `diffusion-gemma` graph, from Hugging Face transformers' own
DiffusionGemma (transformers >= 5.11, `DiffusionGemmaForBlockDiffusion`):

1. builds a tiny random DiffusionGemma (4 layers: sliding, global, sliding, global; both
   head widths; 4 experts, 2 used; a sliding window of 6 so a 10-token prompt crosses it),
   with every norm, scale and scalar drawn away from its default so a mistake shows;
2. writes its weights as a GGUF in the layout of llama.cpp's pull request #24423 (gguf-py;
   the tensor and key names Unsloth's published files carry), F32;
3. runs, in float64, the encoder over a prompt (logits of its rows), the decoder over a
   canvas without and with self-conditioning, the encoder's commit pass over that canvas,
   and the decoder over a next canvas, and writes the tokens and logits.

`crates/lacuna-models/tests/diffusion_gemma.rs` loads the GGUF and compares every row.
Run with tools/train-tiny/.venv (torch, transformers, gguf):
    tools/train-tiny/.venv/bin/python tools/diffusion-gemma-ref/make_ref.py \
        crates/lacuna-models/tests/data/diffusion-gemma
"""
import os
import sys
from pathlib import Path

import gguf
import numpy as np
import torch
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion
from transformers.cache_utils import DynamicCache

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "crates/lacuna-models/tests/data/diffusion-gemma")
VOCAB, D, FF, HEADS = 512, 64, 96, 4
LAYER_TYPES = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
WINDOW, CANVAS, PROMPT = int(os.environ.get("DG_WINDOW", 6)), 8, 10
E, K_USED, FF_EXP = 4, 2, 24
HD, HD_FULL, KV, KV_FULL = 16, 32, 2, 1
if os.environ.get("DG_REAL_WIDTHS"):
    # The published model's widths and heads (16 experts of its 704, a 4096-token vocabulary,
    # two layers): a check of the real head sizes, not committed.
    VOCAB, D, FF, HEADS = 4096, 2816, 2112, 16
    LAYER_TYPES = ["sliding_attention", "full_attention"]
    WINDOW, CANVAS, PROMPT = 1024, 32, 40
    E, K_USED, FF_EXP = 16, 8, 704
    HD, HD_FULL, KV, KV_FULL = 256, 512, 8, 2
SC_T = 0.8

torch.manual_seed(1234)
text = dict(
    vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=len(LAYER_TYPES),
    num_attention_heads=HEADS, num_key_value_heads=KV, head_dim=HD, global_head_dim=HD_FULL,
    num_global_key_value_heads=KV_FULL, layer_types=LAYER_TYPES, sliding_window=WINDOW,
    num_experts=E, top_k_experts=K_USED, moe_intermediate_size=FF_EXP,
    max_position_embeddings=1024, rms_norm_eps=1e-6, final_logit_softcapping=30.0,
)
vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32,
              num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=8)
config = DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=CANVAS)
model = DiffusionGemmaForBlockDiffusion(config).eval()

# Weights away from their defaults: unit-RMS-preserving projections, norms near 1, scalars
# near 0.8, a decisive router.
with torch.no_grad():
    for name, p in model.named_parameters():
        if "vision" in name:
            continue
        if name.endswith("embed_tokens.weight"):
            p.normal_(0.0, 0.05)
        elif "norm" in name or name.endswith("router.scale"):
            p.normal_(1.0, 0.1)
        elif name.endswith("per_expert_scale"):
            p.normal_(1.0, 0.2)
        elif name.endswith("router.proj.weight"):
            p.normal_(0.0, 4.0 / D ** 0.5)
        elif p.dim() >= 2:
            p.normal_(0.0, 1.0 / p.shape[-1] ** 0.5)
    for name, b in model.named_buffers():
        if name.endswith("layer_scalar"):
            b.normal_(0.8, 0.1)
model = model.double()
# The grouped-GEMM experts take no float64: the eager loop (the reference one) does.
for m in model.modules():
    if hasattr(m, "config") and hasattr(m.config, "_experts_implementation"):
        m.config._experts_implementation = "eager"
dec = model.model.decoder
enc = model.model.encoder.language_model

def f32(t):
    return t.detach().to(torch.float32).numpy()

# ---- GGUF in #24423's layout ----
OUT.mkdir(parents=True, exist_ok=True)
w = gguf.GGUFWriter(str(OUT / "tiny-f32.gguf"), "diffusion-gemma")
A = "diffusion-gemma"
w.add_string("general.type", "model")
w.add_string("general.name", "lacuna diffusion-gemma reference (random)")
w.add_uint32(f"{A}.block_count", len(LAYER_TYPES))
w.add_uint32(f"{A}.context_length", 1024)
w.add_uint32(f"{A}.embedding_length", D)
w.add_uint32(f"{A}.feed_forward_length", FF)
w.add_uint32(f"{A}.attention.head_count", HEADS)
w.add_array(f"{A}.attention.head_count_kv", [KV if t == "sliding_attention" else KV_FULL for t in LAYER_TYPES])
w.add_float32(f"{A}.rope.freq_base", 1e6)
w.add_float32(f"{A}.rope.freq_base_swa", 1e4)
w.add_float32(f"{A}.attention.layer_norm_rms_epsilon", 1e-6)
w.add_uint32(f"{A}.expert_count", E)
w.add_uint32(f"{A}.expert_used_count", K_USED)
w.add_uint32(f"{A}.attention.key_length", HD_FULL)
w.add_uint32(f"{A}.attention.value_length", HD_FULL)
w.add_float32(f"{A}.final_logit_softcapping", 30.0)
w.add_uint32(f"{A}.attention.sliding_window", WINDOW)
w.add_uint32(f"{A}.attention.shared_kv_layers", 0)
w.add_uint32(f"{A}.embedding_length_per_layer_input", 0)
w.add_array(f"{A}.attention.sliding_window_pattern", [t == "sliding_attention" for t in LAYER_TYPES])
w.add_uint32(f"{A}.attention.key_length_swa", HD)
w.add_uint32(f"{A}.attention.value_length_swa", HD)
w.add_uint32(f"{A}.expert_feed_forward_length", FF_EXP)
w.add_uint32(f"{A}.rope.dimension_count", HD_FULL)
w.add_uint32(f"{A}.rope.dimension_count_swa", HD)
w.add_bool(f"{A}.attention.causal", False)
w.add_uint32("diffusion.canvas_length", CANVAS)
w.add_string("tokenizer.ggml.model", "gemma4")
specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
w.add_array("tokenizer.ggml.tokens", specials + [f"<t{i}>" for i in range(len(specials), VOCAB)])
w.add_array("tokenizer.ggml.token_type", [3] * len(specials) + [1] * (VOCAB - len(specials)))
w.add_array("tokenizer.ggml.scores", [0.0] * VOCAB)
# llama.cpp's gemma4 vocabulary needs merges (any will do for ids given as numbers).
w.add_array("tokenizer.ggml.merges", ["< t", "<t 1"])
for key, v in [("bos", 2), ("eos", 1), ("unknown", 3), ("padding", 0), ("mask", 4)]:
    w.add_uint32(f"tokenizer.ggml.{key}_token_id", v)
w.add_tensor("token_embd.weight", f32(dec.embed_tokens.weight))
w.add_tensor("output_norm.weight", f32(dec.norm.weight))
rot = int(HD_FULL * 0.25 / 2)
w.add_tensor("rope_freqs.weight", np.array([1.0] * rot + [1e30] * (HD_FULL // 2 - rot), dtype=np.float32))
sc = dec.self_conditioning
w.add_tensor("self_cond_pre_norm.weight", f32(sc.pre_norm.weight))
w.add_tensor("self_cond_gate.weight", f32(sc.gate_proj.weight))
w.add_tensor("self_cond_up.weight", f32(sc.up_proj.weight))
w.add_tensor("self_cond_down.weight", f32(sc.down_proj.weight))
for il, (dl, el) in enumerate(zip(dec.layers, enc.layers)):
    p = lambda s: f"blk.{il}.{s}"
    a = dl.self_attn
    w.add_tensor(p("attn_norm.weight"), f32(dl.input_layernorm.weight))
    w.add_tensor(p("attn_q.weight"), f32(a.q_proj.weight))
    w.add_tensor(p("attn_k.weight"), f32(a.k_proj.weight))
    if a.v_proj is not None:
        w.add_tensor(p("attn_v.weight"), f32(a.v_proj.weight))
    w.add_tensor(p("attn_output.weight"), f32(a.o_proj.weight))
    w.add_tensor(p("attn_q_norm.weight"), f32(a.q_norm.weight))
    w.add_tensor(p("attn_k_norm.weight"), f32(a.k_norm.weight))
    w.add_tensor(p("post_attention_norm.weight"), f32(dl.post_attention_layernorm.weight))
    w.add_tensor(p("ffn_norm.weight"), f32(dl.pre_feedforward_layernorm.weight))
    w.add_tensor(p("ffn_gate.weight"), f32(dl.mlp.gate_proj.weight))
    w.add_tensor(p("ffn_up.weight"), f32(dl.mlp.up_proj.weight))
    w.add_tensor(p("ffn_down.weight"), f32(dl.mlp.down_proj.weight))
    w.add_tensor(p("post_ffw_norm_1.weight"), f32(dl.post_feedforward_layernorm_1.weight))
    w.add_tensor(p("pre_ffw_norm_2.weight"), f32(dl.pre_feedforward_layernorm_2.weight))
    w.add_tensor(p("post_ffw_norm_2.weight"), f32(dl.post_feedforward_layernorm_2.weight))
    w.add_tensor(p("post_ffw_norm.weight"), f32(dl.post_feedforward_layernorm.weight))
    w.add_tensor(p("ffn_gate_inp.weight"), f32(dl.router.proj.weight))
    w.add_tensor(p("ffn_gate_inp.scale"), f32(dl.router.scale))
    w.add_tensor(p("ffn_gate_up_exps.weight"), f32(dl.experts.gate_up_proj))
    w.add_tensor(p("ffn_down_exps.weight"), f32(dl.experts.down_proj))
    w.add_tensor(p("ffn_down_exps.scale"), f32(dl.router.per_expert_scale))
    w.add_tensor(p("layer_output_scale.weight"), f32(dl.layer_scalar))
    w.add_tensor(p("enc_layer_output_scale.weight"), f32(el.layer_scalar))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

# ---- the passes ----
gen = torch.Generator().manual_seed(99)
prompt = torch.randint(0, VOCAB, (1, PROMPT), generator=gen)
canvas = torch.randint(0, VOCAB, (1, CANVAS), generator=gen)
canvas_b = torch.randint(0, VOCAB, (1, CANVAS), generator=gen)


def softcap(x):
    return 30.0 * torch.tanh(x / 30.0)


with torch.no_grad():
    cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    h = model.model.encoder(input_ids=prompt, cache=cache).last_hidden_state
    enc_logits = softcap(model.lm_head(h))
    dec_logits = model(decoder_input_ids=canvas, cache=cache).logits
    # The second step, self-conditioned on the first step's logits after the sampler's first
    # temperature, rounded to f32 and written out: both sides read the same input (the
    # self-conditioned pass magnifies a difference in it ~100x: f32 rounding alone moves
    # the float64 result by 7e-6).
    sc_in = (dec_logits / SC_T).to(torch.float32).to(torch.float64)
    sc_logits = model(decoder_input_ids=canvas, cache=cache, self_conditioning_logits=sc_in).logits
    # Commit the canvas's argmax, then decode the next canvas over prompt + canvas.
    committed = dec_logits.argmax(-1)
    model.model.encoder(input_ids=committed, cache=cache)
    next_logits = model(decoder_input_ids=canvas_b, cache=cache).logits

tokens = {
    "prompt": prompt[0].tolist(),
    "canvas": canvas[0].tolist(),
    "committed": committed[0].tolist(),
    "canvas_b": canvas_b[0].tolist(),
    "sc_temperature": SC_T,
    "transformers": __import__("transformers").__version__,
    "torch": torch.__version__,
}
(OUT / "tokens.txt").write_text("".join(
    f"{k} {' '.join(map(str, v)) if isinstance(v, list) else v}\n" for k, v in tokens.items()))
for name, t in [("decoder-sc-input", sc_in[0]), ("encoder", enc_logits), ("decoder", dec_logits), ("decoder-sc", sc_logits),
                ("decoder-next", next_logits)]:
    f32(t if t.dim() == 2 else t[0]).tofile(OUT / f"{name}.logits")
print("wrote", OUT, {k: v for k, v in tokens.items() if k in ("transformers", "torch")})
