#!/usr/bin/env python3
"""Seed corpora of the core fuzzers (tests/fuzz/corpus_{gguf,tokenizer,chat,sampler}/), small and committed.

usage: python3 tests/fuzz/make_seeds.py       (numpy, gguf: the checkout's .venv)
gguf: a 1-layer llama GGUF of 32 dimensions with an 8-token byte-level BPE vocabulary and merges, the same without
      a vocabulary, and one with Q8_0 matrices; tokenizer/chat/sampler: inputs in each harness's layout (see the
      harness's comment), the sampler's including issue 28's finding (top-p, top-k off, a logit of 1e16)."""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def out(kind, name, data):
    d = os.path.join(HERE, f"corpus_{kind}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tiny_gguf(path, vocab=True, qtype=None):
    import gguf
    rs = np.random.RandomState(1)
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    if vocab:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(["<|endoftext|>", "a", "b", "ab", "Ġ", "Ġa", "<|im_start|>", "<|im_end|>"])
        w.add_token_types([3, 1, 1, 1, 1, 1, 3, 3])
        w.add_token_merges(["a b", "Ġ a"])
        w.add_bos_token_id(0)
        w.add_eos_token_id(7)
        w.add_chat_template("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}")
    else:
        w.add_tokenizer_model("no_vocab")

    def mat(name, r, c):
        a = (rs.standard_normal((r, c)) * 0.1).astype(np.float32)
        if qtype is not None:
            from gguf import quants
            w.add_tensor(name, quants.quantize(a, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, a)

    mat("token_embd.weight", 8, 32)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(32, np.float32))
    mat("blk.0.attn_q.weight", 32, 32)
    mat("blk.0.attn_k.weight", 16, 32)
    mat("blk.0.attn_v.weight", 16, 32)
    mat("blk.0.attn_output.weight", 32, 32)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(32, np.float32))
    mat("blk.0.ffn_gate.weight", 64, 32)
    mat("blk.0.ffn_up.weight", 64, 32)
    mat("blk.0.ffn_down.weight", 32, 64)
    w.add_tensor("output_norm.weight", np.ones(32, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    import gguf
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        for name, kw in (("tiny-vocab.gguf", {}), ("tiny-novocab.gguf", {"vocab": False}),
                         ("tiny-q8_0.gguf", {"qtype": gguf.GGMLQuantizationType.Q8_0})):
            p = os.path.join(t, name)
            tiny_gguf(p, **kw)
            out("gguf", name, open(p, "rb").read())
    for i, s in enumerate(["Hello world", "<|im_start|>user\nHi there!<|im_end|>\n", "  spaces\t\ttabs\n\n\nnew",
                           "héllo wörld ☕ 日本語 12345 3.14159", "I'm don't we'll they've", "\x04\x06 \xf1\x80\x80\x80"]):
        out("tokenizer", f"text{i}", bytes([i % 4]) + s.encode("utf-8", "surrogateescape"))
    for f in range(4):
        out("chat", f"conv{f}", bytes([f]) + "You are helpful.\x1fHi!\x1fHello! How can I help?\x1fTell me a joke.".encode())
    out("chat", "tmpl-chatml", b"\x00{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}")
    out("chat", "tmpl-llama3", b"\x01<|start_header_id|>system<|end_header_id|>\n\nYou are a bot<|eot_id|>")

    def sampler(temp, top_p, min_p, pen, top_k, last_n, seed, logits, hist):
        return (struct.pack("<4f", temp, top_p, min_p, pen) + struct.pack("<2i", top_k, last_n) + struct.pack("<Q", seed)
                + struct.pack("<H", len(logits) - 1) + struct.pack(f"<{len(logits)}f", *logits)
                + struct.pack(f"<{len(hist)}i", *hist))
    rs = np.random.RandomState(2)
    out("sampler", "defaults", sampler(0.8, 0.95, 0.05, 1.0, 40, 64, 1, list(rs.standard_normal(64) * 3), [1, 2, 3]))
    out("sampler", "penalty", sampler(1.0, 0.9, 0.0, 1.3, 0, -1, 2, list(rs.standard_normal(32)), [5, 5, 7, 9]))
    out("sampler", "issue28-top-p-1e16", sampler(0.8, 0.95, 0.0, 1.0, 0, 64, 0, [-1.0, 0.5, 1e16], []))
    out("sampler", "greedy", sampler(0.0, 1.0, 0.0, 1.0, 0, 0, 0, [0.0, 2.0, 2.0, -1.0], []))


if __name__ == "__main__":
    main()
