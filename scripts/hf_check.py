#!/usr/bin/env python3
"""Independent check of tern's GPU logits: HF transformers' LlamaForCausalLM loaded from the same GGUF
(`gguf_file=`, dequantized by the gguf package to float32) on the same token ids.

    python3 scripts/hf_check.py DUMP MODEL.gguf

DUMP comes from `build-cuda/gpu/gpu_model MODEL --dump DUMP`: int32 n, int32 n_vocab, int32 ids[n],
float32 gpu_logits[n][n_vocab], float32 cpu_ref_logits[n][n_vocab]. Prints the relative L2 error per
row of tern-GPU and tern-CPU-reference against transformers, and a line "hf_check: N passed, M failed"
(pass: every row < 1e-2). Runs where torch + transformers + gguf are installed (the GPU box); not in CI.
"""
import os
import sys

import numpy as np


def main():
    dump, gguf_path = sys.argv[1], sys.argv[2]
    raw = open(dump, "rb").read()
    n, V = (int(v) for v in np.frombuffer(raw, np.int32, 2, 0))
    off = 8
    ids = np.frombuffer(raw, np.int32, n, off).astype(np.int64)
    off += 4 * n
    gpu = np.frombuffer(raw, np.float32, n * V, off).reshape(n, V)
    off += 4 * n * V
    ref = np.frombuffer(raw, np.float32, n * V, off).reshape(n, V)

    import torch
    from transformers import AutoModelForCausalLM

    d, f = os.path.split(os.path.abspath(gguf_path))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32)
    model.eval()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(dev)
    with torch.no_grad():
        hf = model(torch.tensor(ids[None], device=dev)).logits[0].double().cpu().numpy()
    passed = failed = 0
    for name, x in (("tern gpu", gpu), ("tern cpu reference", ref)):
        errs = np.sqrt(((x - hf) ** 2).sum(1) / (hf ** 2).sum(1))
        ok = bool(np.all(errs < 1e-2))
        print(f"{name} vs transformers {model.__class__.__name__}: rel L2 per row max {errs.max():.3e} "
              f"mean {errs.mean():.3e} over {n} rows; argmax agree {int((x.argmax(1) == hf.argmax(1)).sum())}/{n}")
        passed += ok
        failed += not ok
    print(f"hf_check: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
