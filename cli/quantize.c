/* cli/quantize.c: `tern quantize IN.gguf OUT.gguf TYPE [--threads N] [--pure] [--allow-requantize]` (issue 28).
 *
 * llama-quantize's behaviour without an importance matrix (llama.cpp src/llama-quant.cpp of llama-cpp-python
 * 0.3.36's vendored copy):
 *  - which tensors are quantized: 2-D and larger tensors whose name ends in "weight", not norms, not MoE gating
 *    (tensor_allows_quantization); the rest are copied in their type;
 *  - the type of each (llama_tensor_get_type): TYPE's base type, changed by the mix rules of the _S/_M/_L names
 *    (attn_v, ffn_down, attn_output by layer; the output matrix, or the token embedding when the output is tied,
 *    to Q6_K), then a fallback when the row length is not a multiple of the type's block (Q2_K/Q3_K -> Q4_0,
 *    Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, a 32-block type -> F16). --pure: the base type everywhere;
 *  - the data: each row through the reference quantizer of src/backend/cpu/quantize.c (byte-identical to
 *    llama-quantize's);
 *  - the metadata: every key of IN copied, general.file_type set to TYPE's llama_ftype and
 *    general.quantization_version to 2.
 * IN may be an HF checkpoint directory (config.json + *.safetensors: src/format/safetensors.h). The input's tensors may be F32, F16 or BF16 (quantized ones only with --allow-requantize: dequantized first).
 * Prints one line per tensor as it is written. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "commands.h"
#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"
#include "quantize.h"
#include "safetensors.h"
#include "util.h"

/* llama_ftype values (llama.h) and the base type of each name llama-quantize takes (QUANT_OPTIONS). */
typedef struct { const char *name; int ftype; enum tern_type base; } qtype_opt;
static const qtype_opt QTYPES[] = {
    {"F32", 0, TERN_TYPE_F32},         {"F16", 1, TERN_TYPE_F16},         {"BF16", 32, TERN_TYPE_BF16},
    {"Q4_0", 2, TERN_TYPE_Q4_0},       {"Q4_1", 3, TERN_TYPE_Q4_1},       {"Q5_0", 8, TERN_TYPE_Q5_0},
    {"Q5_1", 9, TERN_TYPE_Q5_1},       {"Q8_0", 7, TERN_TYPE_Q8_0},       {"Q2_K", 10, TERN_TYPE_Q2_K},
    {"Q2_K_S", 21, TERN_TYPE_Q2_K},    {"Q3_K", 12, TERN_TYPE_Q3_K},      {"Q3_K_S", 11, TERN_TYPE_Q3_K},
    {"Q3_K_M", 12, TERN_TYPE_Q3_K},    {"Q3_K_L", 13, TERN_TYPE_Q3_K},    {"Q4_K", 15, TERN_TYPE_Q4_K},
    {"Q4_K_S", 14, TERN_TYPE_Q4_K},    {"Q4_K_M", 15, TERN_TYPE_Q4_K},    {"Q5_K", 17, TERN_TYPE_Q5_K},
    {"Q5_K_S", 16, TERN_TYPE_Q5_K},    {"Q5_K_M", 17, TERN_TYPE_Q5_K},    {"Q6_K", 18, TERN_TYPE_Q6_K},
    {"IQ4_NL", 25, TERN_TYPE_IQ4_NL},
};
enum { FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12,
       FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_Q2_K_S = 21,
       FT_IQ4_NL = 25 };

enum cat { C_OTHER, C_OUTPUT, C_TOKEN_EMBD, C_ATTN_QKV, C_ATTN_KV_B, C_ATTN_V, C_ATTN_K, C_ATTN_Q, C_ATTN_OUTPUT,
           C_FFN_UP, C_FFN_GATE, C_FFN_DOWN };

static enum cat category(const char *n) { /* tensor_get_category */
    if (!strcmp(n, "output.weight")) return C_OUTPUT;
    if (!strcmp(n, "token_embd.weight") || !strcmp(n, "per_layer_token_embd.weight")) return C_TOKEN_EMBD;
    if (strstr(n, "attn_qkv.weight")) return C_ATTN_QKV;
    if (strstr(n, "attn_kv_b.weight")) return C_ATTN_KV_B;
    if (strstr(n, "attn_v.weight")) return C_ATTN_V;
    if (strstr(n, "attn_k.weight")) return C_ATTN_K;
    if (strstr(n, "attn_q.weight")) return C_ATTN_Q;
    if (strstr(n, "attn_output.weight")) return C_ATTN_OUTPUT;
    if (strstr(n, "ffn_up")) return C_FFN_UP;
    if (strstr(n, "ffn_gate")) return C_FFN_GATE;
    if (strstr(n, "ffn_down")) return C_FFN_DOWN;
    return C_OTHER;
}

static int allows_quantization(const gguf_tensor *t, const char *n) { /* tensor_allows_quantization */
    int nd = (int)t->n_dims;
    while (nd > 1 && t->ne[nd - 1] == 1) nd--; /* ggml_n_dims: trailing 1s do not count */
    if (nd < 2) return 0;
    const size_t len = strlen(n);
    if (len < 6 || strcmp(n + len - 6, "weight") != 0) return 0;
    static const char *const never[] = {"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup",
                                        "laurel", "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight",
                                        "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
                                        "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
                                        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
                                        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
                                        "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
                                        "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
                                        ".position_embd", ".rel_pos", ".patch_embd", ".patch_merger"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strstr(n, never[i])) return 0;
    if (!strcmp(n, "position_embd.weight") || !strcmp(n, "token_types.weight")) return 0;
    return 1;
}

typedef struct {
    int ftype, n_layer, n_gqa, n_expert, is_70b, tied, pure;
    int n_attention_wv, i_attention_wv, i_ffn_down;
} mix_state;

static int use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

/* llama_tensor_get_type_impl for the types tern writes (no imatrix, llama-family architectures: no Falcon rules). */
static enum tern_type mix_type(mix_state *s, enum tern_type t, const gguf_tensor *ten, const char *name, enum cat c) {
    const int ft = s->ftype;
    if (c == C_OUTPUT || (s->tied && c == C_TOKEN_EMBD)) {
        if (ten->ne[0] % tern_type_block_size(t) != 0) t = TERN_TYPE_Q8_0;
        else if (t != TERN_TYPE_Q8_0) t = TERN_TYPE_Q6_K;
    } else if (c == C_TOKEN_EMBD) {
        /* only the IQ1/IQ2/IQ3/TQ mixes change it */
    } else if (c == C_ATTN_V || c == C_ATTN_QKV || c == C_ATTN_KV_B) {
        if (ft == FT_Q2_K) t = s->n_gqa >= 4 ? TERN_TYPE_Q4_K : TERN_TYPE_Q3_K;
        else if (ft == FT_Q2_K_S && s->n_gqa >= 4) t = TERN_TYPE_Q4_K;
        else if (ft == FT_Q3_K_M) t = s->i_attention_wv < 2 ? TERN_TYPE_Q5_K : TERN_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L) t = TERN_TYPE_Q5_K;
        else if (ft == FT_IQ4_NL && s->n_gqa >= 4) t = TERN_TYPE_Q5_K;
        else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && use_more_bits(s->i_attention_wv, s->n_attention_wv))
            t = TERN_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && s->i_attention_wv < 4) t = TERN_TYPE_Q5_K;
        if (s->is_70b && (t == TERN_TYPE_Q3_K || t == TERN_TYPE_Q4_K)) t = TERN_TYPE_Q5_K;
        if (s->n_expert == 8) t = TERN_TYPE_Q8_0;
        ++s->i_attention_wv;
    } else if (c == C_ATTN_K) {
        if (s->n_expert == 8) t = TERN_TYPE_Q8_0;
    } else if (c == C_FFN_DOWN) {
        int i_layer = s->i_ffn_down, n_layer = s->n_layer;
        if (s->n_expert > 1) { /* experts: the layer from the name */
            if (sscanf(name, "blk.%d.", &i_layer) != 1 || i_layer < 0 || i_layer >= n_layer)
                cli_die("cannot tell the layer of tensor %s", name);
        }
        if (ft == FT_Q2_K) t = TERN_TYPE_Q3_K;
        else if (ft == FT_Q2_K_S) { if (i_layer < n_layer / 8) t = TERN_TYPE_Q4_K; }
        else if (ft == FT_Q3_K_M) t = i_layer < n_layer / 16 ? TERN_TYPE_Q5_K : TERN_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L) t = TERN_TYPE_Q5_K;
        else if (ft == FT_Q4_K_M) { if (use_more_bits(i_layer, n_layer)) t = TERN_TYPE_Q6_K; }
        else if (i_layer < n_layer / 8 && ft == FT_IQ4_NL) t = TERN_TYPE_Q5_K;
        else if (ft == FT_Q5_K_M && use_more_bits(i_layer, n_layer)) t = TERN_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && i_layer < n_layer / 8) t = TERN_TYPE_Q5_K;
        ++s->i_ffn_down;
    } else if (c == C_ATTN_OUTPUT) {
        if (s->n_expert == 8) {
            if (ft == FT_Q2_K || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL || ft == FT_Q4_K_S ||
                ft == FT_Q4_K_M)
                t = TERN_TYPE_Q5_K;
        } else {
            if (ft == FT_Q2_K) t = TERN_TYPE_Q3_K;
            else if (ft == FT_Q3_K_M) t = TERN_TYPE_Q4_K;
            else if (ft == FT_Q3_K_L) t = TERN_TYPE_Q5_K;
        }
    }
    return t;
}

/* tensor_type_fallback: a row length the type's block does not divide */
static enum tern_type fallback(enum tern_type t, int64_t ncols, const char *name) {
    if (ncols % tern_type_block_size(t) == 0) return t;
    enum tern_type r = t;
    switch (t) {
    case TERN_TYPE_Q2_K: case TERN_TYPE_Q3_K: r = TERN_TYPE_Q4_0; break;
    case TERN_TYPE_Q4_K: r = TERN_TYPE_Q5_0; break;
    case TERN_TYPE_Q5_K: r = TERN_TYPE_Q5_1; break;
    case TERN_TYPE_Q6_K: r = TERN_TYPE_Q8_0; break;
    default: break;
    }
    if (ncols % tern_type_block_size(r) != 0) r = TERN_TYPE_F16;
    fprintf(stderr, "tern quantize: %s: %lld columns are not a multiple of %lld (%s): %s instead\n", name,
            (long long)ncols, (long long)tern_type_block_size(t), tern_type_name(t), tern_type_name(r));
    return r;
}

static int64_t meta_int(const gguf_file *f, const char *arch, const char *suffix, int64_t dflt) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint64_t v;
    return gguf_get_u64(f, key, &v) == 0 ? (int64_t)v : dflt;
}

/* rows [r0, r1) of one tensor, quantized by one thread */
typedef struct {
    const float *src;
    uint8_t *dst;
    enum tern_type t;
    int64_t ncols, r0, r1;
} qjob;

static void *qjob_run(void *arg) {
    qjob *j = arg;
    const size_t row = tern_type_row_size(j->t, j->ncols);
    for (int64_t r = j->r0; r < j->r1; r++)
        tern_quantize_row(j->t, j->src + r * j->ncols, j->dst + (size_t)r * row, j->ncols);
    return NULL;
}

static void to_f32(const gguf_tensor *t, int64_t n, float *out) {
    switch (t->type) {
    case TERN_TYPE_F32: memcpy(out, t->data, sizeof(float) * (size_t)n); break;
    case TERN_TYPE_F16: for (int64_t i = 0; i < n; i++) out[i] = tern_fp16_to_fp32(((const uint16_t *)t->data)[i]); break;
    case TERN_TYPE_BF16: for (int64_t i = 0; i < n; i++) out[i] = tern_bf16_to_fp32(((const uint16_t *)t->data)[i]); break;
    default: tern_dequantize_row((enum tern_type)t->type, t->data, out, n); break;
    }
}

/* A new or regular-file OUT is written as OUT.tmp.XXXXXX beside it and renamed over OUT once whole, so a failed or
 * interrupted run (a full disk, a bad tensor) leaves no truncated model at OUT, and the temporary file is removed at
 * exit; any other OUT (a device, a pipe) is written in place. OUT naming the input (the same file, or a link to it) is
 * refused: the input is mapped while OUT is written. */
static char g_tmp[4096];
static void tmp_cleanup(void) {
    if (g_tmp[0]) unlink(g_tmp);
}
static FILE *out_open(const char *in, const char *out) {
    struct stat si, so;
    if (stat(out, &so) == 0) {
        if (S_ISDIR(so.st_mode)) cli_die("OUT '%s' is a directory", out);
        if (stat(in, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            cli_die("OUT '%s' is the input file; write the quantized model to another path", out);
        if (!S_ISREG(so.st_mode)) {
            FILE *fp = fopen(out, "wb");
            if (!fp) cli_die("cannot write '%s': %s", out, strerror(errno));
            return fp;
        }
    }
    if (snprintf(g_tmp, sizeof g_tmp, "%s.tmp.XXXXXX", out) >= (int)sizeof g_tmp) cli_die("OUT path too long");
    const int fd = mkstemp(g_tmp);
    if (fd < 0) {
        g_tmp[0] = 0;
        cli_die("cannot write '%s': %s", out, strerror(errno));
    }
    atexit(tmp_cleanup);
    const mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um); /* fopen's mode; mkstemp makes 0600 */
    FILE *fp = fdopen(fd, "wb");
    if (!fp) cli_die("cannot write '%s': %s", out, strerror(errno));
    return fp;
}

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tname = NULL;
    int n_threads = 0, pure = 0, requant = 0;
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
        if (!strcmp(a, "--threads") || !strcmp(a, "-t")) n_threads = (int)cli_parse_long(a, cli_args_value(&it), 1, 1024);
        else if (!strcmp(a, "--pure")) pure = 1;
        else if (!strcmp(a, "--allow-requantize")) requant = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: tern quantize IN.gguf OUT.gguf TYPE [--threads N] [--pure] [--allow-requantize]\n"
                   "  IN: a GGUF of F32/F16/BF16 tensors (quantized ones with --allow-requantize), or an HF directory\n"
                   "  (config.json, *.safetensors, tokenizer.json)\n"
                   "  TYPE:");
            for (size_t k = 0; k < sizeof QTYPES / sizeof QTYPES[0]; k++) printf(" %s", QTYPES[k].name);
            printf("\n  as llama-quantize without an importance matrix: the _S/_M/_L mixes choose per tensor (Q3_K,\n"
                   "  Q4_K, Q5_K alone: the _M mix); --pure: TYPE for every quantized tensor\n");
            return 0;
        } else if (a[0] == '-' && a[1]) cli_die("unknown option '%s' for quantize (see tern quantize --help)", a);
        else if (!in) in = a;
        else if (!out) out = a;
        else if (!tname) tname = a;
        else cli_die("quantize takes IN OUT TYPE; '%s' is one too many", a);
    }
    if (!tname) cli_die("usage: tern quantize IN.gguf OUT.gguf TYPE [--threads N] [--pure] [--allow-requantize] (see tern quantize --help)");
    const qtype_opt *q = NULL;
    for (size_t k = 0; k < sizeof QTYPES / sizeof QTYPES[0]; k++)
        if (!strcasecmp(tname, QTYPES[k].name)) q = &QTYPES[k];
    if (!q) cli_die("unknown quantization type '%s' (tern quantize --help lists them)", tname);
    if (q->ftype == FT_Q2_K_S) /* llama-quantize refuses it without one too (tensor_requires_imatrix) */
        cli_die("Q2_K_S needs an importance matrix, which tern quantize does not take (Q2_K is the nearest)");
    if (n_threads <= 0) n_threads = tern_n_cores();
    if (n_threads > 64) n_threads = 64;

    gguf_file *f = tern_weights_open(in); /* a GGUF file or an HF directory (safetensors.h) */
    if (!f) cli_die("%s", tern_last_error());
    const gguf_value *av = gguf_get(f, "general.architecture");
    if (!av || av->type != GGUF_VT_STRING) cli_die("%s has no general.architecture", in);
    char arch[64];
    snprintf(arch, sizeof arch, "%.*s", (int)av->v.s.len, av->v.s.ptr);

    mix_state s = {0};
    s.ftype = q->ftype;
    s.pure = pure;
    s.n_layer = (int)meta_int(f, arch, "block_count", 0);
    const int64_t n_head = meta_int(f, arch, "attention.head_count", 0);
    const int64_t n_head_kv = meta_int(f, arch, "attention.head_count_kv", n_head);
    s.n_gqa = n_head_kv > 0 ? (int)(n_head / n_head_kv) : 0;
    s.n_expert = (int)meta_int(f, arch, "expert_count", 0);
    s.is_70b = !strcmp(arch, "llama") && s.n_layer == 80 && n_head != n_head_kv;
    s.tied = 1;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)f->tensors[i].name.len, f->tensors[i].name.ptr);
        const enum cat c = category(name);
        if (c == C_ATTN_V || c == C_ATTN_QKV || c == C_ATTN_KV_B) s.n_attention_wv++;
        if (c == C_OUTPUT) s.tied = 0;
    }

    /* the types, then the header */
    const int base_quantized = tern_type_block_size(q->base) > 1;
    enum tern_type *types = tern_xmalloc(sizeof(enum tern_type) * (size_t)(f->n_tensors ? f->n_tensors : 1));
    gguf_writer *w = gguf_writer_new();
    for (uint64_t i = 0; i < f->n_kv; i++) {
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)f->kv[i].key.len, f->kv[i].key.ptr);
        if (!strcmp(key, "general.file_type") || !strcmp(key, "general.quantization_version") ||
            !strcmp(key, "general.alignment") || !strncmp(key, "split.", 6))
            continue;
        gguf_writer_add_value(w, key, &f->kv[i].val);
    }
    gguf_writer_add_u32(w, "general.quantization_version", 2);
    gguf_writer_add_u32(w, "general.file_type", (uint32_t)q->ftype);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        enum tern_type nt = (enum tern_type)t->type;
        if (allows_quantization(t, name)) {
            nt = q->base;
            if (base_quantized) {
                if (!pure) nt = mix_type(&s, nt, t, name, category(name));
                nt = fallback(nt, t->ne[0], name);
            }
        }
        if (nt != (enum tern_type)t->type) {
            const int src_ok = t->type == TERN_TYPE_F32 || t->type == TERN_TYPE_F16 || t->type == TERN_TYPE_BF16;
            if (!src_ok && !requant)
                cli_die("tensor %s is %s: quantizing a quantized tensor loses precision twice; give an F32/F16/BF16 "
                        "file, or --allow-requantize", name, tern_type_name(t->type));
            if (!src_ok && !tern_type_supported(t->type)) cli_die("tensor %s: type %d cannot be read", name, t->type);
        }
        types[i] = nt;
        if (gguf_writer_add_tensor(w, name, (int)t->n_dims, t->ne, (int)nt) != 0) cli_die("%s", tern_last_error());
    }

    FILE *fp = out_open(in, out);
    if (gguf_writer_write_header(w, fp) != 0) cli_die("writing '%s': %s", out, tern_last_error());
    const double t0 = tern_time_s();
    double in_bytes = 0, out_bytes = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        const size_t nbytes = gguf_writer_tensor_nbytes(w, (int)i);
        int64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= t->ne[d];
        printf("[%4llu/%4llu] %-36.*s [", (unsigned long long)i + 1, (unsigned long long)f->n_tensors,
               (int)t->name.len, t->name.ptr);
        for (uint32_t d = 0; d < t->n_dims; d++) printf("%s%lld", d ? ", " : "", (long long)t->ne[d]);
        printf("], %s", tern_type_name(t->type));
        if (types[i] == (enum tern_type)t->type) {
            if (fwrite(t->data, 1, nbytes, fp) != nbytes) cli_die("writing '%s': %s", out, strerror(errno));
            printf(", size = %8.3f MiB (copied)\n", t->nbytes / 1048576.0);
        } else {
            float *src = tern_xmalloc(sizeof(float) * (size_t)n);
            to_f32(t, n, src);
            uint8_t *dst = tern_xmalloc(nbytes);
            const int64_t nrows = n / t->ne[0];
            const int nt = nrows < n_threads ? (int)nrows : n_threads;
            pthread_t th[64];
            qjob jobs[64];
            for (int k = 0; k < nt; k++) {
                jobs[k] = (qjob){src, dst, types[i], t->ne[0], nrows * k / nt, nrows * (k + 1) / nt};
                if (k) pthread_create(&th[k], NULL, qjob_run, &jobs[k]);
            }
            qjob_run(&jobs[0]);
            for (int k = 1; k < nt; k++) pthread_join(th[k], NULL);
            if (fwrite(dst, 1, nbytes, fp) != nbytes) cli_die("writing '%s': %s", out, strerror(errno));
            printf(" -> %s, size = %8.3f MiB -> %8.3f MiB\n", tern_type_name(types[i]), t->nbytes / 1048576.0,
                   nbytes / 1048576.0);
            free(dst);
            free(src);
        }
        fflush(stdout);
        in_bytes += (double)t->nbytes;
        out_bytes += (double)nbytes;
        if (gguf_writer_write_pad(fp, nbytes) != 0) cli_die("writing '%s': %s", out, strerror(errno));
    }
    if (fclose(fp) != 0) cli_die("writing '%s': %s", out, strerror(errno));
    if (g_tmp[0] && rename(g_tmp, out) != 0) cli_die("cannot write '%s': %s", out, strerror(errno));
    g_tmp[0] = 0;
    printf("tern quantize: %s -> %s (%s): %.2f MiB -> %.2f MiB in %.1f s\n", in, out, q->name, in_bytes / 1048576.0,
           out_bytes / 1048576.0, tern_time_s() - t0);
    gguf_writer_free(w);
    free(types);
    gguf_close(f);
    return 0;
}
