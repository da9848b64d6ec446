#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/: the tensor directory and selected metadata of the default model as the
`gguf` Python package (gguf==0.19.0, the reference reader from the llama.cpp repo) reads them.
Usage: python3 tests/gen_gguf_fixtures.py [MODEL]
Output: smollm2_tensors.tsv (name, ggml type id, ne0..ne3, offset of data from file start, nbytes)
        smollm2_meta.tsv    (key, value) for scalar metadata, and array lengths as key#len."""
import os
import sys

from gguf import GGUFReader
from gguf.constants import GGUFValueType

here = os.path.dirname(os.path.abspath(__file__))
model = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
r = GGUFReader(model)
out = os.path.join(here, "fixtures", "gguf")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "smollm2_tensors.tsv"), "w") as f:
    for t in r.tensors:
        ne = [int(x) for x in t.shape] + [1] * (4 - len(t.shape))
        f.write("%s\t%d\t%s\t%d\t%d\n" % (t.name, int(t.tensor_type), "\t".join(map(str, ne)), t.data_offset, t.n_bytes))
with open(os.path.join(out, "smollm2_meta.tsv"), "w") as f:
    for k, fld in r.fields.items():
        if k.startswith("GGUF."):
            continue
        vt = fld.types[0]
        if vt == GGUFValueType.ARRAY:
            f.write("%s#len\t%d\n" % (k, len(fld.data)))
        elif vt == GGUFValueType.STRING:
            v = fld.contents()
            if "\n" not in v and "\t" not in v:
                f.write("%s\t%s\n" % (k, v))
        elif vt in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
            f.write("%s\t%.9g\n" % (k, fld.contents()))
        elif vt == GGUFValueType.BOOL:
            f.write("%s\t%d\n" % (k, int(fld.contents())))
        else:
            f.write("%s\t%d\n" % (k, int(fld.contents())))
print("wrote", out)
