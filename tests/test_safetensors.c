/* test_safetensors: an HF checkpoint directory (config.json, *.safetensors, tokenizer.json, tokenizer_config.json)
 * loads as the GGUF it converts to, for each recipe the loader maps (llama, qwen2, qwen3).
 * llama: tests/gen_hf_fixture.py makes both from the default model (2 layers, F16 matrices, two shards; q/k rows in
 * HF's rotate-half order in the directory, GGUF's interleaved order in the file). Checked: the hyperparameters, the
 * tokenizer (ids of texts with and without control tokens, BOS, EOG, the chat template) and every row's logits of an
 * 18-token prompt, bit for bit.
 * qwen2, qwen3: gen_hf_fixture.py --from makes the directory from the tiny random GGUFs of tests/fixtures/recipes/
 * (F32, untied lm_head; qwen2's q/k/v biases, qwen3's q_norm/k_norm and head_dim; q/k rows NOT permuted: these
 * recipes rotate HF's order with NEOX RoPE; Qwen's tokenizer.json: the Split regex, control tokens in added_tokens
 * only, merges as "a b" (qwen2) and [a, b] (qwen3)). Checked: the recipe and hyperparameters as loaded, the
 * tokenizer, and every row's logits of the fixture's 40 ids, bit for bit.
 * qwen3 in BF16: gen_hf_fixture.py --from ... --bf16 writes the directory with every tensor BF16 (norms too, as HF
 * ships them; the safetensors file written by hand from the format, then read back through the safetensors package)
 * and the GGUF convert_hf_to_gguf.py --outtype bf16 makes of it (matrices BF16, 1-D tensors and norms F32). Checked as
 * qwen3, plus: the view's tensors carry the GGUF's types (BF16 matrices, norms widened to F32) and the bound weights
 * are BF16; and the check can fail: one bit flipped in one BF16 weight of the file changes the logits.
 * Each directory also quantizes (tern quantize, Q8_0) to the GGUF's bytes. And broken directories give one error
 * line, never a crash (bad JSON, unknown model_type, a truncated or lying safetensors header, an unknown dtype or
 * tensor name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gguf.h"
#include "model.h"
#include "tern.h"
#include "util.h"

static char tmp[] = "/tmp/tern-hf-XXXXXX";

static const char *python(void) {
    const char *p = getenv("TERN_PYTHON");
    if (p && *p) return p;
    return access(".venv/bin/python3", X_OK) == 0 ? ".venv/bin/python3" : "python3";
}

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* a directory with config.json and one safetensors file holding header (JSON) + nbytes of zeros */
static void make_bad(const char *dir, const char *config, const char *header, size_t nbytes) {
    mkdir(dir, 0755);
    write_file(dir, "config.json", config, strlen(config));
    uint64_t hl = strlen(header);
    size_t n = 8 + hl + nbytes;
    char *b = calloc(1, n);
    memcpy(b, &hl, 8);
    memcpy(b + 8, header, hl);
    write_file(dir, "model.safetensors", b, n);
    free(b);
}

static void check_bad(void) {
    static const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
                             "\"intermediate_size\": 128, \"num_attention_heads\": 2, \"vocab_size\": 32}";
    static const struct { const char *what, *config, *header, *want; size_t nbytes; } cases[] = {
        {"bad config JSON", "{\"model_type\": ", "{}", "not valid JSON", 0},
        {"unknown model_type", "{\"model_type\": \"gpt_neox\"}", "{}", "model_type 'gpt_neox'", 0},
        {"header not JSON", NULL, "{\"a\": [", "not a JSON object", 0},
        {"offsets past the end", NULL,
         "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [64], \"data_offsets\": [0, 256]}}", "data_offsets", 16},
        {"size mismatch", NULL,
         "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [64], \"data_offsets\": [0, 200]}}", "data_offsets", 256},
        {"dtype", NULL, "{\"model.norm.weight\": {\"dtype\": \"I8\", \"shape\": [64], \"data_offsets\": [0, 64]}}",
         "dtype I8", 64},
        {"unknown tensor", NULL,
         "{\"model.vision.weight\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", "not one tern maps", 16},
        {"odd rows for RoPE", NULL,
         "{\"model.layers.0.self_attn.q_proj.weight\": {\"dtype\": \"F16\", \"shape\": [6, 64], \"data_offsets\": [0, 768]}}",
         "RoPE pairs", 768},
        {"overlapping tensors", NULL,
         "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [64], \"data_offsets\": [0, 256]}, "
         "\"model.layers.0.input_layernorm.weight\": {\"dtype\": \"F32\", \"shape\": [64], \"data_offsets\": [128, 384]}}",
         "overlap", 384},
        {"missing tensors", NULL, "{}", "0 layers", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/bad%zu", tmp, i);
        make_bad(dir, cases[i].config ? cases[i].config : cfg, cases[i].header, cases[i].nbytes);
        tern_model *m = tern_model_load(dir, 0);
        CHECK(m == NULL && strstr(tern_last_error(), cases[i].want) && !strchr(tern_last_error(), '\n'),
              "%s: %s", cases[i].what, m ? "loaded" : tern_last_error());
        tern_model_free(m);
    }
    /* config.json's optional numbers: a wrong type is an error (not the default), null is absent; tokenizer.json's
     * parts: a wrong type is an error, not an empty vocabulary or merge list (the good tokenizer then fails on the
     * empty safetensors file, past the tokenizer) */
    static const char *tk_good = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}, "
                                 "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}";
    static const struct { const char *what, *config, *tok, *tok_cfg, *want; } cases2[] = {
        {"rope_theta a string", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
         "\"intermediate_size\": 128, \"num_attention_heads\": 2, \"rope_theta\": \"1000000.0\"}", NULL, NULL,
         "'rope_theta' must be a number"},
        {"rms_norm_eps a list", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
         "\"intermediate_size\": 128, \"num_attention_heads\": 2, \"rms_norm_eps\": [1e-5]}", NULL, NULL,
         "'rms_norm_eps' must be a number"},
        {"head_dim null is absent", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
         "\"intermediate_size\": 128, \"num_attention_heads\": 2, \"head_dim\": null}", NULL, NULL, "0 layers"},
        {"merges null", NULL,
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": null}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
         NULL, "model.merges an array"},
        {"a vocab id as a string", NULL,
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
         NULL, "is not a token id"},
        {"an added token without an id", NULL,
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
         "\"added_tokens\": [{\"id\": \"1\", \"content\": \"x\"}]}", NULL, "added_tokens entry"},
        {"tokenizer_config.json not JSON", NULL, NULL, "{\"bos_token\": ", "not valid JSON"},
        {"the good tokenizer", NULL, NULL, NULL, "0 layers"},
    };
    for (size_t i = 0; i < sizeof cases2 / sizeof cases2[0]; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/bad2-%zu", tmp, i);
        make_bad(dir, cases2[i].config ? cases2[i].config : cfg, "{}", 0);
        const char *tk = cases2[i].tok ? cases2[i].tok : tk_good;
        write_file(dir, "tokenizer.json", tk, strlen(tk));
        if (cases2[i].tok_cfg) write_file(dir, "tokenizer_config.json", cases2[i].tok_cfg, strlen(cases2[i].tok_cfg));
        tern_model *m = tern_model_load(dir, 0);
        CHECK(m == NULL && strstr(tern_last_error(), cases2[i].want) && !strchr(tern_last_error(), '\n'),
              "%s: %s", cases2[i].what, m ? "loaded" : tern_last_error());
        tern_model_free(m);
    }
    /* a truncated file: header length past the end */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/trunc", tmp);
    make_bad(dir, cfg, "{}", 0);
    uint64_t big = 1u << 20;
    char p[700];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "r+b");
    if (f) {
        fwrite(&big, 8, 1, f);
        fclose(f);
    }
    tern_model *m = tern_model_load(dir, 0);
    CHECK(m == NULL && strstr(tern_last_error(), "header length"), "truncated header: %s", m ? "loaded" : tern_last_error());
    tern_model_free(m);
}

/* the tokenizers of a (the directory) and b (the GGUF): the model and pre-tokenizer names and token types the view
 * derives from tokenizer.json (a tiny vocabulary whose merges are all letter pairs tokenizes alike under most
 * pre-tokenizers, so the name is checked itself), ids of texts with and without control tokens, EOG ids */
static void check_same_vocab(tern_model *a, tern_model *b, const char *what) {
    static const char *keys[] = {"tokenizer.ggml.model", "tokenizer.ggml.pre"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *x = gguf_get_cstr(a->gguf, keys[k]), *y = gguf_get_cstr(b->gguf, keys[k]);
        CHECK(x && y && !strcmp(x, y), "%s: %s '%s', the GGUF's '%s'", what, keys[k], x ? x : "(none)", y ? y : "(none)");
    }
    const gguf_value *ta = gguf_get_arr(a->gguf, "tokenizer.ggml.token_type", GGUF_VT_COUNT),
                     *tb = gguf_get_arr(b->gguf, "tokenizer.ggml.token_type", GGUF_VT_COUNT);
    uint64_t same_types = 0;
    for (uint64_t i = 0; ta && tb && i < ta->count && i < tb->count; i++) same_types += gguf_arr_i64(ta, i) == gguf_arr_i64(tb, i);
    CHECK(ta && tb && ta->count == tb->count && same_types == ta->count, "%s: token types: %llu equal", what,
          (unsigned long long)same_types);
    static const char *texts[] = {"The capital of France is", "<|im_start|>user\nHi 123 numbers!<|im_end|>\n",
                                  "  spaces\tand\ttabs\n\nnewlines", "héllo wörld ☕ 日本語", "it's <|endoftext|> there"};
    int32_t ia[256], ib[256];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (int special = 0; special < 2; special++) {
            int na = tern_model_tokenize(a, texts[i], strlen(texts[i]), 1, special, ia, 256);
            int nb = tern_model_tokenize(b, texts[i], strlen(texts[i]), 1, special, ib, 256);
            CHECK(na > 0 && na == nb && !memcmp(ia, ib, sizeof(int32_t) * (size_t)na), "%s: tokens of '%s' (special %d)",
                  what, texts[i], special);
        }
    CHECK(tern_model_add_bos(a) == tern_model_add_bos(b), "%s: add_bos differs", what);
    for (int32_t id = 0; id < tern_model_n_vocab(a); id++)
        if (tern_model_is_eog(a, id) != tern_model_is_eog(b, id)) { CHECK(0, "%s: EOG of %d differs", what, id); break; }
}

/* every row's logits of ids (n) through a and b: how many of the n * n_vocab are bit-equal */
static size_t equal_logits(tern_model *a, tern_model *b, const int32_t *ids, int n, const char *what) {
    const int nv = tern_model_n_vocab(a);
    float *la = tern_xmalloc(sizeof(float) * (size_t)n * (size_t)nv), *lb = tern_xmalloc(sizeof(float) * (size_t)n * (size_t)nv);
    tern_context *ca = tern_context_new(a, 64, 2), *cb = tern_context_new(b, 64, 2);
    const int ok = ca && cb && tern_eval(ca, ids, n, la, 1) == 0 && tern_eval(cb, ids, n, lb, 1) == 0;
    CHECK(ok, "%s: eval: %s", what, tern_last_error());
    size_t same = 0;
    for (size_t i = 0; ok && i < (size_t)n * (size_t)nv; i++) same += la[i] == lb[i];
    tern_context_free(ca);
    tern_context_free(cb);
    free(la);
    free(lb);
    return same;
}

/* every row's logits of ids (n) through a and b, bit for bit */
static void check_same_logits(tern_model *a, tern_model *b, const int32_t *ids, int n, const char *what) {
    const size_t same = equal_logits(a, b, ids, n, what), all = (size_t)n * (size_t)tern_model_n_vocab(a);
    CHECK(n >= 16 && same == all, "%s: logits: %zu of %zu equal", what, same, all);
    printf("safetensors: %s: %d-token prompt, %zu logits equal to the GGUF's\n", what, n, same);
}

/* The BF16 directory a as the loader sees it against its GGUF b: every tensor of b under its name in a's view with
 * b's type and shape (matrices BF16; 1-D tensors and norms F32, widened from the directory's BF16 as
 * convert_hf_to_gguf.py does), 2 + 7 per layer of them BF16, and every bound matrix of a BF16. */
static void check_bf16_types(tern_model *a, tern_model *b, const char *what) {
    const gguf_file *fa = a->gguf, *fb = b->gguf;
    uint64_t same = 0, n_bf16 = 0;
    for (uint64_t i = 0; i < fb->n_tensors; i++) {
        const gguf_tensor *tb = &fb->tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)tb->name.len, tb->name.ptr);
        const gguf_tensor *ta = gguf_find_tensor(fa, name);
        same += ta && ta->type == tb->type && ta->n_dims == tb->n_dims && !memcmp(ta->ne, tb->ne, sizeof ta->ne);
        n_bf16 += tb->type == TERN_TYPE_BF16;
    }
    CHECK(fa->n_tensors == fb->n_tensors && same == fb->n_tensors && n_bf16 == 2 + 7 * (uint64_t)b->n_layer,
          "%s: %llu of the GGUF's %llu tensors have its type and shape in the directory's view (%llu tensors), "
          "%llu of them BF16", what, (unsigned long long)same, (unsigned long long)fb->n_tensors,
          (unsigned long long)fa->n_tensors, (unsigned long long)n_bf16);
    int bound = a->tok_embd.type == TERN_TYPE_BF16 && a->output.type == TERN_TYPE_BF16;
    for (int il = 0; il < a->n_layer; il++) {
        const tern_layer *l = &a->layers[il];
        const tern_weight *w[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) bound &= w[j]->type == TERN_TYPE_BF16;
    }
    CHECK(bound, "%s: a bound matrix of the directory is not BF16", what);
}

/* The check can fail: hf's model.safetensors copied with the lowest mantissa bit of one BF16 weight flipped
 * (model.layers.1.mlp.down_proj.weight[0][0], the least BF16 can change it: one unit in the last place) must give
 * logits that differ from b's. The copy's other files are links to hf's. */
static void check_flip(const char *hf, tern_model *b, const int32_t *ids, int n, const char *what) {
    static const char *tensor = "model.layers.1.mlp.down_proj.weight";
    char dir[700], src[800], dst[800];
    snprintf(dir, sizeof dir, "%s-flip", hf);
    mkdir(dir, 0755);
    static const char *files[] = {"config.json", "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", hf, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        CHECK(symlink(src, dst) == 0, "%s: symlink %s", what, dst);
    }
    snprintf(src, sizeof src, "%s/model.safetensors", hf);
    FILE *f = fopen(src, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    uint8_t *buf = size > 8 ? tern_xmalloc((size_t)size) : NULL;
    int read_ok = buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)size, f) == (size_t)size;
    if (f) fclose(f);
    uint64_t hl = 0;
    if (read_ok) memcpy(&hl, buf, 8);
    cJSON *h = read_ok && hl <= (uint64_t)size - 8 ? cJSON_ParseWithLength((const char *)buf + 8, (size_t)hl) : NULL;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, tensor);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    const double at = cJSON_IsArray(offs) ? 8.0 + (double)hl + cJSON_GetArrayItem(offs, 0)->valuedouble : -1;
    CHECK(cJSON_IsString(dt) && !strcmp(dt->valuestring, "BF16") && at >= 8 && at + 2 <= (double)size,
          "%s: %s not found as BF16 in %s", what, tensor, src);
    tern_model *m = NULL;
    if (at >= 8 && at + 2 <= (double)size) {
        buf[(size_t)at] ^= 1; /* little-endian: the low byte holds the mantissa's last bits */
        write_file(dir, "model.safetensors", buf, (size_t)size);
        m = tern_model_load(dir, 0);
        CHECK(m != NULL, "%s: load %s: %s", what, dir, tern_last_error());
    }
    if (m) {
        const size_t same = equal_logits(m, b, ids, n, what), all = (size_t)n * (size_t)tern_model_n_vocab(m);
        CHECK(same < all, "%s: one bit flipped in %s, yet all %zu logits equal the GGUF's", what, tensor, all);
        printf("safetensors: %s: one bit flipped in %s: %zu of %zu logits differ from the GGUF's\n", what, tensor,
               all - same, all);
    }
    tern_model_free(m);
    cJSON_Delete(h);
    free(buf);
}

/* tern quantize from the directory hf: the same tensors, types and bytes as from the GGUF ref */
static void check_quantize(const char *hf, const char *ref, const char *what) {
    char qa[600], qb[600], cmd[2048];
    snprintf(qa, sizeof qa, "%s/%s-a-q8.gguf", tmp, what);
    snprintf(qb, sizeof qb, "%s/%s-b-q8.gguf", tmp, what);
    snprintf(cmd, sizeof cmd, "./tern quantize %s %s Q8_0 >/dev/null && ./tern quantize %s %s Q8_0 >/dev/null", hf, qa, ref, qb);
    if (access("./tern", X_OK) != 0) { /* make asan-test builds the tests alone */
        printf("safetensors: ./tern not built: the quantize check of %s is skipped\n", what);
        return;
    }
    CHECK(system(cmd) == 0, "%s failed", cmd);
    gguf_file *fa = gguf_open(qa), *fb = gguf_open(qb);
    CHECK(fa && fb && fa->n_tensors == fb->n_tensors, "%s: quantized files: %llu and %llu tensors %s", what,
          fa ? (unsigned long long)fa->n_tensors : 0ull, fb ? (unsigned long long)fb->n_tensors : 0ull,
          fa && fb ? "" : tern_last_error());
    if (fa && fb && fa->n_tensors == fb->n_tensors) {
        int diff = 0;
        for (uint64_t i = 0; i < fa->n_tensors; i++) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)fa->tensors[i].name.len, fa->tensors[i].name.ptr);
            const gguf_tensor *t = gguf_find_tensor(fb, name);
            diff += !t || t->type != fa->tensors[i].type || t->nbytes != fa->tensors[i].nbytes ||
                    memcmp(t->data, fa->tensors[i].data, t->nbytes) != 0;
        }
        CHECK(diff == 0, "%s: quantize from the directory: %d of %llu tensors differ from the GGUF's", what, diff,
              (unsigned long long)fa->n_tensors);
    }
    gguf_close(fa);
    gguf_close(fb);
}

static void check_llama(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s tests/gen_hf_fixture.py %s 2 >/dev/null", python(), tmp);
    CHECK(system(cmd) == 0, "%s failed (numpy, gguf, safetensors: scripts/deps.sh test)", cmd);
    char hf[600], ref[600];
    snprintf(hf, sizeof hf, "%s/hf", tmp);
    snprintf(ref, sizeof ref, "%s/ref.gguf", tmp);
    tern_model *a = tern_model_load(hf, 0), *b = tern_model_load(ref, 0);
    CHECK(a && b, "load: %s", tern_last_error());
    if (a && b) {
        CHECK(tern_model_n_vocab(a) == tern_model_n_vocab(b) && tern_model_n_embd(a) == tern_model_n_embd(b) &&
                  tern_model_n_layer(a) == 2 && tern_model_n_layer(b) == 2 &&
                  tern_model_n_ctx_train(a) == tern_model_n_ctx_train(b) && tern_model_n_params(a) == tern_model_n_params(b),
              "hyperparameters differ");
        CHECK(tern_model_chat_template(a) && tern_model_chat_template(b) &&
                  !strcmp(tern_model_chat_template(a), tern_model_chat_template(b)), "chat template differs");
        check_same_vocab(a, b, "llama");
        const char *prompt = "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n";
        int32_t ids[256];
        int n = tern_model_tokenize(a, prompt, strlen(prompt), 1, 1, ids, 256);
        check_same_logits(a, b, ids, n, "llama");
    }
    tern_model_free(a);
    tern_model_free(b);
    check_quantize(hf, ref, "llama");
}

/* qwen2 / qwen3: the directory gen_hf_fixture.py --from makes of tests/fixtures/recipes/ARCH.gguf against that file;
 * bf16: the BF16 directory --from ... --bf16 makes of it against the BF16 GGUF it writes beside */
static void check_recipe(const char *arch, int bf16) {
    char src[256], ref[600], hf[600], what[64], cmd[4096];
    snprintf(what, sizeof what, "%s%s", arch, bf16 ? "-bf16" : "");
    snprintf(src, sizeof src, "tests/fixtures/recipes/%s.gguf", arch);
    snprintf(hf, sizeof hf, "%s/%s", tmp, what);
    if (bf16) {
        snprintf(ref, sizeof ref, "%s/%s.gguf", tmp, what);
        snprintf(cmd, sizeof cmd, "%s tests/gen_hf_fixture.py --from %s %s --bf16 %s >/dev/null", python(), src, hf, ref);
    } else {
        snprintf(ref, sizeof ref, "%s", src);
        snprintf(cmd, sizeof cmd, "%s tests/gen_hf_fixture.py --from %s %s >/dev/null", python(), src, hf);
    }
    CHECK(system(cmd) == 0, "%s failed (numpy, gguf, safetensors: scripts/deps.sh test)", cmd);
    tern_model *a = tern_model_load(hf, 0), *b = tern_model_load(ref, 0);
    CHECK(a && b, "%s: load: %s", what, tern_last_error());
    if (a && b) {
        const tern_layer *la = &a->layers[0], *lb = &b->layers[0];
        CHECK(!strcmp(a->arch, arch) && a->recipe == b->recipe && a->n_vocab == b->n_vocab &&
                  a->n_ctx_train == b->n_ctx_train && a->n_embd == b->n_embd && a->n_layer == b->n_layer &&
                  a->n_head == b->n_head && a->n_head_kv == b->n_head_kv && a->head_dim == b->head_dim &&
                  a->n_ff == b->n_ff && a->n_rot == b->n_rot && a->rms_eps == b->rms_eps && a->rope_base == b->rope_base &&
                  a->rope_scale == b->rope_scale && a->attn_scale == b->attn_scale && a->embd_scale == b->embd_scale &&
                  a->n_params == b->n_params && a->n_tensors_used == b->n_tensors_used,
              "%s: recipe or hyperparameters differ", what);
        const int qwen2 = !strcmp(arch, "qwen2");
        CHECK(a->output.data != a->tok_embd.data && (la->bq != NULL) == qwen2 && (la->bk != NULL) == qwen2 &&
                  (la->bv != NULL) == qwen2 && (la->q_norm == NULL) == qwen2 && (la->k_norm == NULL) == qwen2 &&
                  (lb->bq != NULL) == qwen2 && (lb->q_norm == NULL) == qwen2,
              "%s: untied output, biases (qwen2) or q/k norms (qwen3) not bound as the GGUF's", what);
        if (bf16) check_bf16_types(a, b, what);
        check_same_vocab(a, b, what);
        int32_t ids[64];
        int n = 0;
        char ids_path[256];
        snprintf(ids_path, sizeof ids_path, "tests/fixtures/recipes/%s.ids", arch);
        FILE *f = fopen(ids_path, "r");
        while (f && n < 64 && fscanf(f, "%d", &ids[n]) == 1) {
            n++;
            if (fgetc(f) != ',') break;
        }
        if (f) fclose(f);
        check_same_logits(a, b, ids, n, what);
        if (bf16) check_flip(hf, b, ids, n, what);
    }
    tern_model_free(a);
    tern_model_free(b);
    check_quantize(hf, ref, what);
}

int main(void) {
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
    check_llama();
    check_recipe("qwen2", 0);
    check_recipe("qwen3", 0);
    check_recipe("qwen3", 1);
    check_bad();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
    return check_summary("test_safetensors");
}
