#!/usr/bin/env python3
"""Bounded load test of `lacuna serve` (a benchmark, not a CI test): N requests at each
concurrency C against the OpenAI endpoints, with fixed generation settings. Measures
throughput (requests/s, generated tokens/s), latency p50/p99, time to the first content chunk
when streaming, errors (must be 0; 429s counted apart), and the server's peak RSS (VmHWM of
/proc/PID/status, reset before each run where the kernel allows). Writes one raw JSON file per
run (per concurrency) to bench-results/<machine-id>/serve-load/ — raw data, which
`cargo xtask bench-render` reads for the tables (each machine's section of
bench-results/README.md ends with its load tests, and the README's headline compares
concurrency 4 with 1); the lacuna.bench.v1 schema has no place for a load test.

Usage (repository root, release binary built first; run on a quiet machine):
    cargo build --release -p lacuna-cli
    python3 tools/bench/serve_load.py --requests 200 --concurrency 1 4 16        # demo model
    python3 tools/bench/serve_load.py -m /tmp/fixture.gguf --endpoint completion --no-stream
    python3 tools/bench/serve_load.py --url http://127.0.0.1:8080 --pid 1234     # a running server

A self-started server gets a fresh process per concurrency (so each run's peak RSS is its
own), --max-concurrent (default: C) and a queue of N (no 429s by construction). Standard
library only.
"""
import argparse, datetime, json, os, re, subprocess, sys, threading, time, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "serve-check"))
from forward import ROOT, machine  # noqa: E402
from lacuna_server import LacunaServer, ServerError  # noqa: E402

CHAT_PROMPT = "Who made the heaven and the earth?"
COMPLETION_PROMPT = "In the beginning God created"


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(xs, scale=1000.0, digits=2):
    if not xs:
        return None
    return {k: round(v * scale, digits) for k, v in (
        ("p50", percentile(xs, 0.5)), ("p90", percentile(xs, 0.9)), ("p99", percentile(xs, 0.99)),
        ("min", min(xs)), ("max", max(xs)), ("mean", sum(xs) / len(xs)))}


def proc_status(pid):
    out = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def reset_peak(pid):
    """Resets VmHWM to the current RSS (`echo 5 > /proc/PID/clear_refs`, Linux 4.0+)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class RssSampler(threading.Thread):
    """Samples VmRSS every 50 ms: a fallback peak where VmHWM cannot be reset."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, proc_status(self.pid).get("VmRSS", 0))


def body(a, model):
    d = {"steps": a.steps}
    if a.block_length:
        d["block_length"] = a.block_length
    if a.cache:
        d["cache"] = a.cache
    if a.fast:
        d["fast"] = True
    b = {"model": model, "max_tokens": a.max_tokens, "temperature": a.temperature, "seed": a.seed,
         "diffusion": d}
    if a.endpoint == "chat":
        b["messages"] = [{"role": "user", "content": a.prompt or CHAT_PROMPT}]
    else:
        b["prompt"] = a.prompt or COMPLETION_PROMPT
    if a.stream:
        b["stream"] = True
        b["stream_options"] = {"include_usage": True}
    return b


def one_request(url, payload, headers, stream, timeout):
    """Returns dict(status, latency_s, ttfc_s, completion_tokens, error)."""
    data = json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    t0 = time.perf_counter()
    out = dict(status=None, latency_s=None, ttfc_s=None, completion_tokens=0, error=None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            out["status"] = r.status
            if not stream:
                j = json.loads(r.read())
                out["completion_tokens"] = j["usage"]["completion_tokens"]
            else:
                done = False
                for raw in r:
                    line = raw.decode().rstrip("\r\n")
                    if not line.startswith("data: "):
                        continue
                    chunk = line[6:]
                    if chunk == "[DONE]":
                        done = True
                        break
                    j = json.loads(chunk)
                    if "error" in j:
                        out["error"] = f"stream error: {j['error'].get('message')}"
                        break
                    if out["ttfc_s"] is None and any(
                            (c.get("delta") or {}).get("content") for c in j.get("choices", [])):
                        out["ttfc_s"] = time.perf_counter() - t0
                    if j.get("usage"):
                        out["completion_tokens"] = j["usage"]["completion_tokens"]
                if not done and out["error"] is None:
                    out["error"] = "stream ended without [DONE]"
    except urllib.error.HTTPError as e:
        out["status"] = e.code
        try:
            out["error"] = json.loads(e.read())["error"]["message"]
        except Exception:  # noqa: BLE001 - not an OpenAI error body
            out["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - connection errors, timeouts, bad JSON
        out["error"] = f"{type(e).__name__}: {e}"
    out["latency_s"] = time.perf_counter() - t0
    return out


def load_run(a, base, model, c, pid):
    url = base + ("/v1/chat/completions" if a.endpoint == "chat" else "/v1/completions")
    headers = {"Content-Type": "application/json"}
    if a.api_key:
        headers["Authorization"] = "Bearer " + a.api_key
    payload = body(a, model)
    for _ in range(a.warmup):  # not measured
        r = one_request(url, payload, headers, a.stream, a.timeout)
        if r["error"]:
            sys.exit(f"warm-up request failed (HTTP {r['status']}): {r['error']}")
    hwm_reset = reset_peak(pid) if pid else False
    sampler = RssSampler(pid) if pid else None
    if sampler:
        sampler.start()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        results = list(pool.map(lambda _: one_request(url, payload, headers, a.stream, a.timeout),
                                range(a.requests)))
    wall = time.perf_counter() - t0
    if sampler:
        sampler.stop.set()
        sampler.join()
    st = proc_status(pid) if pid else {}
    ok, rejected, errors = [], [], []
    for r in results:
        (ok if r["error"] is None and r["status"] == 200 else
         rejected if r["status"] == 429 else errors).append(r)
    tokens = sum(r["completion_tokens"] for r in ok)
    fig = dict(
        requests=a.requests, ok=len(ok), errors=len(errors), rejected_429=len(rejected),
        wall_s=round(wall, 3),
        requests_per_s=round(len(ok) / wall, 3),
        generated_tokens=tokens,
        generated_tokens_per_s=round(tokens / wall, 2),
        latency_ms=summary([r["latency_s"] for r in ok]),
        time_to_first_content_ms=summary([r["ttfc_s"] for r in ok if r["ttfc_s"] is not None]) if a.stream else None,
        peak_rss_bytes=st.get("VmHWM"),
        peak_rss_source=("VmHWM, reset before the measured requests" if hwm_reset
                         else "VmHWM since the server started (could not reset)") if st else None,
        sampled_peak_rss_bytes=sampler.peak if sampler else None,
        rss_after_bytes=st.get("VmRSS"),
    )
    first_errors = sorted({f"HTTP {r['status']}: {r['error']}" for r in errors})[:5]
    return fig, first_errors


def server_info(base, api_key):
    req = urllib.request.Request(base + "/v1/models",
                                 headers={"Authorization": "Bearer " + api_key} if api_key else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["data"][0]


def git(*args):
    try:
        return subprocess.check_output(["git", "-C", ROOT, *args], text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def shown_path(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p


def version(binary):
    try:
        return subprocess.check_output([binary, "--version"], text=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/lacuna"))
    ap.add_argument("-m", "--model", help="a GGUF file to serve (default: the demo model)")
    ap.add_argument("--url", help="use this running server instead of starting one")
    ap.add_argument("--pid", type=int, help="with --url: the server's pid, for peak RSS")
    ap.add_argument("--api-key", default=os.environ.get("LACUNA_API_KEY"))
    ap.add_argument("--requests", "-n", type=int, default=200)
    ap.add_argument("--concurrency", "-c", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--endpoint", choices=["chat", "completion"], default="chat")
    ap.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--prompt")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--block-length", type=int)
    ap.add_argument("--cache", choices=["none", "prefix", "dual"])
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, help="server --threads (default: the server's)")
    ap.add_argument("--max-concurrent", type=int,
                    help="server --max-concurrent (default: the run's concurrency)")
    ap.add_argument("--max-batch", type=int,
                    help="server --max-batch (1: one pass at a time, the pre-batching build's "
                         "behaviour; default: the server's)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured requests before each run")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per request")
    ap.add_argument("--machine-id", default="xeon-2c-amx")
    ap.add_argument("--tag", default="", help="appended to the file names")
    ap.add_argument("--out-dir", help="default: bench-results/<machine-id>/serve-load")
    a = ap.parse_args()
    out_dir = a.out_dir or os.path.join(ROOT, "bench-results", a.machine_id, "serve-load")
    os.makedirs(out_dir, exist_ok=True)
    commit, dirty = git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    model_name = "demo" if not a.model else os.path.splitext(os.path.basename(a.model))[0]
    failed = False
    for c in a.concurrency:
        server, threads, server_args = None, None, None
        load0 = open("/proc/loadavg").read().split()[0]
        try:
            if a.url:
                base, pid = a.url.rstrip("/"), a.pid
            else:
                server_args = (["-m", a.model] if a.model else ["--demo"]) + [
                    "--max-concurrent", str(a.max_concurrent or c),
                    "--queue", str(a.requests + c)]
                if a.threads:
                    server_args += ["--threads", str(a.threads)]
                if a.max_batch:
                    server_args += ["--max-batch", str(a.max_batch)]
                if a.api_key:
                    server_args += ["--api-key", a.api_key]
                server = LacunaServer(a.binary, server_args, start_timeout=600).start()
                base, pid = server.base_url, server.pid
                m = re.search(r"\((\w+), (\d+) threads", next(
                    (l for l in server.lines if l.startswith("lacuna serve:")), ""))
                threads = int(m.group(2)) if m else None
            try:
                info = server_info(base, a.api_key)
            except (OSError, ValueError, KeyError) as e:
                sys.exit(f"GET {base}/v1/models failed: {e}")
            started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            fig, first_errors = load_run(a, base, info["id"], c, pid)
        except ServerError as e:
            sys.exit(str(e))
        finally:
            if server:
                rc, _ = server.stop(timeout=60)
                server.kill()
                if rc not in (0, None):
                    print(f"warning: the server exited with {rc}", file=sys.stderr)
        res = dict(
            kind="lacuna.serve-load.raw.v0",
            note="Raw load-test figures of `lacuna serve`, written by tools/bench/serve_load.py. "
                 "Latencies are wall-clock per request at the client (urllib, one thread per "
                 "concurrent request); time_to_first_content is to the first SSE chunk with "
                 "non-empty delta.content; throughput counts only successful requests over the "
                 "wall time of the measured batch (warm-up excluded).",
            repo_commit=commit, repo_dirty=dirty, date=started,
            machine=dict(id=a.machine_id, **machine(threads)),
            server=dict(url=a.url, binary=None if a.url else shown_path(a.binary),
                        version=None if a.url else version(a.binary),
                        args=server_args, threads=threads,
                        max_concurrent=None if a.url else (a.max_concurrent or c),
                        queue=None if a.url else a.requests + c),
            model=dict(id=info["id"], file=a.model, architecture=info.get("architecture"),
                       name=info.get("name"), context_length=info.get("context_length"),
                       file_bytes=os.path.getsize(a.model) if a.model else None),
            workload=dict(endpoint=a.endpoint, stream=a.stream, concurrency=c, requests=a.requests,
                          warmup=a.warmup, prompt=a.prompt or (CHAT_PROMPT if a.endpoint == "chat" else COMPLETION_PROMPT),
                          request=body(a, info["id"])),
            figures=fig, first_errors=first_errors,
            load_average_before=float(load0),
        )
        name = f"{model_name}-{a.endpoint}{'-stream' if a.stream else ''}-g{a.max_tokens}-s{a.steps}-c{c}-n{a.requests}"
        name += (f"-t{threads}" if threads else "") + (f"-{a.tag}" if a.tag else "") + ".json"
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
        lat = fig["latency_ms"] or {}
        ttfc = fig["time_to_first_content_ms"] or {}
        print(f"c={c:<3} {fig['ok']}/{a.requests} ok, {fig['errors']} errors, {fig['rejected_429']} 429s: "
              f"{fig['requests_per_s']:.2f} req/s, {fig['generated_tokens_per_s']:.1f} tok/s, "
              f"latency p50 {lat.get('p50')} ms p99 {lat.get('p99')} ms, "
              f"first content p50 {ttfc.get('p50')} ms, peak RSS "
              f"{(fig['peak_rss_bytes'] or 0) / 2**20:.1f} MiB -> {shown_path(path)}", flush=True)
        for e in first_errors:
            print(f"    error: {e}", file=sys.stderr)
        if fig["rejected_429"]:
            print(f"    warning: {fig['rejected_429']} requests were refused with 429 (queue full): "
                  f"start the server with a larger --queue", file=sys.stderr)
        if fig["errors"]:
            failed = True
    if failed:
        sys.exit("some requests failed (see the errors above, and first_errors in the result files)")


if __name__ == "__main__":
    main()
