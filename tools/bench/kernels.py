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


MEASURE = []  # extra criterion arguments (--measurement-time, --warm-up-time)

# Bytes per element of each type in the GGUF file (block bytes / block elements): a case's
# weight stream as the file stores it, for its GB/s and its fraction of the read bandwidth.
FILE_BYTES_PER_ELEMENT = {"q4_k": 144 / 256, "q5_k": 176 / 256, "q6_k": 210 / 256, "q2_k": 84 / 256,
                          "q3_k": 110 / 256, "iq4_xs": 136 / 256, "q8_0": 34 / 32, "q4_0": 18 / 32,
                          "q4_1": 20 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32, "iq4_nl": 18 / 32,
                          "mxfp4": 17 / 32}


def bench(name, env):
    e = dict(os.environ, LACUNA_BENCH_CLOCK="cpu", **env)
    extra = ["--", *MEASURE] if MEASURE else []
    subprocess.run(["cargo", "bench", "-q", "-p", "lacuna-cpu", "--bench", name, *extra],
                   cwd=ROOT, env=e, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_bandwidth():
    """`lacuna doctor --json`'s memory read bandwidth, {threads: GB/s} (None without the binary)."""
    exe = os.path.join(ROOT, "target", "release", "lacuna")
    if not os.path.exists(exe):
        return None
    doc = json.loads(subprocess.check_output([exe, "doctor", "--json"], text=True))
    return {str(r["threads"]): round(r["gb_s"], 2) for r in doc.get("memory_read_gb_s", [])}


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
    ap.add_argument("--measurement-time", type=float, help="criterion seconds per case (default 5)")
    a = ap.parse_args()
    if a.measurement_time:
        MEASURE.extend(["--warm-up-time", "1", "--measurement-time", str(a.measurement_time)])
    bandwidth = read_bandwidth()
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
                        lo, est, hi = estimate_ns("gemm", f"{p}/{ty}/fast/{nk}", f"T{t}_th{th}")
                        g = [round(ops / hi, 1), round(ops / est, 1), round(ops / lo, 1)]
                        wbytes = n * k * FILE_BYTES_PER_ELEMENT.get(ty.lower(), 0)
                        wgbs = round(wbytes / est, 2) if wbytes else None  # bytes per ns = GB/s
                        bw = (bandwidth or {}).get(str(th))
                        cases.append(dict(path=p, type=ty, n=n, k=k, t=t, threads=th,
                                          time_ms=[round(lo / 1e6, 3), round(est / 1e6, 3), round(hi / 1e6, 3)],
                                          gops=g, clock="thread-cpu" if th == 1 else "wall",
                                          fraction_of_peak_per_thread=round(g[1] / th / peak[p][1], 3),
                                          file_weight_gb_s=wgbs,
                                          fraction_of_read_bandwidth=round(wgbs / bw, 3) if wgbs and bw else None))
                        print(f"{p:11} {ty:5} {nk:12} T{t:<4} th{th}: {g[1]:7.1f} GOP/s "
                              f"({cases[-1]['fraction_of_peak_per_thread']:.1%} of peak)", flush=True)
    commit = subprocess.check_output(["git", "-C", ROOT, "rev-parse", "HEAD"], text=True).strip()
    info = open("/proc/cpuinfo").read()
    doc = dict(kind="lacuna.cpu-kernels.raw.v0",
               note="Raw criterion figures of crates/lacuna-cpu benches (peak, gemm), written by "
                    "tools/bench/kernels.py. gops = 2*T*N*K/time/1e9 as [low, estimate, high] of "
                    "criterion's confidence interval of the mean; fraction_of_peak_per_thread = "
                    "estimate / threads / the path's measured int8 peak (int8_peak_gops_1thread); "
                    "file_weight_gb_s = the matrix's bytes as the GGUF file stores them / time, "
                    "fraction_of_read_bandwidth = that / read_bandwidth_gb_s at the case's threads "
                    "(lacuna doctor's probe, measured at the start).",
               repo_commit=commit, date_start=start,
               date_end=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               load_average_at_start=load0,
               machine=dict(cpu_model=info.split("model name")[1].split(":", 1)[1].split("\n")[0].strip(),
                            cores=os.cpu_count()),
               reproduce="python3 tools/bench/kernels.py " + " ".join(
                   ["--paths", *a.paths, "--types", *a.types, "--nk", *a.nk, "--t", *map(str, a.t),
                    "--threads", *map(str, a.threads)]
                   + (["--measurement-time", str(a.measurement_time)] if a.measurement_time else [])),
               read_bandwidth_gb_s=bandwidth, int8_peak_gops_1thread=peak, gemm=cases)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
