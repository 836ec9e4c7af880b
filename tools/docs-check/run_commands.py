#!/usr/bin/env python3
"""Runs the commands the README and the guides show, so that none of them rots: every
`lacuna ...` line (and `cargo run -p lacuna-cli -- ...`, as the built binary) in a fenced
block of README.md and docs/*.md, and every `curl` line against a `lacuna serve --demo`
started for them. Each must exit 0 within its timeout.

Skipped, by rule: lines with a placeholder (OWNER, model.gguf, in-f16.gguf, ID), `serve`
and `chat` (interactive or long-running; the server is checked by tools/serve-check/),
`bench` and fixtures of real models' shapes (benchmarks: minutes each), and `cargo`
commands other than `cargo run -p lacuna-cli` (the build and test commands CI runs itself).

Usage (repository root): python3 tools/docs-check/run_commands.py target/debug/lacuna
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "serve-check"))
from lacuna_server import LacunaServer  # noqa: E402

PLACEHOLDERS = ("OWNER", "model.gguf", "in-f16.gguf", " ID", "--machine-id ID")
SKIP_SUBCOMMANDS = {"serve", "chat", "bench"}


def parses(line):
    try:
        shlex.split(line, comments=True)
        return True
    except ValueError:
        return False


def commands(path):
    """(line number, command) of every shell line in the file's fenced blocks."""
    text = open(path).read()
    out = []
    for m in re.finditer(r"^```(?:sh|bash|console|shell)\n(.*?)^```", text, re.S | re.M):
        start = text[: m.start()].count("\n") + 2
        lines = m.group(1).split("\n")
        i = 0
        while i < len(lines):
            line, n = lines[i], start + i
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            # A quoted argument over several lines (a JSON body): up to its closing quote.
            while i + 1 < len(lines) and not parses(line):
                i += 1
                line = line + "\n" + lines[i]
            i += 1
            line = line.strip()
            if line.startswith(("lacuna ", "cargo run", "curl ")):
                out.append((n, line))
    return out


def argv_of(line, binary):
    """The command's argv with `lacuna` as the binary, or (None, why) when skipped."""
    if any(p in line for p in PLACEHOLDERS):
        return None, "placeholder"
    try:
        words = shlex.split(line, comments=True)
    except ValueError as e:
        return None, f"unparsable: {e}"
    if words[:2] == ["cargo", "run"]:
        if "lacuna-cli" not in words or "--" not in words:
            return None, "a cargo command CI runs itself"
        words = ["lacuna"] + words[words.index("--") + 1:]
    if words[0] == "lacuna":
        if len(words) > 1 and words[1] in SKIP_SUBCOMMANDS:
            return None, f"`lacuna {words[1]}`"
        if words[1:2] == ["fixture"] and "--shape" in words and "tiny" not in words:
            return None, "a real-shape fixture"
        return [binary] + words[1:], None
    return words, None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    files = ["README.md"] + sorted(glob.glob("docs/*.md"))
    ran = skipped = 0
    failed = []
    t0 = time.monotonic()
    with LacunaServer(binary, ["--demo"]) as server:
        for f in files:
            for n, line in commands(os.path.join(ROOT, f)):
                if line.startswith("curl "):
                    line = re.sub(r"(https?://)?(127\.0\.0\.1|localhost):8080", server.base_url, line)
                argv, why = argv_of(line, binary)
                if argv is None:
                    skipped += 1
                    print(f"skip {f}:{n}: {why}: {line[:90]}")
                    continue
                if argv[0] == "curl":
                    argv = argv[:1] + ["-sSf"] + argv[1:]
                r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
                ran += 1
                if r.returncode != 0:
                    failed.append(f"{f}:{n}: exit {r.returncode}: {line}\n{r.stderr[-1500:]}")
                    print(f"FAIL {f}:{n}: {line[:90]}")
                else:
                    print(f"ok   {f}:{n}: {line[:90]}")
    print(f"{ran} commands ran, {skipped} skipped, {len(failed)} failed, {time.monotonic() - t0:.0f} s")
    if failed:
        sys.exit("\n".join(failed))


if __name__ == "__main__":
    main()
