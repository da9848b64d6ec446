#!/usr/bin/env python3
"""Regenerate tests/fixtures/quant/*.bin: random blocks of every weight type tern reads, and what
gguf-py's numpy dequantizers (the reference for tern_dequantize_row) make of them.

Usage: python3 tests/gen_quant_fixtures.py   (from anywhere; needs gguf==0.19.0 and numpy)

File format (little-endian):
    char[4] "TQF1"; u32 ggml type id; u32 n (elements); u32 nbytes (raw block bytes);
    u8[nbytes] raw blocks; f32[n] gguf.quants.dequantize(raw, type)
act_q8_0.bin holds an activation vector and gguf-py's Q8_0 quantization of it instead:
    "TQA1"; u32 n; f32[n] x; u8[n/32*34] Q8_0 blocks.
Quant blocks are random bytes, except the fp16 scale fields, which are set to finite values in
[-0.05, 0.05] (block 0 gets a subnormal fp16 scale, block 1 a zero scale), so no NaN/Inf appears.
"""
import os
import struct

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf import quants

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "quant")

# byte offsets of the fp16 scale fields inside one block (ggml-common.h layouts)
SCALE_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.IQ4_NL: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
NAMES = {
    T.F32: "f32", T.F16: "f16", T.BF16: "bf16", T.Q4_0: "q4_0", T.Q4_1: "q4_1", T.Q5_0: "q5_0",
    T.Q5_1: "q5_1", T.Q8_0: "q8_0", T.Q2_K: "q2_K", T.Q3_K: "q3_K", T.Q4_K: "q4_K", T.Q5_K: "q5_K",
    T.Q6_K: "q6_K", T.IQ4_NL: "iq4_nl",
}


def write(path, qtype, raw, deq):
    raw = np.ascontiguousarray(raw, dtype=np.uint8).ravel()
    deq = np.ascontiguousarray(deq, dtype="<f4").ravel()
    with open(path, "wb") as f:
        f.write(b"TQF1" + struct.pack("<III", int(qtype), deq.size, raw.size))
        f.write(raw.tobytes())
        f.write(deq.tobytes())


def main():
    rng = np.random.default_rng(20240611)
    os.makedirs(OUT, exist_ok=True)
    for qtype, name in NAMES.items():
        block, tsize = GGML_QUANT_SIZES[qtype]
        if qtype in (T.F32, T.F16, T.BF16):
            n = 520  # not a multiple of 32: exercises the dot tail
            x = (rng.standard_normal(n) * 2.0).astype(np.float32)
            x[0], x[1] = 0.0, -0.0
            if qtype == T.F32:
                raw = x.view(np.uint8)
            elif qtype == T.F16:
                x[2] = 3.0e-6  # fp16 subnormal
                raw = x.astype(np.float16).view(np.uint8)
            else:
                raw = quants.quantize(x, T.BF16).view(np.uint8)
        else:
            nb = 16 if block == 32 else 4
            n = nb * block
            raw = rng.integers(0, 256, size=(nb, tsize), dtype=np.uint8)
            for off in SCALE_FIELDS[qtype]:
                d = rng.uniform(-0.05, 0.05, size=nb).astype(np.float16)
                d[0] = np.float16(3.0e-6)  # subnormal fp16
                d[1] = np.float16(0.0)
                raw[:, off:off + 2] = d.view(np.uint8).reshape(nb, 2)
        deq = quants.dequantize(np.asarray(raw).reshape(-1), qtype)
        assert deq.size == n and np.all(np.isfinite(deq)), name
        write(os.path.join(OUT, f"{name}.bin"), qtype, raw, deq)

    # activation: gguf-py's Q8_0 quantizer (ggml's reference rule) on a vector with a wide range
    n = 512
    x = (rng.standard_normal(n) * np.repeat(rng.uniform(0.01, 10.0, n // 32), 32)).astype(np.float32)
    x[32:64] = 0.0  # an all-zero block
    q = quants.quantize(x, T.Q8_0).view(np.uint8).ravel()
    with open(os.path.join(OUT, "act_q8_0.bin"), "wb") as f:
        f.write(b"TQA1" + struct.pack("<I", n))
        f.write(x.astype("<f4").tobytes())
        f.write(q.tobytes())


if __name__ == "__main__":
    main()
