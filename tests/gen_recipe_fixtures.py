#!/usr/bin/env python3
"""gen_recipe_fixtures.py: tiny random GGUFs of the qwen2, qwen3 and phi3 recipe rows and llama.cpp's logits on them
(tests/fixtures/recipes/; checked by tests/test_recipes.c).

Why: a recipe row is a handful of graph differences (biases, NEOX RoPE, per-head q/k RMSNorm); a model of real size is
not needed to pin them, and no real qwen3 GGUF small enough ships on PyPI. Each file: 2 layers, n_embd 128, 4 query
heads and 2 KV heads of 32, n_ff 256, a byte-level BPE vocabulary of 320 tokens (the 256 GPT-2 byte symbols, 2-symbol merges,
<unk> <s> </s>, reserved fillers, <|endoftext|>), F32 weights drawn from a seeded generator (qwen2 with q/k/v biases; qwen3 with attn_q_norm and
attn_k_norm, no biases; phi3 with q|k|v fused into attn_qkv and gate|up into ffn_up, as Phi-3 GGUFs hold them), untied
output. llama.cpp (llama-cpp-python 0.3.36, CPU, f16 KV) evaluates 40 fixed token ids
in one batch and writes every position's logits.

qwen2-yarn: the qwen2 row with rope.scaling.type yarn, factor 4 and an original context of 16, so the 40 positions run
past it (YaRN's interpolated and mixed pairs both matter).

phi3-longrope: the phi3 row with Phi-3 128k's LongRoPE (rope_factors_long/short, rope.scaling.attn_factor 1.2, an
original context of 16: llama.cpp's context of 64 takes the long factors, and so does tern's).

gemma3: the gemma3 row at 6 layers (llama.cpp's pattern: layers 0-4 slide, 5 is global) with a sliding window of 8, so
most of the 40 positions see a cut window; head_dim 64 (the CUDA kernels' Q8_0 cache and flash shapes), per-head q/k
norms, post-attention and post-FFN norms, GeGLU, the embedding scaled by sqrt(n_embd), tied output.

mistral3: the mistral3 row (the llama block, NORM RoPE) with YaRN (factor 4 over an original context of 16, beta_fast 8
and beta_slow 2 where llama.cpp's defaults are 32 and 1, yarn_log_multiplier 1: the cos/sin factor cancels to 1, as in
Ministral 3 files) and the attention temperature 0.1 (q times 1 + 0.1 ln(floor(pos / 16) + 1): positions 16-39 scaled).

Writes, for ARCH in qwen2, qwen3, phi3, qwen2-yarn, phi3-longrope, gemma3, mistral3: ARCH.gguf, ARCH.ids (comma-separated),
ARCH.logits (float32 little-endian, (40, 320) row-major). Run from the repo root: python3 tests/gen_recipe_fixtures.py
[NAME...] (default: all).
"""
import os

import numpy as np
import gguf

OUT = "tests/fixtures/recipes"
E, L, NH, NKV, HD, FF = 128, 2, 4, 2, 32, 256


def byte_symbols():
    """GPT-2's bytes_to_unicode: the printable symbol of each byte, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def vocab():
    sym = byte_symbols()
    toks = list(sym)
    merges = []
    words = ["the", "and", "ing", "ion", "er", "re", "on", "at", "en", "es", "or", "te", "of", "ed", "is", "it", "al",
             "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io", "le", "ve", "co", "me", "de", "hi", "ri",
             "ro", "ic", "ne", "ea", "ra", "ce", "li", "ch", "ll", "be", "ma", "si", "om", "ur", "ca", "el", "ta",
             "la", "ns", "di", "fo", "ho", "pe", "ec", "pr", "no", "ct", "us", "ac"]
    for w in words:
        if len(toks) >= 319:
            break
        a, b = w[0], w[1:]
        if len(w) == 3:  # "the" = "th" + "e" needs "th" first: keep to 2-symbol merges of existing tokens
            continue
        merges.append(f"{a} {b}")
        toks.append(w)
    toks += ["<unk>", "<s>", "</s>"]  # llama.cpp looks these up by text for a model named *phi3*
    while len(toks) < 319:
        toks.append(f"<|reserved_{len(toks)}|>")
    toks.append("<|endoftext|>")
    return toks, merges


def write(arch, path, seed, yarn=None, longrope=None):
    """yarn: (factor, original context) writes rope.scaling.type yarn with them (a qwen2 file); longrope: (attention
    factor, original context) writes Phi-3 128k's rope_factors_long/short and those keys."""
    rng = np.random.default_rng(seed)
    toks, merges = vocab()
    V = len(toks)
    gemma = arch == "gemma3"
    L = 6 if gemma else globals()["L"]
    HD = 64 if gemma else globals()["HD"]
    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"tiny random {arch} (tests/gen_recipe_fixtures.py)")
    w.add_block_count(L)
    if gemma:
        w.add_sliding_window(8)
    w.add_context_length(512)
    w.add_embedding_length(E)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    if longrope:
        w.add_rope_scaling_attn_factors(longrope[0])
        w.add_rope_scaling_orig_ctx_len(longrope[1])
    if yarn:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(yarn[0])
        w.add_rope_scaling_orig_ctx_len(yarn[1])
    if arch == "mistral3":
        w.add_rope_scaling_yarn_beta_fast(8.0)
        w.add_rope_scaling_yarn_beta_slow(2.0)
        w.add_rope_scaling_yarn_log_mul(1.0)
        w.add_key_value(f"{arch}.attention.temperature_scale", 0.1, gguf.GGUFValueType.FLOAT32)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(toks)
    w.add_token_types([gguf.TokenType.NORMAL] * (V - 1) + [gguf.TokenType.CONTROL])
    w.add_token_merges(merges)
    w.add_bos_token_id(V - 1)
    w.add_eos_token_id(V - 1)
    w.add_add_bos_token(False)

    def t(name, *shape, scale=None):
        # numpy shape (n_out, n_in) = GGUF ne (n_in, n_out)
        s = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        w.add_tensor(name, (rng.standard_normal(shape) * s).astype(np.float32))

    def norm(name, n):
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32))

    def mat(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    t("token_embd.weight", V, E, scale=1.0)
    if longrope:  # per-pair divisors of the frequency, the long set larger (as Phi-3 128k's)
        w.add_tensor("rope_factors_long.weight", (1.0 + 3.0 * rng.random(HD // 2)).astype(np.float32))
        w.add_tensor("rope_factors_short.weight", (1.0 + 0.2 * rng.random(HD // 2)).astype(np.float32))
    for i in range(L):
        p = f"blk.{i}."
        norm(p + "attn_norm.weight", E)
        if arch == "phi3":  # the fused q|k|v rows
            w.add_tensor(p + "attn_qkv.weight", np.concatenate([mat(NH * HD, E), mat(NKV * HD, E), mat(NKV * HD, E)]))
        else:
            t(p + "attn_q.weight", NH * HD, E)
            t(p + "attn_k.weight", NKV * HD, E)
            t(p + "attn_v.weight", NKV * HD, E)
        if arch == "qwen2":
            t(p + "attn_q.bias", NH * HD, scale=0.5)
            t(p + "attn_k.bias", NKV * HD, scale=0.5)
            t(p + "attn_v.bias", NKV * HD, scale=0.5)
        if arch in ("qwen3", "gemma3"):
            norm(p + "attn_q_norm.weight", HD)
            norm(p + "attn_k_norm.weight", HD)
        t(p + "attn_output.weight", E, NH * HD)
        if gemma:
            norm(p + "post_attention_norm.weight", E)
        norm(p + "ffn_norm.weight", E)
        if arch == "phi3":  # gate rows, then up rows, in one tensor
            w.add_tensor(p + "ffn_up.weight", np.concatenate([mat(FF, E), mat(FF, E)]))
        else:
            t(p + "ffn_gate.weight", FF, E)
            t(p + "ffn_up.weight", FF, E)
        t(p + "ffn_down.weight", E, FF)
        if gemma:
            norm(p + "post_ffw_norm.weight", E)
    norm("output_norm.weight", E)
    if not gemma:  # Gemma ties the output to the embedding
        t("output.weight", V, E)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return V


def main():
    import sys
    from llama_cpp import Llama

    os.makedirs(OUT, exist_ok=True)
    ids = [int(x) for x in np.random.default_rng(7).integers(0, 319, 40)]
    for seed, (name, arch, yarn) in enumerate([("qwen2", "qwen2", None), ("qwen3", "qwen3", None), ("phi3", "phi3", None),
                                               ("qwen2-yarn", "qwen2", (4.0, 16)), ("phi3-longrope", "phi3", (1.2, 16)),
                                               ("gemma3", "gemma3", None), ("mistral3", "mistral3", (4.0, 16))]):
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        path = os.path.join(OUT, f"{name}.gguf")
        V = write(arch, path, 100 + seed, yarn if arch in ("qwen2", "mistral3") else None, yarn if arch == "phi3" else None)
        # yarn_beta_* -1: the file's values, as llama.cpp's own tools read them (llama-cpp-python defaults to 32 and 1)
        llm = Llama(model_path=path, n_ctx=64, n_batch=64, logits_all=True, n_threads=2, verbose=False,
                    yarn_beta_fast=-1.0, yarn_beta_slow=-1.0)
        assert llm.n_vocab() == V
        llm.eval(ids)
        lg = np.array(llm.scores[:len(ids)], dtype=np.float32)
        assert lg.shape == (len(ids), V) and np.isfinite(lg).all()
        lg.astype("<f4").tofile(os.path.join(OUT, f"{name}.logits"))
        with open(os.path.join(OUT, f"{name}.ids"), "w") as f:
            f.write(",".join(map(str, ids)) + "\n")
        print(f"{name}: {os.path.getsize(path)} bytes, {len(ids)} ids, logits rms {float(np.sqrt((lg ** 2).mean())):.3f}, "
              f"last argmax {int(lg[-1].argmax())}")


if __name__ == "__main__":
    main()
