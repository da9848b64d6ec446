#!/usr/bin/env python3
"""synth_llama.py: llama.cpp's logits of a token-id sequence on a GGUF (tests/test_synth.c's reference for the
`tern synth` presets of each family: no tokenizer in those files, ids only).

    python3 tests/synth_llama.py ID,ID,... FILE.gguf OUT.f32 [FILE.gguf OUT.f32 ...]

For each file: evaluates the ids in one batch with llama-cpp-python (0.3.36: CPU, its default f16 KV cache, 2 threads)
and writes every position's logits, float32 little-endian (n_ids, n_vocab) row-major, to its OUT.f32 (one process for
all files: importing llama_cpp takes a second or more on the 2-core box). Exit 0, or non-zero with the reason on stderr
(llama.cpp refusing a file is a failure the caller reports).
"""
import sys

import numpy as np
from llama_cpp import Llama


def main():
    ids = [int(x) for x in sys.argv[1].split(",")]
    for path, out in zip(sys.argv[2::2], sys.argv[3::2]):
        llm = Llama(model_path=path, n_ctx=max(64, len(ids)), n_batch=max(64, len(ids)), logits_all=True, n_threads=2,
                    verbose=False)
        llm.eval(ids)
        lg = np.array(llm.scores[:len(ids)], dtype=np.float32)
        if lg.shape != (len(ids), llm.n_vocab()) or not np.isfinite(lg).all():
            sys.exit(f"synth_llama: {path}: logits of shape {lg.shape}, finite {bool(np.isfinite(lg).all())}")
        lg.astype("<f4").tofile(out)
        llm.close()


if __name__ == "__main__":
    main()
