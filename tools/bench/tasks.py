#!/usr/bin/env python3
"""What each decoding mode costs in answers: `lacuna eval` of the task demo model
(`lacuna run --demo tasks`) on the held-out problems of `tools/train-tiny/results/tasks/`,
for every mode, in one session, on one machine. Writes
bench-results/<machine-id>/tasks/<model>-g<gen>-b<block>-t<threads>.json
(`"kind": "lacuna.task-accuracy.v0"`: per mode and task: exact-match accuracy, agreement
with exact decoding, tokens per forward, forwards and ms per answer) and prints the table
as Markdown.

Exact decoding is LLaDA's official schedule: one token per step (steps = gen length),
low-confidence remasking, greedy, no cache; every other mode differs from it in one thing.
A benchmark, not a test: run it on a quiet machine (`uptime` first).

Usage (from the repository root):
    cargo build --release -p lacuna-cli
    python3 tools/bench/tasks.py --machine-id xeon-2c-avx512 [--per-task 300] [--threads 2]
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

# (name, flags beside the schedule); the first is the exact reference.
MODES = [
    ("exact", ["--cache", "none"]),
    ("prefix", ["--cache", "prefix"]),
    ("dual", ["--cache", "dual"]),
    ("threshold 0.95", ["--parallel", "--threshold", "0.95"]),
    ("threshold 0.9", ["--parallel", "--threshold", "0.9"]),
    ("threshold 0.7", ["--parallel", "--threshold", "0.7"]),
    ("threshold 0.5", ["--parallel", "--threshold", "0.5"]),
    ("factor 1.0", ["--parallel", "--factor", "1.0"]),
    ("entropy bound 0.1", ["--parallel", "--entropy-bound", "0.1"]),
    ("fast, threshold 0.95", ["--fast", "--threshold", "0.95"]),
    ("fast (dual + threshold 0.9)", ["--fast"]),
    ("fast, threshold 0.7", ["--fast", "--threshold", "0.7"]),
    ("fast, threshold 0.5", ["--fast", "--threshold", "0.5"]),
]


# The block-diffusion twin (`--twin`, a tiny llada2): LLaDA2's sampler commits every masked
# position of the current block above its threshold (0.95 by default), at least its scheduled
# one per step; exact is threshold 1.0 (one token per step), no cache.
MODES_LLADA2 = [
    ("exact", ["--threshold", "1.0"]),
    ("official (threshold 0.95)", []),
    ("threshold 0.7", ["--threshold", "0.7"]),
    ("threshold 0.5", ["--threshold", "0.5"]),
    ("block cache, threshold 1.0", ["--cache", "prefix", "--threshold", "1.0"]),
    ("block cache (fast)", ["--fast"]),
    ("editing (LLaDA2.1)", ["--editing"]),
    ("block cache + editing", ["--fast", "--editing"]),
]
TWIN = os.path.join(ROOT, "models/lacuna-tiny-tasks-llada2.gguf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine-id", required=True)
    ap.add_argument("--per-task", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gen-length", type=int, default=32)
    ap.add_argument("--block-length", type=int, default=8)
    ap.add_argument("--modes", nargs="*", help="only these mode names (exact always runs)")
    ap.add_argument("--twin", action="store_true",
                    help="the llada2 block-diffusion twin (models/lacuna-tiny-tasks-llada2.gguf)")
    ap.add_argument("--model", help="another GGUF of the same kind (a candidate before it ships); "
                    "its results go to --out")
    ap.add_argument("--out", help="where to write the JSON (default: bench-results/<machine>/tasks/)")
    a = ap.parse_args()
    # LLaDA counts steps over the whole generation, LLaDA2 per block: one token per step both.
    steps = a.block_length if a.twin else a.gen_length
    schedule = ["--gen-length", str(a.gen_length), "--steps", str(steps),
                "--block-length", str(a.block_length)]
    model = ["-m", a.model] if a.model else ["-m", TWIN] if a.twin else ["--demo", "tasks"]
    base = [LACUNA, "eval", *model, "--problems", PROBLEMS, "--per-task", str(a.per_task),
            "--threads", str(a.threads), "--json"] + schedule
    all_modes = MODES_LLADA2 if a.twin else MODES
    modes = [m for m in all_modes if m[0] == "exact" or not a.modes or m[0] in a.modes]
    out_modes = []
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "exact.tsv")
        for name, flags in modes:
            cmd = base + flags + (["--answers", ref] if name == "exact" else ["--reference", ref])
            print(f"{name}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
            doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            out_modes.append({"mode": name, "flags": flags, "tasks": doc["tasks"]})
    result = {
        "kind": "lacuna.task-accuracy.v0",
        "date": datetime.date.today().isoformat(),
        "machine": dict(id=a.machine_id, **machine(a.threads)),
        "model": a.model or (
            ("lacuna-tiny-tasks-llada2 (models/lacuna-tiny-tasks-llada2.gguf), Q8_0" if a.twin else
             "lacuna-tiny-tasks (lacuna run --demo tasks), Q8_0") + ", tools/train-tiny/README.md"),
        "problems": os.path.relpath(PROBLEMS, ROOT),
        "per_task": a.per_task,
        "schedule": {"gen_length": a.gen_length, "steps": steps, "block_length": a.block_length,
                     "temperature": 0.0,
                     **({"steps_count": "per block"} if a.twin else {"remasking": "low_confidence"})},
        "command": "python3 tools/bench/tasks.py " + " ".join(sys.argv[1:]),
        "modes": out_modes,
    }
    out_dir = os.path.join(ROOT, "bench-results", a.machine_id, "tasks")
    os.makedirs(out_dir, exist_ok=True)
    name = "lacuna-tiny-tasks-llada2" if a.twin else "lacuna-tiny-tasks"
    path = a.out or os.path.join(out_dir, f"{name}-g{a.gen_length}-b{a.block_length}-t{a.threads}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(path, ROOT)}", file=sys.stderr)
    print(table(result))


def table(result):
    """The Markdown table: one row per mode, accuracy / agreement per task, then the costs."""
    tasks = [t["task"] for t in result["modes"][0]["tasks"]]
    head = ["mode"] + [f"{t} acc (agree)" for t in tasks] + ["tokens/fwd", "fwd/answer", "ms/answer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in result["modes"]:
        ts = m["tasks"]
        cells = [m["mode"]]
        for t in ts:
            agree = "" if t["agreement"] is None else f" ({100 * t['agreement']:.0f}%)"
            cells.append(f"{100 * t['accuracy']:.1f}%{agree}")
        n = len(ts)
        cells += [f"{sum(t['tokens_per_forward'] for t in ts) / n:.2f}",
                  f"{sum(t['forwards_per_answer'] for t in ts) / n:.1f}",
                  f"{sum(t['ms_per_answer'] for t in ts) / n:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
