#!/usr/bin/env python3
"""Trains small, realistic vocabularies on public-domain text and writes vocab-only GGUFs.

Byte-level BPE vocabularies (one per pre-tokenizer Lacuna supports) are trained with the
Hugging Face `tokenizers` trainer, split by the same regex llama.cpp uses for that
`tokenizer.ggml.pre`; a SentencePiece BPE vocabulary with byte fallback is trained with
`sentencepiece`. Special tokens (control), a user-defined token, a mask token and unused
padding tokens are added the way the LLaDA/Dream converters lay them out.

Text: fortune-mod's fortunes (Debian package `fortunes`) plus the parity corpus itself
(so the vocabularies hold merges for non-Latin scripts and emoji too).

Usage: train.py CORPUS.json OUT_DIR     (needs: pip install tokenizers sentencepiece gguf numpy)
"""
import glob
import json
import os
import sys

import gguf
import sentencepiece as spm
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
BAILING = r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"

CONTROL = ["<|endoftext|>", "<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|eot_id|>",
           "<|start_header_id|>", "<|end_header_id|>", "<|mdm_mask|>", "<role>", "</role>", "<|role_end|>"]
USER_DEFINED = ["<tool>", "</tool>"]

LLADA_TEMPLATE = ("{% set loop_messages = messages %}{% for message in loop_messages %}"
                  "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
                  "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
                  "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
                  "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
QWEN_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                 "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
                 "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

# name, pre, regexes (training split), arch, vocab size, add_bos, template
BPE_FIXTURES = [
    ("bpe-gpt2", "gpt-2", [GPT2], "llada", 2500, False, None),
    ("bpe-llama3", "llama-bpe", [LLAMA3], "llada", 3500, True, LLADA_TEMPLATE),
    ("bpe-qwen2", "qwen2", [QWEN2], "dream", 3000, False, QWEN_TEMPLATE),
    ("bpe-llada-moe", "llada-moe", [BAILING], "llada-moe", 3000, False, None),
    ("bpe-default", "default", [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"], "llada", 2000, False, None),
]


def training_text(corpus):
    texts = []
    for path in sorted(glob.glob("/usr/share/games/fortunes/*.u8")) + sorted(glob.glob("/usr/share/games/fortunes/*")):
        if path.endswith((".dat", ".u8")) or os.path.isdir(path) or os.path.islink(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.extend(t.strip("\n") for t in f.read().split("\n%\n"))
    texts.extend(corpus * 3)
    return texts


def train_bpe(texts, regexes, vocab_size):
    tok = Tokenizer(models.BPE())
    splits = [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes]
    tok.pre_tokenizer = pre_tokenizers.Sequence(splits + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return [t for t, _ in vocab], merges


def write_bpe(out_dir, name, pre, regexes, arch, vocab_size, add_bos, template, texts):
    tokens, merges = train_bpe(texts, regexes, vocab_size)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for t in CONTROL:
        tokens.append(t)
        types.append(gguf.TokenType.CONTROL)
    for t in USER_DEFINED:
        tokens.append(t)
        types.append(gguf.TokenType.USER_DEFINED)
    for i in range(3):
        tokens.append(f"[PAD{len(tokens)}]")
        types.append(gguf.TokenType.UNUSED)
    ids = {t: i for i, t in enumerate(tokens)}
    w = gguf.GGUFWriter(os.path.join(out_dir, name + ".gguf"), arch)
    w.add_name(f"lacuna tokenizer fixture {name}")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(ids["<|startoftext|>"])
    w.add_eos_token_id(ids["<|endoftext|>"])
    w.add_pad_token_id(ids["<|endoftext|>"])
    if arch != "dream":  # the Dream fixture leaves the mask id to the architecture default
        w.add_mask_token_id(ids["<|mdm_mask|>"])
    w.add_add_bos_token(add_bos)
    w.add_add_eos_token(False)
    if template:
        w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{name}: {len(tokens)} tokens, {len(merges)} merges")


def write_spm(out_dir, texts):
    txt = os.path.join(out_dir, "spm-train.txt")
    with open(txt, "w", encoding="utf-8") as f:
        for t in texts:
            t = t.replace("\r", " ").strip()
            if t:
                f.write(t.replace("\n", " ") + "\n")
    prefix = os.path.join(out_dir, "spm")
    spm.SentencePieceTrainer.train(
        input=txt, model_prefix=prefix, model_type="bpe", vocab_size=3000, byte_fallback=True,
        character_coverage=0.9995, normalization_rule_name="identity", add_dummy_prefix=True,
        remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
        user_defined_symbols=USER_DEFINED, control_symbols=["<|mdm_mask|>", "<|im_start|>", "<|im_end|>"],
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        tokens.append(piece)
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(gguf.TokenType.UNKNOWN)
        elif sp.is_control(i):
            types.append(gguf.TokenType.CONTROL)
        elif sp.is_byte(i):
            types.append(gguf.TokenType.BYTE)
        elif sp.is_unused(i):
            types.append(gguf.TokenType.UNUSED)
        elif piece in USER_DEFINED:
            types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    # Two files from one model: the usual leading-space prefix, and without it
    # (tokenizer.ggml.add_space_prefix = false), which changes encode and detokenize.
    for name, prefix_space in (("spm", None), ("spm-noprefix", False)):
        w = gguf.GGUFWriter(os.path.join(out_dir, name + ".gguf"), "llama")
        w.add_name(f"lacuna tokenizer fixture {name}")
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_mask_token_id(tokens.index("<|mdm_mask|>"))
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        if prefix_space is not None:
            w.add_add_space_prefix(prefix_space)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    os.remove(txt)
    os.remove(prefix + ".model")
    os.remove(prefix + ".vocab")
    print(f"spm: {len(tokens)} tokens")


def main():
    corpus_path, out_dir = sys.argv[1], sys.argv[2]
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    texts = training_text(corpus)
    print(f"training on {len(texts)} texts, {sum(len(t) for t in texts)} chars")
    for fx in BPE_FIXTURES:
        write_bpe(out_dir, *fx, texts)
    write_spm(out_dir, texts)


if __name__ == "__main__":
    main()
