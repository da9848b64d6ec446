/* test_tokenizer: token ids, detokenized text, pieces, EOG/control sets against llama.cpp goldens.
 *
 * Fixtures (tests/fixtures/tokenizer/, made by tests/gen_tokenizer_fixtures.py with llama-cpp-python
 * 0.3.36 as the reference; the format is described there):
 *   smollm2.tsv  byte-level BPE, pre "smollm": models/SmolLM2-135M-Instruct.Q4_1.gguf (`make model`)
 *   gemma3.tsv   SentencePiece: gemma3-270m-tokenizer.gguf.gz (Gemma-3-270M's metadata, no tensors)
 *   qwen2.tsv    byte-level BPE, pre "qwen2": qwen2.5-coder-tokenizer.gguf.gz (Qwen2.5-Coder-1.5B-Instruct's
 *                metadata, no tensors); malformed UTF-8 among its strings
 *   pre.tsv      the SmolLM2 vocabulary under every supported tokenizer.ggml.pre family
 * Every string is checked with parse_special off and on, with BOS as the model asks, detokenized with
 * control tokens hidden and shown, and streamed piece by piece through tern_utf8_stream_push.
 * Run from the repository root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf.h"
#include "tokenizer.h"
#include "util.h"

#define FIX "tests/fixtures/tokenizer/"
#define SMOLLM2 "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)sz + 1);
    *n = fread(buf, 1, (size_t)sz, f);
    buf[*n] = 0;
    fclose(f);
    return buf;
}

/* Split line (modified in place) at tabs; returns the field count. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = 0;
            fields[n++] = p + 1;
        }
    return n;
}

static size_t unhex(const char *h, char *out) {
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned x;
        sscanf(h, "%2x", &x);
        out[n++] = (char)x;
    }
    return n;
}

static int parse_ids(const char *s, int32_t *out) {
    int n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s) break;
        out[n++] = (int32_t)x;
        s = end;
    }
    return n;
}

static int ids_equal(const int32_t *a, int na, const int32_t *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

/* Printable form of a test string for failure messages (truncated). */
static const char *show(const char *s, size_t n) {
    static char buf[200];
    size_t o = 0;
    for (size_t i = 0; i < n && o < sizeof buf - 8; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') o += (size_t)snprintf(buf + o, sizeof buf - o, "\\n");
        else if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(buf + o, sizeof buf - o, "\\x%02x", c);
        else buf[o++] = (char)c;
    }
    buf[o] = 0;
    return buf;
}

static const char *show_ids(const int32_t *a, int n) {
    static char buf[2][400];
    static int k;
    char *b = buf[k ^= 1];
    size_t o = 0;
    for (int i = 0; i < n && o < sizeof buf[0] - 16; i++) o += (size_t)snprintf(b + o, sizeof buf[0] - o, "%d ", a[i]);
    if (o == 0) b[0] = 0;
    return b;
}

/* Is s[0..n) complete, valid UTF-8 (no sequence cut at either end, no overlong form, surrogate or code
 * point past U+10FFFF)? */
static int utf8_complete(const char *s, int n) {
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    for (int i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n) return 0;
        unsigned cp = len == 1 ? c : c & (0x7Fu >> len);
        for (int k = 1; k < len; k++) {
            if (((unsigned char)s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
        }
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

enum { MAXTOK = 1 << 16 };
static int32_t want[MAXTOK], got[MAXTOK];
static char text[1 << 16], expect[1 << 18], out[1 << 18], whole[3 * ((1 << 18) + 8)];

/* Stream the pieces of ids through the UTF-8 guard: every chunk must be complete UTF-8 and the
 * chunks must add up to the pieces. Where the pieces are not valid UTF-8 (llama.cpp gives a surrogate
 * such as ED A0 80 in the text back as those bytes) the chunks must add up to what one push of all
 * of them gives (its U+FFFD for each maximal invalid subpart), wherever the tokens cut the text.
 * Returns how many pushes held bytes back (a character split across tokens). */
static int check_stream(const tern_vocab *v, const int32_t *ids, int n, const char *what) {
    tern_utf8_stream st = {0};
    char piece[512], chunk[3 * (512 + 8)];
    size_t no = 0, ne = 0;
    int held = 0, ok = 1;
    for (int i = 0; i < n; i++) {
        int np = tern_token_to_piece(v, ids[i], piece, sizeof piece, 0);
        if (np < 0 || np > (int)sizeof piece) { ok = 0; break; }
        memcpy(expect + ne, piece, (size_t)np);
        ne += (size_t)np;
        int k = tern_utf8_stream_push(&st, piece, np, chunk);
        if (!utf8_complete(chunk, k)) ok = 0;
        memcpy(out + no, chunk, (size_t)k);
        no += (size_t)k;
        held += st.n_pending > 0;
    }
    if (ok && !utf8_complete(expect, (int)ne)) {
        tern_utf8_stream one = {0};
        int nw = tern_utf8_stream_push(&one, expect, (int)ne, whole);
        CHECK(utf8_complete(whole, nw) && one.n_pending == 0 && no == (size_t)nw && !memcmp(out, whole, no),
              "stream of invalid '%s'", what);
        return held;
    }
    CHECK(ok && st.n_pending == 0 && no == ne && memcmp(out, expect, ne) == 0, "stream of '%s'", what);
    return held;
}

static void check_model(const char *label, const char *gguf_path, const char *tsv_path) {
    size_t tsv_n;
    char *tsv = slurp(tsv_path, &tsv_n);
    gguf_file *f = gguf_open(gguf_path);
    CHECK(tsv != NULL, "%s: cannot read %s", label, tsv_path);
    CHECK(f != NULL, "%s: cannot open %s: %s", label, gguf_path, tern_last_error());
    tern_vocab *v = f ? tern_vocab_load(f) : NULL;
    CHECK(v != NULL, "%s: load: %s", label, tern_last_error());
    if (!tsv || !v) {
        free(tsv);
        tern_vocab_free(v);
        if (f) gguf_close(f);
        return;
    }
    int n_strings = 0, n_held = 0;
    double t_tok = 0;
    size_t bytes = 0;
    char *save = NULL;
    for (char *line = strtok_r(tsv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *fl[10];
        int nf = split_tabs(line, fl, 10);
        if (!strcmp(fl[0], "meta") && nf == 5) {
            CHECK(tern_vocab_n_tokens(v) == atoi(fl[1]), "%s: n_tokens %d", label, tern_vocab_n_tokens(v));
            CHECK(tern_vocab_bos(v) == atoi(fl[2]), "%s: bos %d want %s", label, tern_vocab_bos(v), fl[2]);
            CHECK(tern_vocab_eos(v) == atoi(fl[3]), "%s: eos %d want %s", label, tern_vocab_eos(v), fl[3]);
            CHECK(tern_vocab_add_bos(v) == atoi(fl[4]), "%s: add_bos %d", label, tern_vocab_add_bos(v));
        } else if (!strcmp(fl[0], "tok") && nf == 8) {
            size_t len = unhex(fl[1], text);
            n_strings++;
            bytes += len;
            /* ids: special off, on, on + BOS as the model asks (llama.cpp add_special) */
            for (int mode = 0; mode < 3; mode++) {
                int nw = parse_ids(fl[2 + mode], want);
                double t0 = tern_time_s();
                int ng = tern_tokenize(v, text, len, mode == 2 ? tern_vocab_add_bos(v) : 0, mode > 0, got, MAXTOK);
                t_tok += tern_time_s() - t0;
                CHECK(ids_equal(got, ng, want, nw), "%s: special=%d bos=%d '%s'\n  got  %s\n  want %s", label,
                      mode > 0, mode == 2, show(text, len), show_ids(got, ng), show_ids(want, nw));
            }
            /* detokenize llama.cpp's ids (= ours when the above passed): hidden and shown specials */
            for (int mode = 0; mode < 3; mode++) {
                int nw = parse_ids(fl[mode == 0 ? 2 : 3], want);
                size_t ne = unhex(fl[5 + mode], expect);
                int no = tern_detokenize(v, want, nw, out, sizeof out, mode == 2);
                CHECK(no == (int)ne && memcmp(out, expect, ne) == 0, "%s: detokenize mode %d '%s' -> '%s'", label,
                      mode, show(text, len), show(out, no > 0 ? (size_t)no : 0));
            }
            /* round trip: our ids back through our detokenizer give llama.cpp's text */
            int ng = tern_tokenize(v, text, len, 0, 0, got, MAXTOK);
            int no = tern_detokenize(v, got, ng, out, sizeof out, 0);
            size_t ne = unhex(fl[5], expect);
            CHECK(no == (int)ne && memcmp(out, expect, ne) == 0, "%s: round trip '%s'", label, show(text, len));
            n_held += check_stream(v, got, ng, show(text, len));
        } else if ((!strcmp(fl[0], "eog") || !strcmp(fl[0], "ctl")) && nf == 2) {
            int is_eog = fl[0][0] == 'e';
            int nw = parse_ids(fl[1], want), bad = 0, k = 0;
            for (int32_t id = 0; id < tern_vocab_n_tokens(v); id++) {
                int in = k < nw && want[k] == id;
                k += in;
                int mine = is_eog ? tern_vocab_is_eog(v, id) : tern_vocab_is_control(v, id);
                if (mine != in) {
                    if (bad < 5) fprintf(stderr, "%s: %s mismatch at id %d (ours %d)\n", label, fl[0], id, mine);
                    bad++;
                }
            }
            CHECK(bad == 0, "%s: %d ids disagree on %s", label, bad, fl[0]);
        } else if (!strcmp(fl[0], "piece") && nf == 4) {
            int32_t id = atoi(fl[1]);
            for (int show_special = 0; show_special < 2; show_special++) {
                size_t ne = unhex(fl[2 + show_special], expect);
                int no = tern_token_to_piece(v, id, out, sizeof out, show_special);
                CHECK(no == (int)ne && memcmp(out, expect, ne) == 0, "%s: piece %d special=%d", label, id, show_special);
            }
        } else {
            CHECK(0, "%s: bad fixture record '%s'", label, fl[0]);
        }
    }
    CHECK(n_strings >= 200, "%s: only %d strings", label, n_strings);
    /* the emoji/CJK strings must have split characters across tokens, or the stream test is idle */
    if (!strstr(label, "gemma3")) CHECK(n_held > 0, "%s: no character split across tokens", label);
    printf("%s: %d strings, %.2f MB/s tokenizing (x3 modes)\n", label, n_strings, 3 * bytes / 1e6 / (t_tok + 1e-9));

    /* EOG: the end-of-turn tokens and EOS */
    int32_t im_end = tern_vocab_find(v, "<|im_end|>"), eot = tern_vocab_find(v, "<end_of_turn>");
    if (im_end >= 0) CHECK(tern_vocab_is_eog(v, im_end), "%s: <|im_end|> not EOG", label);
    if (eot >= 0) CHECK(tern_vocab_is_eog(v, eot), "%s: <end_of_turn> not EOG", label);
    CHECK(im_end >= 0 || eot >= 0, "%s: no end-of-turn token", label);
    CHECK(tern_vocab_is_eog(v, tern_vocab_eos(v)), "%s: EOS not EOG", label);
    int32_t hello = tern_vocab_find(v, "Hello");
    CHECK(hello >= 0 && !tern_vocab_is_eog(v, hello), "%s: 'Hello' missing or EOG", label);
    CHECK(tern_token_to_piece(v, -1, out, 8, 0) == -1 && tern_token_to_piece(v, tern_vocab_n_tokens(v), out, 8, 0) == -1,
          "%s: out-of-range piece", label);
    /* a short buffer: the full length comes back, the copy is truncated */
    const char *probe = "Hello world, how are you?";
    int n = tern_tokenize(v, probe, strlen(probe), 0, 0, got, 2);
    CHECK(n > 2, "%s: count beyond max", label);
    CHECK(tern_detokenize(v, got, 0, out, 0, 0) == 0, "%s: empty detokenize", label);
    int full = tern_tokenize(v, probe, strlen(probe), 0, 0, got, MAXTOK);
    CHECK(full == n && tern_detokenize(v, got, full, out, 5, 0) == (int)strlen(probe) && !memcmp(out, probe, 5),
          "%s: truncated detokenize", label);

    free(tsv);
    tern_vocab_free(v);
    gguf_close(f);
}

static void check_pre_families(void) {
    size_t tsv_n;
    char *tsv = slurp(FIX "pre.tsv", &tsv_n);
    gguf_file *f = gguf_open(SMOLLM2);
    CHECK(tsv && f, "pre: cannot read fixtures or " SMOLLM2);
    if (!tsv || !f) {
        free(tsv);
        if (f) gguf_close(f);
        return;
    }
    char cur[64] = "";
    tern_vocab *v = NULL;
    int n_fam = 0, n_ok = 0, n = 0;
    char *save = NULL;
    for (char *line = strtok_r(tsv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *fl[4];
        if (split_tabs(line, fl, 4) != 4 || strcmp(fl[0], "pre")) {
            CHECK(0, "pre: bad record");
            continue;
        }
        if (strcmp(cur, fl[1])) {
            tern_vocab_free(v);
            snprintf(cur, sizeof cur, "%s", fl[1]);
            v = tern_vocab_load_pre(f, cur);
            CHECK(v != NULL, "pre %s: load: %s", cur, tern_last_error());
            n_fam++;
        }
        if (!v) continue;
        size_t len = unhex(fl[2], text);
        int nw = parse_ids(fl[3], want);
        int ng = tern_tokenize(v, text, len, 0, 0, got, MAXTOK);
        int ok = ids_equal(got, ng, want, nw);
        n++;
        n_ok += ok;
        CHECK(ok, "pre %s: '%s'\n  got  %s\n  want %s", cur, show(text, len), show_ids(got, ng), show_ids(want, nw));
    }
    printf("pre-tokenizers: %d families, %d/%d strings equal\n", n_fam, n_ok, n);
    tern_vocab_free(v);
    /* llama.cpp refuses an unknown pre-tokenizer; so do we */
    v = tern_vocab_load_pre(f, "no-such-pre");
    CHECK(v == NULL && strstr(tern_last_error(), "unsupported pre-tokenizer 'no-such-pre'"), "unknown pre: '%s'",
          tern_last_error());
    tern_vocab_free(v);
    free(tsv);
    gguf_close(f);
}

static void check_stream_unit(void) {
    /* every split of a 4-byte, 3-byte and 2-byte character, fed byte-wise and in two parts */
    const char *s = "a\xf0\x9f\x98\x80" "b\xe2\x82\xac" "c\xc3\xa9";
    int n = (int)strlen(s);
    for (int cut = 0; cut <= n; cut++) {
        tern_utf8_stream st = {0};
        char o1[32], o2[32];
        int k1 = tern_utf8_stream_push(&st, s, cut, o1);
        int k2 = tern_utf8_stream_push(&st, s + cut, n - cut, o2);
        CHECK(utf8_complete(o1, k1) && utf8_complete(o2, k2) && k1 + k2 == n && st.n_pending == 0 &&
                  !memcmp(o1, s, (size_t)k1) && !memcmp(o2, s + k1, (size_t)k2),
              "stream split at %d", cut);
    }
    tern_utf8_stream st = {0};
    char o[64];
    int total = 0, ok = 1;
    for (int i = 0; i < n; i++) {
        int k = tern_utf8_stream_push(&st, s + i, 1, o + total);
        ok &= utf8_complete(o + total, k);
        total += k;
    }
    CHECK(ok && total == n && !memcmp(o, s, (size_t)n), "stream byte-wise");
    /* invalid bytes become U+FFFD (never invalid UTF-8 on stdout, issue 28); a broken sequence does not
     * swallow what follows */
#define FFFD "\xef\xbf\xbd"
    memset(&st, 0, sizeof st);
    int k = tern_utf8_stream_push(&st, "\xff" "A\x80", 3, o);
    CHECK(k == 7 && !memcmp(o, FFFD "A" FFFD, 7) && st.n_pending == 0, "stream invalid bytes");
    k = tern_utf8_stream_push(&st, "\xe2\x82", 2, o);
    CHECK(k == 0 && st.n_pending == 2, "stream holds a partial sequence");
    k = tern_utf8_stream_push(&st, "Z", 1, o);
    CHECK(k == 4 && !memcmp(o, FFFD "Z", 4) && st.n_pending == 0, "stream broken sequence: one U+FFFD");
    /* maximal subparts (Unicode 15 table 3-8's example row): overlong C0 AF, surrogate ED A0 80, past
     * U+10FFFF F4 90 80 80, F5; each invalid byte or cut prefix one U+FFFD, valid text kept */
    static const struct { const char *in, *want; } cases[] = {
        {"\xc0\xaf", FFFD FFFD}, {"\xed\xa0\x80", FFFD FFFD FFFD}, {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},
        {"\xf5", FFFD}, {"a\xf1\x80\x80z", "a" FFFD "z"}, {"\xe1\x80\xe2\xf0\x91\x92\xf1\xbf\x41", FFFD FFFD FFFD FFFD "A"},
        {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"}, {"\xed\x9f\xbf", "\xed\x9f\xbf"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memset(&st, 0, sizeof st);
        int n1 = (int)strlen(cases[c].in);
        k = tern_utf8_stream_push(&st, cases[c].in, n1, o);
        if (st.n_pending) k += tern_utf8_stream_push(&st, "", 0, o + k), k += 0;
        /* a trailing partial sequence stays pending: flush it as the CLI does at the end */
        if (st.n_pending) { memcpy(o + k, FFFD, 3); k += 3; st.n_pending = 0; }
        CHECK(k == (int)strlen(cases[c].want) && !memcmp(o, cases[c].want, (size_t)k) && utf8_complete(o, k),
              "stream case %zu: %d bytes", c, k);
    }
#undef FFFD
}

/* Bytes the vocabulary cannot encode (issue 28): SmolLM2's byte-level BPE has no token for 0x04, 0x06,
 * 0x13, 0x14, 0x16, 0x1D or the lead bytes F1/F2; they are dropped (as llama.cpp drops them) and counted. */
static void check_dropped(void) {
    gguf_file *f = gguf_open(SMOLLM2);
    tern_vocab *v = f ? tern_vocab_load(f) : NULL;
    CHECK(v != NULL, "dropped: cannot load " SMOLLM2);
    if (!v) { gguf_close(f); return; }
    static const struct { const char *text; size_t dropped; } cases[] = {
        {"hello", 0}, {"a\x04" "b", 1}, {"\x04\x06\x13\x14\x16\x1d", 6}, {"x\xf1\x80\x80\x80y", 1},
        {"\xe2\x82\xac \xc3\xa9", 0}, {"\x05\x07", 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t dropped = 99;
        int n = tern_tokenize_ex(v, cases[c].text, strlen(cases[c].text), 0, 0, got, MAXTOK, &dropped);
        CHECK(n >= 0 && dropped == cases[c].dropped, "dropped case %zu: %zu bytes, want %zu", c, dropped,
              cases[c].dropped);
    }
    tern_vocab_free(v);
    gguf_close(f);
}

/* A tokenizer that ships gzipped (metadata only, tests/fixtures/tokenizer/NAME): unpacked to a temporary file. */
static void check_model_gz(const char *label, const char *gz_name, const char *tsv_path) {
    char tmp[] = "/tmp/tern-tok-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "gzip -dc %s%s > %s", FIX, gz_name, tmp);
    CHECK(system(cmd) == 0, "%s: cannot unpack %s", label, gz_name);
    check_model(label, tmp, tsv_path);
    unlink(tmp);
}

int main(void) {
    check_stream_unit();
    check_dropped();
    check_model("smollm2 (gpt2/smollm)", SMOLLM2, FIX "smollm2.tsv");
    check_model_gz("gemma3 (llama/spm)", "gemma3-270m-tokenizer.gguf.gz", FIX "gemma3.tsv");
    check_model_gz("qwen2.5-coder (gpt2/qwen2)", "qwen2.5-coder-tokenizer.gguf.gz", FIX "qwen2.tsv");
    check_pre_families();
    return check_summary("test_tokenizer");
}
