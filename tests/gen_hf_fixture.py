#!/usr/bin/env python3
"""A tiny Hugging Face checkpoint and the GGUF it converts to, from the default model (tests/test_safetensors.c).

usage: python3 tests/gen_hf_fixture.py OUTDIR [N_LAYERS]      (numpy, gguf, safetensors: scripts/deps.sh test)

From models/SmolLM2-135M-Instruct.Q4_1.gguf, its first N_LAYERS (default 2) layers and whole vocabulary, every
matrix dequantized (gguf-py's dequantizers) and rounded to F16, norms F32:
  OUTDIR/hf/     config.json (model_type llama, tied embeddings), model-00001-of-00002.safetensors and
                 model-00002-of-00002.safetensors (written by the safetensors package: the embedding and layer 0 in
                 the first, the rest in the second), tokenizer.json (byte-level BPE: the vocabulary, merges, the
                 control tokens as special added tokens, SmolLM2's Digits + ByteLevel pre-tokenizer) and
                 tokenizer_config.json (bos/eos, chat_template) -- the layout the HF hub ships. q_proj/k_proj hold
                 HF's rotate-half row order: the GGUF rows un-permuted (the inverse of convert_hf_to_gguf.py's
                 LlamaModel.permute).
  OUTDIR/ref.gguf the same weights in GGUF order and names with the GGUF's own metadata (block_count N_LAYERS):
                 what convert_hf_to_gguf.py would write for OUTDIR/hf.
tern loading OUTDIR/hf must give the logits it gives for OUTDIR/ref.gguf, bit for bit (same types, same kernels)."""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def unpermute(w, n_head):
    """GGUF (interleaved RoPE pairs) rows -> HF (rotate-half) rows; w: (rows, ...) with rows = n_head * head_dim."""
    rows = w.shape[0]
    hd = rows // n_head
    return w.reshape(n_head, hd // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main(out, n_layers):
    import gguf
    from gguf import quants
    from safetensors.numpy import save_file

    r = gguf.GGUFReader(MODEL)
    f = {k: v for k, v in r.fields.items()}

    def val(k):
        fld = f[k]
        if fld.types[0] == gguf.GGUFValueType.STRING:
            return bytes(fld.parts[fld.data[0]]).decode()
        if fld.types[0] == gguf.GGUFValueType.ARRAY:
            if fld.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(fld.parts[i]).decode() for i in fld.data]
            return [fld.parts[i][0].item() for i in fld.data]
        return fld.parts[fld.data[0]][0].item()

    n_head, n_head_kv = val("llama.attention.head_count"), val("llama.attention.head_count_kv")
    ts = {}
    for t in r.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= n_layers:
            continue
        a = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(list(reversed(t.shape.tolist())))
        ts[t.name] = a if a.ndim == 1 else a.astype(np.float16)
    os.makedirs(os.path.join(out, "hf"), exist_ok=True)

    # --- the HF directory
    hf = {"model.embed_tokens.weight": ts["token_embd.weight"], "model.norm.weight": ts["output_norm.weight"]}
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for i in range(n_layers):
        for g, h in names.items():
            a = ts[f"blk.{i}.{g}.weight"]
            if g == "attn_q":
                a = unpermute(a, n_head)
            elif g == "attn_k":
                a = unpermute(a, n_head_kv)
            hf[f"model.layers.{i}.{h}.weight"] = np.ascontiguousarray(a)
    first = {k: v for k, v in hf.items() if k.startswith("model.embed") or k.startswith("model.layers.0.")}
    rest = {k: v for k, v in hf.items() if k not in first}
    save_file(first, os.path.join(out, "hf", "model-00001-of-00002.safetensors"), metadata={"format": "pt"})
    save_file(rest, os.path.join(out, "hf", "model-00002-of-00002.safetensors"), metadata={"format": "pt"})
    tokens, types, merges = val("tokenizer.ggml.tokens"), val("tokenizer.ggml.token_type"), val("tokenizer.ggml.merges")
    bos, eos = val("tokenizer.ggml.bos_token_id"), val("tokenizer.ggml.eos_token_id")
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": val("llama.embedding_length"),
        "intermediate_size": val("llama.feed_forward_length"), "num_hidden_layers": n_layers,
        "num_attention_heads": n_head, "num_key_value_heads": n_head_kv,
        "rms_norm_eps": val("llama.attention.layer_norm_rms_epsilon"), "rope_theta": val("llama.rope.freq_base"),
        "max_position_embeddings": val("llama.context_length"), "vocab_size": len(tokens),
        "tie_word_embeddings": True, "bos_token_id": bos, "eos_token_id": eos, "torch_dtype": "float16",
        "hidden_act": "silu", "rope_scaling": None,
    }
    json.dump(config, open(os.path.join(out, "hf", "config.json"), "w"), indent=2)
    tok = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in range(len(tokens)) if types[i] == 3],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    json.dump(tok, open(os.path.join(out, "hf", "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump({"bos_token": tokens[bos], "eos_token": tokens[eos], "add_bos_token": False,
               "chat_template": val("tokenizer.chat_template"), "model_max_length": val("llama.context_length")},
              open(os.path.join(out, "hf", "tokenizer_config.json"), "w"), indent=2)

    # --- the reference GGUF: the GGUF's own metadata, these tensors
    w = gguf.GGUFWriter(os.path.join(out, "ref.gguf"), "llama")
    for k, fld in f.items():
        if k.startswith("GGUF.") or k in ("general.architecture", "general.file_type", "general.quantization_version"):
            continue
        v = val(k)
        if k == "llama.block_count":
            v = n_layers
        vt = fld.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_key_value(k, v, vt, sub_type=fld.types[1])
        else:
            w.add_key_value(k, v, vt)
    w.add_file_type(1)
    for name, a in ts.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
