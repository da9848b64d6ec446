/* test_chat.c: chat-template detection and formatting against renders of the real Jinja templates.
 *
 * The fixtures in tests/fixtures/chat/ are written by tests/gen_chat_fixtures.py with jinja2
 * (transformers' settings) from: the SmolLM2-135M-Instruct template in the GGUF (chatml), and the
 * Meta-Llama-3-8B-Instruct, gemma-3-it and Mistral-Large-Instruct-2411 (v7) templates (llama3,
 * gemma, mistral); phi3's by llama.cpp's own formatter (llama_chat_apply_template, "phi3"). BOS is stripped from each
 * render. What is compared, byte for byte:
 *   <family>.sys.gen.txt    CONV_SYS   (system, user, assistant, user), add_assistant = 1
 *   <family>.sys.nogen.txt  CONV_SYS,                                   add_assistant = 0
 *   <family>.nosys.gen.txt  CONV_NOSYS (user, assistant, user),         add_assistant = 1
 * The last is skipped for chatml: without a system message SmolLM2's template inserts its own default
 * system prompt, which tern's generic ChatML formatting deliberately does not replicate.
 * Paths are relative to the repo root (tests/run.sh runs from there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "check.h"
#include "util.h"

#define FIXDIR "tests/fixtures/chat/"

/* Keep in sync with CONV_SYS in tests/gen_chat_fixtures.py. */
static const tern_chat_msg CONV_SYS[] = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello! Grüße aus Zürich.\nWhat can you do?"},
    {"assistant", "  I can answer questions.\n"},
    {"user", "What is 2+2?"},
};
static const tern_chat_msg *const CONV_NOSYS = CONV_SYS + 1;

/* Whole file as a NUL-terminated string (size in *len), or NULL. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = tern_xmalloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    *len = got;
    return buf;
}

static void compare_fixture(enum tern_chat_family fam, const char *file, const tern_chat_msg *msgs, int n,
                            int add_assistant) {
    char path[256];
    snprintf(path, sizeof path, FIXDIR "%s", file);
    size_t want_len = 0;
    char *want = read_file(path, &want_len);
    CHECK(want != NULL, "cannot read %s (run from the repo root)", path);
    if (!want) return;
    int need = tern_chat_format(fam, msgs, n, add_assistant, NULL, 0);
    CHECK(need >= 0, "%s: size query failed: %s", file, tern_last_error());
    char *got = tern_xmalloc((size_t)(need > 0 ? need : 0) + 1);
    int len = tern_chat_format(fam, msgs, n, add_assistant, got, (size_t)need + 1);
    CHECK(len == need, "%s: size query %d vs format %d", file, need, len);
    int same = len >= 0 && (size_t)len == want_len && memcmp(got, want, want_len) == 0 && got[len] == '\0';
    if (!same && len >= 0) {
        size_t i = 0;
        while (i < want_len && i < (size_t)len && got[i] == want[i]) i++;
        fprintf(stderr, "%s: first difference at byte %zu (got %d bytes, want %zu)\n  got : \"%.60s\"\n  want: \"%.60s\"\n",
                file, i, len, want_len, got + i, want + i);
    }
    CHECK(same, "%s: tern_chat_format(%s) differs from the Jinja render", file, tern_chat_name(fam));
    free(got);
    free(want);
}

static void test_fixtures(void) {
    static const struct {
        const char *name;
        enum tern_chat_family fam;
        int nosys;
    } fams[] = {
        {"chatml", TERN_CHAT_CHATML, 1},
        {"llama3", TERN_CHAT_LLAMA3, 1},
        {"gemma", TERN_CHAT_GEMMA, 1},
        {"mistral", TERN_CHAT_MISTRAL, 1},
        {"phi3", TERN_CHAT_PHI3, 1}, /* rendered by llama.cpp's formatter (tests/gen_chat_fixtures.py) */
    };
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        char file[64];
        size_t tl;
        snprintf(file, sizeof file, FIXDIR "%s.jinja", fams[i].name);
        char *tmpl = read_file(file, &tl);
        CHECK(tmpl != NULL, "cannot read %s (run from the repo root)", file);
        if (tmpl) {
            enum tern_chat_family got = tern_chat_detect(tmpl);
            CHECK(got == fams[i].fam, "detect(%s.jinja) = %s, want %s", fams[i].name, tern_chat_name(got),
                  tern_chat_name(fams[i].fam));
            free(tmpl);
        }
        snprintf(file, sizeof file, "%s.sys.gen.txt", fams[i].name);
        compare_fixture(fams[i].fam, file, CONV_SYS, 4, 1);
        snprintf(file, sizeof file, "%s.sys.nogen.txt", fams[i].name);
        compare_fixture(fams[i].fam, file, CONV_SYS, 4, 0);
        if (fams[i].nosys && fams[i].fam == TERN_CHAT_CHATML) {
            /* SmolLM2's template inserts a default system message; tern reads it out of the template
             * (tern_chat_default_system) and the CLI prepends it, as done here */
            snprintf(file, sizeof file, FIXDIR "%s.jinja", fams[i].name);
            char *t = read_file(file, &tl), sys[512];
            int n = t ? tern_chat_default_system(t, sys, sizeof sys) : -1;
            CHECK(n > 0 && !strcmp(sys, "You are a helpful AI assistant named SmolLM, trained by Hugging Face"),
                  "default system message of the SmolLM2 template: %d '%s'", n, n > 0 ? sys : "");
            tern_chat_msg conv[4] = {{"system", n > 0 ? sys : ""}, CONV_NOSYS[0], CONV_NOSYS[1], CONV_NOSYS[2]};
            snprintf(file, sizeof file, "%s.nosys.gen.txt", fams[i].name);
            compare_fixture(fams[i].fam, file, conv, 4, 1);
            free(t);
        } else if (fams[i].nosys) {
            snprintf(file, sizeof file, "%s.nosys.gen.txt", fams[i].name);
            compare_fixture(fams[i].fam, file, CONV_NOSYS, 3, 1);
        }
    }
}

static void test_detect(void) {
    static const struct {
        const char *what, *tmpl;
        enum tern_chat_family want;
    } cases[] = {
        {"OpenHermes ChatML",
         "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
         "'<|im_end|>' + '\\n'}}{% endfor %}",
         TERN_CHAT_CHATML},
        {"Llama-3.1 fragment", "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}{{- '<|eot_id|>' }}",
         TERN_CHAT_LLAMA3},
        {"gemma-2 (system raises)",
         "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
         "{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}",
         TERN_CHAT_GEMMA},
        {"Mistral-7B-Instruct-v0.1",
         "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
         "message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + "
         "eos_token + ' ' }}{% endif %}{% endfor %}",
         TERN_CHAT_MISTRAL},
        /* Unknown: other families, and look-alikes refused on purpose (see tern_chat_detect). */
        {"Llama-2 (<<SYS>> inside [INST])",
         "{% if message['role'] == 'system' %}{{ '<<SYS>>\\n' + content + '\\n<</SYS>>\\n\\n' }}{% endif %}"
         "{{ bos_token + '[INST] ' + content + ' [/INST]' }}",
         TERN_CHAT_UNKNOWN},
        {"Phi-4 (<|im_sep|>)",
         "{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}", TERN_CHAT_UNKNOWN},
        {"Phi-3", "{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}",
         TERN_CHAT_PHI3},
        {"Granite", "{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] }}",
         TERN_CHAT_UNKNOWN},
        {"half a Llama-3 marker", "<|start_header_id|> only", TERN_CHAT_UNKNOWN},
        {"empty", "", TERN_CHAT_UNKNOWN},
        {"family name", "gemma", TERN_CHAT_GEMMA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum tern_chat_family got = tern_chat_detect(cases[i].tmpl);
        CHECK(got == cases[i].want, "detect(%s) = %s, want %s", cases[i].what, tern_chat_name(got),
              tern_chat_name(cases[i].want));
    }
    CHECK(tern_chat_detect(NULL) == TERN_CHAT_UNKNOWN, "detect(NULL)");
}

static void test_names(void) {
    for (int f = 0; f < TERN_CHAT_COUNT; f++)
        CHECK(tern_chat_from_name(tern_chat_name((enum tern_chat_family)f)) == f, "name round trip %d", f);
    CHECK(tern_chat_from_name("llama2") == TERN_CHAT_UNKNOWN, "unknown name");
    CHECK(tern_chat_from_name(NULL) == TERN_CHAT_UNKNOWN, "NULL name");
    CHECK(strcmp(tern_chat_name(TERN_CHAT_UNKNOWN), "unknown") == 0, "name of UNKNOWN");
}

static void test_buffer_and_errors(void) {
    const tern_chat_msg m[] = {{"user", "hi"}};
    const char *full = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    int n = (int)strlen(full);
    char buf[128];
    CHECK(tern_chat_format(TERN_CHAT_CHATML, m, 1, 1, NULL, 0) == n, "size query");
    memset(buf, 'x', sizeof buf);
    CHECK(tern_chat_format(TERN_CHAT_CHATML, m, 1, 1, buf, 10) == n, "truncated call still returns full length");
    CHECK(memcmp(buf, full, 9) == 0 && buf[9] == '\0' && buf[10] == 'x', "truncated to cap-1 bytes + NUL, no overrun");
    CHECK(tern_chat_format(TERN_CHAT_CHATML, m, 1, 1, buf, (size_t)n) == n && strlen(buf) == (size_t)n - 1,
          "cap == len drops the last byte");
    CHECK(tern_chat_format(TERN_CHAT_CHATML, m, 1, 1, buf, (size_t)n + 1) == n && strcmp(buf, full) == 0, "exact fit");
    CHECK(tern_chat_format(TERN_CHAT_CHATML, m, 0, 1, buf, sizeof buf) == 22 &&
              strcmp(buf, "<|im_start|>assistant\n") == 0,
          "no messages: just the opener");

    tern_set_error("%s", "");
    CHECK(tern_chat_format(TERN_CHAT_UNKNOWN, m, 1, 1, buf, sizeof buf) == -1 && buf[0] == '\0', "unknown family -> -1");
    CHECK(tern_last_error()[0] != '\0', "unknown family sets an error");
    CHECK(tern_chat_format(TERN_CHAT_COUNT, m, 1, 1, buf, sizeof buf) == -1, "out-of-range family -> -1");
    const tern_chat_msg bad[] = {{NULL, "x"}};
    CHECK(tern_chat_format(TERN_CHAT_LLAMA3, bad, 1, 1, buf, sizeof buf) == -1, "NULL role -> -1");
    CHECK(tern_chat_format(TERN_CHAT_LLAMA3, NULL, 2, 1, buf, sizeof buf) == -1, "NULL msgs -> -1");

    /* Mistral has no generation prompt: add_assistant changes nothing. */
    int a = tern_chat_format(TERN_CHAT_MISTRAL, m, 1, 1, buf, sizeof buf);
    CHECK(a == (int)strlen("[INST] hi[/INST]") && strcmp(buf, "[INST] hi[/INST]") == 0, "mistral single turn");

    /* Gemma: a system message without a following user turn is dropped; two system messages are
     * concatenated (trimmed) into the next user turn; a given "model" role is kept. */
    const tern_chat_msg g1[] = {{"system", "sys"}};
    tern_chat_format(TERN_CHAT_GEMMA, g1, 1, 1, buf, sizeof buf);
    CHECK(strcmp(buf, "<start_of_turn>model\n") == 0, "gemma lone system dropped: \"%s\"", buf);
    const tern_chat_msg g2[] = {{"system", " a "}, {"system", "b"}, {"user", " q "}, {"model", "r"}};
    tern_chat_format(TERN_CHAT_GEMMA, g2, 4, 0, buf, sizeof buf);
    CHECK(strcmp(buf, "<start_of_turn>user\nab\n\nq<end_of_turn>\n<start_of_turn>model\nr<end_of_turn>\n") == 0,
          "gemma system merge: \"%s\"", buf);
}

int main(void) {
    test_fixtures();
    test_detect();
    test_names();
    test_buffer_and_errors();
    return check_summary("test_chat");
}
