"""Cross-check of lacuna-gguf against llama.cpp's own Python package `gguf`.

    python3 gguf_check.py dump PATH    # read PATH with gguf.GGUFReader, print it as JSON
    python3 gguf_check.py write PATH   # write a fixed file with gguf.GGUFWriter
    python3 gguf_check.py types -      # gguf-py's ggml type table: {id: [block, bytes]}

The JSON has "alignment", "data_offset", "fields" (key, GGUF type ids as the reader lists
them, value via ReaderField.contents(); gguf-py flattens nested arrays) and "tensors"
(name, ggml type id, dims in ggml order, absolute data offset, n_bytes, data as hex).
Used by crates/lacuna-gguf/tests/python_crosscheck.rs.
"""

import json
import sys

import gguf
import numpy as np


def dump(path):
    r = gguf.GGUFReader(path)
    fields = []
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue  # header pseudo-fields (version, counts)
        fields.append({
            "key": key,
            "types": [int(t) for t in field.types],
            "value": field.contents(),
        })
    tensors = []
    for t in r.tensors:
        tensors.append({
            "name": t.name,
            "type": int(t.tensor_type),
            "dims": [int(d) for d in t.shape],
            "offset": int(t.data_offset),
            "n_bytes": int(t.n_bytes),
            "hex": np.asarray(t.data).tobytes().hex(),
        })
    version = int(r.fields["GGUF.version"].parts[-1][0])
    json.dump({
        "version": version,
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "fields": fields,
        "tensors": tensors,
    }, sys.stdout)


def write(path):
    w = gguf.GGUFWriter(path, "llada")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", 1.0 / 3.0)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "Grüße, 世界")
    w.add_array("t.arr_str", ["<|mdm_mask|>", "", "é"])
    w.add_array("t.arr_f32", [0.5, -1.25, 3.0e-8])
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_array("t.arr_bool", [True, False])
    w.add_array("t.arr_nested", [[1, 2], [3, 4, 5]])
    rng = np.random.default_rng(7)
    w.add_tensor("f32", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((7,)).astype(np.float16))
    w.add_tensor("i8", np.arange(-4, 4, dtype=np.int8).reshape(2, 2, 2))
    q = rng.integers(0, 256, size=(2, 3, 210), dtype=np.uint8)
    w.add_tensor("q6k", q, raw_dtype=gguf.GGMLQuantizationType.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def types(_path):
    json.dump({int(t): list(v) for t, v in gguf.GGML_QUANT_SIZES.items()}, sys.stdout)


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    {"dump": dump, "write": write, "types": types}[mode](path)
