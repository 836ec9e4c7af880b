#!/usr/bin/env python3
"""Generates the reference vectors of crates/lacuna-quant/tests/data.

Two independent references:
  * gguf-py's numpy implementation (PyPI `gguf`, module gguf.quants): dequantization of every
    type it has, quantization where it has a quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16).
  * ggml's own C reference code (ggml-quants.c, built by build_ggml_ref.sh): quantize_row_*_ref
    for every type with one, dequantize_row_* for every type.
Where both exist the script asserts that they agree on every finite test input, then writes
one set of expected outputs. Files (little-endian):
  deq_<type>.blocks  random blocks        deq_<type>.f32     their dequantization
  q_<type>.in.f32    inputs (many kinds)  q_<type>.out       ggml's quantization of them
(For an IQ4_NL block below GROUP_MAX_EPS ggml packs stale/uninitialized indices with d = 0:
those bytes are not reproducible and the Rust test compares only their d.)
Usage: pip install numpy gguf; tools/quant-vectors/build_ggml_ref.sh;
       python3 tools/quant-vectors/gen_vectors.py
"""
import ctypes
import importlib.metadata
import os
import sys
import zlib

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
import gguf.quants as gq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "crates", "lacuna-quant", "tests", "data")
LIB = os.path.join(ROOT, "target", "ggml-quants-ref", "libggml_quants_ref.so")
SEED = 20260530

QK_K = 256
# type -> (block elements, block bytes, [(offset, 'f16'|'f32')] scale fields)
TYPES = {
    "f16": (1, 2, []),
    "bf16": (1, 2, []),
    "q4_0": (32, 18, [(0, "f16")]),
    "q4_1": (32, 20, [(0, "f16"), (2, "f16")]),
    "q5_0": (32, 22, [(0, "f16")]),
    "q5_1": (32, 24, [(0, "f16"), (2, "f16")]),
    "q8_0": (32, 34, [(0, "f16")]),
    "q8_1": (32, 36, [(0, "f16"), (2, "f16")]),
    "q2_K": (QK_K, 84, [(80, "f16"), (82, "f16")]),
    "q3_K": (QK_K, 110, [(108, "f16")]),
    "q4_K": (QK_K, 144, [(0, "f16"), (2, "f16")]),
    "q5_K": (QK_K, 176, [(0, "f16"), (2, "f16")]),
    "q6_K": (QK_K, 210, [(208, "f16")]),
    "q8_K": (QK_K, 292, [(0, "f32")]),
    "iq4_nl": (32, 18, [(0, "f16")]),
    "iq4_xs": (QK_K, 136, [(0, "f16")]),
    "tq1_0": (QK_K, 54, [(52, "f16")]),
    "tq2_0": (QK_K, 66, [(64, "f16")]),
    "mxfp4": (32, 17, []),  # the E8M0 byte is valid for every value
    "nvfp4": (64, 36, []),  # so are the UE4M3 bytes
    "q1_0": (128, 18, [(0, "f16")]),
    "q2_0": (64, 18, [(0, "f16")]),
}
GGUF_TYPE = {"f16": T.F16, "bf16": T.BF16, "q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0,
             "q5_1": T.Q5_1, "q8_0": T.Q8_0, "q2_K": T.Q2_K, "q3_K": T.Q3_K, "q4_K": T.Q4_K,
             "q5_K": T.Q5_K, "q6_K": T.Q6_K, "iq4_nl": T.IQ4_NL, "iq4_xs": T.IQ4_XS,
             "tq1_0": T.TQ1_0, "tq2_0": T.TQ2_0, "mxfp4": T.MXFP4, "nvfp4": T.NVFP4,
             "q1_0": T.Q1_0}
# only the types this gguf-py version implements (it names Q1_0 but has no code for it)
GGUF_TYPE = {k: v for k, v in GGUF_TYPE.items() if v in (T.F16,) or v in gq._type_traits}
GGUF_QUANTIZERS = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "bf16", "tq1_0", "tq2_0"}
C_QUANTIZERS = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K", "q4_K",
                "q5_K", "q6_K", "q8_K", "f16", "bf16", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0",
                "mxfp4"]

lib = ctypes.CDLL(LIB)
P = ctypes.c_void_p


def ptr(a):
    return P(a.ctypes.data)


def c_dequant(name, blocks, n):
    out = np.zeros(n, np.float32)
    if name == "f16":
        lib.shim_fp16_to_fp32(ptr(blocks), ptr(out), ctypes.c_int64(n))
    elif name == "bf16":
        lib.shim_bf16_to_fp32(ptr(blocks), ptr(out), ctypes.c_int64(n))
    elif name == "q8_1":
        return None  # ggml has no dequantize_row_q8_1
    else:
        getattr(lib, f"dequantize_row_{name}")(ptr(blocks), ptr(out), ctypes.c_int64(n))
    return out


def c_quant(name, x):
    qk, size, _ = TYPES[name]
    out = np.zeros(x.size // qk * size, np.uint8)
    x = np.ascontiguousarray(x, np.float32)
    if name == "f16":
        lib.shim_fp32_to_fp16(ptr(x), ptr(out), ctypes.c_int64(x.size))
    elif name == "bf16":
        lib.shim_fp32_to_bf16(ptr(x), ptr(out), ctypes.c_int64(x.size))
    else:
        getattr(lib, f"quantize_row_{name}_ref")(ptr(x), ptr(out), ctypes.c_int64(x.size))
    return out


def random_f16_scale(rng):
    """Any finite f16: random sign, exponent 0..30 (subnormals to 65504), mantissa."""
    return np.uint16((rng.integers(0, 2) << 15) | (rng.integers(0, 31) << 10) | rng.integers(0, 1024))


def random_blocks(name, rng):
    qk, size, fields = TYPES[name]
    nb = 64 if qk <= 32 else 24
    if qk == 1:
        nb = 4096  # every kind of bit pattern, NaN and Inf included
    raw = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    specials_f16 = [0x0000, 0x7BFF, 0x0001, 0x8400, 0x3C00, 0x7C00]  # 0, max, min subnormal, -2^-14, 1, +inf
    for b in range(nb if qk > 1 else 0):
        for (off, kind) in fields:
            if kind == "f16":
                v = specials_f16[b] if b < len(specials_f16) else random_f16_scale(rng)
                raw[b, off:off + 2] = np.array([v], np.uint16).view(np.uint8)
            else:
                v = np.float32(rng.standard_normal() * 10.0 ** rng.integers(-6, 3))
                if b == 0:
                    v = np.float32(0)
                raw[b, off:off + 4] = np.array([v], np.float32).view(np.uint8)
    return raw.reshape(-1)


def quant_inputs(qk, rng):
    """Blocks of many kinds; kinds 8.. are edge cases (zero, constant, tiny, huge, NaN, Inf)."""
    bs = max(qk, 32)
    nb = 64 if bs == 32 else 24
    kinds = 13
    xs = []
    for b in range(nb):
        k = b % kinds
        n = rng.standard_normal(bs).astype(np.float32)
        if k == 0: x = n
        elif k == 1: x = n * 1e-3
        elif k == 2: x = n * 1e3
        elif k == 3: x = rng.uniform(-1, 1, bs)
        elif k == 4: x = rng.standard_t(3, bs)
        elif k == 5: x = n + 1.5
        elif k == 6: x = np.abs(n) * 0.02  # all positive (min > 0 paths)
        elif k == 7: x = -np.abs(n)        # all negative
        elif k == 8: x = np.zeros(bs)
        elif k == 9: x = np.full(bs, 0.37)
        elif k == 10: x = n * 1e-30        # below GROUP_MAX_EPS-ish magnitudes
        elif k == 11: x = n * 1e30         # f16 scale overflow
        else:
            x = n.copy()
            x[rng.integers(0, bs)] = np.nan if b % 2 else np.inf
        xs.append(np.asarray(x, np.float32))
    return np.concatenate(xs), bs, kinds


def finite_blocks(x, bs, kinds):
    """Indices of input blocks that are finite and in f16 range (for the gguf-py cross-check)."""
    nb = x.size // bs
    return [b for b in range(nb) if b % kinds not in (11, 12)]


def main():
    os.makedirs(OUT, exist_ok=True)
    report = []
    for name, (qk, size, _) in TYPES.items():
        rng = np.random.default_rng([SEED, zlib.crc32(b"deq_" + name.encode())])
        blocks = random_blocks(name, rng)
        n = blocks.size // size * qk
        c = c_dequant(name, blocks, n)
        if name in GGUF_TYPE:
            g = gq.dequantize(blocks, GGUF_TYPE[name]).reshape(-1).astype(np.float32)
            if c is not None:
                same = (g.view(np.uint32) == c.view(np.uint32)) | (np.isnan(g) & np.isnan(c))
                assert same.all(), f"{name}: gguf-py and ggml disagree at {np.flatnonzero(~same)[:5]}"
            expected = g
            src = "gguf-py = ggml C" if c is not None else "gguf-py"
        elif name == "q8_1":
            d = blocks.reshape(-1, size)[:, 0:2].copy().view(np.float16).astype(np.float32)
            q = blocks.reshape(-1, size)[:, 4:].view(np.int8).astype(np.float32)
            expected = (q * d).reshape(-1)
            src = "numpy q*d (ggml has no dequantize_row_q8_1)"
        else:
            expected = c
            src = "ggml C"
        blocks.tofile(os.path.join(OUT, f"deq_{name}.blocks"))
        expected.astype("<f4").tofile(os.path.join(OUT, f"deq_{name}.f32"))
        report.append(f"deq {name:7} {n:6} values  reference: {src}")

    for name in C_QUANTIZERS:
        rng = np.random.default_rng([SEED, zlib.crc32(b"q_" + name.encode())])
        qk = TYPES[name][0]
        x, bs, kinds = quant_inputs(qk, rng)
        c = c_quant(name, x)
        src = "ggml C quantize_row_ref"
        if name in GGUF_QUANTIZERS:
            size = TYPES[name][1]
            per = bs // qk
            ok = finite_blocks(x, bs, kinds)
            idx = np.concatenate([np.arange(b * per, (b + 1) * per) for b in ok])
            xb = x.reshape(-1, qk)[idx].reshape(-1)
            g = gq.quantize(xb, GGUF_TYPE[name]).reshape(-1, size)
            cb = c.reshape(-1, size)[idx]
            bad = np.flatnonzero((g != cb).any(axis=1))
            assert bad.size == 0, f"{name}: gguf-py and ggml quantizers disagree on blocks {bad[:5]}"
            src += " = gguf-py (finite blocks)"
        x.astype("<f4").tofile(os.path.join(OUT, f"q_{name}.in.f32"))
        c.tofile(os.path.join(OUT, f"q_{name}.out"))
        report.append(f"q   {name:7} {x.size:6} inputs  reference: {src}")

    # IQ4_NL as llama-quantize writes it: the chunk quantizer quantize_iq4_nl (no imatrix),
    # whose search differs from quantize_row_iq4_nl_ref.
    rng = np.random.default_rng([SEED, zlib.crc32(b"chunk_iq4_nl")])
    x, _, _ = quant_inputs(32, rng)
    out = np.zeros(x.size // 32 * 18, dtype=np.uint8)
    lib.quantize_iq4_nl(ptr(x), ptr(out), ctypes.c_int64(1), ctypes.c_int64(x.size), P(0))
    x.astype("<f4").tofile(os.path.join(OUT, "chunk_iq4_nl.in.f32"))
    out.tofile(os.path.join(OUT, "chunk_iq4_nl.out"))
    report.append(f"chunk iq4_nl {x.size:6} inputs  reference: ggml C quantize_iq4_nl (no imatrix)")

    ggml_src = open(os.path.join(os.path.dirname(LIB), "SOURCE")).read().strip()
    with open(os.path.join(OUT, "MANIFEST.txt"), "w") as f:
        f.write("Generated by tools/quant-vectors/gen_vectors.py; do not edit.\n")
        f.write(f"seed {SEED}; gguf {importlib.metadata.version('gguf')}; numpy {np.__version__}\n")
        f.write(f"ggml C: {os.path.basename(os.path.dirname(ggml_src))}/llama.cpp/ggml/src/ggml-quants.c\n")
        f.write("\n".join(report) + "\n")
    print("\n".join(report))


if __name__ == "__main__":
    sys.exit(main())
