#!/usr/bin/env python3
"""Side-by-side end-to-end generation benchmark: Lacuna with each cache policy against
llama.cpp's uncached diffusion loop (`llama-oracle generate`: one all-logits forward over the
whole canvas per step, as llama-diffusion-cli runs it) on the same GGUF, prompt, generation
length and steps, in one session. Writes one `lacuna.bench.v1` file per (engine, cache,
gen length, threads) into bench-results/<machine-id>/; the README table then comes from
`cargo xtask bench-render`.

Usage (from the repository root, release binaries built first):
    cargo build --release -p lacuna-cli
    tools/llama-oracle/build-amx.sh
    lacuna fixture --arch llada --shape llada-8b --layers 4 --quant q4_k_m --out /tmp/llada8b-4l-q4km.gguf
    python3 tools/bench/generate.py --model /tmp/llada8b-4l-q4km.gguf --model-id llada-8b-shape-4l-q4km \
        --layers 4 --gen-length 128 256 --cache none prefix dual --threads 2

Steps = generation length (one token per step, the fixed work of the official schedule),
block 32, prompt 32, greedy. Random weights give no confidence, so the parallel rules would
commit one token per step too; their tokens per forward are measured on the demo model
(`crates/lacuna/examples/cache_quality.rs`).
"""
import argparse, datetime, json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forward import LACUNA, ORACLES, ROOT, machine, prepare_run, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--model-id", required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--quant", default="Q4_K_M-like: Q4_K + Q6_K (attn_v, ffn_down, output), Q4_K token_embd, F32 norms")
    ap.add_argument("--gen-length", type=int, nargs="+", default=[128])
    ap.add_argument("--cache", nargs="+", default=["none", "prefix", "dual"])
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--block-length", type=int, default=32)
    ap.add_argument("--machine-id", default="xeon-2c-amx")
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--lacuna-path", help="LACUNA_CPU_PATH for lacuna (e.g. avx2, standing in for an "
                    "AVX2-only machine); also suffixed to the lacuna result's name")
    ap.add_argument("--builds", nargs="+", default=["amx"], help="llama.cpp builds to run")
    ap.add_argument("--llama-cli", help="llama-diffusion-cli of llama.cpp's own cmake build (the speed "
                    "reference of shared/ORACLE.md), run beside the oracle builds")
    ap.add_argument("--llama-cli-build", default="native-clang", help="label of that build")
    ap.add_argument("--llama-cli-steps", type=int, default=20,
                    help="steps llama-diffusion-cli runs: its loop costs the same every step (one "
                         "all-position forward), and its block schedule needs a multiple of the "
                         "canvas's blocks, prompt included")
    a = ap.parse_args()

    model, commit, outdir = prepare_run(a)
    for g in a.gen_length:
        for th in a.threads:
            for cache in a.cache:
                lacuna(a, model, commit, outdir, g, th, cache)
            if not a.skip_llama:
                for build in a.builds:
                    if os.path.exists(ORACLES[build]):
                        llama(a, model, commit, outdir, g, th, build)
            if a.llama_cli:
                llama_cli(a, model, commit, outdir, g, th)


def shown(cmd):
    return " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)


def lacuna(a, model, commit, outdir, g, th, cache):
    load = open("/proc/loadavg").read().split()[0]
    cmd = [LACUNA, "bench", "-m", a.model, "--gen-length", str(g), "--steps", str(g),
           "--block-length", str(a.block_length), "--prompt-tokens", str(a.prompt_tokens),
           "--cache", cache, "--threads", str(th), "--runs", "1", "--json",
           "--machine-id", a.machine_id, "--model-id", a.model_id]
    out, peak = run(cmd, env=dict(os.environ, LACUNA_CPU_PATH=a.lacuna_path) if a.lacuna_path else None)
    res = json.loads(out)["result"]
    res["repo_commit"] = commit
    res["model"] = model
    # The bench's own peak leaves its bandwidth probe's 512 MiB buffer out (and keeps the
    # load's peak, which the kernel's reset after the probe drops from wait4's figure).
    if not res["figures"].get("peak_rss_excludes_probe"):
        res["figures"]["peak_rss_bytes"] = peak
    env = f"LACUNA_CPU_PATH={a.lacuna_path} " if a.lacuna_path else ""
    res["notes"] = f"{env}{shown(cmd)}. Load average before the run: {load}."
    who = "lacuna" + (f"-{a.lacuna_path}" if a.lacuna_path else "")
    write(outdir, f"{a.model_id}-generate-g{g}-{cache}-{who}-t{th}.json", res)
    f = res["figures"]
    print(f"lacuna    cache {cache:6} gen {g:4} threads {th}: {f['step_ms']['median']:8.1f} ms/step, "
          f"{f['generated_tokens_per_s']:.3f} tokens/s, {f['positions_per_forward']:.0f} positions/forward", flush=True)


def llama(a, model, commit, outdir, g, th, build):
    load = open("/proc/loadavg").read().split()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cmd = [ORACLES[build], "generate", "--model", a.model, "--prompt-tokens", str(a.prompt_tokens),
           "--gen-length", str(g), "--steps", str(g), "--block-length", str(a.block_length),
           "--threads", str(th), "--json"]
    out, peak = run(cmd)
    r = json.loads(out)
    res = llama_result(a, model, commit, date, g, th, peak,
                       engine=dict(name="llama.cpp", version=r["llama_cpp_version"], build=r["build_flavour"]),
                       spread=dict(median=r["median"], min=r["min"], max=r["max"]),
                       tokens_per_s=r["generated_tokens_per_s"],
                       notes=f"{shown(cmd)} (llama-diffusion-cli's loop: non-causal, flash attention off, "
                             f"all-position logits every step, no cache; one token committed per step, "
                             f"so the per-step cost is the same for either model's sampler). "
                             f"Load average before the run: {load}.")
    write(outdir, f"{a.model_id}-generate-g{g}-llama-{build}-t{th}.json", res)
    print(f"llama.cpp {build:12} gen {g:4} threads {th}: {r['median']:8.1f} ms/step, "
          f"{r['generated_tokens_per_s']:.3f} tokens/s", flush=True)


def llama_cli(a, model, commit, outdir, g, th):
    """llama.cpp's own `llama-diffusion-cli` on the same file: its printed total over the steps
    it ran. The prompt is `prompt_tokens` ASCII letters: the fixtures' vocabulary is byte-level,
    one token per character (`lacuna tokenize` shows it)."""
    import re
    load = open("/proc/loadavg").read().split()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    canvas = a.prompt_tokens + g
    prompt = ("abcdefghijklmnopqrstuvwxyz" * 8)[:a.prompt_tokens]
    cmd = [a.llama_cli, "-m", a.model, "-p", prompt, "-ub", str(canvas), "-b", str(canvas),
           "-c", str(canvas), "-n", str(g), "-t", str(th), "-tb", str(th),
           "--diffusion-steps", str(a.llama_cli_steps), "--diffusion-block-length", str(a.block_length)]
    out, peak = run_merged(cmd)
    m = re.search(r"total time: ([0-9.]+)ms, time per step: ([0-9.]+)ms", out)
    if not m:
        sys.exit(f"no timing in llama-diffusion-cli's output:\n{out[-2000:]}")
    per_step = float(m.group(2))
    res = llama_result(a, model, commit, date, g, th, peak,
                       engine=dict(name="llama.cpp", version="llama-cpp-python 0.3.36 vendor",
                                   build=a.llama_cli_build),
                       spread=dict(median=per_step, min=per_step, max=per_step),
                       notes=f"{shown(cmd)}: llama.cpp's own cmake build (shared/ORACLE.md, the speed "
                             f"reference), its uncached loop, one all-position forward per step; "
                             f"{a.llama_cli_steps} steps timed (the cost per step does not depend on "
                             f"their number), tokens/s at one token per step. Load average before the "
                             f"run: {load}.")
    write(outdir, f"{a.model_id}-generate-g{g}-llama-{a.llama_cli_build}-t{th}.json", res)
    print(f"llama.cpp {a.llama_cli_build:12} gen {g:4} threads {th}: {per_step:8.1f} ms/step", flush=True)


def llama_result(a, model, commit, date, g, th, peak, engine, spread, notes, tokens_per_s=None):
    """A llama.cpp generate result: its uncached loop over the whole canvas, one token a step
    (`tokens_per_s` where measured end to end, else one token per median step)."""
    canvas = a.prompt_tokens + g
    return dict(schema="lacuna.bench.v1", engine=engine, repo_commit=commit, date=date,
                machine=dict(id=a.machine_id, **machine(th)), model=model,
                workload=dict(kind="generate", prompt_tokens=a.prompt_tokens, gen_tokens=g, steps=g,
                              block_length=a.block_length, cache="none",
                              sampler="llada low_confidence t=0" if model["architecture"] == "llada"
                              else "dream parallel 1 token/step t=0"),
                figures=dict(runs=1, step_ms=spread, forward_tokens_per_s=canvas / (spread["median"] / 1000),
                             generated_tokens_per_s=tokens_per_s or 1000 / spread["median"], startup_s=None,
                             peak_rss_bytes=peak, forwards=g, positions_per_forward=float(canvas)),
                notes=notes)


def run_merged(cmd):
    """Runs cmd with stderr merged into stdout (llama.cpp logs its timings there)."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        text = out.read()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{text[-2000:]}")
        return text, usage.ru_maxrss * 1024


def write(outdir, name, res):
    with open(os.path.join(outdir, name), "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
