#!/usr/bin/env python3
"""ref_numpy.py: an independent float64 numpy forward pass of a GGUF `llama`, `gemma3`, `qwen2`, `qwen3` or `phi3` model.

It shares no code with tern's C engine: weights are dequantized by gguf-py (gguf.quants.dequantize),
every activation is float64, and nothing is quantized on the way (llama.cpp, by contrast, quantizes
activations to Q8 for its quantized matmuls, so its logits differ from these by ~1e-2 relative).

Architecture (per layer):  h = x + Wo . attn(rope(Wq . rms(x)), rope(Wk . rms(x)), Wv . rms(x))
                           x' = h + Wdown . (silu(Wgate . rms(h)) * (Wup . rms(h)))
then logits = Wout . rms_final(x) with Wout = output.weight, or token_embd.weight when absent (tied).

RoPE: GGUF llama files store the Q/K rows permuted (by the HF->GGUF converter) so that the rotation is
the "normal" adjacent-pair one: pairs (x[2i], x[2i+1]) of each head turn by pos * base^(-2i/n_rot).

gemma3 (after llama.cpp src/models/gemma3.cpp and Google's gemma_pytorch): embeddings times sqrt(n_embd); per-head
RMSNorm of q and k; NEOX RoPE (pairs (x[i], x[i + n_rot/2])); layers il with il % 6 < 5 attend within a sliding
window of attention.sliding_window keys (key j > pos - window) and rotate with base rope.freq_base_swa (10000 when
absent), the others with rope.freq_base; q scaled by 1/sqrt(head_dim) (1/sqrt(n_embd/n_head) for the 62-layer 27B);
the attention and FFN outputs RMS-normed (post_attention_norm, post_ffw_norm) before their residual adds; the FFN
is GELU (tanh form)(gate) * up; tied output.

phi3: NEOX RoPE, q|k|v in one attn_qkv tensor, gate|up in one ffn_up (gate rows first).
qwen2 (llama.cpp src/models/qwen2.cpp, HF transformers Qwen2): the llama block with biases on q, k, v and NEOX RoPE on
the unpermuted (HF-order) Q/K rows; qwen3 (dense): no biases, per-head RMSNorm of q and k before RoPE, NEOX RoPE.
Biases (attn_{q,k,v,output}.bias) are added wherever the file has them, for every architecture.

Usage: python3 scripts/ref_numpy.py MODEL --tokens 1,2,3 --out FILE [--last] [--dump FILE]
writes little-endian float32 logits, (n_tokens, n_vocab) row-major, or only the last row with --last; --dump the
residual stream after each layer's attention and FFN adds (the per-layer reference tests/test_layers.c reads).
"""
import argparse
import sys

import numpy as np
import gguf


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        arch = _field(r, "general.architecture")
        if arch not in ("llama", "gemma3", "qwen2", "qwen3", "phi3"):
            raise SystemExit(f"ref_numpy: unsupported architecture {arch!r} (llama, gemma3, qwen2, qwen3, phi3)")
        self.arch = arch
        self.neox = arch in ("gemma3", "qwen2", "qwen3", "phi3")  # RoPE pairs (i, i + n_rot/2)
        self.qk_norm = arch in ("gemma3", "qwen3")
        a = arch + "."
        self.n_layer = int(_field(r, a + "block_count"))
        self.n_embd = int(_field(r, a + "embedding_length"))
        self.n_head = int(_field(r, a + "attention.head_count"))
        self.n_head_kv = int(_field(r, a + "attention.head_count_kv", self.n_head))
        self.head_dim = int(_field(r, a + "attention.key_length", self.n_embd // self.n_head))
        self.head_dim_v = int(_field(r, a + "attention.value_length", self.head_dim))
        self.n_rot = int(_field(r, a + "rope.dimension_count", self.head_dim))
        self.eps = float(_field(r, a + "attention.layer_norm_rms_epsilon", 1e-5))
        self.rope_base = float(_field(r, a + "rope.freq_base", 10000.0))
        self.window = int(_field(r, a + "attention.sliding_window", 0) or 0) if arch == "gemma3" else 0
        self.rope_base_swa = float(_field(r, a + "rope.freq_base_swa", 10000.0))
        scaling = _field(r, a + "rope.scaling.type", "none")
        factor = float(_field(r, a + "rope.scaling.factor", 0.0) or 0.0)
        # Linear scaling divides positions by the factor; llama3-style scaling arrives as the
        # rope_freqs tensor (per-pair divisors of the frequency) handled below.
        self.pos_scale = 1.0 / factor if (scaling == "linear" and factor > 0) else 1.0
        if scaling not in ("none", "linear"):
            print(f"ref_numpy: warning: rope scaling {scaling!r} ignored", file=sys.stderr)

        self.t = {}
        for t in r.tensors:
            w = gguf.quants.dequantize(t.data, t.tensor_type)
            # gguf-py shape is ggml order (ne0 innermost); the array is (ne1, ne0) = (out, in).
            ne = [int(x) for x in t.shape]
            w = np.asarray(w, dtype=np.float32).reshape(list(reversed(ne)))
            self.t[t.name] = w
        self.n_vocab = self.t["token_embd.weight"].shape[0]
        self.out_w = self.t.get("output.weight", self.t["token_embd.weight"])

        # inverse frequencies of the rotated pairs: base^(-2i/n_rot)
        i = np.arange(self.n_rot // 2, dtype=np.float64)
        self.inv_freq = self.rope_base ** (-2.0 * i / self.n_rot)
        self.inv_freq_swa = self.rope_base_swa ** (-2.0 * i / self.n_rot)
        if "rope_freqs.weight" in self.t:
            self.inv_freq = self.inv_freq / self.t["rope_freqs.weight"].astype(np.float64)
        self.scale = 1.0 / np.sqrt(self.head_dim)
        if arch == "gemma3" and self.n_layer == 62:
            self.scale = 1.0 / np.sqrt(self.n_embd // self.n_head)

    def w(self, name):
        return self.t[name].astype(np.float64)

    def b(self, name, shape):
        """The bias tensor name as float64 broadcast over shape's leading axes, or 0 when the file has none."""
        if name not in self.t:
            return 0.0
        return self.t[name].astype(np.float64).reshape(shape[1:])

    def rms(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight.astype(np.float64)

    def rope(self, x, pos, inv_freq=None, pos_scale=None):
        """x: (n_tokens, n_heads, head_dim); rotate the pairs of the first n_rot dims: adjacent ones (llama) or
        (i, i + n_rot/2) (NEOX: gemma3, qwen2, qwen3)."""
        inv_freq = self.inv_freq if inv_freq is None else inv_freq
        pos_scale = self.pos_scale if pos_scale is None else pos_scale
        ang = (pos.astype(np.float64) * pos_scale)[:, None] * inv_freq[None, :]  # (T, n_rot/2)
        c = np.cos(ang)[:, None, :]
        s = np.sin(ang)[:, None, :]
        y = x.copy()
        if self.neox:
            h = self.n_rot // 2
            x0, x1 = x[..., 0:h], x[..., h:self.n_rot]
            y[..., 0:h] = x0 * c - x1 * s
            y[..., h:self.n_rot] = x0 * s + x1 * c
            return y
        x0 = x[..., 0:self.n_rot:2]
        x1 = x[..., 1:self.n_rot:2]
        y[..., 0:self.n_rot:2] = x0 * c - x1 * s
        y[..., 1:self.n_rot:2] = x0 * s + x1 * c
        return y

    def forward(self, tokens, last_only=False, dump=None):
        """Logits (n_tokens, n_vocab) float64 of the tokens at positions 0..n-1 (no cache); the last row only when
        last_only. dump: a list that gets the residual stream (n_tokens, n_embd) after each layer's attention add and
        after its FFN add, in that order (the per-layer reference)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        T = len(tokens)
        pos = np.arange(T)
        x = self.t["token_embd.weight"][tokens].astype(np.float64)  # (T, n_embd)
        gemma = self.arch == "gemma3"
        if gemma:
            x = x * np.sqrt(np.float64(self.n_embd))
        hd, hdv, nh, nkv = self.head_dim, self.head_dim_v, self.n_head, self.n_head_kv
        group = nh // nkv
        mask = np.triu(np.full((T, T), -np.inf), k=1)
        # sliding-window mask: key j visible from position p only when j > p - window
        jj, pp = np.meshgrid(np.arange(T), np.arange(T))
        swa_mask = np.where(jj <= pp - self.window, -np.inf, 0.0) + mask if self.window else mask
        for l in range(self.n_layer):
            p = f"blk.{l}."
            swa = gemma and self.window and l % 6 < 5
            h = self.rms(x, self.t[p + "attn_norm.weight"])
            if p + "attn_qkv.weight" in self.t:  # phi3: q|k|v rows in one tensor
                qkv = h @ self.w(p + "attn_qkv.weight").T
                q = qkv[:, :nh * hd].reshape(T, nh, hd)
                k = qkv[:, nh * hd:(nh + nkv) * hd].reshape(T, nkv, hd)
                v = qkv[:, (nh + nkv) * hd:].reshape(T, nkv, hdv)
            else:
                q = (h @ self.w(p + "attn_q.weight").T).reshape(T, nh, hd)
                k = (h @ self.w(p + "attn_k.weight").T).reshape(T, nkv, hd)
                v = (h @ self.w(p + "attn_v.weight").T).reshape(T, nkv, hdv)
            q, k, v = (y + self.b(p + f"attn_{nm}.bias", y.shape) for y, nm in ((q, "q"), (k, "k"), (v, "v")))
            if self.qk_norm:
                q = self.rms(q, self.t[p + "attn_q_norm.weight"])
                k = self.rms(k, self.t[p + "attn_k_norm.weight"])
            if gemma:
                q = self.rope(q, pos, self.inv_freq_swa if swa else self.inv_freq, 1.0 if swa else None)
                k = self.rope(k, pos, self.inv_freq_swa if swa else self.inv_freq, 1.0 if swa else None)
            else:
                q = self.rope(q, pos)
                k = self.rope(k, pos)
            out = np.empty((T, nh, hdv))
            for hh in range(nh):
                kv = hh // group  # query head hh reads KV head hh // (n_head / n_head_kv)
                sc = q[:, hh, :] @ k[:, kv, :].T * self.scale + (swa_mask if swa else mask)  # (T, T)
                sc = sc - sc.max(axis=1, keepdims=True)
                pr = np.exp(sc)
                pr /= pr.sum(axis=1, keepdims=True)
                out[:, hh, :] = pr @ v[:, kv, :]
            a = out.reshape(T, nh * hdv) @ self.w(p + "attn_output.weight").T
            a = a + self.b(p + "attn_output.bias", a.shape)
            if gemma:
                a = self.rms(a, self.t[p + "post_attention_norm.weight"])
            x = x + a
            if dump is not None:
                dump.append(x.copy())
            h = self.rms(x, self.t[p + "ffn_norm.weight"])
            if p + "ffn_gate.weight" in self.t:
                g = h @ self.w(p + "ffn_gate.weight").T
                u = h @ self.w(p + "ffn_up.weight").T
            else:  # phi3: gate rows then up rows in ffn_up
                gu = h @ self.w(p + "ffn_up.weight").T
                g, u = gu[:, :gu.shape[1] // 2], gu[:, gu.shape[1] // 2:]
            if gemma:  # GELU, tanh form
                act = 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))
            else:
                act = g / (1.0 + np.exp(-g))
            f = (act * u) @ self.w(p + "ffn_down.weight").T
            if gemma:
                f = self.rms(f, self.t[p + "post_ffw_norm.weight"])
            x = x + f
            if dump is not None:
                dump.append(x.copy())
        if last_only:
            x = x[-1:]
        x = self.rms(x, self.t["output_norm.weight"])
        return x @ self.out_w.astype(np.float64).T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output file: raw little-endian float32 logits")
    ap.add_argument("--last", action="store_true", help="write only the last position's logits")
    ap.add_argument("--dump", help="also write the residual stream after each layer's attention and FFN adds: "
                    "little-endian float32 (n_layer, 2, n_tokens, n_embd), only the last token's with --last")
    ap.add_argument("--greedy", type=int, default=0,
                    help="also print N greedy next tokens (recomputes the full pass per token)")
    args = ap.parse_args()
    toks = [int(s) for s in args.tokens.split(",") if s.strip()]
    m = Model(args.model)
    if any(t < 0 or t >= m.n_vocab for t in toks):
        raise SystemExit("ref_numpy: token id out of range")
    dump = [] if args.dump else None
    logits = m.forward(toks, last_only=args.last, dump=dump)
    logits.astype("<f4").tofile(args.out)
    if dump is not None:
        d = np.stack([a[-1:] if args.last else a for a in dump])  # (2 n_layer, T, n_embd)
        d.astype("<f4").tofile(args.dump)
        print(f"ref_numpy: {len(dump)} residual-stream points -> {args.dump}")
    last = logits[-1]
    top = np.argsort(-last)[:5]
    print("ref_numpy: %d tokens -> %s (%d x %d f32); top-5 of last: %s" % (
        len(toks), args.out, logits.shape[0], logits.shape[1],
        ", ".join(f"{i}:{last[i]:.4f}" for i in top)))
    if args.greedy > 0:
        seq = list(toks)
        for _ in range(args.greedy):
            seq.append(int(np.argmax(m.forward(seq)[-1])))
        print("ref_numpy: greedy ids:", ",".join(str(t) for t in seq[len(toks):]))
        names = _field(gguf.GGUFReader(args.model), "tokenizer.ggml.tokens")
        if names is not None:
            print("ref_numpy: greedy text:", repr("".join(names[t] for t in seq[len(toks):])))


if __name__ == "__main__":
    main()
