#!/usr/bin/env python3
"""One llama.cpp arm of bench/cpu.sh: prefill a prompt file, then greedy-decode N tokens (EOS ignored),
timed by llama.cpp's own counters (llama_perf_context: t_p_eval_ms, t_eval_ms), through
llama-cpp-python==0.3.36's bundled build. Prints one JSON line:
{"pp_tokens", "pp_tok_s", "tg_tokens", "tg_tok_s", "gen_ids"}."""
import ctypes
import json
import sys

import llama_cpp
import numpy as np

model, prompt_file, n_gen, n_threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(model_path=model, n_ctx=1024, n_batch=512, n_threads=n_threads, n_threads_batch=n_threads,
                      logits_all=False, verbose=False)
text = open(prompt_file, "rb").read()
add_bos = llama_cpp.llama_vocab_get_add_bos(llama_cpp.llama_model_get_vocab(llm.model)) if hasattr(llama_cpp, "llama_vocab_get_add_bos") else False
toks = llm.tokenize(text, add_bos=bool(add_bos), special=True)
n_vocab = llm.n_vocab()
llama_cpp.llama_perf_context_reset(llm.ctx)
llm.eval(toks)
gen = []
for _ in range(n_gen):
    lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
    tok = int(np.argmax(lg))
    gen.append(tok)
    if len(gen) == n_gen:
        break
    llm.eval([tok])
p = llama_cpp.llama_perf_context(llm.ctx)
print(json.dumps({"pp_tokens": p.n_p_eval, "pp_tok_s": 1e3 * p.n_p_eval / p.t_p_eval_ms,
                  "tg_tokens": p.n_eval, "tg_tok_s": 1e3 * p.n_eval / p.t_eval_ms, "gen_ids": gen}))
