#!/usr/bin/env python3
"""What a constraint does to answers: `lacuna eval` of the task demo model (`--demo tasks`,
a 4-layer LLaDA trained here on addition, sorting and reversal) on the held-out problems,
each decoding mode with and without a regex of the task's answer form. The constraint
cannot make a wrong number right; it can only remove answers that are not of the form
(stray characters, a missing separator), so the accuracy it buys is the share of wrong
answers that were malformed. Writes bench-results/<machine-id>/structured/tasks.json
(`"kind": "lacuna.structured-tasks.v0"`) and prints the table as Markdown.

Usage (from the repository root):
    cargo build --release -p lacuna-cli
    python3 tools/bench/structured_tasks.py --machine-id epyc-2c-avx512 [--per-task 100]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forward import LACUNA, ROOT, machine  # noqa: E402

PROBLEMS = os.path.join(ROOT, "tools/train-tiny/results/tasks/heldout.tsv")

# The answer form of each task (the answers are matched whitespace-trimmed; rev and sort
# answers start with a space, as the model was trained).
REGEX = {
    "add": "[0-9]{1,7}",
    "sort": " [0-9]{1,2}( [0-9]{1,2}){0,15}",
    "rev": " [a-z]{1,20}( [a-z]{1,20}){0,7}",
}

MODES = [
    ("exact", ["--cache", "none"]),
    ("dual", ["--cache", "dual"]),
    ("threshold 0.5", ["--parallel", "--threshold", "0.5"]),
    ("fast (dual + threshold 0.9)", ["--fast"]),
    ("fast, threshold 0.5", ["--fast", "--threshold", "0.5"]),
]


def run_eval(binary, problems, flags, threads):
    out = subprocess.run([binary, "eval", "--demo", "tasks", "--problems", problems, "--json",
                          "--threads", str(threads), *flags],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine-id", required=True)
    ap.add_argument("--per-task", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--binary", default=LACUNA)
    a = ap.parse_args()
    schedule = ["--gen-length", "32", "--block-length", "8", "--steps", "32"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        by_task = {}
        for line in open(PROBLEMS):
            task = line.split("\t")[0]
            by_task.setdefault(task, [])
            if len(by_task[task]) < a.per_task:
                by_task[task].append(line)
        for task, lines in by_task.items():
            path = os.path.join(tmp, f"{task}.tsv")
            open(path, "w").writelines(lines)
            for mode, flags in MODES:
                row = {"task": task, "mode": mode, "problems": len(lines)}
                for label, extra in (("free", []), ("regex", ["--regex", REGEX[task]])):
                    r = run_eval(a.binary, path, schedule + flags + extra, a.threads)
                    t = r["tasks"][0] if "tasks" in r else r
                    row[label] = {k: t.get(k) for k in ("accuracy", "forwards_per_answer", "ms_per_answer")}
                rows.append(row)
                print(f"{task:5} {mode:28} free {row['free']['accuracy']:.3f}  "
                      f"regex {row['regex']['accuracy']:.3f}", file=sys.stderr)
    result = {
        "kind": "lacuna.structured-tasks.v0",
        "machine": {"id": a.machine_id, **machine(a.threads)},
        "date": datetime.date.today().isoformat(),
        "model": "lacuna-tiny-tasks (demo, trained here)",
        "schedule": " ".join(schedule),
        "regex": REGEX,
        "rows": rows,
    }
    out_dir = os.path.join(ROOT, "bench-results", a.machine_id, "structured")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tasks.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("| task | mode | accuracy free | accuracy regex | ms/answer free | ms/answer regex |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['mode']} | {r['free']['accuracy']:.3f} | {r['regex']['accuracy']:.3f} "
              f"| {r['free']['ms_per_answer']:.1f} | {r['regex']['ms_per_answer']:.1f} |")


if __name__ == "__main__":
    main()
