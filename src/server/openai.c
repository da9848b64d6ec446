/* openai.c: the OpenAI API's request and response JSON (cJSON), for /v1/chat/completions, /v1/completions,
 * /v1/models, and llama-server's /tokenize and /detokenize.
 *
 * A request is checked whole before anything runs: the body is valid UTF-8, parses as JSON, nests at most
 * SRV_MAX_DEPTH deep; every field has its type and range; a field tern does not implement (tools, a response
 * format other than text, n > 1, logit_bias, echo, ...) or does not know is a 400 that names it, never silently
 * ignored ("user" and "metadata", pure annotations, are the exceptions). The prompt plus max_tokens must fit the
 * context (a 400 with the numbers; never a silent truncation). Errors are OpenAI's shape:
 * {"error": {"message", "type", "param", "code"}}. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "server.h"
#include "util.h"

int srv_fail(srv_error *err, int status, const char *param, const char *fmt, ...) {
    err->status = status;
    err->type = status == 401 ? "authentication_error"
              : status == 404 ? "not_found_error"
              : status == 503 ? "unavailable_error"
              : status >= 500 ? "server_error"
                              : "invalid_request_error";
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int srv_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        const unsigned c = p[i];
        if (c < 0x80) { i++; continue; }
        int k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
        else return 0;
        if (i + (size_t)k >= n) return 0; /* cut short */
        for (int j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += (size_t)k + 1;
    }
    return 1;
}

/* s[0..n) as a NUL-terminated malloc'd string of valid UTF-8: an invalid or cut sequence and a NUL byte become
 * U+FFFD (JSON strings here cannot carry NUL). */
char *srv_utf8_lossy(const char *s, size_t n) {
    char *o = tern_xmalloc(3 * n + 1);
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 9;
        if (c != 0 && k == 0) { o[w++] = (char)c; i++; continue; }
        if (c != 0 && k <= 3 && i + k < n && srv_utf8_valid(s + i, k + 1)) {
            memcpy(o + w, s + i, k + 1);
            w += k + 1;
            i += k + 1;
            continue;
        }
        memcpy(o + w, "\xEF\xBF\xBD", 3);
        w += 3;
        i++;
    }
    o[w] = 0;
    return o;
}

char *srv_error_json(const srv_error *err) {
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    char *msg = srv_utf8_lossy(err->msg, strlen(err->msg));
    cJSON_AddStringToObject(e, "message", msg);
    free(msg);
    cJSON_AddStringToObject(e, "type", err->type ? err->type : "invalid_request_error");
    if (err->param[0]) cJSON_AddStringToObject(e, "param", err->param);
    else cJSON_AddNullToObject(e, "param");
    if (err->status == 401) cJSON_AddStringToObject(e, "code", "invalid_api_key");
    else if (err->status == 404) cJSON_AddStringToObject(e, "code", "not_found");
    else cJSON_AddNumberToObject(e, "code", err->status);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

/* ---- parsing helpers ---- */

static int depth_ok(const cJSON *j, int d) {
    if (d > SRV_MAX_DEPTH) return 0;
    for (const cJSON *c = j->child; c; c = c->next)
        if ((cJSON_IsArray(c) || cJSON_IsObject(c)) && !depth_ok(c, d + 1)) return 0;
    return 1;
}

/* A request body as one JSON value (cJSON's parse, then two checks it does not make): nothing but white space after the
 * value, and no \u0000 escape (cJSON's strings end at a NUL byte, so "a\u0000b" would reach the model as "a", a role
 * "user\u0000x" read as "user"). The scan needs no string state: outside strings a backslash is not JSON at all, and
 * an escape's pair is skipped whole, so the text \\u0000 (a backslash, then u0000) passes. NULL: err says why. */
static cJSON *json_body(const char *body, size_t len, srv_error *err) {
    if (!srv_utf8_valid(body, len)) { srv_fail(err, 400, NULL, "the request body is not valid UTF-8"); return NULL; }
    for (size_t i = 0; i + 1 < len; i++) {
        if (body[i] != '\\') continue;
        if (body[i + 1] == 'u' && i + 5 < len && !memcmp(body + i + 2, "0000", 4)) {
            srv_fail(err, 400, NULL, "the request body has a \\u0000 (U+0000) in a string (at byte %zu), which tern does not take", i);
            return NULL;
        }
        i++;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        const size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
        srv_fail(err, 400, NULL, "the request body is not valid JSON (at byte %zu)", at);
        return NULL;
    }
    while (end && end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (end && end < body + len) {
        srv_fail(err, 400, NULL, "the request body has more after its JSON value (at byte %zu)", (size_t)(end - body));
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int get_num(srv_error *err, const cJSON *v, const char *name, double lo, double hi, double *out) {
    if (!cJSON_IsNumber(v)) return srv_fail(err, 400, name, "'%s' must be a number", name);
    const double x = v->valuedouble;
    if (!(x >= lo && x <= hi)) return srv_fail(err, 400, name, "'%s' must be in [%g, %g], got %g", name, lo, hi, x);
    *out = x;
    return 0;
}

static int get_int(srv_error *err, const cJSON *v, const char *name, double lo, double hi, long long *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return srv_fail(err, 400, name, "'%s' must be an integer", name);
    double x;
    if (get_num(err, v, name, lo, hi, &x)) return -1;
    *out = (long long)x;
    return 0;
}

static int get_bool(srv_error *err, const cJSON *v, const char *name, int *out) {
    if (!cJSON_IsBool(v)) return srv_fail(err, 400, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* text as token ids (special tokens parsed), malloc'd into *ids; the count, or -1 with err. */
static int tokenize(const srv_ctx *c, const char *text, size_t len, int add_bos, int special, int32_t **ids,
                    srv_error *err, const char *param) {
    size_t cap = len + 8;
    if (cap > (size_t)1 << 28) return srv_fail(err, 400, param, "'%s' is too long (%zu bytes)", param, len);
    *ids = tern_xmalloc(sizeof(int32_t) * cap);
    int n = tern_model_tokenize(c->m, text, len, add_bos, special, *ids, (int)cap);
    if (n > (int)cap) {
        free(*ids);
        *ids = tern_xmalloc(sizeof(int32_t) * (size_t)n);
        n = tern_model_tokenize(c->m, text, len, add_bos, special, *ids, n);
    }
    if (n < 0) {
        free(*ids);
        *ids = NULL;
        return srv_fail(err, 400, param, "'%s' could not be tokenized: %s", param, tern_last_error());
    }
    return n;
}

static char *rand_id(const char *prefix, char *out, size_t n) {
    static unsigned long long ctr;
    const unsigned long long k = __atomic_add_fetch(&ctr, 1, __ATOMIC_RELAXED);
    uint64_t x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (k * 0xbf58476d1ce4e5b9ull) ^ (uint64_t)getpid();
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    snprintf(out, n, "%s%016llx%04llx", prefix, (unsigned long long)x, k & 0xffff);
    return out;
}

/* Content of a chat message: a string, or an array of text parts joined by "\n"; malloc'd into *out. */
static int message_content(srv_error *err, const cJSON *content, int i, char **out) {
    char param[64];
    snprintf(param, sizeof param, "messages[%d].content", i);
    if (cJSON_IsString(content)) { *out = strdup(content->valuestring); return 0; }
    if (cJSON_IsNull(content) || !content) { *out = strdup(""); return 0; }
    if (!cJSON_IsArray(content)) return srv_fail(err, 400, param, "'%s' must be a string or an array of text parts", param);
    size_t len = 0;
    char *s = strdup("");
    int j = 0;
    for (const cJSON *part = content->child; part; part = part->next, j++) {
        snprintf(param, sizeof param, "messages[%d].content[%d]", i, j);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsObject(part) || !cJSON_IsString(type)) {
            free(s);
            return srv_fail(err, 400, param, "'%s' must be an object with a \"type\"", param);
        }
        if (strcmp(type->valuestring, "text") != 0) {
            free(s);
            return srv_fail(err, 400, param, "'%s': content parts of type '%.40s' are not supported (text only)", param,
                            type->valuestring);
        }
        if (!cJSON_IsString(text)) {
            free(s);
            return srv_fail(err, 400, param, "'%s.text' must be a string", param);
        }
        const size_t k = strlen(text->valuestring);
        s = realloc(s, len + k + 2);
        if (!s) abort();
        if (len) s[len++] = '\n';
        memcpy(s + len, text->valuestring, k + 1);
        len += k;
    }
    *out = s;
    return 0;
}

/* messages -> the chat template's text, malloc'd into *text. */
static int parse_messages(const srv_ctx *c, srv_error *err, const cJSON *msgs, char **text) {
    if (!cJSON_IsArray(msgs)) return srv_fail(err, 400, "messages", "'messages' must be an array");
    const int n = cJSON_GetArraySize(msgs);
    if (n == 0) return srv_fail(err, 400, "messages", "'messages' must have at least one message");
    if (n > 100000) return srv_fail(err, 400, "messages", "'messages' has %d messages (at most 100000)", n);
    tern_chat_msg *m = tern_xcalloc((size_t)n + 1, sizeof *m);
    int k = 0, has_system = 0, rc = 0, i = 0;
    if (c->default_system[0]) k = 1; /* room for the template's default system message, used if none is given */
    for (const cJSON *msg = msgs->child; msg; msg = msg->next, i++) {
        char param[64];
        snprintf(param, sizeof param, "messages[%d]", i);
        if (!cJSON_IsObject(msg)) { rc = srv_fail(err, 400, param, "'%s' must be an object", param); break; }
        const char *role = NULL;
        const cJSON *content = NULL;
        int has_content = 0;
        for (const cJSON *f = msg->child; f && !rc; f = f->next) {
            snprintf(param, sizeof param, "messages[%d].%.30s", i, f->string);
            if (!strcmp(f->string, "role")) {
                if (!cJSON_IsString(f)) { rc = srv_fail(err, 400, param, "'%s' must be a string", param); break; }
                role = f->valuestring;
            } else if (!strcmp(f->string, "content")) {
                content = f;
                has_content = 1;
            } else if (!strcmp(f->string, "name")) {
                if (!cJSON_IsString(f)) rc = srv_fail(err, 400, param, "'%s' must be a string", param);
            } else if (!strcmp(f->string, "refusal")) {
                if (!cJSON_IsNull(f)) rc = srv_fail(err, 400, param, "'%s' is not supported", param);
            } else if (!strcmp(f->string, "tool_calls") || !strcmp(f->string, "function_call") ||
                       !strcmp(f->string, "tool_call_id")) {
                if (!(cJSON_IsNull(f) || (cJSON_IsArray(f) && !f->child)))
                    rc = srv_fail(err, 400, param, "'%s': tool and function calls are not supported", param);
            } else {
                rc = srv_fail(err, 400, param, "unrecognized field '%s'", param);
            }
        }
        if (rc) break;
        snprintf(param, sizeof param, "messages[%d].role", i);
        if (!role) { rc = srv_fail(err, 400, param, "'%s' is missing", param); break; }
        if (!strcmp(role, "developer")) role = "system";
        if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")) {
            rc = srv_fail(err, 400, param, "'%s' must be system, developer, user or assistant, got '%.40s'", param, role);
            break;
        }
        if (!has_content || (cJSON_IsNull(content) && strcmp(role, "assistant"))) {
            snprintf(param, sizeof param, "messages[%d].content", i);
            rc = srv_fail(err, 400, param, "'%s' is missing", param);
            break;
        }
        char *text_i = NULL;
        if ((rc = message_content(err, content, i, &text_i))) break;
        if (!strcmp(role, "system")) has_system = 1;
        m[k].role = role;
        m[k++].content = text_i;
    }
    /* Gemma's template has no system turn: a system message is folded into the next user turn (llama.cpp's formatter,
     * tern_chat_format), so one with no user message after it would vanish from the prompt: refused instead */
    for (int j = k - 1, user_after = 0; !rc && c->chat == TERN_CHAT_GEMMA && j >= 0; j--) {
        if (!strcmp(m[j].role, "user")) user_after = 1;
        else if (!strcmp(m[j].role, "system") && !user_after) {
            char param[64]; /* m[0] is the default system message's room where the template has one */
            snprintf(param, sizeof param, "messages[%d]", j - (c->default_system[0] ? 1 : 0));
            rc = srv_fail(err, 400, param, "'%s' is a system message with no user message after it: this model's "
                          "template (gemma) has no system turn and folds a system message into the next user one", param);
        }
    }
    if (!rc) {
        int first = 0;
        if (c->default_system[0]) {
            if (has_system) first = 1;
            else m[0] = (tern_chat_msg){"system", strdup(c->default_system)};
        }
        const int need = tern_chat_format(c->chat, m + first, k - first, 1, NULL, 0);
        if (need < 0) rc = srv_fail(err, 500, NULL, "chat template: %s", tern_last_error());
        else {
            *text = tern_xmalloc((size_t)need + 1);
            tern_chat_format(c->chat, m + first, k - first, 1, *text, (size_t)need + 1);
        }
    }
    for (int j = 0; j < k; j++) free((char *)m[j].content);
    free(m);
    return rc;
}

/* A completion's prompt: a string, one string in an array, an array of token ids, or one such array in an array. */
static int parse_prompt(const srv_ctx *c, srv_error *err, const cJSON *p, srv_req *r) {
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && (cJSON_IsString(p->child) || cJSON_IsArray(p->child))) p = p->child;
    else if (cJSON_IsArray(p) && p->child && (cJSON_IsString(p->child) || cJSON_IsArray(p->child)))
        return srv_fail(err, 400, "prompt", "'prompt' holds %d prompts: one prompt a request", cJSON_GetArraySize(p));
    if (cJSON_IsString(p)) {
        const int n = tokenize(c, p->valuestring, strlen(p->valuestring), tern_model_add_bos(c->m), 1, &r->prompt, err,
                               "prompt");
        if (n < 0) return -1;
        r->n_prompt = n;
        return 0;
    }
    if (!cJSON_IsArray(p)) return srv_fail(err, 400, "prompt", "'prompt' must be a string or an array of token ids");
    const int n = cJSON_GetArraySize(p), V = tern_model_n_vocab(c->m);
    r->prompt = tern_xmalloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    int i = 0;
    for (const cJSON *t = p->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || !(t->valuedouble >= 0 && t->valuedouble < V))
            return srv_fail(err, 400, "prompt", "'prompt[%d]' is not a token id in [0, %d)", i, V);
        r->prompt[i] = (int32_t)t->valuedouble;
    }
    r->n_prompt = n;
    return 0;
}

static int parse_stop(srv_error *err, const cJSON *v, srv_req *r) {
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]); /* a repeated "stop" key: the last one counts */
    r->n_stop = 0;
    const cJSON *one = cJSON_IsString(v) ? v : NULL;
    if (!one && !cJSON_IsArray(v)) return srv_fail(err, 400, "stop", "'stop' must be a string or an array of strings");
    if (!one && cJSON_GetArraySize(v) > SRV_MAX_STOP)
        return srv_fail(err, 400, "stop", "'stop' has %d strings (at most %d)", cJSON_GetArraySize(v), SRV_MAX_STOP);
    for (const cJSON *s = one ? one : v->child; s; s = one ? NULL : s->next) {
        if (!cJSON_IsString(s)) return srv_fail(err, 400, "stop", "'stop' must hold strings");
        if (!s->valuestring[0]) return srv_fail(err, 400, "stop", "'stop' strings must not be empty");
        if (strlen(s->valuestring) > 1024) return srv_fail(err, 400, "stop", "'stop' strings are 1024 bytes at most");
        if (r->n_stop == SRV_MAX_STOP) return srv_fail(err, 400, "stop", "'stop' has more than %d strings", SRV_MAX_STOP);
        r->stop[r->n_stop++] = strdup(s->valuestring);
    }
    return 0;
}

void srv_req_clear(srv_req *r) {
    free(r->prompt);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    r->prompt = NULL;
    r->n_stop = 0;
}

int srv_parse(const srv_ctx *c, srv_kind kind, const char *body, size_t len, srv_req *r, srv_error *err) {
    cJSON *root = json_body(body, len, err);
    if (!root) return -1;
    int rc = 0;
    if (!cJSON_IsObject(root)) { rc = srv_fail(err, 400, NULL, "the request body must be a JSON object"); goto out; }
    if (!depth_ok(root, 1)) { rc = srv_fail(err, 400, NULL, "the request body nests deeper than %d", SRV_MAX_DEPTH); goto out; }
    r->kind = kind;
    r->sp = c->sp;
    r->max_tokens = -1;
    const cJSON *messages = NULL, *prompt = NULL;
    int has_logprobs = 0, has_top = 0, has_stream_options = 0;
    long long top_logprobs = 0;
    const char *mt_name = NULL;
    for (const cJSON *f = root->child; f && !rc; f = f->next) {
        const char *k = f->string;
        if (!strcmp(k, "messages") && kind == SRV_CHAT) { messages = f; continue; }
        if (!strcmp(k, "prompt") && kind == SRV_COMPLETION) { prompt = f; continue; }
        if (cJSON_IsNull(f)) continue; /* null: as if absent (the SDKs send some fields as null) */
        double x;
        long long i;
        int b;
        if (!strcmp(k, "model")) {
            if (!cJSON_IsString(f)) rc = srv_fail(err, 400, k, "'model' must be a string");
        } else if (!strcmp(k, "max_tokens") || (!strcmp(k, "max_completion_tokens") && kind == SRV_CHAT)) {
            if (!(rc = get_int(err, f, k, 1, 1 << 30, &i))) {
                r->max_tokens = (int)i;
                mt_name = k;
            }
        } else if (!strcmp(k, "temperature")) {
            if (!(rc = get_num(err, f, k, 0, 2, &x))) r->sp.temp = (float)x;
        } else if (!strcmp(k, "top_p")) {
            if (!(rc = get_num(err, f, k, 0, 1, &x))) r->sp.top_p = x > 0 ? (float)x : 1e-9f; /* 0: the top token */
        } else if (!strcmp(k, "top_k")) {
            if (!(rc = get_int(err, f, k, -1, 1 << 30, &i))) r->sp.top_k = i < 0 ? 0 : (int)i; /* -1 (vLLM), 0: off */
        } else if (!strcmp(k, "min_p")) {
            if (!(rc = get_num(err, f, k, 0, 1, &x))) r->sp.min_p = (float)x;
        } else if (!strcmp(k, "seed")) {
            if (!(rc = get_int(err, f, k, -9.2e18, 9.2e18, &i))) {
                r->sp.seed = (uint64_t)i;
                r->seed_given = i != -1; /* -1: a fresh draw, as tern run --seed -1 and llama.cpp's server */
            }
        } else if (!strcmp(k, "presence_penalty")) {
            if (!(rc = get_num(err, f, k, -2, 2, &x))) r->presence = (float)x;
        } else if (!strcmp(k, "frequency_penalty")) {
            if (!(rc = get_num(err, f, k, -2, 2, &x))) r->frequency = (float)x;
        } else if (!strcmp(k, "repetition_penalty") || !strcmp(k, "repeat_penalty")) {
            if (!(rc = get_num(err, f, k, 1e-3, 100, &x))) r->sp.repeat_penalty = (float)x;
        } else if (!strcmp(k, "stop")) {
            rc = parse_stop(err, f, r);
        } else if (!strcmp(k, "stream")) {
            rc = get_bool(err, f, k, &r->stream);
        } else if (!strcmp(k, "stream_options")) {
            has_stream_options = 1;
            if (!cJSON_IsObject(f)) { rc = srv_fail(err, 400, k, "'stream_options' must be an object"); break; }
            for (const cJSON *o = f->child; o && !rc; o = o->next) {
                if (!strcmp(o->string, "include_usage")) rc = get_bool(err, o, "stream_options.include_usage", &r->include_usage);
                else rc = srv_fail(err, 400, "stream_options", "'stream_options.%.40s' is not supported", o->string);
            }
        } else if (!strcmp(k, "logprobs") && kind == SRV_CHAT) {
            rc = get_bool(err, f, k, &r->logprobs);
        } else if (!strcmp(k, "logprobs")) { /* completions: the number of alternatives, 0..5 */
            if (!(rc = get_int(err, f, k, 0, 5, &i))) {
                r->logprobs = 1;
                r->top_logprobs = (int)i;
                has_logprobs = 1;
            }
        } else if (!strcmp(k, "top_logprobs") && kind == SRV_CHAT) {
            has_top = 1;
            rc = get_int(err, f, k, 0, SRV_MAX_TOP_LOGPROBS, &top_logprobs);
        } else if (!strcmp(k, "n") || !strcmp(k, "best_of")) {
            if (!(rc = get_int(err, f, k, 1, 1 << 20, &i)) && i != 1)
                rc = srv_fail(err, 400, k, "'%s' > 1 is not supported (one choice a request)", k);
        } else if (!strcmp(k, "ignore_eos")) {
            rc = get_bool(err, f, k, &r->ignore_eos);
        } else if (!strcmp(k, "user") || !strcmp(k, "metadata")) {
            /* annotations for the caller's records: nothing to do */
        } else if (!strcmp(k, "response_format")) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(f, "type");
            if (!cJSON_IsObject(f) || !cJSON_IsString(t) || strcmp(t->valuestring, "text") != 0 || cJSON_GetArraySize(f) != 1)
                rc = srv_fail(err, 400, k, "'response_format' other than {\"type\": \"text\"} (JSON mode, schemas) is not supported");
        } else if (!strcmp(k, "tools") || !strcmp(k, "functions")) {
            if (!(cJSON_IsArray(f) && !f->child)) rc = srv_fail(err, 400, k, "'%s' (tool calling) is not supported", k);
        } else if (!strcmp(k, "tool_choice") || !strcmp(k, "function_call")) {
            if (!(cJSON_IsString(f) && !strcmp(f->valuestring, "none")))
                rc = srv_fail(err, 400, k, "'%s' (tool calling) is not supported", k);
        } else if (!strcmp(k, "parallel_tool_calls")) {
            rc = get_bool(err, f, k, &b);
        } else if (!strcmp(k, "logit_bias")) {
            if (!(cJSON_IsObject(f) && !f->child)) rc = srv_fail(err, 400, k, "'logit_bias' is not supported");
        } else if (!strcmp(k, "store")) {
            if (!(rc = get_bool(err, f, k, &b)) && b) rc = srv_fail(err, 400, k, "'store' is not supported");
        } else if (!strcmp(k, "echo") && kind == SRV_COMPLETION) {
            if (!(rc = get_bool(err, f, k, &b)) && b) rc = srv_fail(err, 400, k, "'echo' is not supported");
        } else if (!strcmp(k, "suffix") && kind == SRV_COMPLETION) {
            if (!(cJSON_IsString(f) && !f->valuestring[0])) rc = srv_fail(err, 400, k, "'suffix' is not supported");
        } else {
            rc = srv_fail(err, 400, k, "unrecognized request argument supplied: '%.48s'", k);
        }
    }
    if (rc) goto out;
    if (has_stream_options && !r->stream) { rc = srv_fail(err, 400, "stream_options", "'stream_options' needs 'stream': true"); goto out; }
    if (kind == SRV_CHAT) {
        if (has_top && !r->logprobs) { rc = srv_fail(err, 400, "top_logprobs", "'top_logprobs' needs 'logprobs': true"); goto out; }
        r->top_logprobs = (int)top_logprobs;
    }
    (void)has_logprobs;
    /* the prompt */
    if (kind == SRV_CHAT) {
        if (!messages) { rc = srv_fail(err, 400, "messages", "'messages' is missing"); goto out; }
        if (c->chat == TERN_CHAT_UNKNOWN) {
            rc = srv_fail(err, 400, "messages", "the model has no chat template tern knows (start the server with --chat-template)");
            goto out;
        }
        char *text = NULL;
        if ((rc = parse_messages(c, err, messages, &text))) goto out;
        const int n = tokenize(c, text, strlen(text), tern_model_add_bos(c->m), 1, &r->prompt, err, "messages");
        free(text);
        if (n < 0) { rc = -1; goto out; }
        r->n_prompt = n;
    } else {
        if (!prompt) { rc = srv_fail(err, 400, "prompt", "'prompt' is missing"); goto out; }
        if ((rc = parse_prompt(c, err, prompt, r))) goto out;
    }
    const char *what = kind == SRV_CHAT ? "messages" : "prompt";
    if (r->n_prompt == 0) { rc = srv_fail(err, 400, what, "the %s tokenize to nothing", what); goto out; }
    if (r->n_prompt >= c->n_ctx) {
        rc = srv_fail(err, 400, what, "This model's maximum context length is %d tokens. However, your %s resulted in %d "
                      "tokens (none left to generate).", c->n_ctx, what, r->n_prompt);
        goto out;
    }
    if (r->max_tokens < 0) r->max_tokens = c->n_ctx - r->n_prompt;
    else if ((long)r->n_prompt + r->max_tokens > c->n_ctx) {
        rc = srv_fail(err, 400, mt_name, "This model's maximum context length is %d tokens. However, you requested %ld "
                      "tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or %s.", c->n_ctx,
                      (long)r->n_prompt + r->max_tokens, r->n_prompt, what, r->max_tokens, what, mt_name);
        goto out;
    }
    if (!r->seed_given) { /* OpenAI: without a seed, a fresh draw each request */
        static uint64_t ctr;
        r->sp.seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull + __atomic_add_fetch(&ctr, 0x632be59bd9b4e019ull, __ATOMIC_RELAXED);
    }
    rand_id(kind == SRV_CHAT ? "chatcmpl-" : "cmpl-", r->id, sizeof r->id);
    r->created = (long)time(NULL);
out:
    cJSON_Delete(root);
    if (rc) srv_req_clear(r);
    return rc ? -1 : 0;
}

/* ---- responses ---- */

/* A token's text (control tokens shown), malloc'd raw bytes into *raw (*n their count). */
static void token_bytes(const srv_ctx *c, int32_t id, char **raw, int *n) {
    char small[256];
    int k = tern_model_token_to_piece(c->m, id, small, sizeof small, 1);
    if (k > (int)sizeof small) {
        *raw = tern_xmalloc((size_t)k);
        k = tern_model_token_to_piece(c->m, id, *raw, k, 1);
    } else {
        *raw = tern_xmalloc(k > 0 ? (size_t)k : 1);
        if (k > 0) memcpy(*raw, small, (size_t)k);
    }
    *n = k > 0 ? k : 0;
}

/* {"token", "logprob", "bytes"} of id into o. */
static void add_token_fields(const srv_ctx *c, cJSON *o, int32_t id, float lp) {
    char *raw;
    int n;
    token_bytes(c, id, &raw, &n);
    char *s = srv_utf8_lossy(raw, (size_t)n);
    cJSON_AddStringToObject(o, "token", s);
    cJSON_AddNumberToObject(o, "logprob", isfinite(lp) ? lp : -9999.0);
    cJSON *bytes = cJSON_AddArrayToObject(o, "bytes");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)raw[i]));
    free(s);
    free(raw);
}

/* Chat logprobs {"content": [...], "refusal": null} of lps[l0..l1). */
static cJSON *chat_logprobs(const srv_ctx *c, const srv_req *r, int l0, int l1) {
    cJSON *lp = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(lp, "content");
    for (int i = l0; i < l1; i++) {
        const srv_lp *e = &r->lps[i];
        cJSON *o = cJSON_CreateObject();
        add_token_fields(c, o, e->id, e->lp);
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int k = 0; k < e->n_top; k++) {
            cJSON *t = cJSON_CreateObject();
            add_token_fields(c, t, e->top_id[k], e->top_lp[k]);
            cJSON_AddItemToArray(top, t);
        }
        cJSON_AddItemToArray(content, o);
    }
    cJSON_AddNullToObject(lp, "refusal");
    return lp;
}

/* Completions logprobs {"tokens", "token_logprobs", "top_logprobs", "text_offset"} of lps[l0..l1); text_offset from
 * offset0 on. */
static cJSON *completion_logprobs(const srv_ctx *c, const srv_req *r, int l0, int l1, size_t offset0) {
    cJSON *lp = cJSON_CreateObject(), *toks = cJSON_AddArrayToObject(lp, "tokens"),
          *tlp = cJSON_AddArrayToObject(lp, "token_logprobs"), *top = cJSON_AddArrayToObject(lp, "top_logprobs"),
          *off = cJSON_AddArrayToObject(lp, "text_offset");
    size_t at = offset0;
    for (int i = l0; i < l1; i++) {
        const srv_lp *e = &r->lps[i];
        char *raw;
        int n;
        token_bytes(c, e->id, &raw, &n);
        char *s = srv_utf8_lossy(raw, (size_t)n);
        cJSON_AddItemToArray(toks, cJSON_CreateString(s));
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(isfinite(e->lp) ? e->lp : -9999.0));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)at));
        at += (size_t)n;
        free(s);
        free(raw);
        cJSON *t = cJSON_CreateObject();
        for (int k = 0; k < e->n_top; k++) {
            token_bytes(c, e->top_id[k], &raw, &n);
            s = srv_utf8_lossy(raw, (size_t)n);
            if (!cJSON_GetObjectItemCaseSensitive(t, s))
                cJSON_AddNumberToObject(t, s, isfinite(e->top_lp[k]) ? e->top_lp[k] : -9999.0);
            free(s);
            free(raw);
        }
        cJSON_AddItemToArray(top, t);
    }
    return lp;
}

static cJSON *usage_json(const srv_req *r) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", r->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", r->n_prompt + r->n_gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", r->n_cached);
    return u;
}

static cJSON *head(const srv_ctx *c, const srv_req *r, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", c->model_id);
    cJSON_AddStringToObject(o, "system_fingerprint", "tern");
    return o;
}

static char *text_dup(const srv_req *r, size_t t0, size_t t1) {
    char *s = tern_xmalloc(t1 - t0 + 1);
    if (t1 > t0) memcpy(s, r->text + t0, t1 - t0);
    s[t1 - t0] = 0;
    return s;
}

char *srv_render_response(const srv_ctx *c, const srv_req *r) {
    const int chat = r->kind == SRV_CHAT;
    cJSON *o = head(c, r, chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddNumberToObject(ch, "index", 0);
    char *text = text_dup(r, 0, r->text_len);
    if (chat) {
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", text);
        cJSON_AddNullToObject(msg, "refusal");
    } else {
        cJSON_AddStringToObject(ch, "text", text);
    }
    free(text);
    if (r->logprobs)
        cJSON_AddItemToObject(ch, "logprobs", chat ? chat_logprobs(c, r, 0, r->n_lp) : completion_logprobs(c, r, 0, r->n_lp, 0));
    else cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddStringToObject(ch, "finish_reason", r->finish ? r->finish : "stop");
    cJSON_AddItemToObject(o, "usage", usage_json(r));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void sse_append(char **buf, size_t *len, cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    const char *body = s ? s : "[DONE]";
    const size_t k = strlen(body);
    *buf = realloc(*buf, *len + k + 9);
    if (!*buf) abort();
    memcpy(*buf + *len, "data: ", 6);
    memcpy(*buf + *len + 6, body, k);
    memcpy(*buf + *len + 6 + k, "\n\n", 3); /* and a NUL, not counted */
    *len += k + 8;
    free(s);
    cJSON_Delete(o);
}

/* A stream chunk with one choice; the choice is returned to fill. */
static cJSON *chunk(const srv_ctx *c, const srv_req *r, cJSON **choice) {
    cJSON *o = head(c, r, r->kind == SRV_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, *choice);
    cJSON_AddNumberToObject(*choice, "index", 0);
    return o;
}

static void chunk_tail(const srv_req *r, cJSON *o, cJSON *choice, const char *finish) {
    if (finish) cJSON_AddStringToObject(choice, "finish_reason", finish);
    else cJSON_AddNullToObject(choice, "finish_reason");
    if (r->include_usage) cJSON_AddNullToObject(o, "usage");
}

void srv_sse_first(const srv_ctx *c, const srv_req *r, char **buf, size_t *len) {
    if (r->kind != SRV_CHAT) return;
    cJSON *ch, *o = chunk(c, r, &ch), *d = cJSON_AddObjectToObject(ch, "delta");
    cJSON_AddStringToObject(d, "role", "assistant");
    cJSON_AddStringToObject(d, "content", "");
    cJSON_AddNullToObject(ch, "logprobs");
    chunk_tail(r, o, ch, NULL);
    sse_append(buf, len, o);
}

void srv_sse_delta(const srv_ctx *c, const srv_req *r, size_t t0, size_t t1, int l0, int l1, char **buf, size_t *len) {
    cJSON *ch, *o = chunk(c, r, &ch);
    char *text = text_dup(r, t0, t1);
    if (r->kind == SRV_CHAT) {
        cJSON *d = cJSON_AddObjectToObject(ch, "delta");
        cJSON_AddStringToObject(d, "content", text);
    } else {
        cJSON_AddStringToObject(ch, "text", text);
    }
    free(text);
    if (r->logprobs && l1 > l0)
        cJSON_AddItemToObject(ch, "logprobs", r->kind == SRV_CHAT ? chat_logprobs(c, r, l0, l1) : completion_logprobs(c, r, l0, l1, t0));
    else cJSON_AddNullToObject(ch, "logprobs");
    chunk_tail(r, o, ch, NULL);
    sse_append(buf, len, o);
}

void srv_sse_finish(const srv_ctx *c, const srv_req *r, char **buf, size_t *len) {
    cJSON *ch, *o = chunk(c, r, &ch);
    if (r->kind == SRV_CHAT) cJSON_AddObjectToObject(ch, "delta");
    else cJSON_AddStringToObject(ch, "text", "");
    cJSON_AddNullToObject(ch, "logprobs");
    chunk_tail(r, o, ch, r->finish ? r->finish : "stop");
    sse_append(buf, len, o);
    if (r->include_usage) { /* exactly one chunk with no choices and the usage */
        o = head(c, r, r->kind == SRV_CHAT ? "chat.completion.chunk" : "text_completion");
        cJSON_AddArrayToObject(o, "choices");
        cJSON_AddItemToObject(o, "usage", usage_json(r));
        sse_append(buf, len, o);
    }
    sse_append(buf, len, NULL);
}

void srv_sse_error(const srv_error *err, char **buf, size_t *len) {
    char *s = srv_error_json(err);
    cJSON *o = cJSON_Parse(s);
    free(s);
    sse_append(buf, len, o);
    sse_append(buf, len, NULL);
}

/* ---- /tokenize, /detokenize, /v1/models ---- */

static cJSON *parse_object(const char *body, size_t len, srv_error *err) {
    cJSON *root = json_body(body, len, err);
    if (!root) return NULL;
    if (!cJSON_IsObject(root) || !depth_ok(root, 1)) {
        srv_fail(err, 400, NULL, "the request body must be a JSON object nesting at most %d deep", SRV_MAX_DEPTH);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

char *srv_tokenize(const srv_ctx *c, const char *body, size_t len, srv_error *err) {
    cJSON *root = parse_object(body, len, err);
    if (!root) return NULL;
    const cJSON *content = NULL;
    int add_special = 0, parse_special = 1, with_pieces = 0, rc = 0;
    for (const cJSON *f = root->child; f && !rc; f = f->next) {
        if (!strcmp(f->string, "content")) content = f;
        else if (!strcmp(f->string, "add_special")) rc = get_bool(err, f, f->string, &add_special);
        else if (!strcmp(f->string, "parse_special")) rc = get_bool(err, f, f->string, &parse_special);
        else if (!strcmp(f->string, "with_pieces")) rc = get_bool(err, f, f->string, &with_pieces);
        else rc = srv_fail(err, 400, f->string, "unrecognized field '%.48s'", f->string);
    }
    if (!rc && !cJSON_IsString(content)) rc = srv_fail(err, 400, "content", "'content' must be a string");
    int32_t *ids = NULL;
    int n = rc ? -1 : tokenize(c, content->valuestring, strlen(content->valuestring), add_special && tern_model_add_bos(c->m),
                               parse_special, &ids, err, "content");
    char *out = NULL;
    if (n >= 0) {
        cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tokens");
        for (int i = 0; i < n; i++) {
            if (!with_pieces) { cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i])); continue; }
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "id", ids[i]);
            char *raw;
            int k;
            token_bytes(c, ids[i], &raw, &k);
            if (srv_utf8_valid(raw, (size_t)k) && !memchr(raw, 0, (size_t)k)) {
                char *s = srv_utf8_lossy(raw, (size_t)k);
                cJSON_AddStringToObject(t, "piece", s);
                free(s);
            } else { /* not a whole character: its bytes, as llama-server gives them */
                cJSON *b = cJSON_AddArrayToObject(t, "piece");
                for (int j = 0; j < k; j++) cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)raw[j]));
            }
            free(raw);
            cJSON_AddItemToArray(arr, t);
        }
        out = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    free(ids);
    cJSON_Delete(root);
    return out;
}

char *srv_detokenize(const srv_ctx *c, const char *body, size_t len, srv_error *err) {
    cJSON *root = parse_object(body, len, err);
    if (!root) return NULL;
    const cJSON *tokens = NULL;
    int rc = 0;
    for (const cJSON *f = root->child; f && !rc; f = f->next) {
        if (!strcmp(f->string, "tokens")) tokens = f;
        else rc = srv_fail(err, 400, f->string, "unrecognized field '%.48s'", f->string);
    }
    if (!rc && !cJSON_IsArray(tokens)) rc = srv_fail(err, 400, "tokens", "'tokens' must be an array of token ids");
    char *raw = NULL, *out = NULL;
    size_t n = 0;
    const int V = tern_model_n_vocab(c->m);
    int i = 0;
    for (const cJSON *t = rc ? NULL : tokens->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || !(t->valuedouble >= 0 && t->valuedouble < V)) {
            rc = srv_fail(err, 400, "tokens", "'tokens[%d]' is not a token id in [0, %d)", i, V);
            break;
        }
        char *piece;
        int k;
        token_bytes(c, (int32_t)t->valuedouble, &piece, &k);
        raw = realloc(raw, n + (size_t)k + 1);
        if (!raw) abort();
        memcpy(raw + n, piece, (size_t)k);
        n += (size_t)k;
        free(piece);
    }
    if (!rc) {
        char *s = srv_utf8_lossy(raw ? raw : "", n);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "content", s);
        out = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        free(s);
    }
    free(raw);
    cJSON_Delete(root);
    return out;
}

char *srv_apply_template(const srv_ctx *c, const char *body, size_t len, srv_error *err) {
    cJSON *root = parse_object(body, len, err);
    if (!root) return NULL;
    const cJSON *messages = NULL;
    int rc = 0;
    for (const cJSON *f = root->child; f && !rc; f = f->next) {
        if (!strcmp(f->string, "messages")) messages = f;
        else if (strcmp(f->string, "model") != 0) rc = srv_fail(err, 400, f->string, "unrecognized field '%.48s'", f->string);
    }
    if (!rc && !messages) rc = srv_fail(err, 400, "messages", "'messages' is missing");
    if (!rc && c->chat == TERN_CHAT_UNKNOWN) rc = srv_fail(err, 400, "messages", "the model has no chat template tern knows");
    char *text = NULL, *out = NULL;
    if (!rc && !parse_messages(c, err, messages, &text)) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "prompt", text);
        out = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    free(text);
    cJSON_Delete(root);
    return out;
}

char *srv_models_json(const srv_ctx *c) {
    cJSON *o = cJSON_CreateObject(), *data;
    cJSON_AddStringToObject(o, "object", "list");
    data = cJSON_AddArrayToObject(o, "data");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", c->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "tern");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    char *desc = srv_utf8_lossy(tern_model_desc(c->m), strlen(tern_model_desc(c->m))); /* GGUF metadata: any bytes */
    cJSON_AddStringToObject(meta, "desc", desc);
    free(desc);
    cJSON_AddNumberToObject(meta, "n_ctx", c->n_ctx);
    cJSON_AddNumberToObject(meta, "n_vocab", tern_model_n_vocab(c->m));
    cJSON_AddNumberToObject(meta, "n_params", (double)tern_model_n_params(c->m));
    cJSON_AddItemToArray(data, m);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
