#!/usr/bin/env python3
"""Builds the training corpus and the tokenizer of the tiny model.

Text: the King James Version of the Bible as Debian's `bible-kjv-text` package ships it
(public domain), read through the package's own `bible` program (`bible-kjv`), one verse a
line. Verse references are dropped; each verse keeps its book/chapter so passages can be
cut from consecutive verses and whole chapters held out for validation.

Tokenizer: a byte-level BPE trained with the Hugging Face `tokenizers` trainer on the
training split, split by llama.cpp's `llama-bpe` (LLaMA-3) regex so that
`tokenizer.ggml.pre = "llama-bpe"` tokenizes exactly as it was trained (Lacuna's tokenizer
and llama.cpp both implement it). LLaDA-style special tokens follow the BPE vocabulary.

Usage: corpus.py OUT_DIR      (writes verses.json, tokenizer.json, vocab.json)
"""
import json
import os
import re
import subprocess
import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

VOCAB_SIZE = 4096
# LLaDA's special tokens (same texts as LLaDA-8B's tokenizer), after the BPE vocabulary.
SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|eot_id|>", "<|start_header_id|>",
            "<|end_header_id|>", "<|mdm_mask|>"]
# Every HOLDOUT-th chapter (counted over the whole Bible) is validation text.
HOLDOUT = 50
REF = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")


def read_verses():
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], stdin=subprocess.DEVNULL,
                         capture_output=True, check=True, text=True).stdout
    verses = []
    for line in out.splitlines():
        m = REF.match(line)
        if not m:
            raise SystemExit(f"unexpected line from bible: {line[:80]!r}")
        book, chap, _, text = m.groups()
        verses.append({"book": book, "chapter": int(chap), "text": " ".join(text.split())})
    return verses


def train_tokenizer(texts):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE - len(SPECIALS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens(SPECIALS)
    assert tok.get_vocab_size() == VOCAB_SIZE, tok.get_vocab_size()
    return tok


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    verses = read_verses()
    chapter, prev = -1, None
    for v in verses:
        key = (v["book"], v["chapter"])
        if key != prev:
            chapter, prev = chapter + 1, key
        v["chapter_index"] = chapter
        v["split"] = "valid" if chapter % HOLDOUT == HOLDOUT // 2 else "train"
    train_texts = [v["text"] for v in verses if v["split"] == "train"]
    tok = train_tokenizer(train_texts)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    for v in verses:
        v["ids"] = tok.encode(v["text"], add_special_tokens=False).ids
        v["ids_sp"] = tok.encode(" " + v["text"], add_special_tokens=False).ids
    with open(os.path.join(out_dir, "verses.json"), "w") as f:
        json.dump(verses, f)
    n_tok = {s: sum(len(v["ids"]) for v in verses if v["split"] == s) for s in ("train", "valid")}
    print(f"{len(verses)} verses, {chapter + 1} chapters, tokens {n_tok}, vocab {VOCAB_SIZE}")


if __name__ == "__main__":
    main()
