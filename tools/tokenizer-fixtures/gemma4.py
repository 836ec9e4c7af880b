#!/usr/bin/env python3
"""Writes `gemma4.gguf`: a small vocabulary laid out as Gemma 4's published files are
(`tokenizer.ggml.model = "gemma4"`, no `tokenizer.ggml.pre`, ids 0-4 `<pad> <eos> <bos> <unk>
<mask>`, control turn markers, user-defined tool tokens, `<0x00>`..`<0xFF>` byte tokens, a
normal `</s>`, scores -1000), trained with the Hugging Face BPE trainer on text whose spaces
are `▁` and which is split only at newline runs (llama.cpp's GEMMA4 pre-tokenizer). A few
merges whose result is not a token are appended: llama.cpp applies them anyway and falls back
to byte tokens, which is what `crates/lacuna-tokenizer/src/gemma4.rs` must reproduce.

Usage: gemma4.py CORPUS.json OUT_DIR   (tokenizers, gguf; apt package `fortunes` for the text)
then record llama.cpp's ids with tools/tokenizer-fixtures/record.sh (or the oracle on this file).
"""
import json
import os
import sys

import gguf
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers, normalizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import training_text  # noqa: E402

SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
CONTROL = ["<|turn>", "<turn|>", "<|think|>", "<start_of_image>"]
USER_DEFINED = ["<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                "<tool_response|>", '<|"|>']


def main():
    corpus = json.load(open(sys.argv[1], encoding="utf-8"))
    out_dir = sys.argv[2]
    texts = training_text(corpus)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[^\n]+|[\n]+"), behavior="isolated")
    trainer = trainers.BpeTrainer(vocab_size=3000, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    learned = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    tokens = list(SPECIAL)
    types = [gguf.TokenType.CONTROL] * len(SPECIAL)
    for t in CONTROL:
        tokens.append(t)
        types.append(gguf.TokenType.CONTROL)
    for t in USER_DEFINED:
        tokens.append(t)
        types.append(gguf.TokenType.USER_DEFINED)
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        types.append(gguf.TokenType.BYTE)
    tokens.append("</s>")  # a normal token in Gemma 4, which llama.cpp drops from the EOG set
    types.append(gguf.TokenType.NORMAL)
    for t in ["\n\n", "\n\n\n", "\u2581\u2581", "\u2581\u2581\u2581\u2581"]:
        if t not in learned:
            learned.append(t)
    seen = set(tokens)
    for t in learned:
        if t not in seen:
            tokens.append(t)
            types.append(gguf.TokenType.NORMAL)
            seen.add(t)
    # Merges whose result is not a token (llama.cpp applies them, then falls back to bytes).
    extra = ["q z", "z q", "\u2581q z"]
    merges = merges + [m for m in extra if m not in merges]
    # llama.cpp loads a vocabulary only for an architecture it knows: Gemma 4 itself.
    w = gguf.GGUFWriter(os.path.join(out_dir, "gemma4.gguf"), "gemma4")
    w.add_name("lacuna tokenizer fixture gemma4")
    w.add_tokenizer_model("gemma4")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores([-1000.0] * len(tokens))
    w.add_token_merges(merges)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_mask_token_id(4)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"gemma4: {len(tokens)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
