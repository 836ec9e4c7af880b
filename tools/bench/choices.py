#!/usr/bin/env python3
"""What OpenAI's `n` costs on `lacuna serve` (a benchmark, not a CI test): wall time of one
request with n = 1 and with n = N (the N canvases of one request run as one batch), rounds
interleaved so that the machine's drift hits both alike. Writes a raw JSON file to
bench-results/<machine-id>/batch/.

Usage (repository root, release binary built first; run on a quiet machine):
    python3 tools/bench/choices.py -m /tmp/llada8b-4l-q4km.gguf --n 4 --cache dual
Standard library only.
"""
import argparse, datetime, json, os, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "serve-check"))
from forward import ROOT, machine  # noqa: E402
from lacuna_server import LacunaServer  # noqa: E402


def post(base, body):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=3600) as r:
        out = json.loads(r.read())
    return time.monotonic() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/lacuna"))
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--cache", choices=["none", "prefix", "dual"], default="dual")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--machine-id", default="xeon-2c-amx")
    a = ap.parse_args()
    load0 = float(open("/proc/loadavg").read().split()[0])
    args = ["-m", a.model, "--threads", str(a.threads), "--max-concurrent", "2"]
    with LacunaServer(a.binary, args, start_timeout=600) as s:
        model = json.loads(urllib.request.urlopen(s.base_url + "/v1/models").read())["data"][0]["id"]
        body = lambda n: dict(model=model, prompt="In the beginning God created", n=n,
                              max_tokens=a.max_tokens, temperature=0.7, seed=1,
                              diffusion=dict(steps=a.steps, cache=a.cache))
        post(s.base_url, body(1))  # warm-up
        rounds = []
        for _ in range(a.rounds):
            one, _ = post(s.base_url, body(1))
            many, out = post(s.base_url, body(a.n))
            assert len(out["choices"]) == a.n
            rounds.append(dict(n1_s=round(one, 3), n_s=round(many, 3), ratio=round(many / one, 3)))
            print(f"n=1 {one:.2f} s, n={a.n} {many:.2f} s: {many / one:.2f}x", flush=True)
    med = sorted(r["ratio"] for r in rounds)[len(rounds) // 2]
    res = dict(kind="lacuna.choices.raw.v0",
               note="Wall time of one /v1/completions request with n=1 and with n choices "
                    "(batched), interleaved rounds, written by tools/bench/choices.py.",
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               machine=dict(id=a.machine_id, **machine(a.threads)), model=a.model,
               workload=dict(n=a.n, max_tokens=a.max_tokens, steps=a.steps, cache=a.cache),
               rounds=rounds, median_ratio=med, load_average_before=load0)
    out_dir = os.path.join(ROOT, "bench-results", a.machine_id, "batch")
    os.makedirs(out_dir, exist_ok=True)
    name = f"{os.path.splitext(os.path.basename(a.model))[0]}-choices-n{a.n}-{a.cache}-g{a.max_tokens}-t{a.threads}.json"
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    print(f"median n={a.n} / n=1: {med:.2f}x -> {name}")


if __name__ == "__main__":
    main()
