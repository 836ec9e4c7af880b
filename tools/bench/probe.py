#!/usr/bin/env python3
"""Best-of GEMM probe grid (crates/lacuna-cpu/examples/gemm_probe.rs) into one raw JSON file.

Runs every (path, type) at one shape on 1 and 2 threads, interleaved round by round so both
thread counts see the same noise, and keeps each case's best and median over all rounds.
1 thread is timed on the thread CPU clock, 2 threads by wall clock (PROBE_THREADS=2); each
run is paired with a 1-thread run of the path's int8 peak loop.

    cargo build --release -p lacuna-cpu --example gemm_probe
    python3 tools/bench/probe.py --out bench-results/xeon-2c-amx/kernels/NAME.json

With --attention T [T ...] it runs crates/lacuna-cpu/examples/attn_probe.rs instead (one
thread, LLaDA-8B heads, best of 5 per run) and keeps each T's best over the rounds.
"""
import argparse, datetime, json, os, re, statistics, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(ROOT, "target/release/examples/gemm_probe")
ATTN = os.path.join(ROOT, "target/release/examples/attn_probe")
ATTN_LINE = re.compile(r"T=(\d+): ([\d.]+) ms, ([\d.]+) GFLOP/s")
LINE = re.compile(r"best ([\d.]+) GOP/s\s+median ([\d.]+) GOP/s; peak best (\d+) median (\d+)")


def commit():
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def attention(a):
    runs = {}
    for _ in range(a.rounds):
        for t in a.attention:
            out = subprocess.run([ATTN, str(t)], capture_output=True, text=True, check=True).stdout
            m = ATTN_LINE.search(out)
            runs.setdefault(t, []).append((float(m.group(2)), float(m.group(3))))
    cases = [dict(t=t, heads=32, kv_heads=32, head_dim=128, threads=1,
                  ms_best=min(r[0] for r in rs), ms_median_of_rounds=statistics.median(r[0] for r in rs),
                  gflops_best=max(r[1] for r in rs)) for t, rs in runs.items()]
    write(a.out, dict(kind="lacuna.attn-probe.raw.v0",
                      note="lacuna_cpu::attention at LLaDA-8B head shapes (32 heads of 128, no GQA), one "
                           "thread, one workspace reused across calls; each run is the best of 5 calls, "
                           "rounds interleave the lengths. GFLOP/s counts the two products (4 T^2 d per head).",
                      repo_commit=commit(),
                      date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      reproduce="cargo build --release -p lacuna-cpu --example attn_probe && "
                                "python3 tools/bench/probe.py --attention 160 544 1100 --out FILE",
                      cases=cases))
    for c in cases:
        print(c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--paths", nargs="+", default=["amx", "avx512vnni"])
    ap.add_argument("--types", nargs="+", default=["q4_K", "q6_K"])
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 4096, 160], metavar=("N", "K", "T"))
    ap.add_argument("--shapes", nargs="+", metavar="NxKxT",
                    help="several shapes instead of --shape, e.g. 4096x4096x160 126464x4096x160")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--attention", nargs="+", type=int, metavar="T",
                    help="time attention at these canvas lengths instead of the GEMM grid")
    a = ap.parse_args()
    if a.attention:
        return attention(a)
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes] if a.shapes else [tuple(a.shape)]
    runs = {}
    for _ in range(a.rounds):
        for (n, k, t) in shapes:
            for path in a.paths:
                for ty in a.types:
                    for th in a.threads:
                        env = dict(os.environ, PROBE_THREADS=str(th))
                        # Big matmuls get fewer iterations: about 2 s each at 100 GOP/s.
                        iters = max(2, min(a.iters, int(2e11 / (2 * n * k * t))))
                        out = subprocess.run([PROBE, path, ty, str(n), str(k), str(t), str(iters)],
                                             env=env, capture_output=True, text=True, check=True).stdout
                        m = LINE.search(out)
                        runs.setdefault((n, k, t, path, ty, th), []).append(
                            (iters,) + tuple(float(x) for x in m.groups()))
    cases = []
    for (n, k, t, path, ty, th), rs in runs.items():
        best = max(r[1] for r in rs)
        peak = max(r[3] for r in rs)
        cases.append(dict(path=path, type=ty, n=n, k=k, t=t, threads=th,
                          iterations=sum(r[0] for r in rs), gops_best=best,
                          gops_median_of_rounds=statistics.median(r[2] for r in rs),
                          peak_gops_best=peak,
                          # per thread: the peak is one core's
                          best_over_peak_best=round(best / (th * peak), 4)))
    for c in cases:
        if c["threads"] > 1:
            one = next(x for x in cases if (x["n"], x["k"], x["t"], x["path"], x["type"], x["threads"])
                       == (c["n"], c["k"], c["t"], c["path"], c["type"], 1))
            c["scaling_best_over_1_thread_best"] = round(c["gops_best"] / one["gops_best"], 3)
    doc = dict(kind="lacuna.gemm-probe.raw.v0",
               note="Best-of GEMM timings from gemm_probe over interleaved rounds; 1 thread on the "
                    "thread CPU clock, more threads by wall clock; peak = the path's 1-thread int8 "
                    "peak loop run beside each timing. The machine is a 2-vCPU VM with noisy "
                    "neighbours: medians mix quiet and noisy spells, best-of is the quiet figure. "
                    "best_over_peak_best is per thread (gops_best / (threads x peak)).",
               repo_commit=commit(),
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               reproduce="cargo build --release -p lacuna-cpu --example gemm_probe && python3 tools/bench/probe.py --out FILE",
               cases=cases)
    write(a.out, doc)
    for c in cases:
        print(c)


if __name__ == "__main__":
    main()
