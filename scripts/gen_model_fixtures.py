#!/usr/bin/env python3
"""gen_model_fixtures.py: regenerate tests/fixtures/model/* (the references tests/test_model.c checks).

Needs numpy, gguf (gguf-py) and llama-cpp-python. Run from the repo root:
    python3 scripts/gen_model_fixtures.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Writes
  greedy.txt           greedy (pure argmax) continuations by llama.cpp, one prompt per line:
                       special \t prompt_hex \t prompt_ids \t gen_ids \t top1 \t top2_ids \t top2
                       (ids comma-separated; top1/top2: llama.cpp's largest and second-largest logit
                       at each generated step, top2_ids the id of the second; gen_ids ends with the
                       end-of-generation token when generation stopped there)
  logits_ref_NAME.ids  token ids of a numpy-reference prompt (one line, comma-separated)
  logits_ref_NAME.bin  scripts/ref_numpy.py's float32 logits of the last position of that prompt
  layers_ref_NAME.bin  its residual stream at the last position after every layer's attention and FFN adds
                       (float32, 2 * n_layer x n_embd): tests/test_model.c's per-layer check
  README               what these are, and the measured numpy-vs-llama.cpp logits difference

Greedy is done by hand (eval + argmax of the raw logits, lowest id on ties), so no sampler, no repeat
penalty, no temperature is involved. Tokenization: llm.tokenize(text, add_bos=True, special=...):
llama.cpp adds BOS only when the GGUF says tokenizer.ggml.add_bos_token is true; this script checks
that the result agrees with the metadata (SmolLM2: false, so no BOS is added).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_numpy  # noqa: E402

MAX_NEW = 64
OUT_DIR = "tests/fixtures/model"

# (special, text): special=1 parses control-token texts such as <|im_start|>.
PROMPTS = [
    (0, "The capital of France is"),
    (0, "Once upon a time, there was a little"),
    (0, "def fibonacci(n):\n"),
    (0, "The quick brown fox"),
    (0, "Water boils at a temperature of"),
    (0, "1, 2, 3, 4, 5,"),
    (0, "Here is a list of fruits:\n1. Apple\n2."),
    (0, "The largest planet in the solar system is"),
    (0, "Translate to French: Hello, how are you?\nFrench:"),
    (0, "Question: What is 12 + 7?\nAnswer:"),
    (0, "Caf\u00e9 au lait est une boisson"),
    (0, "SELECT name, age FROM users WHERE"),
    (0, "import numpy as np\n\n"),
    (0, "My favorite recipe for chocolate chip cookies"),
    (0, "<html>\n<head>\n<title>"),
    (1, "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"),
]
# Prompts of the numpy reference logits. Longer than a handful of tokens on purpose: with 5 tokens
# ("The capital of France is") legitimate rounding differences (llama.cpp's Q8 activations, f16 KV,
# flash attention on/off) already move the last logits by 3e-2..1.2e-1 L2 relative, as much as a wrong
# RoPE base (1e4 instead of 1e5: 4e-2); on these two the legitimate spread is 0.9e-2..2.3e-2 while the
# wrong base gives 4.6e-2 and 9.7e-2, so tests/test_model.c can use 4e-2.
REF_PROMPTS = [
    ("capitals", "The capital of France is Paris. The capital of Germany is Berlin. "
                 "The capital of Italy is Rome. The capital of Spain is"),
    ("code", "def add(a, b):\n    return a + b\n\ndef multiply(a, b):\n    return a * b\n\n"
             "def subtract(a, b):\n"),
]


def top2(logits):
    o = np.argsort(-logits.astype(np.float64), kind="stable")[:2]
    return int(o[0]), float(logits[o[0]]), int(o[1]), float(logits[o[1]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--out-dir", default=OUT_DIR)
    ap.add_argument("--max-new", type=int, default=MAX_NEW,
                    help="new tokens a prompt at most (a larger model's fixture is kept short for CI's time)")
    args = ap.parse_args()
    from llama_cpp import Llama
    import llama_cpp

    llm = Llama(model_path=args.model, n_ctx=512, logits_all=True, n_threads=2, seed=0, verbose=False)
    n_vocab = llm.n_vocab()
    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def is_eog(t):
        return bool(llama_cpp.llama_vocab_is_eog(vocab, t))

    bos = llm.token_bos()
    meta_add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "?")
    probe = llm.tokenize(b"Hello", add_bos=True, special=False)
    bos_added = probe[0] == bos
    print(f"BOS id {bos}, metadata add_bos_token={meta_add_bos}, tokenize(add_bos=True) added BOS: {bos_added}")
    eog_ids = [t for t in range(n_vocab) if is_eog(t)]
    print("EOG ids:", eog_ids)

    def run(ids):
        """Greedy decode after ids. Returns gen ids and per-step (top1, top2_id, top2) lists, and
        the logits of the first generated step."""
        llm.reset()
        llm.eval(ids)
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        first = logits.copy()
        gen, t1, i2, t2 = [], [], [], []
        for _ in range(args.max_new):
            a, la, b, lb = top2(logits)
            gen.append(a); t1.append(la); i2.append(b); t2.append(lb)
            if is_eog(a) or len(gen) == args.max_new:
                break
            llm.eval([a])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        return gen, t1, i2, t2, first

    os.makedirs(args.out_dir, exist_ok=True)
    lines = []
    min_gap = (1e9, None)
    for special, text in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=bool(special))
        if not special and bos_added != (ids[0] == bos):
            raise SystemExit("BOS handling inconsistent")
        gen, t1, i2, t2, _ = run(ids)
        gaps = [a - b for a, b in zip(t1, t2)]
        j = int(np.argmin(gaps))
        small = [i for i, g in enumerate(gaps) if g < 0.1]
        if gaps[j] < min_gap[0]:
            min_gap = (gaps[j], text)
        txt = llm.detokenize(gen).decode("utf-8", "replace")
        print(f"{text!r}: {len(ids)} prompt ids, {len(gen)} new{' (EOG)' if is_eog(gen[-1]) else ''}, "
              f"min gap {gaps[j]:.4f} at step {j}, first gap < 0.1 at step {small[0] if small else '-'} -> {txt!r}")
        lines.append("\t".join([
            str(special), text.encode("utf-8").hex(), ",".join(map(str, ids)), ",".join(map(str, gen)),
            ",".join(f"{v:.6f}" for v in t1), ",".join(map(str, i2)), ",".join(f"{v:.6f}" for v in t2)]))
    with open(os.path.join(args.out_dir, "greedy.txt"), "w") as f:
        f.write("# special\tprompt_hex\tprompt_ids\tgen_ids\ttop1\ttop2_ids\ttop2 "
                "(llama.cpp greedy; see scripts/gen_model_fixtures.py)\n")
        for ln in lines:
            f.write(ln + "\n")
    print(f"smallest top-2 gap over all steps: {min_gap[0]:.4f} ({min_gap[1]!r})")

    # numpy reference logits (last position) for a few prompts, compared with llama.cpp's
    m = ref_numpy.Model(args.model)
    ref_lines = []
    for name, text in REF_PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        _, _, _, _, lc = run(ids)
        dump = []
        ref = m.forward(ids, dump=dump)[-1]
        ref.astype("<f4").tofile(os.path.join(args.out_dir, f"logits_ref_{name}.bin"))
        # the per-layer reference (scripts/gen_layer_fixtures.py makes the same file from existing fixtures)
        np.stack([a[-1] for a in dump]).astype("<f4").tofile(os.path.join(args.out_dir, f"layers_ref_{name}.bin"))
        with open(os.path.join(args.out_dir, f"logits_ref_{name}.ids"), "w") as f:
            f.write(",".join(map(str, ids)) + "\n")
        d = lc.astype(np.float64) - ref
        l2 = float(np.linalg.norm(d) / np.linalg.norm(ref))
        same = int(np.argmax(lc)) == int(np.argmax(ref))
        ln = (f"{name}: {len(ids)} tokens, llama.cpp vs numpy last-position logits: L2 rel {l2:.3e}, "
              f"max abs {float(np.max(np.abs(d))):.4f}, same argmax: {same}")
        print(ln)
        ref_lines.append(ln)
        if not same:
            raise SystemExit("numpy and llama.cpp disagree on the argmax")

    with open(os.path.join(args.out_dir, "README"), "w") as f:
        f.write(f"""Model fixtures for tests/test_model.c, made by scripts/gen_model_fixtures.py
from {os.path.basename(args.model)} (llama-cpp-python {llama_cpp.__version__}, numpy {np.__version__}).

greedy.txt      llama.cpp greedy continuations (pure argmax, <= {args.max_new} new tokens, stop at EOG)
                of {len(PROMPTS)} prompts; columns are in its header line. Prompt ids come from
                llama.cpp's tokenizer with add_bos=True, which adds BOS only if the GGUF's
                tokenizer.ggml.add_bos_token is true: here it is {meta_add_bos}, and BOS added = {bos_added}.
                The last prompt uses the chat markup with special tokens (special=1) so that
                generation ends at an end-of-generation token (EOG ids: {eog_ids}).
                Smallest top-2 logit gap over all steps: {min_gap[0]:.4f}.
logits_ref_NAME.ids  token ids of a prompt (see REF_PROMPTS in the script)
logits_ref_NAME.bin  float32 little-endian logits ({n_vocab}) of the last of those tokens from
                scripts/ref_numpy.py (float64 numpy over gguf-py-dequantized weights, no
                activation quantization). llama.cpp (Q8 activations, f16 KV cache) against them:
""" + "".join(f"                {ln}\n" for ln in ref_lines) + """\
                This model is sensitive to rounding: legitimate implementations differ from the
                float64 reference by 1e-2..2.5e-2 on these prompts, and by up to 1.2e-1 on short
                ones; tests/test_model.c requires < 4e-2.
""")


if __name__ == "__main__":
    main()
