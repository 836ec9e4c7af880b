#!/usr/bin/env python3
"""Is every constrained answer valid? 50 JSON Schemas of growing depth (drawn from a fixed
seed: objects, arrays, enums, anyOf, bounded integers and numbers, formats, patterns,
$refs) sent to `lacuna serve --demo` (the KJV model, which knows no JSON, so validity is
the constraint's doing) in three modes: exact (the default schedule), `--fast` (dual cache
and parallel decoding) and n = 4 at temperature 1. Every answer is validated with
`jsonschema`. Writes bench-results/<machine-id>/structured/schemas.json
(`"kind": "lacuna.structured-schemas.v0"`, every schema and answer) and prints a summary.

Usage (from the repository root):
    cargo build --release -p lacuna-cli
    python3 -m pip install jsonschema
    python3 tools/bench/structured_schemas.py --machine-id epyc-2c-avx512
"""
import argparse
import datetime
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serve-check"))
from forward import LACUNA, ROOT, machine  # noqa: E402
from lacuna_server import LacunaServer  # noqa: E402

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]


def leaf(rng):
    kind = rng.randrange(9)
    if kind == 0:
        return {"type": "string", "maxLength": rng.choice([4, 8, 12])}
    if kind == 1:
        lo = rng.randrange(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.choice([9, 99, 999])}
    if kind == 2:
        return {"enum": rng.sample(WORDS, rng.randrange(2, 5))}
    if kind == 3:
        return {"type": "boolean"}
    if kind == 4:
        return {"type": "number", "minimum": 0, "maximum": 100}
    if kind == 5:
        return {"type": "string", "format": rng.choice(["date", "uuid", "ipv4", "time"])}
    if kind == 6:
        return {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,4}$"}
    if kind == 7:
        return {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"type": "null"}]}
    return {"const": rng.choice(WORDS)}


def node(rng, depth):
    if depth == 0:
        return leaf(rng)
    if rng.random() < 0.3:
        return {"type": "array", "items": node(rng, depth - 1), "minItems": rng.randrange(0, 2),
                "maxItems": rng.randrange(1, 3)}
    n = rng.randrange(1, 4)
    names = rng.sample(["a", "b", "c", "d", "e", "f"], n)
    props = {k: node(rng, depth - 1 if rng.random() < 0.6 else 0) for k in names}
    required = [k for k in names if rng.random() < 0.7]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def schemas(count, seed):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        depth = 1 + i * 4 // count  # 1 to 4, growing
        s = node(rng, depth)
        if s.get("type") != "object":
            s = {"type": "object", "properties": {"x": s}, "required": ["x"], "additionalProperties": False}
        if i % 10 == 9:  # a $ref to a definition
            s = {"$defs": {"inner": s}, "type": "object", "properties": {"r": {"$ref": "#/$defs/inner"}},
                 "required": ["r"], "additionalProperties": False}
        out.append((depth, s))
    return out


def post(url, body, timeout=300):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


MODES = [
    ("exact", {}),
    ("fast", {"diffusion": {"fast": True}}),
    ("n=4, temperature 1", {"n": 4, "temperature": 1.0}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine-id", required=True)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--binary", default=LACUNA)
    a = ap.parse_args()
    results = []
    summary = {m: {"answers": 0, "valid": 0, "refused": 0} for m, _ in MODES}
    t0 = time.monotonic()
    with LacunaServer(a.binary, ["--demo", "--threads", str(a.threads)]) as server:
        url = server.base_url + "/v1/chat/completions"
        for i, (depth, schema) in enumerate(schemas(a.count, a.seed)):
            for mode, extra in MODES:
                body = {"model": "lacuna-demo", "max_tokens": a.max_tokens, "seed": i,
                        "messages": [{"role": "user", "content": "And God said,"}],
                        "response_format": {"type": "json_schema",
                                            "json_schema": {"name": f"s{i}", "schema": schema}},
                        **extra}
                status, r = post(url, body)
                s = summary[mode]
                if status != 200:
                    s["refused"] += 1
                    results.append({"schema": i, "depth": depth, "mode": mode, "status": status,
                                    "error": r.get("error")})
                    continue
                for c in r["choices"]:
                    text = c["message"]["content"]
                    try:
                        jsonschema.validate(json.loads(text), schema)
                        ok, why = True, None
                    except (ValueError, jsonschema.ValidationError) as e:
                        ok, why = False, str(e).split("\n")[0]
                    s["answers"] += 1
                    s["valid"] += ok
                    results.append({"schema": i, "depth": depth, "mode": mode, "status": 200,
                                    "text": text, "valid": ok, "why": why,
                                    "forwards": r["diffusion"]["forwards"]})
                    if not ok:
                        print(f"INVALID schema {i} ({mode}): {why}\n  {text}", file=sys.stderr)
    out = {
        "kind": "lacuna.structured-schemas.v0",
        "machine": {"id": a.machine_id, **machine(a.threads)},
        "date": datetime.date.today().isoformat(),
        "model": "lacuna-tiny-kjv (demo, trained here; knows no JSON)",
        "max_tokens": a.max_tokens,
        "seconds": round(time.monotonic() - t0, 1),
        "summary": summary,
        "schemas": [s for _, s in schemas(a.count, a.seed)],
        "results": results,
    }
    d = os.path.join(ROOT, "bench-results", a.machine_id, "structured")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "schemas.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("| mode | answers | valid | refused (400) |")
    print("|---|---|---|---|")
    for m, s in summary.items():
        print(f"| {m} | {s['answers']} | {s['valid']} | {s['refused']} |")
    if any(s["valid"] != s["answers"] for s in summary.values()):
        sys.exit("some answers are not valid")


if __name__ == "__main__":
    main()
