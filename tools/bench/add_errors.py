#!/usr/bin/env python3
"""Where a task model's additions go wrong: accuracy by carries, by answer length, and by
whether the answer straddles a block boundary.

Reads the answers file `lacuna eval --answers F` writes (task, prompt, generated text, right,
forwards, ms per line) for one or more models and prints a Markdown table per model. The block
boundary matters to the block-diffusion twin: its attention is block-causal, so when the
answer's leading digits sit in the prompt's last block they are committed before the block
holding the low digits (and the carries they produce) is decoded; a bidirectional LLaDA
attends to those masked positions either way.

Usage:
  lacuna eval -m MODEL --problems P --answers A.tsv ...      (once per model)
  python3 tools/bench/add_errors.py --block 8 --vocab models/lacuna-tiny-tasks.gguf \
      NAME=A.tsv [NAME=B.tsv ...]
"""
import argparse
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forward import LACUNA  # noqa: E402


def carries(a, b):
    n, c = 0, 0
    while a or b:
        c = 1 if a % 10 + b % 10 + c >= 10 else 0
        n += c
        a, b = a // 10, b // 10
    return n


def prompt_tokens(vocab, prompt, cache):
    if prompt not in cache:
        out = subprocess.run([LACUNA, "tokenize", "-m", vocab, "--json", prompt],
                             check=True, capture_output=True, text=True).stdout
        cache[prompt] = len(json.loads(out)["ids"])
    return cache[prompt]


def breakdown(path, vocab, block, cache):
    groups = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for line in open(path):
        task, prompt, _, right = line.rstrip("\n").split("\t")[:4]
        if task != "add":
            continue
        a, b = map(int, prompt[len("add: "):-1].split("+"))
        answer = str(a + b)
        # Answer digits that fall in the prompt's last (partial) block.
        head = (block - prompt_tokens(vocab, prompt, cache) % block) % block
        keys = {
            "carries": str(min(carries(a, b), 4)).replace("4", "4+"),
            "answer digits": str(len(answer)),
            "block boundary": "inside the answer" if 0 < head < len(answer) else "not inside",
            "all": "all",
        }
        for group, key in keys.items():
            groups[group][key][0] += int(right)
            groups[group][key][1] += 1
    return groups


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--vocab", required=True, help="a GGUF with the task vocabulary")
    ap.add_argument("answers", nargs="+", help="NAME=answers.tsv")
    a = ap.parse_args()
    cache = {}
    for spec in a.answers:
        name, path = spec.split("=", 1)
        print(f"### {name} (`{path}`), block {a.block}\n")
        print("| group | value | right | accuracy |\n|---|---|---|---|")
        for group, rows in breakdown(path, a.vocab, a.block, cache).items():
            for key in sorted(rows):
                ok, n = rows[key]
                print(f"| {group} | {key} | {ok}/{n} | {ok / n:.1%} |")
        print()


if __name__ == "__main__":
    main()
