/* safetensors.c: an HF checkpoint directory as a gguf_file (safetensors.h).
 *
 * safetensors format (huggingface/safetensors README): u64 little-endian N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}, "__metadata__": {...}},
 * then the data; offsets are relative to the byte after the header, row-major, little-endian.
 * The view: a GGUF header image built with gguf_writer (metadata and tensor directory), its tensors' data pointing
 * into the mmapped files (or into permuted copies), opened with gguf_open_header. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_write.h"
#include "quant.h"
#include "util.h"

#define MAX_FILES 512
#define MAX_HEADER ((uint64_t)100 << 20) /* safetensors' own limit on the JSON header */

typedef struct {
    char *gguf_name;
    int type, n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* ggml order: ne[0] innermost */
    const void *data;
} st_tensor;

/* What the gguf_file keeps alive until gguf_close: the mappings and the permuted copies. */
typedef struct {
    void *map[MAX_FILES];
    size_t map_len[MAX_FILES];
    int n_map;
    void **owned;
    int n_owned, cap_owned;
} st_keep;

static void st_release(void *ud) {
    st_keep *k = ud;
    if (!k) return;
    for (int i = 0; i < k->n_map; i++) munmap(k->map[i], k->map_len[i]);
    for (int i = 0; i < k->n_owned; i++) free(k->owned[i]);
    free(k->owned);
    free(k);
}

static void keep_owned(st_keep *k, void *p) {
    if (k->n_owned == k->cap_owned) {
        k->cap_owned = k->cap_owned ? 2 * k->cap_owned : 64;
        k->owned = realloc(k->owned, sizeof(void *) * (size_t)k->cap_owned);
        if (!k->owned) { fputs("tern: out of memory\n", stderr); abort(); }
    }
    k->owned[k->n_owned++] = p;
}

int tern_is_hf_dir(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", path);
    return access(p, R_OK) == 0;
}

/* The whole of dir/name, NUL-terminated; NULL if absent (optional) or unreadable (error set). */
static char *slurp(const char *dir, const char *name, int required) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) {
        if (required) tern_set_error("cannot open '%s': %s", p, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, r;
    char *b = tern_xmalloc(cap);
    while ((r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) b = realloc(b, cap *= 2);
        if (!b) { fputs("tern: out of memory\n", stderr); abort(); }
    }
    fclose(f);
    b[n] = 0;
    return b;
}

/* NULL: absent (an error only where required) or not JSON (always an error, *invalid = 1 where given) */
static cJSON *parse_json(const char *dir, const char *name, int required, int *invalid) {
    if (invalid) *invalid = 0;
    char *s = slurp(dir, name, required);
    if (!s) return NULL;
    cJSON *j = cJSON_Parse(s);
    free(s);
    if (!j) {
        tern_set_error("%s/%s is not valid JSON", dir, name);
        if (invalid) *invalid = 1;
    }
    return j;
}

static const cJSON *jget(const cJSON *o, const char *k) { return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }
static int jnum(const cJSON *o, const char *k, double *v) {
    const cJSON *x = jget(o, k);
    if (!cJSON_IsNumber(x)) return -1;
    *v = x->valuedouble;
    return 0;
}
/* an optional number of config.json: absent or null keeps *v; any other non-number is an error (a "1e6" string
 * silently read as the default would change the model's output) */
static int jnum_opt(const char *dir, const cJSON *o, const char *k, double *v) {
    const cJSON *x = jget(o, k);
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x)) {
        tern_set_error("%s/config.json: '%s' must be a number", dir, k);
        return -1;
    }
    *v = x->valuedouble;
    return 0;
}
static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *x = jget(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* ---- tensor names ---------------------------------------------------------------------------------------- */

/* HF name -> GGUF name (convert_hf_to_gguf.py's tensor map for llama/qwen2/qwen3). 1: mapped, 0: skipped
 * (rotary inv_freq), -1: unknown. *perm: 1 q rows, 2 k rows to permute (llama). */
static int map_name(const char *hf, const char *arch, char *out, size_t n, int *perm) {
    static const struct { const char *hf, *gguf; } top[] = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},
    };
    static const struct { const char *hf, *gguf; int perm; } layer[] = {
        {"self_attn.q_proj.weight", "attn_q.weight", 1},  {"self_attn.k_proj.weight", "attn_k.weight", 2},
        {"self_attn.v_proj.weight", "attn_v.weight", 0},  {"self_attn.o_proj.weight", "attn_output.weight", 0},
        {"self_attn.q_proj.bias", "attn_q.bias", 1},      {"self_attn.k_proj.bias", "attn_k.bias", 2},
        {"self_attn.v_proj.bias", "attn_v.bias", 0},      {"self_attn.o_proj.bias", "attn_output.bias", 0},
        {"self_attn.q_norm.weight", "attn_q_norm.weight", 0}, {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
        {"mlp.gate_proj.weight", "ffn_gate.weight", 0},   {"mlp.up_proj.weight", "ffn_up.weight", 0},
        {"mlp.down_proj.weight", "ffn_down.weight", 0},   {"input_layernorm.weight", "attn_norm.weight", 0},
        {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
    };
    *perm = 0;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(hf, top[i].hf)) { snprintf(out, n, "%s", top[i].gguf); return 1; }
    int il, off = 0;
    if (sscanf(hf, "model.layers.%d.%n", &il, &off) == 1 && off > 0 && il >= 0) {
        const char *rest = hf + off;
        if (strstr(rest, "rotary_emb.inv_freq")) return 0;
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++)
            if (!strcmp(rest, layer[i].hf)) {
                snprintf(out, n, "blk.%d.%s", il, layer[i].gguf);
                *perm = !strcmp(arch, "llama") ? layer[i].perm : 0;
                return 1;
            }
    }
    return -1;
}

/* convert_hf_to_gguf.py LlamaModel.permute: the rows of each head from HF's (half, i) order into GGUF's (i, half):
 * GGUF row h*hd + 2i + half <- HF row h*hd + half*hd/2 + i. rows = n_head * hd rows of row_bytes each. */
static void *permute_rows(const void *src, int64_t rows, size_t row_bytes, int n_head) {
    uint8_t *dst = tern_xmalloc((size_t)rows * row_bytes);
    const int64_t hd = rows / n_head;
    for (int64_t h = 0; h < n_head; h++)
        for (int64_t i = 0; i < hd / 2; i++)
            for (int half = 0; half < 2; half++)
                memcpy(dst + (size_t)(h * hd + 2 * i + half) * row_bytes,
                       (const uint8_t *)src + (size_t)(h * hd + half * hd / 2 + i) * row_bytes, row_bytes);
    return dst;
}

/* ---- one .safetensors file ------------------------------------------------------------------------------- */

static int read_file(const char *path, const char *arch, int n_head, int n_head_kv, st_keep *keep, st_tensor **ts,
                     int *n_ts, int *cap_ts) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { tern_set_error("cannot open '%s': %s", path, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 8) {
        close(fd);
        tern_set_error("'%s' is not a safetensors file (too short)", path);
        return -1;
    }
    const size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { tern_set_error("cannot mmap '%s': %s", path, strerror(errno)); return -1; }
    if (keep->n_map == MAX_FILES) { munmap(map, size); tern_set_error("more than %d safetensors files", MAX_FILES); return -1; }
    keep->map[keep->n_map] = map;
    keep->map_len[keep->n_map++] = size;
    uint64_t hlen;
    memcpy(&hlen, map, 8);
    if (hlen > MAX_HEADER || hlen > size - 8) {
        tern_set_error("'%s': bad safetensors header length %llu (file of %zu bytes)", path, (unsigned long long)hlen, size);
        return -1;
    }
    cJSON *h = cJSON_ParseWithLength((const char *)map + 8, (size_t)hlen);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        tern_set_error("'%s': the safetensors header is not a JSON object", path);
        return -1;
    }
    const uint8_t *data = (const uint8_t *)map + 8 + hlen;
    const size_t data_len = size - 8 - (size_t)hlen;
    const cJSON *e;
    int rc = 0;
    /* the byte ranges of this file's tensors, checked for overlap after the walk (an overlapping header would
     * alias two weights) */
    const int n_entries = cJSON_GetArraySize(h);
    double(*rng)[2] = tern_xmalloc(sizeof *rng * (size_t)(n_entries > 0 ? n_entries : 1));
    const char **rname = tern_xmalloc(sizeof *rname * (size_t)(n_entries > 0 ? n_entries : 1));
    int n_rng = 0;
    cJSON_ArrayForEach(e, h) {
        if (!strcmp(e->string, "__metadata__")) continue;
        char gname[256];
        int perm;
        const int mapped = map_name(e->string, arch, gname, sizeof gname, &perm);
        if (mapped == 0) continue;
        if (mapped < 0) { tern_set_error("'%s': tensor '%s' is not one tern maps for %s", path, e->string, arch); rc = -1; break; }
        const char *dt = jstr(e, "dtype");
        const cJSON *shape = jget(e, "shape"), *offs = jget(e, "data_offsets");
        int type;
        size_t esz;
        if (dt && !strcmp(dt, "F32")) { type = TERN_TYPE_F32; esz = 4; }
        else if (dt && !strcmp(dt, "F16")) { type = TERN_TYPE_F16; esz = 2; }
        else if (dt && !strcmp(dt, "BF16")) { type = TERN_TYPE_BF16; esz = 2; }
        else { tern_set_error("'%s': tensor '%s' has dtype %s (tern reads F32, F16, BF16)", path, e->string, dt ? dt : "?"); rc = -1; break; }
        const int nd = cJSON_GetArraySize(shape);
        if (!cJSON_IsArray(shape) || nd < 1 || nd > GGUF_MAX_DIMS || !cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2) {
            tern_set_error("'%s': tensor '%s' has a bad shape or data_offsets", path, e->string);
            rc = -1;
            break;
        }
        st_tensor t = {0};
        t.type = type;
        t.n_dims = nd;
        uint64_t nel = 1;
        for (int d = 0; d < GGUF_MAX_DIMS; d++) t.ne[d] = 1;
        for (int d = 0; d < nd; d++) {
            const double v = cJSON_GetArrayItem(shape, d)->valuedouble;
            if (!(v >= 1 && v <= (double)((int64_t)1 << 40))) { rc = -1; break; }
            t.ne[nd - 1 - d] = (int64_t)v; /* row-major [rows, cols] -> ggml [cols, rows] */
            if (nel > (UINT64_MAX >> 1) / (uint64_t)v) { rc = -1; break; }
            nel *= (uint64_t)v;
        }
        const double b = cJSON_GetArrayItem(offs, 0)->valuedouble, en = cJSON_GetArrayItem(offs, 1)->valuedouble;
        if (rc || !(b >= 0 && en >= b && en <= (double)data_len) || (uint64_t)(en - b) / esz != nel || (uint64_t)(en - b) % esz) {
            tern_set_error("'%s': tensor '%s': data_offsets [%.0f, %.0f] do not hold its %llu elements in %zu bytes of data",
                           path, e->string, b, en, (unsigned long long)nel, data_len);
            rc = -1;
            break;
        }
        t.data = data + (size_t)b;
        if (en > b) {
            rng[n_rng][0] = b, rng[n_rng][1] = en;
            rname[n_rng++] = e->string;
        }
        if (perm) { /* q: n_head heads; k: n_head_kv (convert_hf_to_gguf.py permute) */
            const int nh = perm == 1 ? n_head : n_head_kv;
            const int64_t rows = nd == 1 ? t.ne[0] : t.ne[1];
            const size_t row_bytes = nd == 1 ? esz : esz * (size_t)t.ne[0];
            if (nh <= 0 || rows % (2 * nh) != 0) {
                tern_set_error("'%s': tensor '%s': %lld rows do not split into %d heads of RoPE pairs", path, e->string,
                               (long long)rows, nh);
                rc = -1;
                break;
            }
            void *p = permute_rows(t.data, rows, row_bytes, nh);
            keep_owned(keep, p);
            t.data = p;
        }
        /* convert_hf_to_gguf.py writes 1-D tensors and norms as F32 ("n_dims <= 1 or new_name.endswith('_norm.weight')":
         * llama.cpp's ops take them as F32 only), while a BF16/F16 checkpoint ships them in its own dtype: widened
         * here too (exact), so the view and what tern quantize writes from it hold F32 there, as the converted GGUF */
        const size_t gl = strlen(gname);
        if (type != TERN_TYPE_F32 && (nd == 1 || (gl >= 12 && !strcmp(gname + gl - 12, "_norm.weight")))) {
            float *w = tern_xmalloc(sizeof(float) * (size_t)nel);
            tern_dequantize_row((enum tern_type)type, t.data, w, (int64_t)nel);
            keep_owned(keep, w);
            t.data = w;
            t.type = TERN_TYPE_F32;
        }
        t.gguf_name = strdup(gname);
        if (*n_ts == *cap_ts) {
            *cap_ts = *cap_ts ? 2 * *cap_ts : 256;
            *ts = realloc(*ts, sizeof(st_tensor) * (size_t)*cap_ts);
            if (!*ts) { fputs("tern: out of memory\n", stderr); abort(); }
        }
        (*ts)[(*n_ts)++] = t;
    }
    for (int i = 0; rc == 0 && i < n_rng; i++) /* n_rng is a few hundred at most: a pairwise check */
        for (int j = i + 1; j < n_rng; j++)
            if (rng[i][0] < rng[j][1] && rng[j][0] < rng[i][1]) {
                tern_set_error("'%s': tensors '%s' [%.0f, %.0f) and '%s' [%.0f, %.0f) overlap", path, rname[i], rng[i][0],
                               rng[i][1], rname[j], rng[j][0], rng[j][1]);
                rc = -1;
                break;
            }
    free(rng);
    free(rname);
    cJSON_Delete(h);
    return rc;
}

/* ---- tokenizer ------------------------------------------------------------------------------------------- */

/* tokenizer.json's pre_tokenizer -> tokenizer.ggml.pre (the families src/text/tokenizer.c knows), or NULL. */
static const char *detect_pre(const cJSON *pre) {
    const char *type = jstr(pre, "type");
    if (!type) return NULL;
    if (!strcmp(type, "ByteLevel")) return cJSON_IsFalse(jget(pre, "use_regex")) ? NULL : "gpt-2";
    if (strcmp(type, "Sequence") != 0) return NULL;
    const cJSON *list = jget(pre, "pretokenizers");
    int n = cJSON_GetArraySize(list), digits = 0, bytelevel_re = 0;
    const char *split = NULL;
    for (int i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(list, i);
        const char *t = jstr(p, "type");
        if (!t) return NULL;
        if (!strcmp(t, "Digits") && cJSON_IsTrue(jget(p, "individual_digits"))) digits = 1;
        else if (!strcmp(t, "ByteLevel")) bytelevel_re = !cJSON_IsFalse(jget(p, "use_regex"));
        else if (!strcmp(t, "Split")) split = jstr(jget(p, "pattern"), "Regex");
        else return NULL;
    }
    if (split) {
        if (strstr(split, "\\p{N}{1,3}")) return "llama-bpe";
        if (strstr(split, "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|")) return "qwen2";
        return NULL;
    }
    if (digits && bytelevel_re) return "smollm";
    if (bytelevel_re) return "gpt-2";
    return NULL;
}

/* id of a special token named in tokenizer_config.json (a string or {"content": ...}), or -1 */
static int64_t special_id(const cJSON *cfg_tok, const cJSON *added, const cJSON *vocab) {
    const char *s = cJSON_IsString(cfg_tok) ? cfg_tok->valuestring : jstr(cfg_tok, "content");
    if (!s) return -1;
    const cJSON *a;
    cJSON_ArrayForEach(a, added) {
        const char *c = jstr(a, "content");
        double id;
        if (c && !strcmp(c, s) && !jnum(a, "id", &id)) return (int64_t)id;
    }
    const cJSON *v = jget(vocab, s);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static int add_tokenizer(gguf_writer *w, const char *dir, const cJSON *cfg, int64_t n_vocab_cfg) {
    int invalid;
    cJSON *tj = parse_json(dir, "tokenizer.json", 0, &invalid);
    if (!tj) {
        if (invalid) return -1;
        gguf_writer_add_str(w, "tokenizer.ggml.model", "no_vocab"); /* ids only, as a GGUF without a vocabulary */
        return 0;
    }
    cJSON *tc = parse_json(dir, "tokenizer_config.json", 0, &invalid);
    if (invalid) {
        cJSON_Delete(tj);
        return -1;
    }
    const cJSON *model = jget(tj, "model"), *vocab = jget(model, "vocab"), *added = jget(tj, "added_tokens");
    const char *mtype = jstr(model, "type");
    int rc = -1;
    char **toks = NULL;
    int32_t *types = NULL;
    const char **merges = NULL;
    char **merge_buf = NULL;
    int64_t n = 0;
    if (!mtype || strcmp(mtype, "BPE") != 0 || cJSON_IsTrue(jget(model, "byte_fallback"))) {
        tern_set_error("%s/tokenizer.json: model type %s%s: tern reads byte-level BPE tokenizers (llama-3, qwen, "
                       "SmolLM) from tokenizer.json", dir, mtype ? mtype : "?",
                       cJSON_IsTrue(jget(model, "byte_fallback")) ? " with byte fallback" : "");
        goto out;
    }
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(jget(model, "merges")) || (added && !cJSON_IsArray(added))) {
        tern_set_error("%s/tokenizer.json: model.vocab must be an object, model.merges an array, added_tokens an array",
                       dir);
        goto out;
    }
    /* every id checked (a wrong one is an error, never skipped); the size: the largest id + 1, at least config.json's
     * vocab_size (llama.cpp pads with [PADi], unused) */
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (1 << 24)) {
            tern_set_error("%s/tokenizer.json: model.vocab['%.40s'] is not a token id", dir, e->string);
            goto out;
        }
        if (e->valuedouble + 1 > n) n = (int64_t)e->valuedouble + 1;
    }
    cJSON_ArrayForEach(e, added) {
        double id;
        if (jnum(e, "id", &id) || id < 0 || id >= (1 << 24) || !jstr(e, "content")) {
            tern_set_error("%s/tokenizer.json: an added_tokens entry without a token id and a content string", dir);
            goto out;
        }
        if (id + 1 > n) n = (int64_t)id + 1;
    }
    const char *pre = detect_pre(jget(tj, "pre_tokenizer"));
    if (!pre) { tern_set_error("%s/tokenizer.json: a pre-tokenizer tern does not recognise", dir); goto out; }
    if (n_vocab_cfg > n) n = n_vocab_cfg;
    if (n <= 0 || n > (1 << 24)) { tern_set_error("%s/tokenizer.json: %lld tokens", dir, (long long)n); goto out; }
    toks = tern_xcalloc((size_t)n, sizeof(char *));
    types = tern_xcalloc((size_t)n, sizeof(int32_t));
    cJSON_ArrayForEach(e, vocab) { /* ids checked above */
        const int64_t id = (int64_t)e->valuedouble;
        free(toks[id]);
        toks[id] = strdup(e->string);
        types[id] = 1; /* normal */
    }
    cJSON_ArrayForEach(e, added) {
        const int64_t id = (int64_t)jget(e, "id")->valuedouble; /* id and content checked above */
        free(toks[id]);
        toks[id] = strdup(jstr(e, "content"));
        types[id] = cJSON_IsTrue(jget(e, "special")) ? 3 : 4; /* control : user-defined */
    }
    for (int64_t i = 0; i < n; i++)
        if (!toks[i]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%lld]", (long long)i);
            toks[i] = strdup(pad);
            types[i] = 5; /* unused */
        }
    const cJSON *mj = jget(model, "merges");
    const int nm = cJSON_GetArraySize(mj);
    merges = tern_xcalloc((size_t)(nm ? nm : 1), sizeof(char *));
    merge_buf = tern_xcalloc((size_t)(nm ? nm : 1), sizeof(char *));
    for (int i = 0; i < nm; i++) {
        const cJSON *m = cJSON_GetArrayItem(mj, i);
        if (cJSON_IsString(m)) merges[i] = m->valuestring;
        else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                 cJSON_IsString(cJSON_GetArrayItem(m, 1))) { /* the newer [a, b] form */
            const char *a = cJSON_GetArrayItem(m, 0)->valuestring, *b = cJSON_GetArrayItem(m, 1)->valuestring;
            merge_buf[i] = tern_xmalloc(strlen(a) + strlen(b) + 2);
            sprintf(merge_buf[i], "%s %s", a, b);
            merges[i] = merge_buf[i];
        } else { tern_set_error("%s/tokenizer.json: merge %d is neither \"a b\" nor [a, b]", dir, i); goto out; }
    }
    gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_writer_add_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, (uint64_t)n);
    gguf_value tt = {.type = GGUF_VT_ARRAY, .elem_type = GGUF_VT_I32, .count = (uint64_t)n, .data = types};
    gguf_writer_add_value(w, "tokenizer.ggml.token_type", &tt); /* an i32 array, as the GGUF convention has it */
    gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", merges, (uint64_t)nm);
    /* special tokens: tokenizer_config.json's names, else config.json's ids */
    static const char *const sp[][3] = {{"bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id"},
                                        {"eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id"},
                                        {"unk_token", "unk_token_id", "tokenizer.ggml.unknown_token_id"},
                                        {"pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id"}};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        int64_t id = special_id(jget(tc, sp[i][0]), added, vocab);
        double v;
        if (id < 0 && !jnum(cfg, sp[i][1], &v)) id = (int64_t)v;
        if (id >= 0 && id < n) gguf_writer_add_u32(w, sp[i][2], (uint32_t)id);
    }
    const cJSON *ab = jget(tc, "add_bos_token");
    if (cJSON_IsBool(ab)) gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(ab));
    const cJSON *ct = jget(tc, "chat_template");
    if (cJSON_IsString(ct)) gguf_writer_add_str(w, "tokenizer.chat_template", ct->valuestring);
    else if (cJSON_IsArray(ct)) { /* [{"name": "default", "template": ...}, ...] */
        const cJSON *t;
        cJSON_ArrayForEach(t, ct) {
            const char *nm2 = jstr(t, "name"), *tt = jstr(t, "template");
            if (nm2 && tt && !strcmp(nm2, "default")) gguf_writer_add_str(w, "tokenizer.chat_template", tt);
        }
    }
    rc = 0;
out:
    if (toks) for (int64_t i = 0; i < n; i++) free(toks[i]);
    free(toks);
    free(types);
    if (merge_buf) for (int i = 0; i < cJSON_GetArraySize(mj); i++) free(merge_buf[i]);
    free(merge_buf);
    free(merges);
    cJSON_Delete(tc);
    cJSON_Delete(tj);
    return rc;
}

/* ---- the directory --------------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

gguf_file *tern_safetensors_open(const char *dir) {
    cJSON *cfg = parse_json(dir, "config.json", 1, NULL);
    if (!cfg) return NULL;
    st_keep *keep = tern_xcalloc(1, sizeof *keep);
    gguf_writer *w = gguf_writer_new();
    st_tensor *ts = NULL;
    int n_ts = 0, cap_ts = 0, ok = 0;
    char *files[MAX_FILES];
    int n_files = 0;
    gguf_file *f = NULL;

    const char *mt = jstr(cfg, "model_type");
    const char *arch = !mt ? NULL : !strcmp(mt, "llama") || !strcmp(mt, "mistral") ? "llama"
                                 : !strcmp(mt, "qwen2") ? "qwen2" : !strcmp(mt, "qwen3") ? "qwen3" : NULL;
    if (!arch) {
        tern_set_error("%s/config.json: model_type '%s' (tern reads llama, mistral, qwen2, qwen3 checkpoints)", dir,
                       mt ? mt : "(none)");
        goto done;
    }
    double hidden, layers, ff, heads, kv_heads, eps = 1e-5, theta = 10000, ctx = 4096, vocab = 0, hd = 0;
    if (jnum(cfg, "hidden_size", &hidden) || jnum(cfg, "num_hidden_layers", &layers) ||
        jnum(cfg, "intermediate_size", &ff) || jnum(cfg, "num_attention_heads", &heads)) {
        tern_set_error("%s/config.json lacks hidden_size, num_hidden_layers, intermediate_size or num_attention_heads", dir);
        goto done;
    }
    kv_heads = heads;
    if (jnum_opt(dir, cfg, "num_key_value_heads", &kv_heads) || jnum_opt(dir, cfg, "rms_norm_eps", &eps) ||
        jnum_opt(dir, cfg, "rope_theta", &theta) || jnum_opt(dir, cfg, "max_position_embeddings", &ctx) ||
        jnum_opt(dir, cfg, "vocab_size", &vocab) || jnum_opt(dir, cfg, "head_dim", &hd))
        goto done;
    const int explicit_hd = hd > 0;
    if (!explicit_hd) hd = heads > 0 ? hidden / heads : 0;
    if (!(hidden >= 1 && layers >= 1 && heads >= 1 && kv_heads >= 1 && hd >= 1 && hidden < 1e6 && layers < 1e4 &&
          heads < 1e4 && ff >= 1 && ff < 1e7)) {
        tern_set_error("%s/config.json: hyperparameters out of range", dir);
        goto done;
    }
    char key[128];
#define KEY(s) (snprintf(key, sizeof key, "%s." s, arch), key)
    gguf_writer_add_str(w, "general.architecture", arch);
    const char *slash = strrchr(dir, '/');
    const char *base = slash && slash[1] ? slash + 1 : dir;
    gguf_writer_add_str(w, "general.name", base);
    gguf_writer_add_u32(w, KEY("context_length"), (uint32_t)ctx);
    gguf_writer_add_u32(w, KEY("embedding_length"), (uint32_t)hidden);
    gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)layers);
    gguf_writer_add_u32(w, KEY("feed_forward_length"), (uint32_t)ff);
    gguf_writer_add_u32(w, KEY("attention.head_count"), (uint32_t)heads);
    gguf_writer_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)kv_heads);
    gguf_writer_add_f32(w, KEY("attention.layer_norm_rms_epsilon"), (float)eps);
    gguf_writer_add_f32(w, KEY("rope.freq_base"), (float)theta);
    gguf_writer_add_u32(w, KEY("rope.dimension_count"), (uint32_t)hd);
    if (explicit_hd) {
        gguf_writer_add_u32(w, KEY("attention.key_length"), (uint32_t)hd);
        gguf_writer_add_u32(w, KEY("attention.value_length"), (uint32_t)hd);
    }
    if (vocab > 0) gguf_writer_add_u32(w, KEY("vocab_size"), (uint32_t)vocab);
    const cJSON *rs = jget(cfg, "rope_scaling");
    if (rs && !cJSON_IsNull(rs)) {
        const char *rt = jstr(rs, "rope_type") ? jstr(rs, "rope_type") : jstr(rs, "type");
        double factor;
        if (!rt || strcmp(rt, "linear") != 0 || jnum(rs, "factor", &factor)) {
            tern_set_error("%s/config.json: rope_scaling of type '%s' (tern reads linear scaling from config.json)", dir,
                           rt ? rt : "?");
            goto done;
        }
        gguf_writer_add_str(w, KEY("rope.scaling.type"), "linear");
        gguf_writer_add_f32(w, KEY("rope.scaling.factor"), (float)factor);
    }
#undef KEY
    if (add_tokenizer(w, dir, cfg, (int64_t)vocab) != 0) goto done;

    /* the safetensors files, in name order (model-00001-of-00002 ...) */
    DIR *d = opendir(dir);
    if (!d) { tern_set_error("cannot read directory '%s': %s", dir, strerror(errno)); goto done; }
    struct dirent *de;
    while ((de = readdir(d))) {
        const size_t l = strlen(de->d_name);
        if (l > 12 && !strcmp(de->d_name + l - 12, ".safetensors") && n_files < MAX_FILES) files[n_files++] = strdup(de->d_name);
    }
    closedir(d);
    if (!n_files) { tern_set_error("%s has config.json but no *.safetensors file", dir); goto done; }
    qsort(files, (size_t)n_files, sizeof files[0], cmp_str);
    for (int i = 0; i < n_files; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        if (read_file(p, arch, (int)heads, (int)kv_heads, keep, &ts, &n_ts, &cap_ts) != 0) goto done;
    }
    for (int i = 0; i < n_ts; i++)
        if (gguf_writer_add_tensor(w, ts[i].gguf_name, ts[i].n_dims, ts[i].ne, ts[i].type) != 0) goto done;

    /* the header image, then the view */
    char *img = NULL;
    size_t img_len = 0;
    FILE *ms = open_memstream(&img, &img_len);
    if (!ms || gguf_writer_write_header(w, ms) != 0 || fclose(ms) != 0) {
        tern_set_error("cannot build the GGUF view of '%s'", dir);
        free(img);
        goto done;
    }
    const void **data = tern_xmalloc(sizeof(void *) * (size_t)(n_ts ? n_ts : 1));
    for (int i = 0; i < n_ts; i++) data[i] = ts[i].data;
    f = gguf_open_header(img, img_len, data, st_release, keep);
    free(data);
    keep = NULL; /* gguf_open_header owns it now, on success and on error */
    ok = f != NULL;
done:
    if (!ok && keep) st_release(keep);
    for (int i = 0; i < n_ts; i++) free(ts[i].gguf_name);
    free(ts);
    for (int i = 0; i < n_files; i++) free(files[i]);
    gguf_writer_free(w);
    cJSON_Delete(cfg);
    return ok ? f : NULL;
}

gguf_file *tern_weights_open(const char *path) {
    return tern_is_hf_dir(path) ? tern_safetensors_open(path) : gguf_open(path);
}
