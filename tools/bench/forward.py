#!/usr/bin/env python3
"""Side-by-side forward-pass benchmark: Lacuna vs llama.cpp on the same GGUF, same canvas
length, in one session. Writes one `lacuna.bench.v1` file per (engine, build, threads, T)
into bench-results/<machine-id>/, then the README table comes from `cargo xtask bench-render`.

Usage (from the repository root, release binaries built first):
    cargo build --release -p lacuna-cli
    tools/llama-oracle/build-ref.sh; tools/llama-oracle/build-amx.sh     # the oracle builds
    python3 tools/bench/forward.py --model /tmp/llada8b-4l-q4km.gguf --model-id llada-8b-shape-4l-q4km \
        --layers 4 --seq-len 160 --threads 1 2 --runs 5 --tag quiet

llama.cpp is run with every thread count given (its best is what the table compares) and
with each oracle build found (reference AVX-512 build and AMX build). Peak RSS is measured
per process with wait4. The load average before each run is stored in the notes: compare
only runs made on a quiet machine.
"""
import argparse, datetime, json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LACUNA = os.path.join(ROOT, "target/release/lacuna")
ORACLES = {
    "avx512-no-amx": os.path.join(ROOT, "tools/llama-oracle/target/release/llama-oracle"),
    "amx": os.path.join(ROOT, "tools/llama-oracle/target-amx/release/llama-oracle"),
    # AVX2-only builds (tools/llama-oracle/build-avx2.sh): run with --builds avx2 avx2-clang.
    "avx2": os.path.join(ROOT, "tools/llama-oracle/target-avx2/release/llama-oracle"),
    "avx2-clang": os.path.join(ROOT, "tools/llama-oracle/target-avx2-clang/release/llama-oracle"),
}
SHAPES = {  # model.id prefix -> (arch, d_model, heads, kv_heads, ffn, vocab)
    "llada-8b": ("llada", 4096, 32, 32, 12288, 126464),
    "dream-7b": ("dream", 3584, 28, 4, 18944, 152064),
    "rnd1-30b": ("rnd1", 2048, 32, 4, 6144, 151936),
    "llada2-mini": ("llada2", 2048, 16, 4, 5120, 157184),
}


def machine(threads):
    info = open("/proc/cpuinfo").read()
    model = info.split("model name")[1].split(":", 1)[1].split("\n")[0].strip()
    flags = set(info.split("\nflags")[1].split(":", 1)[1].split("\n")[0].split())
    simd = [n for f, n in [("avx2", "avx2"), ("fma", "fma"), ("avx_vnni", "avx-vnni"), ("avx512f", "avx512f"),
                           ("avx512bw", "avx512bw"), ("avx512vl", "avx512vl"), ("avx512_vnni", "avx512vnni"),
                           ("avx512_bf16", "avx512bf16"), ("avx512_fp16", "avx512fp16"), ("avx512vbmi", "avx512vbmi"),
                           ("amx_int8", "amx-int8"), ("amx_bf16", "amx-bf16")] if f in flags]
    ram = int(open("/proc/meminfo").read().split("MemTotal:")[1].split()[0]) * 1024
    return dict(cpu_model=model, cores=os.cpu_count(), threads=threads, simd=simd, ram_bytes=ram, gpu=None)


def run(cmd, env=None):
    """Runs cmd; returns (stdout, peak RSS in bytes of that process, from wait4)."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0); err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.read()[-2000:]}")
        return out.read(), usage.ru_maxrss * 1024


def prepare_run(a):
    """The result files' `model` block (from the fixture's shape table), the commit, and the
    output folder bench-results/<machine-id>/ (created)."""
    arch, d, h, kv, ffn, vocab = next(v for k, v in SHAPES.items() if a.model_id.startswith(k))
    model = dict(id=a.model_id, architecture=arch, layers=a.layers, d_model=d, heads=h, kv_heads=kv, ffn=ffn,
                 vocab=vocab, quant=a.quant, file_bytes=os.path.getsize(a.model), synthetic=True)
    try:
        commit = subprocess.check_output(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], text=True,
                                         stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):  # a copy of the tree without .git (the GPU machine)
        commit = None
    outdir = os.path.join(ROOT, "bench-results", a.machine_id)
    os.makedirs(outdir, exist_ok=True)
    return model, commit, outdir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--model-id", required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--quant", default="Q4_K_M-like: Q4_K + Q6_K (attn_v, ffn_down, output), Q4_K token_embd, F32 norms")
    ap.add_argument("--seq-len", type=int, nargs="+", default=[160])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the whole job list this many times, interleaved, and pool the "
                         "results (median of the rounds' medians): on a machine with noisy "
                         "neighbours every engine then sees the same noise")
    ap.add_argument("--machine-id", default="xeon-2c-amx")
    ap.add_argument("--tag", required=True, help="suffix of the result file names")
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--builds", nargs="+", default=["avx512-no-amx", "amx"], help="llama.cpp builds to run")
    ap.add_argument("--lacuna-path", help="LACUNA_CPU_PATH for lacuna (e.g. avx2, standing in for an "
                    "AVX2-only machine); also suffixed to the lacuna result's name")
    ap.add_argument("--llama-model", help="the file llama.cpp runs instead of --model (LLaDA2: its "
                    "bailingmoe2 twin, the same weights under an architecture llama.cpp has)")
    ap.add_argument("--lacuna-device", help="lacuna's --device (cpu, cuda, cuda:N); the GPU it reports goes "
                    "into machine.gpu and the device into the result's name")
    ap.add_argument("--weights", help="lacuna's --weights (MoE experts: auto, compact, fast); "
                    "also suffixed to the lacuna result's name")
    ap.add_argument("--llama-cli", nargs="+", default=[], metavar="BUILD=PATH",
                    help="llama-diffusion-cli binaries of llama.cpp's own cmake builds (the speed "
                         "reference of shared/ORACLE.md), e.g. avx2-clang=/tmp/ref/b-avx2/bin/"
                         "llama-diffusion-cli: one forward over the T-position canvas per step, timed "
                         "over 5 steps (T a multiple of 32)")
    a = ap.parse_args()

    model, commit, outdir = prepare_run(a)

    jobs = []
    for t in a.seq_len:
        for th in a.threads:
            jobs.append(("lacuna", None, t, th))
            if not a.skip_llama:
                for build, exe in ORACLES.items():
                    if build in a.builds and os.path.exists(exe):
                        jobs.append(("llama.cpp", build, t, th))
            for spec in a.llama_cli:
                jobs.append(("llama.cpp", "cli:" + spec.split("=", 1)[0], t, th))
    pooled = {}
    for rnd in range(a.rounds):
        for job in jobs:
            r = measure(a, *job)
            if r is None:
                continue
            pooled.setdefault(job, []).append(r)
            engine, build, t, th = job
            med = pooled[job][-1]["med"]
            print(f"round {rnd + 1}/{a.rounds} {engine:9} {build or '':14} T={t:4} threads={th}: median {med:9.1f} ms", flush=True)
    for job, rs in pooled.items():
        engine, build, t, th = job
        meds = sorted(r["med"] for r in rs)
        med = meds[len(meds) // 2] if len(meds) % 2 else (meds[len(meds) // 2 - 1] + meds[len(meds) // 2]) / 2
        mn, mx = min(r["min"] for r in rs), max(r["max"] for r in rs)
        r0 = rs[0]
        loads = ", ".join(r["load"] for r in rs)
        notes = r0["notes"] + f" Load average before each run: {loads}."
        if a.rounds > 1:
            notes += (f" {a.rounds} interleaved rounds of {a.runs} runs; median of the round medians "
                      f"({', '.join(f'{m:.0f}' for m in meds)} ms).")
        # The commit the lacuna binary embeds (its build), else the checkout's.
        res = dict(schema="lacuna.bench.v1", engine=r0["eng"], repo_commit=r0.get("commit") or commit, date=r0["date"],
                   machine=dict(id=a.machine_id, **dict(machine(th), gpu=r0.get("gpu"))), model=model,
                   workload=dict(kind="forward", prompt_tokens=t, gen_tokens=0, steps=None, block_length=None, sampler=None),
                   figures=dict(runs=a.runs * a.rounds, step_ms=dict(median=med, min=mn, max=mx),
                                forward_tokens_per_s=t / (med / 1000), generated_tokens_per_s=None, startup_s=None,
                                peak_rss_bytes=max(r["peak"] for r in rs)),
                   notes=notes)
        if r0.get("floor"):
            # The first round's floor, its ratio against the pooled median.
            fl = dict(r0["floor"])
            fl["ratio"] = med / fl["floor_ms"]
            res["figures"]["floor"] = fl
        who = ("lacuna" + (f"-{a.weights}" if a.weights else "") + (f"-{a.lacuna_path}" if a.lacuna_path else "")
               + (f"-{a.lacuna_device.replace(':', '')}" if a.lacuna_device else "")
               if engine == "lacuna" else f"llama-{build.removeprefix('cli:')}")
        name = os.path.join(outdir, f"{a.model_id}-T{t}-{who}-t{th}-{a.tag}.json")
        with open(name, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
        print(f"{engine:9} {build or '':14} T={t:4} threads={th}: median {med:9.1f} ms  (min {mn:.1f}, max {mx:.1f})", flush=True)


def measure(a, engine, build, t, th):
    """One run of one engine: its median/min/max step time, peak RSS and the notes."""
    load = open("/proc/loadavg").read().split()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if engine == "lacuna":
        cmd = [LACUNA, "bench", "-m", a.model, "--forward", "--seq-len", str(t), "--threads", str(th),
               "--runs", str(a.runs), "--json"] + (["--weights", a.weights] if a.weights else []) \
            + (["--device", a.lacuna_device] if a.lacuna_device else [])
    elif build.startswith("cli:"):
        return measure_cli(a, build, t, th, load, date)
    else:
        cmd = [ORACLES[build], "bench", "--model", a.llama_model or a.model, "--seq-len", str(t),
               "--threads", str(th), "--runs", str(a.runs), "--json"]
    out, peak = run(cmd, env=dict(os.environ, LACUNA_CPU_PATH=a.lacuna_path)
                    if engine == "lacuna" and a.lacuna_path else None)
    r = json.loads(out)
    shown = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
    if engine == "lacuna" and a.lacuna_path:
        shown = f"LACUNA_CPU_PATH={a.lacuna_path} {shown}"
    if engine == "lacuna":
        med, mn, mx = r["ms_per_forward_median"], r["ms_per_forward_min"], r["ms_per_forward_max"]
        eng = dict(name="lacuna", version="0.1.0", build=r["backend"])
        p = r.get("parts_ms_mean", {})
        parts = ", ".join(f"{k} {v:.0f} ms" for k, v in p.items())
        notes = f"{shown}. Mean split per pass (first round): {parts}."
        if r.get("experts"):
            notes += f" Experts {r['experts']}."
        if r.get("dense_weights"):
            notes += f" Dense weights {r['dense_weights']}, {r.get('weight_bytes', 0) / 1e9:.2f} GB held."
    else:
        med, mn, mx = r["median"], r["min"], r["max"]
        eng = dict(name="llama.cpp", version=r["llama_cpp_version"], build=r["build_flavour"])
        notes = f"{shown} (non-causal, flash attention off, all-position logits)."
    return dict(med=med, min=mn, max=mx, peak=peak, eng=eng, notes=notes, load=load, date=date,
                commit=r.get("build_commit") if engine == "lacuna" else None, gpu=r.get("gpu"),
                floor=r.get("floor") if engine == "lacuna" else None)


def measure_cli(a, build, t, th, load, date):
    """llama-diffusion-cli over a T-position canvas (16 prompt characters: the fixtures'
    vocabulary is byte-level) for 5 steps: its printed time per step is one forward."""
    import re
    name = build.removeprefix("cli:")
    exe = dict(s.split("=", 1) for s in a.llama_cli)[name]
    cmd = [exe, "-m", a.llama_model or a.model, "-p", "abcdefghijklmnop", "-ub", str(t),
           "-b", str(t), "-c", str(t), "-n", str(t - 16), "-t", str(th), "-tb", str(th),
           "--diffusion-steps", "5", "--diffusion-block-length", "32"]
    # errors="replace": a random-weight model's text is arbitrary bytes.
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as proc:
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    m = re.search(r"time per step: ([0-9.]+)ms", out)
    if os.waitstatus_to_exitcode(status) != 0 or not m:
        # Its example refuses some canvases (T=32 with a 16-token prompt): skip that row, keep
        # the others.
        print(f"skipped, llama.cpp failed: {' '.join(cmd)}\n{out[-600:]}", file=sys.stderr, flush=True)
        return None
    per = float(m.group(1))
    shown = " ".join(cmd)
    return dict(med=per, min=per, max=per, peak=usage.ru_maxrss * 1024,
                eng=dict(name="llama.cpp", version="llama-cpp-python 0.3.36 vendor", build=name),
                notes=f"{shown}: llama.cpp's own cmake build, the mean of 5 steps, each one "
                      f"non-causal forward with all-position logits.",
                load=load, date=date, commit=None, gpu=None, floor=None)


if __name__ == "__main__":
    main()
