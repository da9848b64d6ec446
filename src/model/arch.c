/* arch.c: architecture knowledge as data: the recipe rows (RECIPES below), which GGUF metadata keys and tensor
 * names make a model, and their shapes. Supported: `llama` (Llama 1/2/3, Mistral, SmolLM, ... as llama.cpp
 * names them in GGUF), `gemma3`, `qwen2` (Qwen2, Qwen2.5), `qwen3` (dense), `phi3` (Phi-3 with 4k context).
 * Tensor names and keys: GGUF spec "Standardized key-value pairs" and llama.cpp's LLM_TENSOR_NAMES.
 * Note: llama-arch GGUFs store the Q/K rows permuted relative to HF checkpoints so that RoPE rotates
 * adjacent pairs (convert_hf_to_gguf.py permute); forward.c's RoPE assumes that layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model.h"
#include "safetensors.h"
#include "tern.h"
#include "util.h"

static int get_int(const gguf_file *f, const char *arch, const char *key, int *out, int required) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const gguf_value *v = gguf_get(f, k);
    if (v && v->type == GGUF_VT_ARRAY) {
        tern_set_error("metadata %s is a per-layer array; tern supports one value for all layers", k);
        return -1;
    }
    uint64_t u;
    if (!v) {
        if (!required) return 1;
        tern_set_error("missing metadata %s", k);
        return -1;
    }
    if (v->type == GGUF_VT_STRING || v->type == GGUF_VT_F32 || v->type == GGUF_VT_F64 || v->type == GGUF_VT_BOOL ||
        gguf_get_u64(f, k, &u) != 0) {
        tern_set_error("metadata %s must be a non-negative integer", k);
        return -1;
    }
    if (u == 0 || u > (1u << 30)) {
        tern_set_error("metadata %s = %llu is out of range", k, (unsigned long long)u);
        return -1;
    }
    *out = (int)u;
    return 0;
}

/* Optional finite number >= 0 (a key whose 0 means "none", as llama.cpp reads it): 0 and stored, 1 if absent, -1
 * (error set) if of another type or out of range. get_f64: the same, > 0. */
static int get_f64_z(const gguf_file *f, const char *arch, const char *key, double *out) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const gguf_value *v = gguf_get(f, k);
    double d;
    if (!v) return 1;
    if ((v->type != GGUF_VT_F32 && v->type != GGUF_VT_F64 && v->type != GGUF_VT_U32 && v->type != GGUF_VT_I32 &&
         v->type != GGUF_VT_U64 && v->type != GGUF_VT_I64) || gguf_get_f64(f, k, &d) != 0) {
        tern_set_error("metadata %s must be a number", k);
        return -1;
    }
    if (!isfinite(d) || d < 0.0) {
        tern_set_error("metadata %s = %g is out of range (must be finite and >= 0)", k, d);
        return -1;
    }
    *out = d;
    return 0;
}
static int get_f64(const gguf_file *f, const char *arch, const char *key, double *out) {
    double d = 0.0;
    const int rc = get_f64_z(f, arch, key, &d);
    if (rc != 0) return rc;
    if (d <= 0.0) {
        tern_set_error("metadata %s.%s = %g is out of range (must be finite and > 0)", arch, key, d);
        return -1;
    }
    *out = d;
    return 0;
}

/* Bind a 2-D weight: GGUF ne = (n_in, n_out). Returns 0, 1 if absent and optional, -1 on error. */
static int bind_weight(tern_model *m, const char *name, int64_t n_in, int64_t n_out, tern_weight *w, int required) {
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    if (!t) {
        if (!required) return 1;
        tern_set_error("model is missing tensor '%s'", name);
        return -1;
    }
    if (t->n_dims > 2 || t->ne[0] != n_in || t->ne[1] != n_out) {
        tern_set_error("tensor '%s' has shape [%lld, %lld, %lld, %lld] (%u dims), expected [%lld, %lld]", name,
                       (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], t->n_dims,
                       (long long)n_in, (long long)n_out);
        return -1;
    }
    m->n_tensors_used++;
    if (t->type == TERN_TYPE_Q8_1 || t->type == TERN_TYPE_Q8_K) {
        tern_set_error("tensor '%s' has type %s, which is an activation format, not a weight format", name,
                       tern_type_name(t->type));
        return -1;
    }
    w->data = t->data;
    w->type = (enum tern_type)t->type;
    w->n_in = n_in;
    w->n_out = n_out;
    w->row_bytes = tern_type_row_size(w->type, n_in);
    return 0;
}

/* Rows [r0, r0 + n) of w as a weight of their own (a view into the same data). */
static tern_weight weight_rows(const tern_weight *w, int64_t r0, int64_t n) {
    tern_weight v = *w;
    /* a synthetic model's weights have no data (their rows are generated when uploaded): the view has none either */
    v.data = w->data ? (const uint8_t *)w->data + (size_t)r0 * w->row_bytes : NULL;
    v.n_out = n;
    return v;
}

/* Bind a 1-D vector of n floats (any supported type, dequantized into a new array). */
static int bind_vec(tern_model *m, const char *name, int64_t n, float **out, int required) {
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    *out = NULL;
    if (!t) {
        if (!required) return 1;
        tern_set_error("model is missing tensor '%s'", name);
        return -1;
    }
    if (gguf_tensor_nelements(t) != n || t->ne[0] != n) {
        tern_set_error("tensor '%s' has %lld elements, expected %lld", name, (long long)gguf_tensor_nelements(t),
                       (long long)n);
        return -1;
    }
    if (t->type == TERN_TYPE_Q8_1 || t->type == TERN_TYPE_Q8_K) {
        tern_set_error("tensor '%s' has activation type %s", name, tern_type_name(t->type));
        return -1;
    }
    *out = tern_xmalloc(sizeof(float) * (size_t)n);
    tern_dequantize_row((enum tern_type)t->type, t->data, *out, n);
    m->n_tensors_used++;
    return 0;
}

/* Fault the mapped tensor data in (so the first token is not timed on page faults), printing progress. */
static void prefault(tern_model *m, int progress) {
    const gguf_file *f = m->gguf;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uint8_t *p = f->base + f->data_offset;
    size_t n = f->size - f->data_offset;
    madvise((void *)((uintptr_t)f->base & ~(uintptr_t)(page - 1)), f->size, MADV_WILLNEED);
    volatile uint8_t sink = 0;
    int tty = progress && isatty(2), last = -1;
    const size_t step = (size_t)64 << 20;
    for (size_t off = 0; off < n; off += step) {
        size_t end = off + step < n ? off + step : n;
        for (size_t i = off; i < end; i += page) sink += p[i];
        int pct = (int)(100.0 * (double)end / (double)n);
        if (tty && pct != last) {
            fprintf(stderr, "\rloading %s: %3d%%", m->desc, pct);
            last = pct;
        }
    }
    (void)sink;
    if (tty) fprintf(stderr, "\r\033[K");
}

void tern_model_free(tern_model *m) {
    if (!m) return;
    if (m->layers) {
        for (int i = 0; i < m->n_layer; i++) {
            tern_layer *l = &m->layers[i];
            free(l->attn_norm); free(l->ffn_norm); free(l->attn_post_norm); free(l->ffn_post_norm);
            free(l->q_norm); free(l->k_norm);
            free(l->bq); free(l->bk); free(l->bv); free(l->bo);
        }
        free(m->layers);
    }
    free(m->output_norm);
    free(m->rope_factors);
    free(m->rope_long);
    free(m->rope_short);
    free(m->chat_template);
    if (m->dev_weights_free) m->dev_weights_free(m->dev_weights);
    tern_vocab_free(m->vocab);
    gguf_close(m->gguf);
    if (m->gen_free) m->gen_free(m->gen_ctx);
    free(m);
}

static tern_model *load_fail(tern_model *m) {
    tern_model_free(m);
    return NULL;
}

/* ---- recipes: one row per architecture ---- */

static const tern_recipe RECIPES[] = {
    /* Llama 1/2/3, Mistral, SmolLM, ... (llama.cpp's LLM_ARCH_LLAMA): pre-norm blocks, SwiGLU, RoPE on adjacent
     * pairs of the permuted Q/K rows; optional q/k/v/o biases, rope_freqs (Llama-3.1), linear RoPE scaling, tied
     * output (no output.weight) */
    {"llama", TERN_ROPE_NORM, TERN_ACT_SILU, 0, 0},
    /* Gemma 3 (llama.cpp src/models/gemma3.cpp): NEOX RoPE, GeGLU (GELU's tanh form), RMSNorm on q and k per head,
     * post-norms on the attention and FFN outputs (the GGUF converter stores the norms' (1 + w)), embeddings times
     * sqrt(n_embd), a sliding window on 5 of every 6 layers with their own RoPE base (rope.freq_base_swa, 10000
     * when absent), tied output */
    {"gemma3", TERN_ROPE_NEOX, TERN_ACT_GELU_TANH, TERN_RECIPE_QK_NORM | TERN_RECIPE_POST_NORM | TERN_RECIPE_EMBD_SCALE, 6},
    /* Qwen2 / Qwen2.5 (llama.cpp src/models/qwen2.cpp): the llama block with biases on q, k and v (bound when present,
     * as for any row) and NEOX RoPE on the HF-order Q/K rows (the converter does not permute them for qwen2); output
     * tied or not. YaRN-scaled files (rope.scaling.type yarn) load with their table and attention factor (cpu_rope_table). */
    {"qwen2", TERN_ROPE_NEOX, TERN_ACT_SILU, 0, 0},
    /* Qwen3 dense (llama.cpp src/models/qwen3.cpp): qwen2 without the biases, with a per-head RMSNorm on q and k before
     * RoPE (attn_q_norm, attn_k_norm; stored as the plain weight) */
    {"qwen3", TERN_ROPE_NEOX, TERN_ACT_SILU, TERN_RECIPE_QK_NORM, 0},
    /* Phi-3 (llama.cpp src/models/phi3.cpp): the llama block with NEOX RoPE, q|k|v as one tensor (attn_qkv) and gate|up
     * as one (ffn_up of 2·n_ff rows, gate first); both are bound as row views of the fused tensor (any row may have
     * them). The 128k variants' LongRoPE factors (rope_factors_long/short) load too: the long set where the context
     * runs past the original one (cpu_rope_table). */
    {"phi3", TERN_ROPE_NEOX, TERN_ACT_SILU, 0, 0},
    /* Mistral 3 / Ministral 3 (llama.cpp src/models/mistral3.cpp): the llama block (its rope type NORM, optional
     * rope_freqs), YaRN with the file's beta_fast / beta_slow and yarn_log_multiplier, and Llama 4's attention
     * temperature: q times 1 + s ln(floor(pos / n_orig) + 1) after RoPE (attention.temperature_scale s, the floor
     * scale the original context). Its MoE variants are refused as any row's. */
    {"mistral3", TERN_ROPE_NORM, TERN_ACT_SILU, TERN_RECIPE_YARN_PARAMS, 0},
};

const tern_recipe *tern_recipe_find(const char *arch) {
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        if (!strcmp(RECIPES[i].arch, arch)) return &RECIPES[i];
    return NULL;
}

const char *tern_recipe_names(void) {
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", RECIPES[i].arch);
    return names;
}

void tern_model_finish(tern_model *m) {
    const tern_recipe *r = m->recipe;
    if (m->attn_scale <= 0.0f) m->attn_scale = 1.0f / sqrtf((float)m->head_dim);
    if (m->rope_mscale <= 0.0f) m->rope_mscale = 1.0f;
    if (m->embd_scale <= 0.0f) m->embd_scale = r && (r->flags & TERN_RECIPE_EMBD_SCALE) ? sqrtf((float)m->n_embd) : 1.0f;
    if (m->rope_base_local <= 0.0) m->rope_base_local = m->rope_base;
    for (int i = 0; m->layers && i < m->n_layer; i++) {
        const int local = r && r->swa_period > 0 && (i + 1) % r->swa_period != 0;
        if (!local) m->layers[i].window = 0;
        m->layers[i].rope_table = local ? 1 : 0;
    }
}

/* The number of layers the tensor directory holds: 1 + the largest N of a tensor named "blk.N.", or 0. Read
 * before anything is allocated from {arch}.block_count, so a header claiming 2^24 layers is refused by
 * comparing, not by allocating. -1 (error set) for a malformed layer index. */
static int64_t directory_layers(const gguf_file *f) {
    int64_t n = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_str s = f->tensors[i].name;
        if (s.len < 5 || memcmp(s.ptr, "blk.", 4) != 0) continue;
        int64_t v = 0;
        uint64_t j = 4;
        for (; j < s.len && s.ptr[j] >= '0' && s.ptr[j] <= '9' && v < (1 << 30); j++) v = v * 10 + (s.ptr[j] - '0');
        if (j == 4 || j >= s.len || s.ptr[j] != '.' || v >= (1 << 30)) {
            tern_set_error("tensor '%.*s': malformed layer index", (int)(s.len < 64 ? s.len : 64), s.ptr);
            return -1;
        }
        if (v + 1 > n) n = v + 1;
    }
    return n;
}

/* a * b as int64 when both are positive and the product is at most lim; else -1. Every size derived from
 * metadata goes through it (a fuzzer found head_count x key_length overflowing int). */
static int64_t checked_mul(int64_t a, int64_t b, int64_t lim) {
    if (a <= 0 || b <= 0 || a > lim / b) return -1;
    return a * b;
}

tern_model *tern_model_load(const char *path, int progress) {
    gguf_file *f = tern_weights_open(path); /* a GGUF file, or an HF directory seen as one (safetensors.h) */
    return f ? tern_model_load_gguf(f, path, progress) : NULL;
}

tern_model *tern_model_load_gguf(gguf_file *gf, const char *path, int progress) {
    tern_model *m = tern_xcalloc(1, sizeof *m);
    m->gguf = gf;
    const gguf_file *f = m->gguf;

    const char *arch = gguf_get_cstr(f, "general.architecture");
    if (!arch) { tern_set_error("'%s': missing general.architecture", path); return load_fail(m); }
    if (!(m->recipe = tern_recipe_find(arch))) {
        tern_set_error("unsupported architecture '%s' (tern supports: %s)", arch, tern_recipe_names());
        return load_fail(m);
    }
    snprintf(m->arch, sizeof m->arch, "%s", arch);

    if (get_int(f, arch, "embedding_length", &m->n_embd, 1) || get_int(f, arch, "block_count", &m->n_layer, 1) ||
        get_int(f, arch, "feed_forward_length", &m->n_ff, 1) || get_int(f, arch, "attention.head_count", &m->n_head, 1))
        return load_fail(m);
    m->n_head_kv = m->n_head;
    m->n_ctx_train = 2048;
    if (get_int(f, arch, "attention.head_count_kv", &m->n_head_kv, 0) < 0 ||
        get_int(f, arch, "context_length", &m->n_ctx_train, 0) < 0)
        return load_fail(m);
    m->head_dim = m->n_embd / m->n_head;
    int vdim = m->head_dim;
    if (get_int(f, arch, "attention.key_length", &m->head_dim, 0) < 0 ||
        get_int(f, arch, "attention.value_length", &vdim, 0) < 0)
        return load_fail(m);
    if (vdim != m->head_dim) {
        tern_set_error("attention key_length %d != value_length %d is not supported", m->head_dim, vdim);
        return load_fail(m);
    }
    m->n_rot = m->head_dim;
    if (get_int(f, arch, "rope.dimension_count", &m->n_rot, 0) < 0) return load_fail(m);
    if (m->head_dim < 1 || m->n_head % m->n_head_kv != 0 || m->n_rot > m->head_dim || m->n_rot % 2 || m->head_dim > 512) {
        tern_set_error("inconsistent attention shape: %d heads, %d KV heads, head_dim %d, rope dims %d", m->n_head,
                       m->n_head_kv, m->head_dim, m->n_rot);
        return load_fail(m);
    }
    /* sizes derived from the metadata, in checked 64-bit arithmetic, before any of them sizes an allocation */
    const int64_t lim = (int64_t)1 << 30;
    if (checked_mul(m->n_head, m->head_dim, lim) < 0 || checked_mul(m->n_head_kv, m->head_dim, lim) < 0) {
        tern_set_error("attention shape out of range: %d heads x head_dim %d", m->n_head, m->head_dim);
        return load_fail(m);
    }
    const int64_t n_dir = directory_layers(f);
    if (n_dir < 0) return load_fail(m);
    if (n_dir != m->n_layer) {
        tern_set_error("metadata %s.block_count = %d but the file's tensors hold %lld layers", arch, m->n_layer,
                       (long long)n_dir);
        return load_fail(m);
    }
    double eps = 1e-5;
    m->rope_base = 10000.0;
    m->rope_scale = 1.0;
    double factor = 0.0;
    int rf;
    if (get_f64(f, arch, "attention.layer_norm_rms_epsilon", &eps) < 0 ||
        get_f64(f, arch, "rope.freq_base", &m->rope_base) < 0 ||
        (rf = get_f64(f, arch, "rope.scaling.factor", &factor)) < 0 ||
        (rf == 1 && get_f64(f, arch, "rope.scale_linear", &factor) < 0))
        return load_fail(m);
    m->rms_eps = (float)eps;
    double softcap = 0.0;
    if (get_f64(f, arch, "final_logit_softcapping", &softcap) < 0) return load_fail(m);
    m->logit_softcap = (float)softcap;
    char k[128];
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    const char *st = gguf_get_cstr(f, k);
    if (gguf_get(f, k) && !st) {
        tern_set_error("metadata %s must be a string", k);
        return load_fail(m);
    }
    if (st && strcmp(st, "none") != 0 && strcmp(st, "linear") != 0 && strcmp(st, "yarn") != 0) {
        tern_set_error("unsupported RoPE scaling type '%s' (tern supports none, linear and yarn)", st);
        return load_fail(m);
    }
    if ((!st || strcmp(st, "linear") == 0) && factor > 0.0) m->rope_scale = factor;
    /* the magnitude scale of cos and sin: rope.scaling.attn_factor (llama.cpp's rope_attn_factor, any file; Phi-3's
     * LongRoPE sets it), times YaRN's 1 + 0.1 ln factor */
    double attn_factor = 1.0;
    if (get_f64(f, arch, "rope.scaling.attn_factor", &attn_factor) < 0) return load_fail(m);
    m->rope_mscale = (float)attn_factor;
    m->rope_yarn_ctx = m->n_ctx_train;
    if (get_int(f, arch, "rope.scaling.original_context_length", &m->rope_yarn_ctx, 0) < 0) return load_fail(m);
    m->rope_yarn_beta_fast = 32.0f, m->rope_yarn_beta_slow = 1.0f; /* llama.cpp's defaults (ext_factor 1) */
    if (st && !strcmp(st, "yarn") && factor > 1.0) {
        double bf = 32.0, bs = 1.0, log_mul = 0.0; /* other rows keep these, as llama.cpp does (TERN_RECIPE_YARN_PARAMS) */
        if ((m->recipe->flags & TERN_RECIPE_YARN_PARAMS) &&
            (get_f64(f, arch, "rope.scaling.yarn_beta_fast", &bf) < 0 || get_f64(f, arch, "rope.scaling.yarn_beta_slow", &bs) < 0 ||
             get_f64_z(f, arch, "rope.scaling.yarn_log_multiplier", &log_mul) < 0))
            return load_fail(m);
        if (!(bf > 0.0 && bf < 1e6 && bs > 0.0 && bs < 1e6 && log_mul >= 0.0 && log_mul < 1e6)) {
            tern_set_error("YaRN's beta_fast %g, beta_slow %g or yarn_log_multiplier %g is out of range", bf, bs, log_mul);
            return load_fail(m);
        }
        m->rope_yarn = factor;
        m->rope_yarn_beta_fast = (float)bf, m->rope_yarn_beta_slow = (float)bs;
        /* llama.cpp (llama-context.cpp): get_mscale(factor, 1) / get_mscale(factor, log_mul) where the file sets a
         * log multiplier, else get_mscale(factor, 1); get_mscale(s, m) = 1 + 0.1 m ln s */
        m->rope_mscale = (float)(attn_factor * (0.1 * log(factor) + 1.0) / (log_mul != 0.0 ? 0.1 * log_mul * log(factor) + 1.0 : 1.0));
    }
    double temp = 0.0; /* Llama 4 / Mistral 3 attention temperature */
    if ((m->recipe->flags & TERN_RECIPE_YARN_PARAMS) && get_f64_z(f, arch, "attention.temperature_scale", &temp) < 0)
        return load_fail(m);
    if (temp != 0.0) {
        if (!(fabs(temp) < 1e6) || m->rope_yarn_ctx <= 0) {
            tern_set_error("attention.temperature_scale %g needs a positive original context (have %d)", temp, m->rope_yarn_ctx);
            return load_fail(m);
        }
        m->attn_temp = (float)temp, m->attn_temp_floor = m->rope_yarn_ctx;
    }
    if (gguf_find_tensor(f, "blk.0.ffn_gate_exps.weight")) {
        tern_set_error("mixture-of-experts %s models are not supported yet", arch);
        return load_fail(m);
    }
    int window = 0;
    if (m->recipe->swa_period > 0) {
        if (get_int(f, arch, "attention.sliding_window", &window, 1) < 0) return load_fail(m);
        m->rope_base_local = 10000.0; /* llama.cpp's rope_freq_base_train_swa default */
        if (get_f64(f, arch, "rope.freq_base_swa", &m->rope_base_local) < 0) return load_fail(m);
    }
    /* Gemma 3 27B scales q by 1/sqrt(n_embd / n_head), the others by 1/sqrt(head_dim) (llama.cpp gemma3.cpp, after
     * gemma_pytorch config.py) */
    if (!strcmp(arch, "gemma3") && m->n_layer == 62) m->attn_scale = 1.0f / sqrtf((float)(m->n_embd / m->n_head));

    /* tokenizer */
    const char *tok_model = gguf_get_cstr(f, "tokenizer.ggml.model");
    if (!tok_model && gguf_get(f, "tokenizer.ggml.model")) {
        tern_set_error("metadata tokenizer.ggml.model must be a string");
        return load_fail(m);
    }
    if (tok_model && strcmp(tok_model, "no_vocab") != 0 && strcmp(tok_model, "none") != 0) {
        m->vocab = tern_vocab_load(f);
        if (!m->vocab) return load_fail(m);
    }
    const char *tmpl = gguf_get_cstr(f, "tokenizer.chat_template");
    if (tmpl) m->chat_template = strdup(tmpl);

    /* weights */
    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te) { tern_set_error("model is missing tensor 'token_embd.weight'"); return load_fail(m); }
    if (te->ne[1] < 1 || te->ne[1] > lim) {
        tern_set_error("tensor 'token_embd.weight' has %lld rows (out of range)", (long long)te->ne[1]);
        return load_fail(m);
    }
    m->n_vocab = (int)te->ne[1];
    const int E = m->n_embd, hd = m->head_dim, Hq = m->n_head * hd, Hkv = m->n_head_kv * hd;
    const unsigned fl = m->recipe->flags;
    if (bind_weight(m, "token_embd.weight", E, m->n_vocab, &m->tok_embd, 1)) return load_fail(m);
    int r = bind_weight(m, "output.weight", E, m->n_vocab, &m->output, 0);
    if (r < 0) return load_fail(m);
    if (r == 1) m->output = m->tok_embd; /* tied embeddings */
    if (bind_vec(m, "output_norm.weight", E, &m->output_norm, 1) < 0) return load_fail(m);
    if (bind_vec(m, "rope_freqs.weight", m->n_rot / 2, &m->rope_factors, 0) < 0) return load_fail(m);
    /* LongRoPE (Phi-3 128k): two factor sets, the long one for contexts past rope.scaling.original_context_length */
    if (bind_vec(m, "rope_factors_long.weight", m->n_rot / 2, &m->rope_long, 0) < 0 ||
        bind_vec(m, "rope_factors_short.weight", m->n_rot / 2, &m->rope_short, 0) < 0)
        return load_fail(m);
    if (!m->rope_long != !m->rope_short || (m->rope_long && m->rope_factors)) {
        tern_set_error("%s: LongRoPE needs both rope_factors_long and rope_factors_short, and no rope_freqs", arch);
        return load_fail(m);
    }
    for (int i = 0; m->rope_long && i < m->n_rot / 2; i++)
        if (!(m->rope_long[i] > 0.0f && isfinite(m->rope_long[i]) && m->rope_short[i] > 0.0f && isfinite(m->rope_short[i]))) {
            tern_set_error("LongRoPE factor %d out of range (long %g, short %g)", i, m->rope_long[i], m->rope_short[i]);
            return load_fail(m);
        }
    for (int i = 0; m->rope_factors && i < m->n_rot / 2; i++)
        if (!isfinite(m->rope_factors[i]) || m->rope_factors[i] <= 0.0f) {
            tern_set_error("rope_freqs.weight[%d] = %g is out of range (must be finite and > 0)", i, m->rope_factors[i]);
            return load_fail(m);
        }
    if (m->vocab && tern_vocab_n_tokens(m->vocab) != m->n_vocab) {
        tern_set_error("tokenizer has %d tokens but token_embd has %d rows", tern_vocab_n_tokens(m->vocab),
                       m->n_vocab);
        return load_fail(m);
    }

    m->layers = tern_xcalloc((size_t)m->n_layer, sizeof(tern_layer));
    for (int i = 0; i < m->n_layer; i++) {
        tern_layer *l = &m->layers[i];
        char n[96];
        l->window = window;
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, i), n)
        /* q|k|v fused into attn_qkv (Phi-3) or three tensors; gate|up fused into ffn_up (Phi-3: no ffn_gate) or two */
        tern_weight fused;
        if (gguf_find_tensor(f, NAME("attn_qkv.weight"))) {
            if (bind_weight(m, n, E, (int64_t)Hq + 2 * (int64_t)Hkv, &fused, 1) < 0) return load_fail(m);
            l->wq = weight_rows(&fused, 0, Hq);
            l->wk = weight_rows(&fused, Hq, Hkv);
            l->wv = weight_rows(&fused, (int64_t)Hq + Hkv, Hkv);
            if (gguf_find_tensor(f, NAME("attn_qkv.bias"))) {
                tern_set_error("tensor '%s': a fused q|k|v bias is not supported yet", n);
                return load_fail(m);
            }
        } else if (bind_weight(m, NAME("attn_q.weight"), E, Hq, &l->wq, 1) < 0 ||
                   bind_weight(m, NAME("attn_k.weight"), E, Hkv, &l->wk, 1) < 0 ||
                   bind_weight(m, NAME("attn_v.weight"), E, Hkv, &l->wv, 1) < 0) {
            return load_fail(m);
        }
        if (!gguf_find_tensor(f, NAME("ffn_gate.weight"))) {
            if (bind_weight(m, NAME("ffn_up.weight"), E, 2 * (int64_t)m->n_ff, &fused, 1) < 0) return load_fail(m);
            l->w_gate = weight_rows(&fused, 0, m->n_ff);
            l->w_up = weight_rows(&fused, m->n_ff, m->n_ff);
        } else if (bind_weight(m, NAME("ffn_gate.weight"), E, m->n_ff, &l->w_gate, 1) < 0 ||
                   bind_weight(m, NAME("ffn_up.weight"), E, m->n_ff, &l->w_up, 1) < 0) {
            return load_fail(m);
        }
        if (bind_vec(m, NAME("attn_norm.weight"), E, &l->attn_norm, 1) < 0 ||
            bind_weight(m, NAME("attn_output.weight"), Hq, E, &l->wo, 1) < 0 ||
            bind_vec(m, NAME("attn_q.bias"), Hq, &l->bq, 0) < 0 || bind_vec(m, NAME("attn_k.bias"), Hkv, &l->bk, 0) < 0 ||
            bind_vec(m, NAME("attn_v.bias"), Hkv, &l->bv, 0) < 0 || bind_vec(m, NAME("attn_output.bias"), E, &l->bo, 0) < 0 ||
            bind_vec(m, NAME("ffn_norm.weight"), E, &l->ffn_norm, 1) < 0 ||
            bind_weight(m, NAME("ffn_down.weight"), m->n_ff, E, &l->w_down, 1) < 0)
            return load_fail(m);
        if ((fl & TERN_RECIPE_QK_NORM) && (bind_vec(m, NAME("attn_q_norm.weight"), hd, &l->q_norm, 1) < 0 ||
                                           bind_vec(m, NAME("attn_k_norm.weight"), hd, &l->k_norm, 1) < 0))
            return load_fail(m);
        if ((fl & TERN_RECIPE_POST_NORM) && (bind_vec(m, NAME("post_attention_norm.weight"), E, &l->attn_post_norm, 1) < 0 ||
                                             bind_vec(m, NAME("post_ffw_norm.weight"), E, &l->ffn_post_norm, 1) < 0))
            return load_fail(m);
#undef NAME
    }
    if ((uint64_t)m->n_tensors_used != f->n_tensors) {
        tern_set_error("the file has %llu tensors but a %d-layer %s model uses %d (wrong block_count?)",
                       (unsigned long long)f->n_tensors, m->n_layer, arch, m->n_tensors_used);
        return load_fail(m);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        m->n_params += (uint64_t)gguf_tensor_nelements(&f->tensors[i]);
        m->n_bytes += f->tensors[i].nbytes;
    }
    tern_model_finish(m);
    const char *name = gguf_get_cstr(f, "general.name");
    snprintf(m->desc, sizeof m->desc, "%s (%s, %.0fM params, %.1f MiB)", name ? name : path, arch,
             (double)m->n_params / 1e6, (double)m->n_bytes / (1024.0 * 1024.0));
    prefault(m, progress);
    return m;
}

int tern_model_n_vocab(const tern_model *m) { return m->n_vocab; }
int tern_model_n_ctx_train(const tern_model *m) { return m->n_ctx_train; }
int tern_model_n_embd(const tern_model *m) { return m->n_embd; }
int tern_model_n_layer(const tern_model *m) { return m->n_layer; }
const char *tern_model_desc(const tern_model *m) { return m->desc; }
const char *tern_model_arch(const tern_model *m) { return m->arch; }

const char *tern_model_weight_type(const tern_model *m) {
    static __thread char name[16];
    uint64_t bytes[TERN_TYPE_COUNT] = {0};
    for (int il = 0; il < m->n_layer; il++) {
        const tern_layer *l = &m->layers[il];
        const tern_weight *ws[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int j = 0; j < 7; j++)
            if ((int)ws[j]->type >= 0 && (int)ws[j]->type < TERN_TYPE_COUNT)
                bytes[ws[j]->type] += (uint64_t)ws[j]->row_bytes * (uint64_t)ws[j]->n_out;
    }
    int best = m->tok_embd.type;
    for (int t = 0; t < TERN_TYPE_COUNT; t++)
        if (bytes[t] > bytes[best]) best = t;
    snprintf(name, sizeof name, "%s", tern_type_name(best));
    for (char *c = name; *c; c++)
        if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    return name;
}
const char *tern_model_file_type(const tern_model *m) {
    static const struct {
        unsigned id;
        const char *name;
    } names[] = { /* llama.h's llama_ftype values and llama_model_ftype_name's strings (llama.cpp of 2026-10) */
        {0, "all F32"},          {1, "F16"},           {2, "Q4_0"},          {3, "Q4_1"},
        {7, "Q8_0"},             {8, "Q5_0"},          {9, "Q5_1"},          {10, "Q2_K - Medium"},
        {11, "Q3_K - Small"},    {12, "Q3_K - Medium"}, {13, "Q3_K - Large"}, {14, "Q4_K - Small"},
        {15, "Q4_K - Medium"},   {16, "Q5_K - Small"}, {17, "Q5_K - Medium"}, {18, "Q6_K"},
        {19, "IQ2_XXS - 2.0625 bpw"}, {20, "IQ2_XS - 2.3125 bpw"}, {21, "Q2_K - Small"},
        {22, "IQ3_XS - 3.3 bpw"}, {23, "IQ3_XXS - 3.0625 bpw"}, {24, "IQ1_S - 1.5625 bpw"},
        {25, "IQ4_NL - 4.5 bpw"}, {28, "IQ2_S - 2.5 bpw"}, {29, "IQ2_M - 2.7 bpw"}, {31, "IQ1_M - 1.75 bpw"},
        {32, "BF16"},            {36, "TQ1_0 - 1.69 bpw ternary"}, {37, "TQ2_0 - 2.06 bpw ternary"},
    };
    uint64_t v;
    if (!m->gguf || gguf_get_u64(m->gguf, "general.file_type", &v) != 0) return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].id == v) return names[i].name;
    return NULL;
}
uint64_t tern_model_n_params(const tern_model *m) { return m->n_params; }
uint64_t tern_model_size_bytes(const tern_model *m) { return m->n_bytes; }
const char *tern_model_chat_template(const tern_model *m) { return m->chat_template; }

int tern_model_tokenize(const tern_model *m, const char *text, size_t len, int add_bos, int special, int32_t *out,
                        int max) {
    if (!m->vocab) {
        tern_set_error("this model has no tokenizer (tokenizer.ggml.model is absent or no_vocab): token ids only");
        return -1;
    }
    return tern_tokenize(m->vocab, text, len, add_bos, special, out, max);
}

int tern_model_tokenize_ex(const tern_model *m, const char *text, size_t len, int add_bos, int special, int32_t *out,
                           int max, size_t *n_dropped) {
    if (!m->vocab) return tern_model_tokenize(m, text, len, add_bos, special, out, max);
    return tern_tokenize_ex(m->vocab, text, len, add_bos, special, out, max, n_dropped);
}

int tern_model_add_bos(const tern_model *m) { return m->vocab ? tern_vocab_add_bos(m->vocab) : 0; }

int tern_model_token_to_piece(const tern_model *m, int32_t id, char *buf, int buflen, int show_special) {
    if (!m->vocab) return snprintf(buf, (size_t)buflen, "[%d]", id);
    return tern_token_to_piece(m->vocab, id, buf, buflen, show_special);
}

int tern_model_is_eog(const tern_model *m, int32_t id) { return m->vocab ? tern_vocab_is_eog(m->vocab, id) : 0; }
