/* chat.c: chat-template detection and hand formatting for the families of chat.h.
 *
 * Each formatter reproduces what llama.cpp's llm_chat_apply_template emits for the family (written
 * from its documented output, not its code) and, for a conversation whose only system message comes
 * first, what the model's own Jinja template renders minus the BOS token. tests/test_chat.c checks
 * that against renders of the real templates (tests/gen_chat_fixtures.py).
 *
 * Whitespace: Llama-3 and Gemma strip leading/trailing whitespace from each message (their templates
 * apply `| trim`); ChatML and Mistral copy content verbatim. Trimming here uses the C locale set
 * " \t\n\v\f\r"; Jinja's trim also strips Unicode spaces (U+00A0, U+3000, ...), so content that
 * begins or ends with those renders differently from the Jinja template. */
#include "chat.h"

#include <limits.h>
#include <string.h>

#include "util.h"

/* Bounded appender: writes what fits in buf (cap bytes, NUL kept in the last one) and counts the
 * full length regardless, so the caller learns how much to allocate. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
} chat_out;

static void out_n(chat_out *o, const char *s, size_t n) {
    if (o->cap > 0 && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void out_s(chat_out *o, const char *s) { out_n(o, s, strlen(s)); }

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* Append s with leading and trailing whitespace removed. */
static void out_trim(chat_out *o, const char *s) {
    size_t n = strlen(s);
    while (n > 0 && is_ws(*s)) { s++; n--; }
    while (n > 0 && is_ws(s[n - 1])) n--;
    out_n(o, s, n);
}

static const char *const family_names[TERN_CHAT_COUNT] = {
    [TERN_CHAT_CHATML] = "chatml",
    [TERN_CHAT_LLAMA3] = "llama3",
    [TERN_CHAT_GEMMA] = "gemma",
    [TERN_CHAT_MISTRAL] = "mistral",
    [TERN_CHAT_PHI3] = "phi3",
};

const char *tern_chat_name(enum tern_chat_family f) {
    return f >= 0 && f < TERN_CHAT_COUNT ? family_names[f] : "unknown";
}

enum tern_chat_family tern_chat_from_name(const char *name) {
    if (!name) return TERN_CHAT_UNKNOWN;
    for (int f = 0; f < TERN_CHAT_COUNT; f++)
        if (strcmp(name, family_names[f]) == 0) return (enum tern_chat_family)f;
    return TERN_CHAT_UNKNOWN;
}

static int has(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

/* Marker tests, most specific first. ChatML goes first: its markers are the most common and no other
 * family here uses them. Templates that share a family's marker but format differently are refused
 * rather than formatted wrongly:
 *   - "<|im_start|>" with "<|im_sep|>" is Phi-4, with "<end_of_utterance>" SmolVLM;
 *   - "[INST]" with "<<SYS>>" is Llama-2 (system block inside the first [INST]), not Mistral. */
enum tern_chat_family tern_chat_detect(const char *tmpl) {
    if (!tmpl) return TERN_CHAT_UNKNOWN;
    enum tern_chat_family byname = tern_chat_from_name(tmpl);
    if (byname != TERN_CHAT_UNKNOWN) return byname;
    if (has(tmpl, "<|im_start|>"))
        return has(tmpl, "<|im_sep|>") || has(tmpl, "<end_of_utterance>") ? TERN_CHAT_UNKNOWN : TERN_CHAT_CHATML;
    if (has(tmpl, "<|start_header_id|>") && has(tmpl, "<|end_header_id|>")) return TERN_CHAT_LLAMA3;
    if (has(tmpl, "<start_of_turn>")) return TERN_CHAT_GEMMA;
    if (has(tmpl, "[INST]")) return has(tmpl, "<<SYS>>") ? TERN_CHAT_UNKNOWN : TERN_CHAT_MISTRAL;
    if (has(tmpl, "<|assistant|>") && has(tmpl, "<|end|>")) return TERN_CHAT_PHI3; /* llama.cpp's rule for phi3 */
    return TERN_CHAT_UNKNOWN;
}

static void format_chatml(chat_out *o, const tern_chat_msg *m, int n, int add_assistant) {
    for (int i = 0; i < n; i++) {
        out_s(o, "<|im_start|>");
        out_s(o, m[i].role);
        out_s(o, "\n");
        out_s(o, m[i].content);
        out_s(o, "<|im_end|>\n");
    }
    if (add_assistant) out_s(o, "<|im_start|>assistant\n");
}

static void format_llama3(chat_out *o, const tern_chat_msg *m, int n, int add_assistant) {
    for (int i = 0; i < n; i++) {
        out_s(o, "<|start_header_id|>");
        out_s(o, m[i].role);
        out_s(o, "<|end_header_id|>\n\n");
        out_trim(o, m[i].content);
        out_s(o, "<|eot_id|>");
    }
    if (add_assistant) out_s(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Gemma has no system role: system contents (trimmed, concatenated) are held back and put at the
 * top of the next non-model turn, followed by a blank line. A system message with no later user
 * turn is dropped. "assistant" is spelled "model". */
static void format_gemma(chat_out *o, const tern_chat_msg *m, int n, int add_assistant) {
    int pending_from = -1, pending_to = -1;  /* system messages [from, to] not yet emitted */
    for (int i = 0; i < n; i++) {
        if (strcmp(m[i].role, "system") == 0) {
            if (pending_from < 0) pending_from = i;
            pending_to = i;
            continue;
        }
        int model = strcmp(m[i].role, "assistant") == 0 || strcmp(m[i].role, "model") == 0;
        out_s(o, "<start_of_turn>");
        out_s(o, model ? "model" : m[i].role);
        out_s(o, "\n");
        if (!model && pending_from >= 0) {
            size_t before = o->len;
            for (int j = pending_from; j <= pending_to; j++)
                if (strcmp(m[j].role, "system") == 0) out_trim(o, m[j].content);
            if (o->len > before) out_s(o, "\n\n");  /* an all-whitespace system adds nothing */
            pending_from = -1;
        }
        out_trim(o, m[i].content);
        out_s(o, "<end_of_turn>\n");
    }
    if (add_assistant) out_s(o, "<start_of_turn>model\n");
}

/* Mistral "v7" (Mistral-Large-Instruct-2411 / mistral-common v1.5 instruct format):
 *   system -> "[SYSTEM_PROMPT] c[/SYSTEM_PROMPT]", user -> "[INST] c[/INST]",
 *   anything else -> " c</s>". No generation prompt: "[/INST]" already hands the turn over.
 * Older Mistral templates ("v1": " [INST] c [/INST]"; "v3": system folded into a user turn) are
 * detected as this family too; without a system message v3 coincides with v7 except that v3 trims
 * assistant content, while v1 differs by a space before each [INST] and [/INST]. */
static void format_mistral(chat_out *o, const tern_chat_msg *m, int n, int add_assistant) {
    (void)add_assistant;
    for (int i = 0; i < n; i++) {
        if (strcmp(m[i].role, "system") == 0) {
            out_s(o, "[SYSTEM_PROMPT] ");
            out_s(o, m[i].content);
            out_s(o, "[/SYSTEM_PROMPT]");
        } else if (strcmp(m[i].role, "user") == 0) {
            out_s(o, "[INST] ");
            out_s(o, m[i].content);
            out_s(o, "[/INST]");
        } else {
            out_s(o, " ");
            out_s(o, m[i].content);
            out_s(o, "</s>");
        }
    }
}

/* Phi-3 as llama.cpp formats it (llama-chat.cpp LLM_CHAT_TEMPLATE_PHI_3): every message "<|role|>\ncontent<|end|>\n",
 * then "<|assistant|>\n" when a reply is wanted; content untrimmed. */
static void format_phi3(chat_out *o, const tern_chat_msg *m, int n, int add_assistant) {
    for (int i = 0; i < n; i++) {
        out_s(o, "<|");
        out_s(o, m[i].role);
        out_s(o, "|>\n");
        out_s(o, m[i].content);
        out_s(o, "<|end|>\n");
    }
    if (add_assistant) out_s(o, "<|assistant|>\n");
}

int tern_chat_format(enum tern_chat_family f, const tern_chat_msg *msgs, int n, int add_assistant, char *buf,
                     size_t cap) {
    if (cap > 0 && buf) buf[0] = '\0';
    if (f < 0 || f >= TERN_CHAT_COUNT) {
        tern_set_error("chat: unknown template family %d", (int)f);
        return -1;
    }
    if (n < 0 || (n > 0 && !msgs)) {
        tern_set_error("chat: bad message list (n = %d)", n);
        return -1;
    }
    /* Checked up front so the formatters can assume non-NULL strings. */
    for (int i = 0; i < n; i++) {
        if (!msgs[i].role) {
            tern_set_error("chat: message %d has no role", i);
            return -1;
        }
        if (!msgs[i].content) {
            tern_set_error("chat: message %d has no content", i);
            return -1;
        }
    }
    chat_out o = {buf, buf ? cap : 0, 0};
    switch (f) {
    case TERN_CHAT_CHATML: format_chatml(&o, msgs, n, add_assistant); break;
    case TERN_CHAT_LLAMA3: format_llama3(&o, msgs, n, add_assistant); break;
    case TERN_CHAT_GEMMA: format_gemma(&o, msgs, n, add_assistant); break;
    case TERN_CHAT_MISTRAL: format_mistral(&o, msgs, n, add_assistant); break;
    case TERN_CHAT_PHI3: format_phi3(&o, msgs, n, add_assistant); break;
    default: break;
    }
    if (o.cap > 0) o.buf[o.len < o.cap ? o.len : o.cap - 1] = '\0';
    if (o.len > INT_MAX) {
        tern_set_error("chat: formatted prompt of %zu bytes does not fit an int", o.len);
        return -1;
    }
    return (int)o.len;
}

int tern_chat_default_system(const char *tmpl, char *buf, size_t cap) {
    static const char open_tag[] = "<|im_start|>system";
    if (!tmpl) return -1;
    /* only a literal inside the template text counts: the opener is followed by a newline (a real one or
     * the two characters backslash-n) and then text, not by a Jinja expression */
    for (const char *p = strstr(tmpl, open_tag); p; p = strstr(p + 1, open_tag)) {
        const char *q = p + sizeof open_tag - 1;
        if (*q == '\n') q++;
        else if (q[0] == '\\' && q[1] == 'n') q += 2;
        else continue;
        const char *end = strstr(q, "<|im_end|>");
        if (!end || end == q) continue;
        size_t n = (size_t)(end - q);
        if (memchr(q, '{', n) || memchr(q, '\'', n) || memchr(q, '"', n)) continue; /* an expression */
        if (n + 1 > cap) return -1;
        memcpy(buf, q, n);
        buf[n] = 0;
        return (int)n;
    }
    return -1;
}
