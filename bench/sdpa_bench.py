#!/usr/bin/env python3
"""Peer ceiling for causal GQA attention: torch scaled_dot_product_attention per backend, on the box.

Shapes as tests/gpu/gpu_attention.c's tern rows: batch 1, 32 query heads, 8 KV heads, S tokens attending
causally to themselves, head dim D, f16 operands (tern's KV cache type), uniform random in [-1, 1).
FLOPs = 4 * S^2 * D * Hq / 2 (the issue's count); time = median of 20 launches after 3 warm-ups, CUDA
events. Prints one line per (S, D, backend): `sdpa S=.. D=.. <backend> <us> <TFLOP/s>`; a backend that
refuses a shape prints `n/a`. torch is a measuring peer here, never a dependency of tern.
Usage: python3 bench/sdpa_bench.py [S ...]
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HQ, HKV = 32, 8


def time_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return 0.5 * (ts[reps // 2 - 1] + ts[reps // 2])


def main():
    sizes = [int(x) for x in sys.argv[1:]] or [2048, 8192, 32768]
    g = torch.Generator(device="cuda").manual_seed(1)
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for d in (64, 128, 256):
        for s in sizes:
            q = torch.rand(1, HQ, s, d, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
            k = torch.rand(1, HKV, s, d, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
            v = torch.rand(1, HKV, s, d, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
            kr, vr = k.repeat_interleave(HQ // HKV, 1), v.repeat_interleave(HQ // HKV, 1)
            flops = 4.0 * s * s * d * HQ / 2
            for name, be in backends:
                try:
                    with sdpa_kernel([be]):
                        try:  # native GQA where the backend takes it, else repeated K/V (not timed as extra)
                            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                        except Exception:
                            fn = lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=True)
                        ms = time_ms(fn)
                    print(f"sdpa S={s} D={d} {name:9s} {ms * 1e3:12.1f} us {flops / ms * 1e-9:10.2f} TFLOP/s")
                except Exception as e:  # backend refuses the shape
                    print(f"sdpa S={s} D={d} {name:9s} n/a ({type(e).__name__})")
            del q, k, v, kr, vr
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
