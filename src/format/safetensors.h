/* safetensors.h: Hugging Face checkpoints (a directory: config.json, *.safetensors, tokenizer.json,
 * tokenizer_config.json) seen as a GGUF file, the one "name -> type, shape, data" view the model loader binds from.
 *
 * What it produces is what llama.cpp's convert_hf_to_gguf.py would write for the same directory, without the copy:
 *  - metadata: general.architecture from config.json's model_type (llama, mistral -> llama; qwen2; qwen3), the
 *    {arch}.* hyperparameters from config.json (hidden_size -> embedding_length, num_hidden_layers -> block_count,
 *    intermediate_size, num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta,
 *    max_position_embeddings, rope_scaling of type linear), the tokenizer.ggml.* vocabulary from tokenizer.json
 *    (byte-level BPE: tokens, token types, merges, the pre-tokenizer recognised from its pre_tokenizer section) and
 *    tokenizer_config.json (bos/eos, add_bos_token, chat_template);
 *  - tensors: HF names mapped to GGUF names (model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight, ...),
 *    shapes reversed into ggml order, F32/F16/BF16 data used in place from the mmapped files; for llama only, the
 *    rows of q_proj and k_proj permuted from HF's rotate-half order into GGUF's interleaved RoPE pairs (a copy,
 *    convert_hf_to_gguf.py's LlamaModel.permute); 1-D tensors and *_norm.weight of F16/BF16 widened to F32 (a copy,
 *    exact: convert_hf_to_gguf.py's rule, so `tern quantize DIR` keeps them F32 as llama.cpp expects).
 * Errors (one line in tern_last_error): a missing or malformed config.json / safetensors header, an unsupported
 * model_type, dtype or rope_scaling, a tensor name not mapped, tensors that overlap or lie past a file's end.
 */
#ifndef TERN_SAFETENSORS_H
#define TERN_SAFETENSORS_H
#include "gguf.h"

/* 1 if path is a directory holding config.json. */
int tern_is_hf_dir(const char *path);
/* The directory as a gguf_file (gguf_close frees it and unmaps the safetensors files), or NULL. */
gguf_file *tern_safetensors_open(const char *dir);
/* A GGUF file, or an HF directory through tern_safetensors_open: what the model loader opens. */
gguf_file *tern_weights_open(const char *path);

#endif
