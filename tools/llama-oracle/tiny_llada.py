#!/usr/bin/env python3
"""Writes a tiny random-weight LLaDA GGUF (F32, 2 layers) to smoke-test the oracle's
`logits` and `bench` subcommands without Lacuna's own writer.

Usage: tiny_llada.py VOCAB.gguf OUT.gguf    (VOCAB.gguf: any fixture vocabulary to copy)
"""
import sys

import gguf
import numpy as np


def main():
    vocab_path, out = sys.argv[1], sys.argv[2]
    r = gguf.GGUFReader(vocab_path)
    tokens = [bytes(r.fields["tokenizer.ggml.tokens"].parts[i]).decode("utf-8")
              for i in r.fields["tokenizer.ggml.tokens"].data]
    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    merges = [bytes(r.fields["tokenizer.ggml.merges"].parts[i]).decode("utf-8")
              for i in r.fields["tokenizer.ggml.merges"].data]
    n_vocab, n_embd, n_ff, n_head, n_layer = len(tokens), 64, 128, 4, 2
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(out, "llada")
    w.add_context_length(512)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(500000.0)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_vocab_size(n_vocab)
    w.add_causal_attention(False)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)

    def t(*shape, scale=0.05):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w.add_tensor("token_embd.weight", t(n_vocab, n_embd, scale=1.0))
    w.add_tensor("output_norm.weight", 1.0 + t(n_embd))
    w.add_tensor("output.weight", t(n_vocab, n_embd))
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", 1.0 + t(n_embd))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", t(n_embd, n_embd, scale=0.2))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", 1.0 + t(n_embd))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", t(n_ff, n_embd, scale=0.2))
        w.add_tensor(f"blk.{i}.ffn_up.weight", t(n_ff, n_embd, scale=0.2))
        w.add_tensor(f"blk.{i}.ffn_down.weight", t(n_embd, n_ff, scale=0.2))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}: {n_vocab} vocab, {n_layer} layers, n_embd {n_embd}")


if __name__ == "__main__":
    main()
