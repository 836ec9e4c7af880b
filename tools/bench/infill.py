#!/usr/bin/env python3
"""Infilling on the task demo model (`lacuna run --demo tasks --suffix`): exact-match accuracy
of the middle, on held-out problems, exact decoding and `--fast`. Two holes:
- rev: the answer's characters 4-6 missing (prefix: prompt + the answer's first 3
  characters; suffix: the rest), answers of 7+ characters;
- add: the second operand missing (prefix `add: A+`, suffix `=SUM`), its digit count given.
The middle's length is the hole's (one token per character or digit), one token per step,
one block. Writes bench-results/<machine-id>/tasks/infill-t1.json and prints the counts.

Usage: python3 tools/bench/infill.py --machine-id ID [--n 50]
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


def fill(prefix, suffix, n, extra):
    out = subprocess.run([LACUNA, "run", "--demo", "tasks", "--threads", "1", "-p", prefix, "--suffix", suffix,
                          "--gen-length", str(n), "--steps", str(n), "--block-length", str(n), "--json", *extra],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["text"]


def holes(rows, n):
    rev = [(p + a[:3], a[3:6], a[6:]) for t, p, a in rows if t == "rev" and len(a) >= 7][:n]
    add = []
    for t, p, a in rows:
        if t == "add" and len(add) < n:
            x, y = p[len("add: "):-1].split("+")
            add.append(("add: " + x + "+", y, "=" + a))
    return {"rev: answer characters 4-6": rev, "add: second operand": add}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine-id", required=True)
    ap.add_argument("--n", type=int, default=50)
    a = ap.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(PROBLEMS)]
    results = []
    for hole, cases in holes(rows, a.n).items():
        for mode, extra in [("exact", []), ("fast", ["--fast"])]:
            ok = sum(fill(pre, suf, len(mid), extra) == mid for pre, mid, suf in cases)
            results.append({"hole": hole, "mode": mode, "problems": len(cases), "correct": ok})
            print(f"{hole}, {mode}: {ok}/{len(cases)}", flush=True)
    doc = {"kind": "lacuna.infill-accuracy.v0", "date": datetime.date.today().isoformat(),
           "machine": dict(id=a.machine_id, **machine(1)), "model": "lacuna-tiny-tasks (--demo tasks)",
           "problems": os.path.relpath(PROBLEMS, ROOT),
           "command": "python3 tools/bench/infill.py " + " ".join(sys.argv[1:]), "results": results}
    out = os.path.join(ROOT, "bench-results", a.machine_id, "tasks", "infill-t1.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
