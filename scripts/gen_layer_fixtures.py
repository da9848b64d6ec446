#!/usr/bin/env python3
"""gen_layer_fixtures.py MODEL FIXDIR: the per-layer reference of a model's golden test (STYLE.md item 7).

For each FIXDIR/logits_ref_NAME.ids (the numpy-reference prompts of scripts/gen_model_fixtures.py), writes
FIXDIR/layers_ref_NAME.bin: scripts/ref_numpy.py's float64 residual stream at the last position after every layer's
attention add and FFN add, little-endian float32 (2 * n_layer, n_embd). tests/test_model.c compares tern's (with the
reference matmul) point by point, so a failing golden says which op of which layer went wrong first.
Run from the repo root, e.g. python3 scripts/gen_layer_fixtures.py models/SmolLM2-135M-Instruct.Q4_1.gguf
tests/fixtures/model (numpy, gguf: scripts/deps.sh test)."""
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_numpy  # noqa: E402


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    model, fix = sys.argv[1], sys.argv[2]
    m = ref_numpy.Model(model)
    for p in sorted(glob.glob(os.path.join(fix, "logits_ref_*.ids"))):
        name = os.path.basename(p)[len("logits_ref_"):-len(".ids")]
        ids = [int(x) for x in open(p).read().strip().split(",")]
        dump = []
        logits = m.forward(ids, last_only=True, dump=dump)
        ref = np.fromfile(os.path.join(fix, f"logits_ref_{name}.bin"), dtype="<f4")
        same = np.allclose(logits[-1].astype(np.float32), ref, rtol=0, atol=1e-5 * float(np.abs(ref).max()))
        out = np.stack([a[-1] for a in dump]).astype("<f4")
        out.tofile(os.path.join(fix, f"layers_ref_{name}.bin"))
        print(f"{name}: {len(ids)} tokens, {out.shape[0]} points x {out.shape[1]} -> layers_ref_{name}.bin "
              f"(the logits file reproduced: {same})")
        if not same:
            raise SystemExit("the reference logits differ from the committed ones: regenerate both")


if __name__ == "__main__":
    main()
