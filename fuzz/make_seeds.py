"""Writes the fuzz seed corpus (fuzz/seeds/): valid GGUF files written by the independent
`gguf` Python package, and broken variants of them (truncated, bytes flipped, counts and
types corrupted). Run: python3 fuzz/make_seeds.py"""

import os
import struct

import gguf
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "seeds")


def write(name, build, alignment=None):
    path = os.path.join(OUT, name)
    w = gguf.GGUFWriter(path, "llada")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path, "rb") as f:
        return f.read()


def small(w):
    w.add_uint32("llada.block_count", 2)
    w.add_float32("llada.rope.freq_base", 500000.0)
    w.add_bool("x.flag", True)
    w.add_string("x.s", "héllo")
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "<|mdm_mask|>"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.0])
    w.add_array("x.nested", [[1, 2], [3]])
    w.add_int8("x.i8", -3)
    w.add_uint64("x.u64", 1 << 40)
    w.add_float64("x.f64", 0.25)
    w.add_tensor("a", np.arange(8, dtype=np.float32).reshape(2, 4))
    w.add_tensor("h", np.ones(16, dtype=np.float16))
    q = np.zeros((2, 34), dtype=np.uint8)
    w.add_tensor("q", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)


def empty(w):
    pass


def main():
    os.makedirs(OUT, exist_ok=True)
    valid = {
        "valid_small.gguf": write("valid_small.gguf", small),
        "valid_empty.gguf": write("valid_empty.gguf", empty),
        "valid_align64.gguf": write("valid_align64.gguf", small, alignment=64),
    }
    base = valid["valid_small.gguf"]
    broken = {
        "bad_magic": b"GGUX" + base[4:],
        "big_endian": base[:4] + struct.pack(">I", 3) + base[8:],
        "version1": base[:4] + struct.pack("<I", 1) + base[8:],
        "truncated_header": base[:20],
        "truncated_kv": base[: len(base) // 3],
        "truncated_data": base[:-40],
        "huge_tensor_count": base[:8] + struct.pack("<Q", 1 << 60) + base[16:],
        "huge_kv_count": base[:16] + struct.pack("<Q", 1 << 60) + base[24:],
    }
    for i in range(0, min(len(base), 400), 37):
        broken[f"flip_{i}"] = base[:i] + bytes([base[i] ^ 0xFF]) + base[i + 1 :]
    for name, data in broken.items():
        with open(os.path.join(OUT, name + ".gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
