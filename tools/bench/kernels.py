#!/usr/bin/env python3
"""Runs the lacuna-cpu criterion benches (int8 peak per path, quantized GEMM at LLaDA-8B
shapes) and writes one raw JSON file under bench-results/<machine-id>/kernels/ with GOP/s and
the fraction of the path's measured peak for every case.

Usage (repository root):
    python3 tools/bench/kernels.py --out bench-results/xeon-2c-amx/kernels/DATE-cpu-kernels.json \
        --paths amx avx512vnni --types q4_K q6_K --nk 4096x4096 12288x4096 4096x12288 126464x4096 \
        --t 32 160 544 --threads 1

1-thread cases use the thread's CPU clock (LACUNA_BENCH_CLOCK=cpu: time spent descheduled by
other jobs is not counted); 2-thread cases are wall-clock. Figures are criterion's
[low, estimate, high] of the mean, converted with ops = 2*T*N*K.
"""
import argparse, datetime, json, os, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRIT = os.path.join(ROOT, "target", "criterion")


def bench(name, env):
    e = dict(os.environ, LACUNA_BENCH_CLOCK="cpu", **env)
    subprocess.run(["cargo", "bench", "-q", "-p", "lacuna-cpu", "--bench", name],
                   cwd=ROOT, env=e, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def estimate_ns(group, bench_id, param=None):
    d = os.path.join(CRIT, group, bench_id.replace("/", "_"))
    if param:
        d = os.path.join(d, param)
    with open(os.path.join(d, "new", "estimates.json")) as f:
        m = json.load(f)["mean"]
    return m["confidence_interval"]["lower_bound"], m["point_estimate"], m["confidence_interval"]["upper_bound"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--paths", nargs="+", default=["amx", "avx512vnni"])
    ap.add_argument("--types", nargs="+", default=["q4_K", "q6_K"])
    ap.add_argument("--nk", nargs="+", default=["4096x4096", "12288x4096", "4096x12288", "126464x4096"])
    ap.add_argument("--t", nargs="+", type=int, default=[32, 160, 544])
    ap.add_argument("--threads", nargs="+", type=int, default=[1])
    a = ap.parse_args()
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    load0 = open("/proc/loadavg").read().split()[0]

    bench("peak", {})
    peak = {}
    for p in a.paths:
        lo, est, hi = estimate_ns("int8_dot_peak", p)
        with open(os.path.join(CRIT, "int8_dot_peak", p, "new", "benchmark.json")) as f:
            elems = json.load(f)["throughput"]["Elements"]
        peak[p] = [round(elems / hi, 2), round(elems / est, 2), round(elems / lo, 2)]

    cases = []
    for ty in a.types:
        for nk in a.nk:
            for t in a.t:
                env = dict(LACUNA_BENCH_PATHS=",".join(a.paths), LACUNA_BENCH_TYPES=ty, LACUNA_BENCH_NK=nk,
                           LACUNA_BENCH_T=str(t), LACUNA_BENCH_THREADS=",".join(map(str, a.threads)))
                bench("gemm", env)
                n, k = map(int, nk.split("x"))
                ops = 2 * t * n * k
                for p in a.paths:
                    for th in a.threads:
                        lo, est, hi = estimate_ns("gemm", f"{p}/{ty}/{nk}", f"T{t}_th{th}")
                        g = [round(ops / hi, 1), round(ops / est, 1), round(ops / lo, 1)]
                        cases.append(dict(path=p, type=ty, n=n, k=k, t=t, threads=th,
                                          time_ms=[round(lo / 1e6, 3), round(est / 1e6, 3), round(hi / 1e6, 3)],
                                          gops=g, clock="thread-cpu" if th == 1 else "wall",
                                          fraction_of_peak_per_thread=round(g[1] / th / peak[p][1], 3)))
                        print(f"{p:11} {ty:5} {nk:12} T{t:<4} th{th}: {g[1]:7.1f} GOP/s "
                              f"({cases[-1]['fraction_of_peak_per_thread']:.1%} of peak)", flush=True)
    commit = subprocess.check_output(["git", "-C", ROOT, "rev-parse", "HEAD"], text=True).strip()
    info = open("/proc/cpuinfo").read()
    doc = dict(kind="lacuna.cpu-kernels.raw.v0",
               note="Raw criterion figures of crates/lacuna-cpu benches (peak, gemm), written by "
                    "tools/bench/kernels.py. gops = 2*T*N*K/time/1e9 as [low, estimate, high] of "
                    "criterion's confidence interval of the mean; fraction_of_peak_per_thread = "
                    "estimate / threads / the path's measured int8 peak (int8_peak_gops_1thread).",
               repo_commit=commit, date_start=start,
               date_end=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               load_average_at_start=load0,
               machine=dict(cpu_model=info.split("model name")[1].split(":", 1)[1].split("\n")[0].strip(),
                            cores=os.cpu_count()),
               reproduce="python3 tools/bench/kernels.py " + " ".join(
                   ["--paths", *a.paths, "--types", *a.types, "--nk", *a.nk, "--t", *map(str, a.t),
                    "--threads", *map(str, a.threads)]),
               int8_peak_gops_1thread=peak, gemm=cases)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
