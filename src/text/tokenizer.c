/* tokenizer.c: GGUF tokenizers that give llama.cpp's token ids.
 *
 * Behaviour source: llama.cpp src/llama-vocab.cpp and src/text/unicode.cpp (as vendored by
 * llama-cpp-python 0.3.36), re-implemented here in C; tests/test_tokenizer.c checks the ids against
 * that build (fixtures from tests/gen_tokenizer_fixtures.py). The steps of tern_tokenize:
 *
 *  1. special-token partition (llama.cpp tokenizer_st_partition): CONTROL/UNKNOWN tokens (only when
 *     parse_special) and USER_DEFINED tokens (always) are cut out of the text, longest token first,
 *     each token taking its leftmost non-overlapping occurrences in what is still raw text;
 *  2. each raw fragment goes to the model's tokenizer:
 *     - "llama" (SentencePiece BPE): optional leading space, ' ' -> U+2581, then greedy merging of the
 *       adjacent pair whose concatenation is the highest-scoring vocab token (ties: leftmost), and
 *       byte fallback <0xXX> for pieces that are no token;
 *     - "gpt2" (byte-level BPE): pre-tokenizer regexes of the tokenizer.ggml.pre family split the text
 *       into words, each word's bytes are mapped through GPT-2's bytes_to_unicode, and merges are
 *       applied by rank (lowest first, ties: leftmost).
 *
 * Pre-tokenizer regexes. llama.cpp runs them through its own splitter over its Unicode 15.1 tables:
 * for a regex that uses \p{..} classes it matches against a "collapsed" text where every non-ASCII
 * code point becomes one byte standing for its class (letter, number, ...), non-ASCII White_Space
 * becomes \v; a regex without classes runs on the code points with non-ASCII White_Space -> \v.
 * Its hand-written splitters for the GPT-2/Llama-3/Qwen2 regexes agree with the regex on that text.
 * We do the same with PCRE2 (8-bit, no UCP, so \s is ASCII-only): which characters are letters
 * etc. comes from src/text/unicode_data.c (Unicode 15.1), not from the system PCRE2's older tables,
 * so e.g. Kawi letters (Unicode 15.0) split as in llama.cpp. Regexes apply in sequence, each one
 * splitting every fragment left by the previous; unmatched stretches stay fragments of their own.
 *
 * Measured parity (llama-cpp-python 0.3.36): identical ids for every code point U+0080..U+10FFFF
 * in context, for ~10k random mixed strings per family and for malformed UTF-8 (where llama.cpp does
 * not abort on it), SmolLM2 (gpt2/smollm), Gemma-3 (llama) and SmolLM2's vocabulary under each
 * family of `pre_families`. Speed: ~8 MB/s on English prose (SmolLM2 and Gemma-3, one core),
 * 2-3x llama.cpp's; no input shape found that goes quadratic.
 *
 * Known, deliberate gaps (do not matter for real vocabularies): llama.cpp orders special tokens of
 * equal length with an unstable std::sort, we use id order; text-detected FIM/EOT tokens are taken
 * in id order where llama.cpp iterates a hash map; tokenizer.ggml.add_eos_token is not applied (the
 * API has no add_special; callers append EOS themselves). Model types other than "llama"/"gpt2" (bert, t5,
 * rwkv, plamo2, gemma4) and the pre-tokenizers not in `pre_families` are refused at load.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"
#include "util.h"

enum { VOCAB_SPM = 1, VOCAB_BPE = 2 };

/* Token attributes: llama.h llama_token_attr bit values. */
enum {
    ATTR_UNKNOWN = 1 << 0, ATTR_UNUSED = 1 << 1, ATTR_NORMAL = 1 << 2, ATTR_CONTROL = 1 << 3,
    ATTR_USER_DEFINED = 1 << 4, ATTR_BYTE = 1 << 5, ATTR_LSTRIP = 1 << 7, ATTR_RSTRIP = 1 << 8,
};
/* tokenizer.ggml.token_type values (gguf-py TokenType) -> attribute. */
static uint16_t attr_of_type(int64_t t) {
    switch (t) {
    case 1: return ATTR_NORMAL;
    case 2: return ATTR_UNKNOWN;
    case 3: return ATTR_CONTROL;
    case 4: return ATTR_USER_DEFINED;
    case 5: return ATTR_UNUSED;
    case 6: return ATTR_BYTE;
    default: return 0; /* undefined */
    }
}

#define MAX_REGEX 6

/* ---- pre-tokenizer families (llama-vocab.cpp: tokenizer.ggml.pre -> LLAMA_VOCAB_PRE_TYPE_* ->
 * regex_exprs and flags). The regex texts are the ones of the models' tokenizer.json, as adapted by
 * llama.cpp ((?i:..) spelled out). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_LLAMA3 RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_PORO " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"

typedef struct {
    const char *names[16]; /* tokenizer.ggml.pre values, NULL-terminated */
    const char *regex[MAX_REGEX];
    int clean_spaces, ignore_merges, add_bos, no_bos;
} pre_family;

static const pre_family pre_families[] = {
    {{"default", NULL},
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, 1, 0, 0, 0},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", NULL},
     {RE_LLAMA3}, 1, 1, 1, 0},
    {{"dbrx", "smaug-bpe", NULL}, {RE_LLAMA3}, 1, 0, 0, 0},
    {{"deepseek-llm", NULL},
     {"[\r\n]",
      "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
      "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481"
      "\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf"
      "\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d"
      "\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4"
      "\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
      "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f"
      "\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
      "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17"
      "\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
      "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
      "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
      "\\s+$",
      "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
      "\\p{N}+"}, 0, 0, 0, 0},
    {{"deepseek-coder", NULL},
     {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}"}, 0, 0, 0, 0},
    {{"falcon", NULL},
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}, 1, 0, 0, 0},
    {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", NULL}, {"\\p{N}", RE_GPT2}, 1, 0, 0, 0},
    {{"command-r", "smollm", NULL}, {"\\p{N}", RE_GPT2}, 0, 0, 0, 0},
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
      "mpt", "olmo", "jais", NULL},
     {RE_GPT2}, 1, 0, 0, 0},
    {{"exaone4", NULL}, {RE_GPT2}, 1, 0, 0, 0},
    {{"trillion", "granite-docling", NULL}, {RE_GPT2}, 0, 0, 0, 0},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", NULL}, {RE_QWEN2}, 0, 0, 0, 0},
    {{"stablelm2", "megrez", NULL}, {RE_QWEN2}, 1, 0, 0, 0},
    {{"chatglm-bpe", NULL}, {RE_LLAMA3}, 1, 0, 0, 1},
    {{"glm4", "glm5", NULL}, {RE_LLAMA3}, 1, 1, 0, 1},
    {{"poro-chat", NULL}, {RE_PORO}, 0, 0, 0, 0},
    {{"bloom", "gpt3-finnish", NULL}, {RE_PORO}, 1, 0, 0, 0},
    {{"viking", NULL}, {RE_PORO, "\\p{N}"}, 0, 0, 0, 0},
};

typedef struct {
    pcre2_code *code;
    int collapsed; /* 1: matches the class-collapsed byte text; 0: the UTF-8 code points */
} pre_regex;

/* Trie over the special tokens' texts, for the partition step. */
typedef struct {
    int32_t child, sibling; /* first child, next sibling (-1: none) */
    int32_t token;          /* token whose text ends here, or -1 */
    uint8_t byte;
} trie_node;

struct tern_vocab {
    int type; /* VOCAB_SPM / VOCAB_BPE */
    int32_t n_tokens;
    char *text;          /* all token texts, each NUL-terminated */
    uint32_t *text_off;  /* (n_tokens) */
    uint32_t *text_len;  /* (n_tokens) */
    float *score;        /* (n_tokens) */
    uint16_t *attr;      /* (n_tokens) ATTR_* */
    uint8_t *eog;        /* (n_tokens) 1 if end-of-generation */
    int32_t *tok_slot;   /* open-addressing table text -> id, -1 empty */
    uint64_t tok_mask;

    /* BPE merges: merge i is (first, second) with rank i */
    char *merge_text;
    uint32_t *merge_off, *merge_first_len, *merge_second_len; /* (n_merges) */
    int32_t n_merges;
    int32_t *merge_slot;
    uint64_t merge_mask;

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    int add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
    int has_strip; /* some special token has ATTR_LSTRIP/RSTRIP */
    char byte_utf8[256][2]; /* GPT-2 byte map, UTF-8 encoded (all its code points are < U+0800) */
    uint8_t byte_utf8_len[256];

    int32_t *special; /* special-token ids, longest text first (partition order) */
    int32_t n_special;
    int32_t *special_rank; /* (n_tokens) index in `special`, -1 if not special */
    trie_node *trie;
    int32_t n_trie, trie_root[256]; /* root children by first byte */

    char *piece;         /* token_to_piece(id, special=1) of every token, concatenated */
    uint32_t *piece_off; /* (n_tokens + 1) */

    pre_regex regex[MAX_REGEX];
    int n_regex, need_collapsed, need_utf;
};

/* ---------------------------------------------------------------- hashing */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull
static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}
static uint64_t table_cap(uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    return cap;
}

static const char *tok_text(const tern_vocab *v, int32_t id) { return v->text + v->text_off[id]; }

static int32_t find_token(const tern_vocab *v, const char *s, size_t n) {
    uint64_t i = mix(fnv(FNV_INIT, s, n)) & v->tok_mask;
    for (;; i = (i + 1) & v->tok_mask) {
        int32_t id = v->tok_slot[i];
        if (id < 0) return -1;
        if (v->text_len[id] == n && memcmp(tok_text(v, id), s, n) == 0) return id;
    }
}

/* Insert id under its text; a later duplicate text replaces the earlier id (llama.cpp's
 * token_to_id[word] = i). */
static void insert_token(tern_vocab *v, int32_t id) {
    const char *s = tok_text(v, id);
    size_t n = v->text_len[id];
    uint64_t i = mix(fnv(FNV_INIT, s, n)) & v->tok_mask;
    for (;; i = (i + 1) & v->tok_mask) {
        int32_t o = v->tok_slot[i];
        if (o < 0 || (v->text_len[o] == n && memcmp(tok_text(v, o), s, n) == 0)) {
            v->tok_slot[i] = id;
            return;
        }
    }
}

static uint64_t merge_hash(const char *a, size_t na, const char *b, size_t nb) {
    uint64_t h = fnv(FNV_INIT, a, na);
    h = (h ^ 0xFFu) * 0x100000001b3ull; /* separator: 0xFF never occurs in UTF-8 */
    return mix(fnv(h, b, nb));
}

/* Rank of merge (a, b), or -1. */
static int32_t find_merge(const tern_vocab *v, const char *a, size_t na, const char *b, size_t nb) {
    if (!v->n_merges) return -1;
    uint64_t i = merge_hash(a, na, b, nb) & v->merge_mask;
    for (;; i = (i + 1) & v->merge_mask) {
        int32_t m = v->merge_slot[i];
        if (m < 0) return -1;
        const char *t = v->merge_text + v->merge_off[m];
        if (v->merge_first_len[m] == na && v->merge_second_len[m] == nb && memcmp(t, a, na) == 0 &&
            memcmp(t + na + 1, b, nb) == 0)
            return m;
    }
}

/* ---------------------------------------------------------------- growable buffers */

typedef struct { char *p; size_t n, cap; } sbuf;
static void sb_reserve(sbuf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    b->p = p;
    b->cap = cap;
}
static void sb_put(sbuf *b, const void *s, size_t n) {
    sb_reserve(b, n + 1);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

typedef struct { int32_t *p; size_t n, cap; } ibuf;
static void ib_push(ibuf *b, int32_t x) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        int32_t *p = realloc(b->p, cap * sizeof *p);
        if (!p) { fprintf(stderr, "tern: out of memory\n"); abort(); }
        b->p = p;
        b->cap = cap;
    }
    b->p[b->n++] = x;
}

/* ---------------------------------------------------------------- regex compilation */

/* Class sets in the collapsed text (see the file comment): one marker byte for the non-ASCII members
 * plus the ASCII members. ASCII letters/digits/punctuation/symbols per UnicodeData.txt. */
#define COL_OTHER 0xD0
#define COL_NUMBER 0xD1
#define COL_LETTER 0xD2
#define COL_PUNCT 0xD3
#define COL_MARK 0xD4
#define COL_SYMBOL 0xD5
static const char *class_set(const char *name, size_t n) {
    if (n == 1 && name[0] == 'N') return "\\x{D1}0-9";
    if ((n == 1 && name[0] == 'L') ||
        (n == 2 && name[0] == 'L' && strchr("ultmo", name[1])))  /* llama.cpp folds Lu/Ll/.. into L */
        return "\\x{D2}A-Za-z";
    if (n == 1 && name[0] == 'P') return "\\x{D3}!-#%-*,-/:;?@\\[-\\]_\\{\\}";
    if (n == 1 && name[0] == 'M') return "\\x{D4}";
    if (n == 1 && name[0] == 'S') return "\\x{D5}\\$+<->\\^`|~";
    return NULL;
}

/* Rewrite \p{X} into the collapsed-text sets. Returns a malloc'd pattern, or NULL (error set). */
static char *collapse_pattern(const char *re) {
    sbuf out = {0};
    int in_class = 0;
    for (const char *p = re; *p;) {
        if (p[0] == '\\' && p[1] == 'p' && p[2] == '{') {
            const char *end = strchr(p + 3, '}');
            const char *set = end ? class_set(p + 3, (size_t)(end - p - 3)) : NULL;
            if (!set) {
                free(out.p);
                tern_set_error("tokenizer: unsupported class in regex '%s'", re);
                return NULL;
            }
            if (!in_class) sb_put(&out, "[", 1);
            sb_put(&out, set, strlen(set));
            if (!in_class) sb_put(&out, "]", 1);
            p = end + 1;
            continue;
        }
        if (p[0] == '\\' && p[1]) { /* any other escape: copy both characters */
            sb_put(&out, p, 2);
            p += 2;
            continue;
        }
        if (*p == '[' && !in_class) in_class = 1;
        else if (*p == ']' && in_class) in_class = 0;
        sb_put(&out, p, 1);
        p++;
    }
    return out.p;
}

static int compile_regex(pre_regex *r, const char *re) {
    int collapsed = strstr(re, "\\p{") != NULL;
    char *pat = collapsed ? collapse_pattern(re) : strdup(re);
    if (!pat) return -1;
    /* No UCP: \s, \d and case folding stay ASCII, as in std::regex over the prepared text.
     * DOLLAR_ENDONLY: ECMAScript '$' does not match before a final newline. */
    uint32_t opts = PCRE2_DOLLAR_ENDONLY | (collapsed ? 0 : PCRE2_UTF);
    int err;
    PCRE2_SIZE erroff;
    r->code = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &err, &erroff, NULL);
    free(pat);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        tern_set_error("tokenizer: regex '%s': %s at %zu", re, (const char *)msg, (size_t)erroff);
        return -1;
    }
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
    r->collapsed = collapsed;
    return 0;
}

/* ---------------------------------------------------------------- loading */


static int32_t text_token(const tern_vocab *v, const char *s) { return find_token(v, s, strlen(s)); }

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return 1;
    return 0;
}

static void make_control(tern_vocab *v, int32_t id) { v->attr[id] |= ATTR_CONTROL; }

/* Lowest-id token whose text is in `list` (llama.cpp takes the first one its hash map iteration
 * meets), made CONTROL; -1 if none. */
static int32_t detect(tern_vocab *v, const char *const *list) {
    int32_t best = -1;
    for (; *list; list++) {
        int32_t id = text_token(v, *list);
        if (id >= 0 && (best < 0 || id < best)) best = id;
    }
    if (best >= 0) make_control(v, best);
    return best;
}

static void read_id(const gguf_file *f, const char *key, int32_t *id, int32_t n_tokens) {
    uint64_t x;
    if (gguf_get_u64(f, key, &x) == 0 && x < (uint64_t)n_tokens) *id = (int32_t)x;
}

/* Special ids, EOG set and the attribute fix-ups llama.cpp applies by token text
 * (llama_vocab::impl::load, "auto-detect special tokens by text" and following). */
static void load_specials(tern_vocab *v, const gguf_file *f) {
    const int32_t n = v->n_tokens;
    int32_t *ids[] = {&v->bos, &v->eos, &v->eot, &v->eom, &v->unk, &v->sep, &v->pad, &v->mask,
                      &v->fim_pre, &v->fim_suf, &v->fim_mid, &v->fim_pad, &v->fim_rep, &v->fim_sep};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        if (*ids[i] >= n) *ids[i] = -1; /* default out of range: disabled */
    read_id(f, "tokenizer.ggml.bos_token_id", &v->bos, n);
    read_id(f, "tokenizer.ggml.eos_token_id", &v->eos, n);
    read_id(f, "tokenizer.ggml.eot_token_id", &v->eot, n);
    read_id(f, "tokenizer.ggml.eom_token_id", &v->eom, n);
    read_id(f, "tokenizer.ggml.unknown_token_id", &v->unk, n);
    read_id(f, "tokenizer.ggml.seperator_token_id", &v->sep, n); /* sic: the GGUF key's spelling */
    read_id(f, "tokenizer.ggml.padding_token_id", &v->pad, n);
    read_id(f, "tokenizer.ggml.mask_token_id", &v->mask, n);
    read_id(f, "tokenizer.ggml.fim_pre_token_id", &v->fim_pre, n);
    read_id(f, "tokenizer.ggml.fim_suf_token_id", &v->fim_suf, n);
    read_id(f, "tokenizer.ggml.fim_mid_token_id", &v->fim_mid, n);
    read_id(f, "tokenizer.ggml.fim_pad_token_id", &v->fim_pad, n);
    read_id(f, "tokenizer.ggml.fim_rep_token_id", &v->fim_rep, n);
    read_id(f, "tokenizer.ggml.fim_sep_token_id", &v->fim_sep, n);
    read_id(f, "tokenizer.ggml.prefix_token_id", &v->fim_pre, n); /* deprecated names, read last */
    read_id(f, "tokenizer.ggml.suffix_token_id", &v->fim_suf, n);
    read_id(f, "tokenizer.ggml.middle_token_id", &v->fim_mid, n);

    int b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b) == 0) v->add_bos = b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &b) == 0) v->add_eos = b;

    static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
        "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
        "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "<end_of_utterance>", NULL};
    static const char *const eom_texts[] = {"<|eom_id|>", NULL};
    static const char *const fim_pre_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>",
        "<|prefix|>", NULL};
    static const char *const fim_suf_texts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>",
        "<|suffix|>", NULL};
    static const char *const fim_mid_texts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>",
        "<|middle|>", NULL};
    static const char *const fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
    static const char *const fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
        "<reponame>", NULL};
    static const char *const fim_sep_texts[] = {"<|file_sep|>", NULL};
    if (v->eot < 0) v->eot = detect(v, eot_texts);
    if (v->eom < 0) v->eom = detect(v, eom_texts);
    if (v->fim_pre < 0) v->fim_pre = detect(v, fim_pre_texts);
    if (v->fim_suf < 0) v->fim_suf = detect(v, fim_suf_texts);
    if (v->fim_mid < 0) v->fim_mid = detect(v, fim_mid_texts);
    if (v->fim_pad < 0) v->fim_pad = detect(v, fim_pad_texts);
    if (v->fim_rep < 0) v->fim_rep = detect(v, fim_rep_texts);
    if (v->fim_sep < 0) v->fim_sep = detect(v, fim_sep_texts);

    /* control tokens named "unused..." are unused */
    for (int32_t id = 0; id < n; id++)
        if ((v->attr[id] & ATTR_CONTROL) && strstr(tok_text(v, id), "unused")) v->attr[id] |= ATTR_UNUSED;

    /* end-of-generation set */
    if (v->fim_pad >= 0) v->eog[v->fim_pad] = 1;
    if (v->fim_rep >= 0) v->eog[v->fim_rep] = 1;
    if (v->fim_sep >= 0) v->eog[v->fim_sep] = 1;
    static const char *const eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
        "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
        "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL};
    for (const char *const *t = eog_texts; *t; t++) {
        int32_t id = text_token(v, *t);
        if (id >= 0) {
            v->eog[id] = 1;
            make_control(v, id);
        }
    }
    /* gpt-oss: these always render */
    static const char *const gptoss_texts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    for (const char *const *t = gptoss_texts; *t; t++) {
        int32_t id = text_token(v, *t);
        if (id >= 0) v->attr[id] = ATTR_USER_DEFINED;
    }
    if (v->eos >= 0) v->eog[v->eos] = 1;
    if (v->eot >= 0) v->eog[v->eot] = 1;
    if (v->eom >= 0) v->eog[v->eom] = 1;

    /* o200k_harmony / solar-open: <|end|> is not EOG when <|return|>+<|call|> or <|calls|>+<|flush|> are */
    int has_return = 0, has_call = 0, has_flush = 0;
    int32_t end_id = -1;
    for (int32_t id = 0; id < n; id++) {
        if (!v->eog[id]) continue;
        const char *t = tok_text(v, id);
        if (!strcmp(t, "<|return|>")) has_return = 1;
        else if (!strcmp(t, "<|call|>") || !strcmp(t, "<|calls|>")) has_call = 1;
        else if (!strcmp(t, "<|flush|>")) has_flush = 1;
        else if (!strcmp(t, "<|end|>")) end_id = id;
    }
    if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
        v->eog[end_id] = 0;
        v->attr[end_id] = ATTR_USER_DEFINED;
    }
    /* gemma4 / plamo: </s> is a normal token there */
    int has_marker = 0;
    int32_t s_id = -1;
    for (int32_t id = 0; id < n; id++) {
        if (!v->eog[id]) continue;
        const char *t = tok_text(v, id);
        if (!strcmp(t, "<|tool_response>") || !strcmp(t, "<|plamo:eos|>")) has_marker = 1;
        else if (!strcmp(t, "</s>")) s_id = id;
    }
    if (has_marker && s_id >= 0) {
        v->eog[s_id] = 0;
        v->attr[s_id] = ATTR_NORMAL;
    }
}

static int cmp_special(const void *a, const void *b, void *ctx) {
    const tern_vocab *v = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (v->text_len[x] != v->text_len[y]) return v->text_len[x] > v->text_len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void trie_add(tern_vocab *v, int32_t id, size_t *cap) {
    const unsigned char *s = (const unsigned char *)tok_text(v, id);
    size_t n = v->text_len[id];
    int32_t parent = -1, node = -1; /* parent -1: the list is trie_root[s[0]] */
    for (size_t i = 0; i < n; i++) {
        int32_t head = parent < 0 ? v->trie_root[s[0]] : v->trie[parent].child;
        int32_t c = head;
        while (c >= 0 && v->trie[c].byte != s[i]) c = v->trie[c].sibling;
        if (c < 0) {
            if ((size_t)v->n_trie == *cap) {
                *cap *= 2;
                v->trie = realloc(v->trie, *cap * sizeof *v->trie);
                if (!v->trie) { fprintf(stderr, "tern: out of memory\n"); abort(); }
            }
            c = v->n_trie++;
            v->trie[c] = (trie_node){.child = -1, .sibling = head, .token = -1, .byte = s[i]};
            if (parent < 0) v->trie_root[s[0]] = c;
            else v->trie[parent].child = c;
        }
        node = parent = c;
    }
    if (node >= 0) v->trie[node].token = id;
}

static void build_special_cache(tern_vocab *v) {
    v->special = tern_xmalloc((size_t)v->n_tokens * sizeof *v->special + 1);
    v->special_rank = tern_xmalloc((size_t)v->n_tokens * sizeof *v->special_rank);
    v->n_special = 0;
    for (int32_t id = 0; id < v->n_tokens; id++)
        if (v->attr[id] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) v->special[v->n_special++] = id;
    qsort_r(v->special, (size_t)v->n_special, sizeof *v->special, cmp_special, v);
    for (int32_t id = 0; id < v->n_tokens; id++) v->special_rank[id] = -1;
    for (int32_t i = 0; i < v->n_special; i++) v->special_rank[v->special[i]] = i;
    for (int i = 0; i < 256; i++) v->trie_root[i] = -1;
    size_t cap = 256;
    v->trie = tern_xmalloc(cap * sizeof *v->trie);
    v->n_trie = 0;
    for (int32_t i = 0; i < v->n_special; i++) trie_add(v, v->special[i], &cap);
}

/* Piece of a token as llama.cpp's token_to_piece(special=true) gives it. */
static void compute_piece(const tern_vocab *v, int32_t id, sbuf *out) {
    const char *t = tok_text(v, id);
    size_t n = v->text_len[id];
    uint16_t a = v->attr[id];
    if (a & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) {
        sb_put(out, t, n);
    } else if (a & ATTR_NORMAL) {
        if (v->type == VOCAB_SPM) { /* U+2581 -> ' ' */
            for (size_t i = 0; i < n;) {
                if (i + 3 <= n && memcmp(t + i, "\xe2\x96\x81", 3) == 0) { sb_put(out, " ", 1); i += 3; }
                else { sb_put(out, t + i, 1); i++; }
            }
        } else { /* GPT-2 byte decode (llama_decode_text) */
            for (size_t i = 0; i < n;) {
                int adv;
                uint32_t cp = tern_utf8_decode((const unsigned char *)t + i, n - i, &adv);
                int byte = tern_gpt2_cp_to_byte(cp);
                if (byte >= 0) {
                    char c = (char)byte;
                    sb_put(out, &c, 1);
                } else { /* llama.cpp writes "[UNK_BYTE_0x<utf8 hex><token text>]" */
                    char enc[4], hex[8];
                    int ne = tern_utf8_encode(cp, enc);
                    sb_put(out, "[UNK_BYTE_0x", 12);
                    for (int k = 0; k < ne; k++) {
                        snprintf(hex, sizeof hex, "%02x", (unsigned char)enc[k]);
                        sb_put(out, hex, 2);
                    }
                    sb_put(out, t, n);
                    sb_put(out, "]", 1);
                }
                i += (size_t)adv;
            }
        }
    } else if (a & ATTR_BYTE) { /* "<0xXX>" */
        char c = n >= 5 ? (char)strtol((char[3]){t[3], t[4], 0}, NULL, 16) : 0;
        sb_put(out, &c, 1);
    }
    /* undefined / unused: empty */
}

static const pre_family *find_pre(const char *pre) {
    for (size_t i = 0; i < sizeof pre_families / sizeof *pre_families; i++)
        if (in_list(pre, pre_families[i].names)) return &pre_families[i];
    return NULL;
}

tern_vocab *tern_vocab_load_pre(const gguf_file *f, const char *pre_override) {
    const char *model = gguf_get_cstr(f, "tokenizer.ggml.model");
    if (!model) {
        tern_set_error("tokenizer: no tokenizer.ggml.model");
        return NULL;
    }
    int type;
    if (!strcmp(model, "llama")) type = VOCAB_SPM;
    else if (!strcmp(model, "gpt2")) type = VOCAB_BPE;
    else {
        tern_set_error("tokenizer: unsupported tokenizer model '%s'", model);
        return NULL;
    }
    const gguf_value *toks = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VT_STRING);
    if (!toks || toks->count == 0 || toks->count > INT32_MAX / 2) {
        tern_set_error("tokenizer: missing or empty tokenizer.ggml.tokens");
        return NULL;
    }
    /* present keys must have llama.cpp's types (f32 scores, i32 token types, string merges) */
    const gguf_value *scores = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_VT_F32);
    const gguf_value *types = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_VT_I32);
    const gguf_value *merges = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_VT_STRING);
    if ((!scores && gguf_get(f, "tokenizer.ggml.scores")) || (!types && gguf_get(f, "tokenizer.ggml.token_type")) ||
        (!merges && gguf_get(f, "tokenizer.ggml.merges"))) {
        tern_set_error("tokenizer: scores must be an f32 array, token_type an i32 array, merges a string array");
        return NULL;
    }
    int32_t n = (int32_t)toks->count;
    if ((scores && scores->count < (uint64_t)n) || (types && types->count < (uint64_t)n)) {
        tern_set_error("tokenizer: scores/token_type shorter than the vocabulary");
        return NULL;
    }
    if (type == VOCAB_BPE && !merges) {
        tern_set_error("tokenizer: gpt2 model without tokenizer.ggml.merges");
        return NULL;
    }

    const pre_family *fam = NULL;
    if (type == VOCAB_BPE) {
        const char *pre = pre_override ? pre_override : gguf_get_cstr(f, "tokenizer.ggml.pre");
        if (!pre && gguf_get(f, "tokenizer.ggml.pre")) {
            tern_set_error("tokenizer: tokenizer.ggml.pre must be a string");
            return NULL;
        }
        if (!pre || !*pre) pre = "default"; /* llama.cpp warns and uses the default regexes */
        fam = find_pre(pre);
        if (!fam) {
            tern_set_error("tokenizer: unsupported pre-tokenizer '%s'", pre);
            return NULL;
        }
    }

    tern_vocab *v = tern_xcalloc(1, sizeof *v);
    v->type = type;
    v->n_tokens = n;

    /* texts: empty ones become "[EMPTY_<i>]" as in llama.cpp */
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += (toks->strs[i].len ? toks->strs[i].len : 24) + 1;
    v->text = tern_xmalloc(total);
    v->text_off = tern_xmalloc((size_t)n * sizeof *v->text_off);
    v->text_len = tern_xmalloc((size_t)n * sizeof *v->text_len);
    v->score = tern_xmalloc((size_t)n * sizeof *v->score);
    v->attr = tern_xmalloc((size_t)n * sizeof *v->attr);
    v->eog = tern_xcalloc((size_t)n, 1);
    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        gguf_str s = toks->strs[i];
        v->text_off[i] = (uint32_t)off;
        if (s.len) {
            memcpy(v->text + off, s.ptr, s.len);
            v->text_len[i] = (uint32_t)s.len;
        } else {
            v->text_len[i] = (uint32_t)snprintf(v->text + off, 24, "[EMPTY_%d]", i);
        }
        off += v->text_len[i];
        v->text[off++] = 0;
        v->score[i] = scores ? (float)gguf_arr_f64(scores, (uint64_t)i) : 0.0f;
        if (v->score[i] != v->score[i]) {
            tern_set_error("tokenizer: score of token %d is NaN", i);
            tern_vocab_free(v);
            return NULL;
        }
        v->attr[i] = types ? attr_of_type(gguf_arr_i64(types, (uint64_t)i)) : ATTR_NORMAL;
    }
    uint64_t cap = table_cap((uint64_t)n);
    v->tok_slot = tern_xmalloc(cap * sizeof *v->tok_slot);
    memset(v->tok_slot, 0xff, cap * sizeof *v->tok_slot);
    v->tok_mask = cap - 1;
    for (int32_t i = 0; i < n; i++) insert_token(v, i);

    for (int i = 0; i < 256; i++) {
        char e[4];
        v->byte_utf8_len[i] = (uint8_t)tern_utf8_encode(tern_gpt2_byte_to_cp((uint8_t)i), e);
        memcpy(v->byte_utf8[i], e, 2);
    }
    if (type == VOCAB_BPE) {
        /* "first second", split at the first space after position 0; the first of duplicate pairs wins */
        int32_t nm = (int32_t)merges->count;
        size_t mt = 0;
        for (int32_t i = 0; i < nm; i++) mt += merges->strs[i].len + 1;
        v->merge_text = tern_xmalloc(mt + 1);
        v->merge_off = tern_xmalloc((size_t)nm * sizeof *v->merge_off + 1);
        v->merge_first_len = tern_xmalloc((size_t)nm * sizeof *v->merge_first_len + 1);
        v->merge_second_len = tern_xmalloc((size_t)nm * sizeof *v->merge_second_len + 1);
        cap = table_cap((uint64_t)nm);
        v->merge_slot = tern_xmalloc(cap * sizeof *v->merge_slot);
        memset(v->merge_slot, 0xff, cap * sizeof *v->merge_slot);
        v->merge_mask = cap - 1;
        mt = 0;
        for (int32_t i = 0; i < nm; i++) {
            gguf_str s = merges->strs[i];
            const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
            size_t na = sp ? (size_t)(sp - s.ptr) : 0, nb = sp ? s.len - na - 1 : 0;
            v->merge_off[i] = (uint32_t)mt;
            v->merge_first_len[i] = (uint32_t)na;
            v->merge_second_len[i] = (uint32_t)nb;
            if (sp) memcpy(v->merge_text + mt, s.ptr, s.len);
            else v->merge_text[mt] = ' ';
            mt += na + 1 + nb;
            uint64_t h = merge_hash(v->merge_text + v->merge_off[i], na, v->merge_text + v->merge_off[i] + na + 1, nb);
            for (uint64_t k = h & v->merge_mask;; k = (k + 1) & v->merge_mask) {
                int32_t m = v->merge_slot[k];
                if (m < 0) { v->merge_slot[k] = i; break; }
                const char *t = v->merge_text + v->merge_off[m];
                if (v->merge_first_len[m] == na && v->merge_second_len[m] == nb &&
                    memcmp(t, v->merge_text + v->merge_off[i], na + 1 + nb) == 0)
                    break;
            }
        }
        v->n_merges = nm;
    }

    /* model defaults (llama_vocab::impl::load) */
    v->eot = v->eom = v->sep = v->pad = v->mask = -1;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = -1;
    if (type == VOCAB_SPM) {
        v->bos = 1; v->eos = 2; v->unk = 0;
        v->add_space_prefix = 1; v->add_bos = 1; v->clean_spaces = 0;
    } else {
        v->bos = 11; v->eos = 11; v->unk = -1;
        v->add_space_prefix = 0; v->add_bos = fam->add_bos;
        v->clean_spaces = fam->clean_spaces;
        v->ignore_merges = fam->ignore_merges;
        if (fam->no_bos) v->bos = -1;
    }
    int b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &b) == 0) v->add_space_prefix = b;
    load_specials(v, f);
    build_special_cache(v);

    /* piece cache, built before the per-model strip attributes (as llama.cpp) */
    sbuf pieces = {0};
    v->piece_off = tern_xmalloc(((size_t)n + 1) * sizeof *v->piece_off);
    for (int32_t i = 0; i < n; i++) {
        v->piece_off[i] = (uint32_t)pieces.n;
        compute_piece(v, i, &pieces);
    }
    v->piece_off[n] = (uint32_t)pieces.n;
    v->piece = pieces.p ? pieces.p : tern_xcalloc(1, 1);

    /* per-model strip attributes: phi-3 special tokens swallow the whitespace after them; jina-v2
     * <mask> the whitespace before it */
    const char *name = gguf_get_cstr(f, "general.name");
    char lname[256] = "";
    if (name) {
        size_t k = 0;
        for (; name[k] && k < sizeof lname - 1; k++) lname[k] = (char)tolower((unsigned char)name[k]);
        lname[k] = 0;
    }
    const char *pre = type == VOCAB_BPE ? (pre_override ? pre_override : gguf_get_cstr(f, "tokenizer.ggml.pre")) : NULL;
    if (pre && (strstr(pre, "jina-v2-de") || strstr(pre, "jina-v2-es") || strstr(pre, "jina-v2-code"))) {
        int32_t id = text_token(v, "<mask>");
        if (id >= 0) v->attr[id] |= ATTR_LSTRIP;
    } else if (strstr(lname, "phi-3") || strstr(lname, "phi3")) {
        for (int32_t i = 0; i < v->n_special; i++) v->attr[v->special[i]] |= ATTR_RSTRIP;
        int32_t id = text_token(v, "</s>");
        if (id >= 0) v->attr[id] |= ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (int k = 0; k < 3; k++)
            if ((id = text_token(v, keep[k])) >= 0) v->attr[id] &= (uint16_t)~ATTR_RSTRIP;
    }

    for (int32_t i = 0; i < v->n_special; i++)
        if (v->attr[v->special[i]] & (ATTR_LSTRIP | ATTR_RSTRIP)) v->has_strip = 1;

    if (fam) {
        for (int i = 0; i < MAX_REGEX && fam->regex[i]; i++) {
            if (compile_regex(&v->regex[i], fam->regex[i]) != 0) {
                tern_vocab_free(v);
                return NULL;
            }
            v->n_regex++;
            if (v->regex[i].collapsed) v->need_collapsed = 1;
            else v->need_utf = 1;
        }
    }
    return v;
}

tern_vocab *tern_vocab_load(const gguf_file *f) { return tern_vocab_load_pre(f, NULL); }

void tern_vocab_free(tern_vocab *v) {
    if (!v) return;
    for (int i = 0; i < v->n_regex; i++) pcre2_code_free(v->regex[i].code);
    free(v->text); free(v->text_off); free(v->text_len); free(v->score); free(v->attr); free(v->eog);
    free(v->tok_slot);
    free(v->merge_text); free(v->merge_off); free(v->merge_first_len); free(v->merge_second_len);
    free(v->merge_slot);
    free(v->special); free(v->special_rank); free(v->trie);
    free(v->piece); free(v->piece_off);
    free(v);
}

int32_t tern_vocab_n_tokens(const tern_vocab *v) { return v->n_tokens; }
int32_t tern_vocab_bos(const tern_vocab *v) { return v->bos; }
int32_t tern_vocab_eos(const tern_vocab *v) { return v->eos; }
int tern_vocab_add_bos(const tern_vocab *v) { return v->add_bos; }
int tern_vocab_is_eog(const tern_vocab *v, int32_t id) { return id >= 0 && id < v->n_tokens && v->eog[id]; }
int tern_vocab_is_control(const tern_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens && (v->attr[id] & ATTR_CONTROL) != 0;
}
int32_t tern_vocab_find(const tern_vocab *v, const char *text) { return find_token(v, text, strlen(text)); }

/* ---------------------------------------------------------------- tokenize: shared state */

typedef struct {
    const tern_vocab *v;
    ibuf out;
    /* scratch reused across fragments and words */
    sbuf text, word;
    uint32_t *cps;
    size_t cps_cap;
    ibuf sym; /* symbols: 4 ints each (start, len, prev, next) */
    struct bigram { int32_t left, right; float score; int32_t rank, size; } *heap;
    size_t heap_n, heap_cap;
    pcre2_match_data *md;
    size_t dropped; /* input bytes no token encodes (dropped by byte-level BPE, UNK under SentencePiece) */
} tok_ctx;

/* Heap of candidate merges. BPE: lowest rank first; SPM: highest score first. Ties: leftmost. */
static int bigram_before(const tok_ctx *c, const struct bigram *a, const struct bigram *b) {
    if (c->v->type == VOCAB_BPE) {
        if (a->rank != b->rank) return a->rank < b->rank;
    } else if (a->score != b->score) {
        return a->score > b->score;
    }
    return a->left < b->left;
}
static void heap_push(tok_ctx *c, struct bigram g) {
    if (c->heap_n == c->heap_cap) {
        c->heap_cap = c->heap_cap ? 2 * c->heap_cap : 256;
        c->heap = realloc(c->heap, c->heap_cap * sizeof *c->heap);
        if (!c->heap) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    }
    size_t i = c->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_before(c, &g, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = g;
}
static struct bigram heap_pop(tok_ctx *c) {
    struct bigram top = c->heap[0], last = c->heap[--c->heap_n];
    size_t i = 0, n = c->heap_n;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct bigram *best = &last;
        if (l < n && bigram_before(c, &c->heap[l], best)) { m = l; best = &c->heap[l]; }
        if (r < n && bigram_before(c, &c->heap[r], best)) { m = r; }
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = last;
    return top;
}

/* Symbols: the word split into UTF-8 characters, a doubly linked list as merges join them. */
#define SYM_START(c, i) ((c)->sym.p[4 * (i)])
#define SYM_LEN(c, i) ((c)->sym.p[4 * (i) + 1])
#define SYM_PREV(c, i) ((c)->sym.p[4 * (i) + 2])
#define SYM_NEXT(c, i) ((c)->sym.p[4 * (i) + 3])

static int32_t split_symbols(tok_ctx *c, const char *s, size_t n) {
    c->sym.n = 0;
    int32_t count = 0;
    for (size_t off = 0; off < n; count++) {
        size_t len = (size_t)tern_utf8_len((unsigned char)s[off]);
        if (len > n - off) len = n - off;
        ib_push(&c->sym, (int32_t)off);
        ib_push(&c->sym, (int32_t)len);
        ib_push(&c->sym, count - 1);
        off += len;
        ib_push(&c->sym, off == n ? -1 : count + 1);
    }
    return count;
}

static void try_bigram(tok_ctx *c, const char *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const tern_vocab *v = c->v;
    const char *a = s + SYM_START(c, left), *b = s + SYM_START(c, right);
    size_t na = (size_t)SYM_LEN(c, left), nb = (size_t)SYM_LEN(c, right);
    struct bigram g = {left, right, 0.0f, 0, (int32_t)(na + nb)};
    if (v->type == VOCAB_BPE) {
        g.rank = find_merge(v, a, na, b, nb);
        if (g.rank < 0) return;
    } else {
        int32_t id = find_token(v, a, na + nb); /* adjacent symbols: contiguous bytes */
        if (id < 0) return;
        g.score = v->score[id];
    }
    heap_push(c, g);
}

static void merge_symbols(tok_ctx *c, const char *s, int32_t count) {
    c->heap_n = 0;
    for (int32_t i = 1; i < count; i++) try_bigram(c, s, i - 1, i);
    while (c->heap_n) {
        struct bigram g = heap_pop(c);
        int32_t l = g.left, r = g.right;
        /* stale: a side was merged away or grew since the pair was queued */
        if (SYM_LEN(c, l) == 0 || SYM_LEN(c, r) == 0 || SYM_LEN(c, l) + SYM_LEN(c, r) != g.size) continue;
        SYM_LEN(c, l) += SYM_LEN(c, r);
        SYM_LEN(c, r) = 0;
        SYM_NEXT(c, l) = SYM_NEXT(c, r);
        if (SYM_NEXT(c, r) >= 0) SYM_PREV(c, SYM_NEXT(c, r)) = l;
        try_bigram(c, s, SYM_PREV(c, l), l);
        try_bigram(c, s, l, SYM_NEXT(c, l));
    }
}

/* ---------------------------------------------------------------- SentencePiece */

static int32_t spm_byte_token(const tern_vocab *v, unsigned char ch) {
    char buf[8];
    snprintf(buf, sizeof buf, "<0x%02X>", ch);
    int32_t id = text_token(v, buf);
    if (id < 0) id = find_token(v, (const char *)&ch, 1);
    return id >= 0 ? id : v->unk; /* llama.cpp would throw here; no real vocabulary gets here */
}

static void spm_fragment(tok_ctx *c, const char *frag, size_t n, int space_prefix) {
    const tern_vocab *v = c->v;
    c->text.n = 0;
    sb_reserve(&c->text, 3 * n + 4);
    if (space_prefix) sb_put(&c->text, "\xe2\x96\x81", 3);
    for (size_t i = 0; i < n; i++) {
        if (frag[i] == ' ') sb_put(&c->text, "\xe2\x96\x81", 3);
        else sb_put(&c->text, frag + i, 1);
    }
    const char *s = c->text.p;
    int32_t count = split_symbols(c, s, c->text.n);
    if (!count) return;
    merge_symbols(c, s, count);
    for (int32_t i = 0; i != -1; i = SYM_NEXT(c, i)) {
        int32_t id = find_token(v, s + SYM_START(c, i), (size_t)SYM_LEN(c, i));
        if (id >= 0) {
            ib_push(&c->out, id);
        } else { /* byte fallback */
            for (int32_t k = 0; k < SYM_LEN(c, i); k++) {
                int32_t b = spm_byte_token(v, (unsigned char)s[SYM_START(c, i) + k]);
                if (b < 0 || b == v->unk) c->dropped++;
                if (b >= 0) ib_push(&c->out, b);
            }
        }
    }
}

/* ---------------------------------------------------------------- byte-level BPE */

static size_t cp_count(const unsigned char *s, size_t n, int collapsed);

static void bpe_word(tok_ctx *c, const char *w, size_t n) {
    const tern_vocab *v = c->v;
    if (v->ignore_merges) {
        int32_t id = find_token(v, w, n);
        if (id >= 0) {
            ib_push(&c->out, id);
            return;
        }
    }
    int32_t count = split_symbols(c, w, n);
    if (!count) return;
    merge_symbols(c, w, count);
    for (int32_t i = 0; i != -1; i = SYM_NEXT(c, i)) {
        const char *s = w + SYM_START(c, i);
        int32_t id = find_token(v, s, (size_t)SYM_LEN(c, i));
        if (id >= 0) {
            ib_push(&c->out, id);
        } else { /* llama.cpp then looks up each single byte of the piece; usually none exists. The piece is
                  * GPT-2-mapped text, one code point per input byte: what is not found is dropped (as
                  * llama.cpp drops it), and counted */
            size_t kept = 0;
            for (int32_t k = 0; k < SYM_LEN(c, i); k++) {
                int32_t b = find_token(v, s + k, 1);
                if (b >= 0) { ib_push(&c->out, b); kept++; }
            }
            c->dropped += cp_count((const unsigned char *)s, (size_t)SYM_LEN(c, i), 0) - kept;
        }
    }
}

/* Code points in s[0..n): bytes in the collapsed text, lead bytes in (valid) UTF-8. */
static size_t cp_count(const unsigned char *s, size_t n, int collapsed) {
    if (collapsed) return n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += (s[i] & 0xC0) != 0x80;
    return k;
}

/* Split one regex over fragments (lengths in code points, summing to the text), appending the new
 * fragment lengths to out: matches and the unmatched stretches between them. */
static void regex_split(tok_ctx *c, const pre_regex *r, const unsigned char *col, const char *utf,
                        const size_t *cp_byte, const ibuf *in, ibuf *out) {
    size_t start = 0; /* code point index of the fragment */
    for (size_t f = 0; f < in->n; f++) {
        size_t len = (size_t)in->p[f];
        const unsigned char *subj;
        size_t subj_len, base = 0;
        if (r->collapsed) {
            subj = col + start;
            subj_len = len;
        } else {
            base = cp_byte[start];
            subj = (const unsigned char *)utf + base;
            subj_len = cp_byte[start + len] - base;
        }
        size_t prev = 0; /* end of the last match, in bytes */
        size_t pos = 0;
        /* the subject is built valid: skip PCRE2's UTF validation, which is O(subject) per call */
        const uint32_t base_flags = r->collapsed ? 0 : PCRE2_NO_UTF_CHECK;
        uint32_t flags = 0;
        while (pos <= subj_len) {
            int rc = pcre2_match(r->code, subj, subj_len, pos, base_flags | flags, c->md, NULL);
            if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) /* JIT stack exhausted: the interpreter uses the heap */
                rc = pcre2_match(r->code, subj, subj_len, pos, base_flags | flags | PCRE2_NO_JIT, c->md, NULL);
            if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
                fprintf(stderr, "tern: tokenizer regex failed (%d); text split there\n", rc);
                break;
            }
            if (rc < 0) {
                if (flags && pos < subj_len) { /* empty match retry failed: step one character */
                    flags = 0;
                    pos += r->collapsed ? 1 : (size_t)tern_utf8_len(subj[pos]);
                    continue;
                }
                break;
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
            size_t ms = ov[0], me = ov[1];
            if (ms > prev) ib_push(out, (int32_t)(cp_count(subj + prev, ms - prev, r->collapsed)));
            if (me > ms) ib_push(out, (int32_t)(cp_count(subj + ms, me - ms, r->collapsed)));
            prev = me;
            pos = me;
            flags = me == ms ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
        }
        if (prev < subj_len) ib_push(out, (int32_t)(cp_count(subj + prev, subj_len - prev, r->collapsed)));
        start += len;
    }
}

/* Pre-tokenize a raw fragment and BPE each word (llama.cpp unicode_regex_split + bpe session). */
static void bpe_fragment(tok_ctx *c, const char *frag, size_t n) {
    const tern_vocab *v = c->v;
    if (c->cps_cap < n + 1) {
        free(c->cps);
        c->cps_cap = n + 1;
        c->cps = tern_xmalloc(c->cps_cap * sizeof *c->cps);
    }
    size_t ncp = 0;
    for (size_t i = 0; i < n;) { /* malformed UTF-8 becomes U+FFFD here, as in llama.cpp */
        int adv;
        c->cps[ncp++] = tern_utf8_decode((const unsigned char *)frag + i, n - i, &adv);
        i += (size_t)adv;
    }
    unsigned char *col = NULL;
    char *utf = NULL;
    size_t *cp_byte = NULL;
    if (v->need_collapsed) { /* one byte per code point standing for its class */
        col = tern_xmalloc(ncp + 1);
        for (size_t i = 0; i < ncp; i++) {
            uint32_t cp = c->cps[i];
            if (cp < 128) { col[i] = (unsigned char)cp; continue; }
            if (tern_uc_is_space(cp)) { col[i] = 0x0B; continue; }
            switch (tern_uc_class_of(cp)) {
            case TERN_UC_NUMBER: col[i] = COL_NUMBER; break;
            case TERN_UC_LETTER: col[i] = COL_LETTER; break;
            case TERN_UC_PUNCT: col[i] = COL_PUNCT; break;
            case TERN_UC_MARK: col[i] = COL_MARK; break;
            case TERN_UC_SYMBOL: col[i] = COL_SYMBOL; break;
            default: col[i] = COL_OTHER; break;
            }
        }
    }
    if (v->need_utf) { /* the code points, non-ASCII White_Space -> \v */
        utf = tern_xmalloc(4 * ncp + 1);
        cp_byte = tern_xmalloc((ncp + 1) * sizeof *cp_byte);
        size_t nb = 0;
        for (size_t i = 0; i < ncp; i++) {
            cp_byte[i] = nb;
            uint32_t cp = c->cps[i];
            if (cp > 127 && tern_uc_is_space(cp)) cp = 0x0B;
            /* surrogates / beyond U+10FFFF (from malformed input) are in no class of these regexes;
             * U+FFFD neither, and it keeps the subject valid UTF-8 for PCRE2_NO_UTF_CHECK */
            if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
            nb += (size_t)tern_utf8_encode(cp, utf + nb);
        }
        cp_byte[ncp] = nb;
    }
    ibuf a = {0}, b = {0};
    if (ncp) ib_push(&a, (int32_t)ncp);
    for (int i = 0; i < v->n_regex; i++) {
        b.n = 0;
        regex_split(c, &v->regex[i], col, utf, cp_byte, &a, &b);
        ibuf t = a; a = b; b = t;
    }
    size_t start = 0;
    for (size_t f = 0; f < a.n; f++) {
        size_t len = (size_t)a.p[f];
        c->word.n = 0;
        sb_reserve(&c->word, 8 * len + 1);
        for (size_t i = start; i < start + len; i++) {
            char u[4];
            int nu = tern_utf8_encode(c->cps[i], u);
            for (int k = 0; k < nu; k++) {
                uint8_t b = (uint8_t)u[k];
                memcpy(c->word.p + c->word.n, v->byte_utf8[b], v->byte_utf8_len[b]);
                c->word.n += v->byte_utf8_len[b];
            }
        }
        if (c->word.n) bpe_word(c, c->word.p, c->word.n);
        start += len;
    }
    free(a.p); free(b.p); free(col); free(utf); free(cp_byte);
}

/* ---------------------------------------------------------------- special-token partition */

typedef struct { int32_t pos, id; } placement;
static int cmp_pos(const void *a, const void *b) {
    const placement *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int32_t trie_step(const tern_vocab *v, int32_t list, unsigned char byte) {
    while (list >= 0 && v->trie[list].byte != byte) list = v->trie[list].sibling;
    return list;
}

static void raw_fragment(tok_ctx *c, const char *s, size_t n, int *prev_special) {
    if (c->v->type == VOCAB_SPM) spm_fragment(c, s, n, c->v->add_space_prefix && *prev_special);
    else bpe_fragment(c, s, n);
    *prev_special = 0;
}

/* llama.cpp tokenizer_st_partition, done as: find every occurrence of every special token (trie
 * walk from each byte), then let tokens claim occurrences in partition order (longest token first,
 * each token left to right), an occurrence being taken only if all its bytes are still raw text.
 * That is what cutting fragments token by token gives, without rescanning the text once per special
 * token. Cost: O(len * depth of the trie matches) + O(occurrences). */
static void tokenize_text(tok_ctx *c, const char *text, size_t len, int parse_special) {
    const tern_vocab *v = c->v;
    int32_t *occ = NULL; /* (rank, pos) pairs in text order */
    size_t n_occ = 0, cap = 0;
    for (size_t i = 0; i < len && v->n_special; i++) {
        int32_t node = trie_step(v, v->trie_root[(unsigned char)text[i]], (unsigned char)text[i]);
        for (size_t j = i; node >= 0;) {
            int32_t id = v->trie[node].token;
            if (id >= 0 && (parse_special || !(v->attr[id] & (ATTR_CONTROL | ATTR_UNKNOWN)))) {
                if (n_occ == cap) {
                    cap = cap ? 2 * cap : 64;
                    occ = realloc(occ, 2 * cap * sizeof *occ);
                    if (!occ) { fprintf(stderr, "tern: out of memory\n"); abort(); }
                }
                occ[2 * n_occ] = v->special_rank[id];
                occ[2 * n_occ + 1] = (int32_t)i;
                n_occ++;
            }
            if (++j >= len) break;
            node = trie_step(v, v->trie[node].child, (unsigned char)text[j]);
        }
    }
    int prev_special = 1; /* SPM: a space is prefixed to the first fragment and to any after a token */
    if (!n_occ) {
        raw_fragment(c, text, len, &prev_special);
        return;
    }
    /* stable counting sort by rank: positions stay ascending within a token */
    size_t *start = tern_xcalloc((size_t)v->n_special + 1, sizeof *start);
    int32_t *pos = tern_xmalloc(n_occ * sizeof *pos);
    for (size_t k = 0; k < n_occ; k++) start[occ[2 * k] + 1]++;
    for (int32_t r = 0; r < v->n_special; r++) start[r + 1] += start[r];
    for (size_t k = 0; k < n_occ; k++) pos[start[occ[2 * k]]++] = occ[2 * k + 1];
    /* start[r] is now the end of rank r's run; runs are in rank order */
    uint8_t *mask = tern_xcalloc(len, 1); /* 0 raw, 1 special token, 2 stripped whitespace */
    placement *taken = (placement *)occ;  /* reuse: at most n_occ placements of 8 bytes */
    size_t n_taken = 0, k = 0;
    for (int32_t r = 0; r < v->n_special; r++) {
        int32_t id = v->special[r];
        size_t L = v->text_len[id];
        uint16_t a = v->attr[id];
        for (; k < start[r]; k++) {
            size_t p = (size_t)pos[k];
            /* Claimed spans come from tokens at least as long as this one, so one overlapping
             * [p, p+L) covers p or p+L-1; stripped whitespace can be shorter: scan then. */
            if (mask[p] || mask[p + L - 1]) continue;
            if (v->has_strip) {
                size_t q = p;
                while (q < p + L && !mask[q]) q++;
                if (q < p + L) continue;
            }
            memset(mask + p, 1, L);
            if (a & ATTR_LSTRIP)
                for (size_t j = p; j > 0 && !mask[j - 1] && isspace((unsigned char)text[j - 1]); j--) mask[j - 1] = 2;
            if (a & ATTR_RSTRIP)
                for (size_t j = p + L; j < len && !mask[j] && isspace((unsigned char)text[j]); j++) mask[j] = 2;
            taken[n_taken++] = (placement){(int32_t)p, id};
        }
    }
    free(pos);
    free(start);
    qsort(taken, n_taken, sizeof *taken, cmp_pos);
    size_t t = 0;
    for (size_t i = 0; i < len;) {
        if (mask[i] == 0) {
            size_t j = i;
            while (j < len && !mask[j]) j++;
            raw_fragment(c, text + i, j - i, &prev_special);
            i = j;
        } else if (mask[i] == 1) {
            ib_push(&c->out, taken[t].id);
            prev_special = 1;
            i += v->text_len[taken[t].id];
            t++;
        } else {
            i++;
        }
    }
    free(mask);
    free(occ);
}

int tern_tokenize(const tern_vocab *v, const char *text, size_t len, int add_bos, int parse_special,
                  int32_t *out, int max) {
    return tern_tokenize_ex(v, text, len, add_bos, parse_special, out, max, NULL);
}

int tern_tokenize_ex(const tern_vocab *v, const char *text, size_t len, int add_bos, int parse_special,
                     int32_t *out, int max, size_t *n_dropped) {
    if (n_dropped) *n_dropped = 0;
    if (!v || (!text && len) || max < 0 || (max && !out)) {
        tern_set_error("tern_tokenize: bad arguments");
        return -1;
    }
    tok_ctx c = {.v = v};
    c.md = pcre2_match_data_create(1, NULL);
    if (add_bos && v->bos >= 0) ib_push(&c.out, v->bos);
    if (len) tokenize_text(&c, text, len, parse_special);
    size_t n = c.out.n;
    if (n_dropped) *n_dropped = c.dropped;
    if (n > INT32_MAX) n = INT32_MAX;
    if (n && max) memcpy(out, c.out.p, (n < (size_t)max ? n : (size_t)max) * sizeof *out);
    pcre2_match_data_free(c.md);
    free(c.out.p); free(c.text.p); free(c.word.p); free(c.cps); free(c.sym.p); free(c.heap);
    return (int)n;
}

/* ---------------------------------------------------------------- detokenize */

int tern_token_to_piece(const tern_vocab *v, int32_t id, char *buf, int buflen, int show_special) {
    if (id < 0 || id >= v->n_tokens) return -1;
    if (!show_special && (v->attr[id] & (ATTR_UNKNOWN | ATTR_CONTROL))) return 0;
    uint32_t n = v->piece_off[id + 1] - v->piece_off[id];
    if (buflen > 0) memcpy(buf, v->piece + v->piece_off[id], n < (uint32_t)buflen ? n : (size_t)buflen);
    return (int)n;
}

/* llama.cpp llama_detokenize(remove_special=false, unparse_special=show_special): pieces
 * concatenated, the first piece's leading space dropped if the vocab adds a space prefix, then the
 * tokenizer's clean_up_tokenization_spaces passes where the family asks for them. */
int tern_detokenize(const tern_vocab *v, const int32_t *ids, int n, char *buf, int buflen, int show_special) {
    sbuf s = {0};
    sb_reserve(&s, 16);
    int remove_space = v->add_space_prefix;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= v->n_tokens) { remove_space = 0; continue; }
        if (!show_special && (v->attr[id] & (ATTR_UNKNOWN | ATTR_CONTROL))) { remove_space = 0; continue; }
        const char *p = v->piece + v->piece_off[id];
        size_t len = v->piece_off[id + 1] - v->piece_off[id];
        if (remove_space && len && *p == ' ') { p++; len--; }
        remove_space = 0;
        sb_put(&s, p, len);
    }
    char *t = s.p;
    long total = (long)s.n;
    if (v->clean_spaces && total) {
        long n1 = total; /* " ?" " !" " ." " ," lose the space */
        total = 1;
        for (long i = 1; i < n1; i++) {
            char x = t[i];
            if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
            t[total++] = x;
        }
        long n2 = total; /* " ' " -> "'" */
        total = 1;
        for (long i = 1; i < n2; i++) {
            char x = t[i];
            if (x == '\'' && i + 1 < n2 && t[i - 1] == ' ' && t[i + 1] == ' ') {
                total--;
                t[++i] = '\0';
            }
            t[total++] = x;
        }
        long n3 = total; /* " 's" " 'm" " 're" " 've" lose the space */
        total = 1;
        for (long i = 1; i < n3; i++) {
            char x = t[i];
            if (t[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
                char x1 = t[i + 1];
                if (x1 == 's' || x1 == 'm') total--;
                else if (i + 2 < n3 && ((x1 == 'r' && t[i + 2] == 'e') || (x1 == 'v' && t[i + 2] == 'e'))) total--;
            }
            t[total++] = x;
        }
    }
    if (buflen > 0) memcpy(buf, t, (size_t)(total < buflen ? total : buflen));
    free(s.p);
    return total > INT32_MAX ? INT32_MAX : (int)total;
}

/* ---------------------------------------------------------------- UTF-8 streaming */

/* Expected sequence length from a lead byte, 0 for a byte that cannot start one (C0, C1: overlong;
 * F5..FF: past U+10FFFF; 80..BF: continuation). */
static int seq_len(unsigned char b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b < 0xE0) return 2;
    if (b >= 0xE0 && b < 0xF0) return 3;
    if (b >= 0xF0 && b < 0xF5) return 4;
    return 0;
}

/* Whether c may follow lead byte b as the sequence's second byte (Unicode 15 table 3-7: no overlong
 * forms, no surrogates, nothing past U+10FFFF); later bytes are any continuation 80..BF. */
static int second_ok(unsigned char b, unsigned char c) {
    if (b == 0xE0) return c >= 0xA0 && c <= 0xBF;
    if (b == 0xED) return c >= 0x80 && c <= 0x9F;
    if (b == 0xF0) return c >= 0x90 && c <= 0xBF;
    if (b == 0xF4) return c >= 0x80 && c <= 0x8F;
    return (c & 0xC0) == 0x80;
}

size_t tern_utf8_valid_prefix(const char *text, size_t n) {
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        const int L = seq_len(p[i]);
        if (!L || i + (size_t)L > n) return i;
        if (L > 1 && !second_ok(p[i], p[i + 1])) return i;
        for (int k = 2; k < L; k++)
            if ((p[i + (size_t)k] & 0xC0) != 0x80) return i;
        i += (size_t)L;
    }
    return n;
}

int tern_utf8_stream_push(tern_utf8_stream *s, const char *in, int n, char *out) {
    int np = s->n_pending, total = np + (n > 0 ? n : 0), o = 0;
#define AT(i) ((unsigned char)((i) < np ? s->pending[(i)] : in[(i) - np]))
    int i = 0;
    while (i < total) {
        unsigned char b = AT(i);
        int L = seq_len(b);
        if (L == 1) { out[o++] = (char)b; i++; continue; }
        int k = 1; /* length of the valid prefix of the sequence starting at i */
        while (L && k < L && i + k < total && (k == 1 ? second_ok(b, AT(i + k)) : (AT(i + k) & 0xC0) == 0x80)) k++;
        if (L && k == L) { /* complete */
            for (int j = 0; j < L; j++) out[o++] = (char)AT(i + j);
            i += L;
        } else if (L && i + k == total) { /* incomplete so far: keep for the next push */
            break;
        } else { /* invalid: U+FFFD for the maximal valid prefix (one byte at least), then resync */
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += k;
        }
    }
    char keep[8];
    int nk = total - i;
    for (int j = 0; j < nk; j++) keep[j] = (char)AT(i + j);
#undef AT
    memcpy(s->pending, keep, (size_t)nk);
    s->n_pending = nk;
    return o;
}
