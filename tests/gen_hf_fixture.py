#!/usr/bin/env python3
"""Tiny Hugging Face checkpoints and the GGUFs they convert to (tests/test_safetensors.c): from the default model
(llama), and from the qwen2/qwen3 recipe fixtures (--from).

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
tern loading OUTDIR/hf must give the logits it gives for OUTDIR/ref.gguf, bit for bit (same types, same kernels).

usage: python3 tests/gen_hf_fixture.py --from GGUF OUTDIR

From GGUF (a qwen2 or qwen3 GGUF of F32/F16 tensors: tests/fixtures/recipes/qwen2.gguf, qwen3.gguf), the HF
directory OUTDIR that convert_hf_to_gguf.py would turn back into it, every tensor in its own dtype: config.json
(model_type and the hyperparameters as HF's Qwen2Config/Qwen3Config name them: Qwen2 has no head_dim, Qwen3 has
head_dim and attention_bias), model.safetensors (HF names; lm_head.weight when the output is untied; q/k rows as
they are: convert_hf_to_gguf.py permutes only LlamaModel's, as these recipes apply NEOX RoPE to HF's order),
tokenizer.json as Qwen ships it for tokenizer.ggml.pre qwen2 (NFC normalizer, the Split regex then ByteLevel without
regex; the control tokens in added_tokens only, not in the model's vocab; merges as "a b" for qwen2 and as [a, b]
pairs, the tokenizers>=0.20 form, for qwen3) and tokenizer_config.json (bos_token null, eos/pad by name). HF's
tokenizers 0.23.3 loads that tokenizer.json and gives tern's ids (checked by hand, not in the test). tern loading
OUTDIR must give GGUF's logits bit for bit.

usage: python3 tests/gen_hf_fixture.py --from GGUF OUTDIR --bf16 REF_GGUF

As --from, but every tensor of OUTDIR/model.safetensors is BF16 (as HF ships most checkpoints: norms too), each
F32 value rounded to nearest even (checked against gguf-py's BF16 quantizer), torch_dtype bfloat16; and REF_GGUF the
GGUF convert_hf_to_gguf.py --outtype bf16 makes of OUTDIR: the GGUF's metadata with file_type MOSTLY_BF16, matrices
BF16 with the same bits, 1-D tensors and norms widened to F32 (its rule: n_dims <= 1 or *_norm.weight -> F32; the
widening is exact). numpy has no bfloat16 and safetensors.numpy cannot write one, so the file is written here from
the format (write_safetensors_bf16), then read back through the safetensors package and compared with what its
low-level serialize (raw bytes, dtype "bfloat16") writes for the same bits (check_safetensors_bf16)."""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def unpermute(w, n_head):
    """GGUF (interleaved RoPE pairs) rows -> HF (rotate-half) rows; w: (rows, ...) with rows = n_head * head_dim."""
    rows = w.shape[0]
    hd = rows // n_head
    return w.reshape(n_head, hd // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def reader_val(r):
    """A GGUFReader's metadata as Python values: val(key), val(key, default) when the key may be absent."""
    import gguf
    f = r.fields
    absent = object()

    def val(k, default=absent):
        if k not in f and default is not absent:
            return default
        fld = f[k]
        if fld.types[0] == gguf.GGUFValueType.STRING:
            return bytes(fld.parts[fld.data[0]]).decode()
        if fld.types[0] == gguf.GGUFValueType.ARRAY:
            if fld.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(fld.parts[i]).decode() for i in fld.data]
            return [fld.parts[i][0].item() for i in fld.data]
        return fld.parts[fld.data[0]][0].item()
    return val


def to_bf16(a):
    """float32 array -> its bfloat16 bits (uint16, same shape), round to nearest even; finite values only."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    assert np.isfinite(a).all(), "NaN/inf: round-to-nearest-even below would need ggml's quiet-NaN rule"
    u = a.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(b):
    """bfloat16 bits (uint16) -> float32, exact: the bits become the top half of the float32"""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def write_safetensors_bf16(tensors, path, metadata):
    """tensors: name -> uint16 array of bfloat16 bits, written as a safetensors file of BF16 tensors (the format,
    huggingface/safetensors README: u64 little-endian header length N, N bytes of JSON
    {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [begin, end]}}, then the data, offsets
    relative to the byte after the header). Laid out as the package's own writer does: tensors by name, the JSON
    compact and padded with spaces to a multiple of 8 bytes so that the data starts aligned."""
    names = sorted(tensors)
    header = {"__metadata__": metadata}
    off = 0
    for n in names:
        nb = tensors[n].nbytes
        header[n] = {"dtype": "BF16", "shape": list(tensors[n].shape), "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(h)))
        fp.write(h)
        for n in names:
            fp.write(np.ascontiguousarray(tensors[n], dtype="<u2").tobytes())


def check_safetensors_bf16(path, tensors, metadata):
    """The file write_safetensors_bf16 wrote, read back: its header as JSON; the safetensors package's parser
    (deserialize: header length, JSON, offsets contiguous and sized as shape x dtype) gives every tensor's dtype,
    shape and bytes back; safe_open gives the metadata, names, dtypes and shapes (its numpy get_tensor cannot make a
    bfloat16 array); and the package's writer, given the same bits, writes the same bytes."""
    import safetensors
    raw = open(path, "rb").read()
    (hl,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + hl])
    assert hdr.pop("__metadata__") == metadata and set(hdr) == set(tensors), "header names"
    got = dict(safetensors.deserialize(raw))
    assert set(got) == set(tensors), "deserialize: names"
    for n, a in tensors.items():
        g = got[n]
        assert g["dtype"] == "BF16" and list(g["shape"]) == list(a.shape), f"deserialize: {n}: {g['dtype']} {g['shape']}"
        assert bytes(g["data"]) == np.ascontiguousarray(a, dtype="<u2").tobytes(), f"deserialize: {n}: data"
    with safetensors.safe_open(path, framework="numpy") as f:
        assert f.metadata() == metadata and set(f.keys()) == set(tensors), "safe_open: metadata or names"
        for n, a in tensors.items():
            s = f.get_slice(n)
            assert s.get_dtype() == "BF16" and list(s.get_shape()) == list(a.shape), f"safe_open: {n}"
    specs = {n: safetensors.TensorSpec(dtype="bfloat16", shape=list(a.shape), data_ptr=a.ctypes.data,
                                    data_len=a.nbytes) for n, a in tensors.items()}
    assert bytes(safetensors.serialize(specs, metadata=metadata)) == raw, "not the package writer's bytes"


def copy_metadata(w, r, val, skip=(), override=None):
    """Every key of GGUFReader r into GGUFWriter w, with its own value type, except GGUF.* and skip; override:
    key -> value in place of r's."""
    import gguf
    override = override or {}
    for k, fld in r.fields.items():
        if k.startswith("GGUF.") or k in skip:
            continue
        v = override[k] if k in override else val(k)
        vt = fld.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_key_value(k, v, vt, sub_type=fld.types[1])
        else:
            w.add_key_value(k, v, vt)


def main(out, n_layers):
    import gguf
    from gguf import quants
    from safetensors.numpy import save_file

    r = gguf.GGUFReader(MODEL)
    val = reader_val(r)

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
    copy_metadata(w, r, val, skip=("general.architecture", "general.file_type", "general.quantization_version"),
                  override={"llama.block_count": n_layers})
    w.add_file_type(1)
    for name, a in ts.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Qwen2's pre-tokenizer regex as its tokenizer.json holds it (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")

# GGUF -> HF names of one layer's tensors (convert_hf_to_gguf.py's tensor map, inverted)
LAYER_NAMES = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
               "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
               "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
               "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
               "attn_v.bias": "self_attn.v_proj.bias", "attn_q_norm.weight": "self_attn.q_norm.weight",
               "attn_k_norm.weight": "self_attn.k_norm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
               "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}


def from_gguf(path, out, bf16_ref=None):
    import gguf
    from gguf import quants
    from safetensors.numpy import save_file

    r = gguf.GGUFReader(path)
    val = reader_val(r)
    arch = val("general.architecture")
    assert arch in ("qwen2", "qwen3"), f"{path}: architecture {arch}"
    K = lambda k, *d: val(f"{arch}.{k}", *d)
    n_embd, n_head, n_layer = K("embedding_length"), K("attention.head_count"), K("block_count")
    n_head_kv = K("attention.head_count_kv", n_head)
    head_dim = K("attention.key_length", n_embd // n_head)
    assert K("attention.value_length", head_dim) == head_dim
    assert arch == "qwen3" or head_dim == n_embd // n_head, "Qwen2Config has no head_dim: it is hidden_size / heads"
    ts = {}
    for t in r.tensors:
        assert t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16), \
            f"{t.name}: {t.tensor_type.name} (F32 and F16 keep their bits in safetensors; dequantize first)"
        ts[t.name] = np.array(t.data).reshape(list(reversed(t.shape.tolist())))
    if bf16_ref:
        for name, a in ts.items():
            b = to_bf16(a)
            ref = quants.quantize(a.astype(np.float32), gguf.GGMLQuantizationType.BF16).view(np.uint16).reshape(a.shape)
            assert np.array_equal(b, ref), f"{name}: to_bf16 disagrees with gguf-py's BF16 rounding"
            ts[name] = b
        ref_ts = [(name, ts[name]) for name in ts]  # GGUF order, before the renaming below empties ts
    hf = {"model.embed_tokens.weight": ts.pop("token_embd.weight"), "model.norm.weight": ts.pop("output_norm.weight")}
    tied = "output.weight" not in ts
    if not tied:
        hf["lm_head.weight"] = ts.pop("output.weight")
    for name, a in ts.items():
        _, il, rest = name.split(".", 2)
        hf[f"model.layers.{il}.{LAYER_NAMES[rest]}"] = np.ascontiguousarray(a)
    os.makedirs(out, exist_ok=True)
    if bf16_ref:
        write_safetensors_bf16(hf, os.path.join(out, "model.safetensors"), {"format": "pt"})
        check_safetensors_bf16(os.path.join(out, "model.safetensors"), hf, {"format": "pt"})
    else:
        save_file(hf, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})

    tokens, types, merges = val("tokenizer.ggml.tokens"), val("tokenizer.ggml.token_type"), val("tokenizer.ggml.merges")
    bos, eos = val("tokenizer.ggml.bos_token_id"), val("tokenizer.ggml.eos_token_id")
    assert val("tokenizer.ggml.model") == "gpt2" and val("tokenizer.ggml.pre") == "qwen2", "the Qwen tokenizer only"
    dtype = {gguf.GGMLQuantizationType.F32: "float32", gguf.GGMLQuantizationType.F16: "float16"}
    cls = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[arch]
    config = {
        "architectures": [cls], "model_type": arch, "hidden_size": n_embd, "intermediate_size": K("feed_forward_length"),
        "num_hidden_layers": n_layer, "num_attention_heads": n_head, "num_key_value_heads": n_head_kv,
        "rms_norm_eps": K("attention.layer_norm_rms_epsilon"), "rope_theta": K("rope.freq_base", 10000.0),
        "max_position_embeddings": K("context_length"), "vocab_size": len(tokens), "tie_word_embeddings": tied,
        "bos_token_id": bos, "eos_token_id": eos, "hidden_act": "silu",
        "torch_dtype": "bfloat16" if bf16_ref else dtype[r.tensors[0].tensor_type],
        "rope_scaling": None, "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
        "use_sliding_window": False, "sliding_window": None, "max_window_layers": n_layer,
    }
    if arch == "qwen3":
        config.update({"head_dim": head_dim, "attention_bias": False})
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
    control = [i for i in range(len(tokens)) if types[i] == 3]
    tok = {
        "version": "1.0",
        "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in control],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens) if i not in control},
                  "merges": merges if arch != "qwen3" else [m.split(" ", 1) for m in merges]},
    }
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    tc = {"add_prefix_space": False, "bos_token": None, "eos_token": tokens[eos], "pad_token": tokens[eos],
          "unk_token": None, "errors": "replace", "model_max_length": K("context_length"),
          "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer",
          "added_tokens_decoder": {str(i): {"content": tokens[i], "lstrip": False, "normalized": False,
                                            "rstrip": False, "single_word": False, "special": True} for i in control}}
    if "tokenizer.chat_template" in r.fields:
        tc["chat_template"] = val("tokenizer.chat_template")
    json.dump(tc, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)

    if bf16_ref:  # convert_hf_to_gguf.py --outtype bf16 of OUTDIR: BF16 matrices, F32 vectors and norms
        w = gguf.GGUFWriter(bf16_ref, arch)
        copy_metadata(w, r, val, skip=("general.architecture", "general.file_type"))
        w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
        for name, b in ref_ts:
            if b.ndim <= 1 or name.endswith("_norm.weight"):
                w.add_tensor(name, bf16_to_f32(b))
            else:
                w.add_tensor(name, b, raw_dtype=gguf.GGMLQuantizationType.BF16)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--from":
        from_gguf(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "--from" and sys.argv[4] == "--bf16":
        from_gguf(sys.argv[2], sys.argv[3], sys.argv[5])
    elif len(sys.argv) in (2, 3) and not sys.argv[1].startswith("-"):
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    else:
        sys.exit(__doc__)
