#!/usr/bin/env python3
"""The `tern quantize` test input and its llama-quantize reference (tests/fixtures/quantize/).

usage: python3 tests/gen_quantize_fixture.py input OUT.gguf [f32|f16|bf16]   (numpy + gguf: tests run this)
       python3 tests/gen_quantize_fixture.py ref LLAMA_QUANTIZE              (writes tests/fixtures/quantize/ref.tsv)

input: a small llama-architecture GGUF (8 layers, n_embd 256, n_ff 384, 4 heads of 64, 1 KV head: GQA 4, vocab 512,
       an untied output), its matrices from numpy's legacy RandomState(28) (a stream NumPy keeps fixed) as N(0, 0.02)
       with edge cases planted where a quantizer branches: an all-zero block, blocks of 1e-20 (under ggml's
       GROUP_MAX_EPS), a constant block (max == min), a single large outlier, all-negative and all-positive blocks,
       values at the fp16 range. ffn_down's rows (384) are not a multiple of 256: the K-quant fallbacks. The norms
       stay F32 (never quantized). The same values stored as F32, F16 or BF16.
ref:   for every TYPE tern quantize takes, llama-quantize (llama-cpp-python 0.3.36's vendored llama.cpp, no imatrix)
       on the f32 and the f16 input; one line a tensor: input, TYPE, tensor name, the ggml type llama-quantize chose,
       sha256 of its data. tests/t_quantize.sh runs tern quantize on the same inputs and compares."""
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "quantize")
TYPES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
         "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL"]
N_LAYER, N_EMBD, N_FF, N_HEAD, N_HEAD_KV, N_VOCAB = 8, 256, 384, 4, 1, 512


def tensors():
    rs = np.random.RandomState(28)
    hd = N_EMBD // N_HEAD
    out = []

    def mat(name, rows, cols):
        a = (rs.standard_normal((rows, cols)) * 0.02).astype(np.float32)
        out.append((name, a))
        return a

    def vec(name, n):
        out.append((name, (1.0 + 0.1 * rs.standard_normal(n)).astype(np.float32)))

    e = mat("token_embd.weight", N_VOCAB, N_EMBD)
    e[0, :32] = 0.0                      # an all-zero block
    e[1, :256] = 1e-20                   # a K super-block under GROUP_MAX_EPS
    e[2, :32] = 0.5                      # max == min
    e[3, 5] = 3.0                        # one outlier
    e[4, :256] = -np.abs(e[4, :256])     # all negative
    e[5, :256] = np.abs(e[5, :256])      # all positive
    e[6, :32] = 60000.0 * np.sign(e[6, :32] + 1e-9)  # near the fp16 range
    for i in range(N_LAYER):
        vec(f"blk.{i}.attn_norm.weight", N_EMBD)
        mat(f"blk.{i}.attn_q.weight", N_HEAD * hd, N_EMBD)
        mat(f"blk.{i}.attn_k.weight", N_HEAD_KV * hd, N_EMBD)
        v = mat(f"blk.{i}.attn_v.weight", N_HEAD_KV * hd, N_EMBD)
        v[i % 4, :] *= 50.0              # a row of larger scale
        mat(f"blk.{i}.attn_output.weight", N_EMBD, N_HEAD * hd)
        vec(f"blk.{i}.ffn_norm.weight", N_EMBD)
        mat(f"blk.{i}.ffn_gate.weight", N_FF, N_EMBD)
        mat(f"blk.{i}.ffn_up.weight", N_FF, N_EMBD)
        d = mat(f"blk.{i}.ffn_down.weight", N_EMBD, N_FF)
        d[0, :64] = 0.0
    vec("output_norm.weight", N_EMBD)
    mat("output.weight", N_VOCAB, N_EMBD)
    return out


def write_input(path, dtype="f32"):
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tern quantize test")
    w.add_context_length(256)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type({"f32": 0, "f16": 1, "bf16": 32}[dtype])
    w.add_tokenizer_model("no_vocab")
    w.add_vocab_size(N_VOCAB)
    for name, a in tensors():
        if a.ndim == 1 or dtype == "f32":
            w.add_tensor(name, a)
        elif dtype == "f16":
            w.add_tensor(name, a.astype(np.float16))
        else:  # bf16: round to nearest even, stored as raw uint16 with the BF16 type
            u = a.view(np.uint32).astype(np.uint64)
            b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            w.add_tensor(name, b, raw_shape=a.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_hashes(path):
    import gguf
    r = gguf.GGUFReader(path)
    return [(t.name, t.tensor_type.name, hashlib.sha256(bytes(t.data.tobytes())).hexdigest()) for t in r.tensors]


def make_ref(exe):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in ("f32", "f16"):
            inp = os.path.join(tmp, f"in-{src}.gguf")
            write_input(inp, src)
            for t in TYPES:
                outp = os.path.join(tmp, "out.gguf")
                r = subprocess.run([exe, inp, outp, t, "2"], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"llama-quantize {src} {t} failed:\n{(r.stdout + r.stderr)[-3000:]}")
                for name, ty, h in tensor_hashes(outp):
                    rows.append(f"{src}\t{t}\t{name}\t{ty}\t{h}\n")
                print(src, t, "ok")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "ref.tsv"), "w") as f:
        f.write("# input\ttype\ttensor\tggml_type\tsha256(data) -- llama-quantize of llama-cpp-python 0.3.36's llama.cpp\n")
        f.writelines(rows)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "input":
        write_input(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "f32")
    elif len(sys.argv) >= 3 and sys.argv[1] == "ref":
        make_ref(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "hashes":
        for name, ty, h in tensor_hashes(sys.argv[2]):
            print(f"{name}\t{ty}\t{h}")
    else:
        sys.exit(__doc__)
