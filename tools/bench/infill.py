#!/usr/bin/env python3
"""Infilling on the task demo model (`lacuna run --demo tasks --suffix`): exact-match accuracy
of the middle on held-out problems (the first N of each task in
tools/train-tiny/results/tasks/heldout.tsv, never trained on). Three holes:
- add: the second operand missing (prefix `add: A+`, suffix `=SUM`): the model must subtract;
- sort: the middle element of the sorted answer missing (prefix: prompt and the elements
  before it, each with its space; suffix: the elements after it);
- rev: the middle third of the reversed string missing (at least one character).
Three modes: `exact` and `fast` are given the hole's length in tokens (as `lacuna tokenize`
counts them; one token per step, one block); `search` is not: `--infill-lengths 1..8` and the
model's own score picks the length (see `lacuna::infill::fill_score`). Writes
bench-results/<machine-id>/tasks/infill-t1.json and prints the counts.

Usage: python3 tools/bench/infill.py --machine-id ID [--n 300]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forward import LACUNA, ROOT, machine  # noqa: E402

PROBLEMS = os.path.join(ROOT, "tools/train-tiny/results/tasks/heldout.tsv")
GGUF = os.path.join(ROOT, "models/lacuna-tiny-tasks.gguf")
SEARCH = "1,2,3,4,5,6,7,8"


def tokens(text):
    out = subprocess.run([LACUNA, "tokenize", "-m", GGUF, "--no-bos", "--json", text],
                         capture_output=True, text=True, check=True).stdout
    return len(json.loads(out)["ids"])


def fill(prefix, suffix, mode, n):
    args = [LACUNA, "run", "-m", GGUF, "--threads", "1", "-p", prefix, "--suffix", suffix, "--json"]
    if mode == "search":
        args += ["--gen-length", "8", "--steps", "8", "--block-length", "8", "--infill-lengths", SEARCH]
    else:
        args += ["--gen-length", str(n), "--steps", str(n), "--block-length", str(n)]
        if mode == "fast":
            args.append("--fast")
    doc = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return doc["text"], doc["forwards"]


def holes(rows, n):
    add, sort, rev = [], [], []
    for t, p, a in rows:
        if t == "add" and len(add) < n:
            x, y = p[len("add: "):-1].split("+")
            add.append(("add: " + x + "+", y, "=" + a))
        elif t == "sort" and len(sort) < n:
            items = a.split(" ")[1:]  # the answer starts with a space
            m = len(items) // 2
            sort.append((p + "".join(" " + i for i in items[:m]) + " ", items[m],
                         "".join(" " + i for i in items[m + 1:])))
        elif t == "rev" and len(rev) < n:
            s = a[1:]
            i, j = len(s) // 3, max(len(s) // 3 + 1, 2 * len(s) // 3)
            rev.append((p + " " + s[:i], s[i:j], s[j:]))
    return {"add: second operand": add, "sort: middle element": sort, "rev: middle third": rev}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine-id", required=True)
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(PROBLEMS)]
    results, examples = [], {}
    for hole, cases in holes(rows, a.n).items():
        lengths = [tokens(mid) for _, mid, _ in cases]
        for mode in ["exact", "fast", "search"]:
            ok = forwards = 0
            for (pre, mid, suf), n in zip(cases, lengths):
                text, f = fill(pre, suf, mode, n)
                ok += text == mid
                forwards += f
                if mode == "search" and len(examples.setdefault(hole, [])) < 3:
                    examples[hole].append({"prefix": pre, "suffix": suf, "want": mid, "fill": text})
            results.append({"hole": hole, "mode": mode, "problems": len(cases), "correct": ok,
                            "forwards_per_fill": round(forwards / len(cases), 2)})
            print(f"{hole}, {mode}: {ok}/{len(cases)}, {forwards / len(cases):.1f} forwards a fill", flush=True)
    doc = {"kind": "lacuna.infill-accuracy.v1", "date": datetime.date.today().isoformat(),
           "machine": dict(id=a.machine_id, **machine(1)), "model": "lacuna-tiny-tasks (--demo tasks)",
           "problems": os.path.relpath(PROBLEMS, ROOT),
           "modes": {"exact": "the hole's length in tokens, one token per step, one block, no cache",
                     "fast": "the hole's length, --fast (dual cache, threshold 0.9)",
                     "search": f"length not given: --infill-lengths {SEARCH}, one token per step"},
           "command": "python3 tools/bench/infill.py " + " ".join(sys.argv[1:]),
           "results": results, "examples": examples}
    out = os.path.join(ROOT, "bench-results", a.machine_id, "tasks", "infill-t1.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
