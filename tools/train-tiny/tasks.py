#!/usr/bin/env python3
"""The checkable tasks of the task model, its tokenizer, and its training sequences.

Three tasks, generated without limit, each with one exact answer; raw text, no chat
template, one problem per sequence, the answer followed by the end token:

    add: 3472+918=4390            operands of 1-5 digits (digit count uniform, then value)
    sort: 41 7 93 7 0 = 0 7 7 41 93   3-10 integers of 0-99
    rev: lantern = nretnal        a-z and single spaces, 3-20 characters

The prompt is everything up to and including `=`; the answer is the rest (with its leading
space for `sort` and `rev`). Exact match compares the answer text with its surrounding
spaces stripped.

Tokenizer: byte-level BPE (all 256 byte symbols, so any text tokenizes) trained with the
Hugging Face trainer on task text, split by llama.cpp's `qwen2` regex, which isolates every
digit (`\\p{N}`), so `tokenizer.ggml.pre = "qwen2"`. The trainer is given 8 merges, which it
spends on the task names and ` =` (`Ġ=`, `or`, `ev`, `dd`, `sor`, `rev`, `add`, `sort`):
random letters give every letter pair about the same frequency, so `rev` stays a
character-level task except where a word happens to hold `or`, `ev`, `dd` or a task name.
LLaDA's special tokens follow.

Sequences (LLaDA's SFT layout): BOS, prompt, answer, EOS, then EOS padding up to the batch
length; the padding is what lets generation stop. Two objectives (`batch`):
- `answer` (LLaDA's SFT objective): only the answer, its EOS and the padding may be masked;
- `whole` (LLaDA's pretraining objective): every position but BOS may be masked, so the
  model also learns to fill a missing part of the prompt or any span (infilling).

Held-out problems (`heldout`) come from a seed never used in training, and training never
draws a problem whose prompt is among them.

Usage: tasks.py OUT_DIR   (writes tokenizer.json and heldout.tsv: 300 problems per task)
"""
import os
import sys

import numpy as np

TASKS = ("add", "sort", "rev")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|eot_id|>", "<|start_header_id|>",
            "<|end_header_id|>", "<|mdm_mask|>"]
N_MERGES = 8
HELDOUT_SEED = 20261203
HELDOUT_PER_TASK = 300
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def problem(task, rng, level=1.0):
    """(prompt, answer) of one random problem of `task`; `level` (0..1) caps its size for
    the training curriculum (1: the full ranges above, as held out)."""
    if task == "add":
        def operand():
            nd = int(rng.integers(1, 2 + round(4 * level)))
            lo = 0 if nd == 1 else 10 ** (nd - 1)
            return int(rng.integers(lo, 10 ** nd))
        a, b = operand(), operand()
        return f"add: {a}+{b}=", str(a + b)
    if task == "sort":
        xs = [int(x) for x in rng.integers(0, 100, size=int(rng.integers(3, 4 + round(7 * level))))]
        return "sort: " + " ".join(map(str, xs)) + " =", " " + " ".join(map(str, sorted(xs)))
    if task == "rev":
        n = int(rng.integers(3, 4 + round(17 * level)))
        chars = []
        for i in range(n):
            # Spaces (about one in six) never lead, trail or double.
            if 0 < i < n - 1 and chars[-1] != " " and rng.random() < 0.17:
                chars.append(" ")
            else:
                chars.append(LETTERS[int(rng.integers(26))])
        s = "".join(chars)
        return f"rev: {s} =", " " + s[::-1]
    raise ValueError(task)


def six_digit_sum(rng):
    """An addition of two 5-digit operands whose sum has 6 digits (oversampled by
    `--six-digit-sums`: a uniform draw gives about 2% of these)."""
    a = int(rng.integers(10_000, 100_000))
    b = int(rng.integers(max(100_000 - a, 10_000), 100_000))
    return f"add: {a}+{b}=", str(a + b)


def heldout():
    rng = np.random.default_rng(HELDOUT_SEED)
    out = []
    for task in TASKS:
        seen = set()
        while len(seen) < HELDOUT_PER_TASK:
            p, a = problem(task, rng)
            if p in seen:
                continue
            seen.add(p)
            out.append({"task": task, "prompt": p, "answer": a})
    return out


def write_problems(path, problems):
    """`task<TAB>prompt<TAB>answer` lines, the format `lacuna eval` reads."""
    with open(path, "w") as f:
        for h in problems:
            f.write(f"{h['task']}\t{h['prompt']}\t{h['answer']}\n")


def read_problems(path):
    with open(path) as f:
        return [dict(zip(("task", "prompt", "answer"), line.rstrip("\n").split("\t"))) for line in f]


def train_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    rng = np.random.default_rng(1)
    texts = [p + a for _ in range(4000) for p, a in (problem(t, rng) for t in TASKS)]
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + N_MERGES, show_progress=False,
                                  initial_alphabet=alphabet)
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens(SPECIALS)
    return tok


class Tasks:
    """Encodes problems into training sequences with the trained tokenizer."""

    def __init__(self, tokenizer_json, held, tasks=TASKS, mix=None, six_digit_sums=0.0):
        from tokenizers import Tokenizer
        self.tok = Tokenizer.from_file(tokenizer_json)
        ids = {t: self.tok.token_to_id(t) for t in SPECIALS}
        self.bos, self.eos = ids["<|startoftext|>"], ids["<|endoftext|>"]
        self.mask = ids["<|mdm_mask|>"]
        self.held = {h["prompt"] for h in held}
        self.tasks = tuple(tasks)
        w = np.array([(mix or {}).get(t, 1.0) for t in self.tasks], dtype=np.float64)
        self.weights = w / w.sum()
        self.six_digit_sums = six_digit_sums

    def enc(self, s):
        return self.tok.encode(s, add_special_tokens=False).ids

    def draw(self, rng, level=1.0):
        while True:
            if np.allclose(self.weights, self.weights[0]):
                task = self.tasks[int(rng.integers(len(self.tasks)))]  # run3's draw, kept
            else:
                task = self.tasks[int(rng.choice(len(self.tasks), p=self.weights))]
            if task == "add" and self.six_digit_sums and rng.random() < self.six_digit_sums:
                p, a = six_digit_sum(rng)
            else:
                p, a = problem(task, rng, level)
            if p not in self.held:
                return task, p, a


def batch(tasks, rng, n, gen, whole_frac, level=1.0, full_frac=1.0):
    """`n` sequences padded with EOS to a common length: with probability `full_frac` the
    longest prompt plus `gen` (the canvas generation uses; every answer and its EOS fit in
    32 tokens), else the longest problem plus 1-4 EOS (short canvases: more problems per
    second, and the loss is not spent on padding). Returns (ids, eligible) as numpy arrays."""
    items = []
    for _ in range(n):
        _, p, a = tasks.draw(rng, level)
        pi, ai = [tasks.bos] + tasks.enc(p), tasks.enc(a) + [tasks.eos]
        items.append((pi, ai, rng.random() < whole_frac))
    if rng.random() < full_frac:
        length = max(len(pi) for pi, _, _ in items) + gen
    else:
        length = max(len(pi) + len(ai) for pi, ai, _ in items) + int(rng.integers(1, 5))
    seqs, elig = [], []
    for pi, ai, whole in items:
        seq = pi + ai + [tasks.eos] * (length - len(pi) - len(ai))
        e = [0] + [1] * (length - 1) if whole else [0] * len(pi) + [1] * (length - len(pi))
        seqs.append(seq)
        elig.append(e)
    return np.array(seqs, dtype=np.int64), np.array(elig, dtype=np.float32)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tok = train_tokenizer()
    path = os.path.join(out, "tokenizer.json")
    tok.save(path)
    held = heldout()
    write_problems(os.path.join(out, "heldout.tsv"), held)
    vocab = tok.get_vocab()
    merges = sorted((i, t) for t, i in vocab.items() if i >= 256 and t not in SPECIALS)
    print(f"vocab {tok.get_vocab_size()}, merges {[t for _, t in merges]}")
    t = Tasks(path, held)
    for h in held[::HELDOUT_PER_TASK]:
        print(repr(h["prompt"] + h["answer"]), [tok.id_to_token(i) for i in t.enc(h["prompt"] + h["answer"])])


if __name__ == "__main__":
    main()
