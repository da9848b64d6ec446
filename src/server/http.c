/* http.c: the HTTP side of `tern serve` over libmicrohttpd, one thread per connection (a stream's thread sleeps on
 * its request's condition variable between tokens; 64 streams are 64 mostly sleeping threads).
 *
 * Routes: GET / (the chat page), GET /health, GET /metrics, GET /v1/models, POST /v1/chat/completions,
 * POST /v1/completions, POST /tokenize, POST /detokenize, POST /apply-template (the /v1 paths also without /v1). Every error is OpenAI's
 * JSON shape with its status: 400 bad input, 401 a missing or wrong API key, 404, 405, 413 a body past --max-body,
 * 503 while the model loads, when the queue is full (with Retry-After) and while stopping.
 *
 * A client that disconnects is noticed by the scheduler, which polls every running request's socket before each step
 * (srv_sched_submit), so its sequence is freed before the next step; and by its own thread while it waits for tokens
 * (a poll of the socket every 50 ms, and any failed write), which ends the response (and cancels a request still
 * queued). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "server.h"
#include "util.h"

#define WAIT_MS 50 /* how often a waiting connection looks for a hang-up */

struct srv_http {
    struct MHD_Daemon *d;
    srv_http_params p;
    const srv_ctx *c;
    srv_sched *s;
    int ready;
    int port;
};

/* A request's body, gathered over the upload calls. */
typedef struct {
    char *body;
    size_t len, cap;
    int too_big;
} conn_t;

/* A stream's state between the content reader's calls. */
typedef struct {
    srv_http *h;
    srv_req *r;
    int fd;
    char *buf;          /* rendered SSE bytes not yet handed to MHD */
    size_t len, off;
    size_t t_sent;      /* r->text bytes rendered */
    int l_sent;         /* r->lps entries rendered */
    int finished;
} stream_t;

int srv_hung_up(int fd, short revents) {
    if (revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    char ch;
    return (revents & POLLIN) && recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static int client_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && srv_hung_up(fd, p.revents);
}

static int conn_fd(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static void common_headers(struct MHD_Response *resp, const char *type) {
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
}

/* Send body (malloc'd, freed here) with status. */
static enum MHD_Result send_body(struct MHD_Connection *conn, int status, char *body, const char *type, int retry_after) {
    if (!body) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) { free(body); return MHD_NO; }
    common_headers(resp, type);
    if (retry_after) MHD_add_response_header(resp, "Retry-After", "1");
    const enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, int status, char *json) {
    return send_body(conn, status, json, "application/json", 0);
}

static enum MHD_Result send_error(struct MHD_Connection *conn, const srv_error *err) {
    return send_body(conn, err->status, srv_error_json(err), "application/json", err->status == 503);
}

static enum MHD_Result fail(struct MHD_Connection *conn, int status, const char *fmt, const char *arg) {
    srv_error err;
    srv_fail(&err, status, NULL, fmt, arg);
    return send_error(conn, &err);
}

/* ---- streams ---- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_t *ss = cls;
    srv_sched *s = ss->h->s;
    srv_req *r = ss->r;
    for (;;) {
        if (ss->off < ss->len) {
            const size_t n = ss->len - ss->off < max ? ss->len - ss->off : max;
            memcpy(buf, ss->buf + ss->off, n);
            ss->off += n;
            if (ss->off == ss->len) ss->off = ss->len = 0;
            return (ssize_t)n;
        }
        if (ss->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        srv_sched_lock(s);
        while (!r->done && r->text_len == ss->t_sent && r->n_lp == ss->l_sent) {
            if (client_gone(ss->fd)) {
                srv_sched_unlock(s);
                srv_sched_cancel(s, r);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            srv_sched_wait(s, r, WAIT_MS);
        }
        if (r->text_len > ss->t_sent || r->n_lp > ss->l_sent) {
            srv_sse_delta(ss->h->c, r, ss->t_sent, r->text_len, ss->l_sent, r->n_lp, &ss->buf, &ss->len);
            ss->t_sent = r->text_len;
            ss->l_sent = r->n_lp;
        }
        if (r->done) {
            if (r->finish) srv_sse_finish(ss->h->c, r, &ss->buf, &ss->len);
            else {
                srv_error err;
                srv_fail(&err, r->cancel ? 499 : 500, NULL, "%s", r->err[0] ? r->err : "the request was cancelled");
                srv_sse_error(&err, &ss->buf, &ss->len);
            }
            ss->finished = 1;
        }
        srv_sched_unlock(s);
    }
}

static void stream_free(void *cls) {
    stream_t *ss = cls;
    srv_sched_cancel(ss->h->s, ss->r); /* a no-op when it finished */
    srv_sched_release(ss->h->s, ss->r);
    free(ss->buf);
    free(ss);
}

/* ---- completions ---- */

static enum MHD_Result completion(srv_http *h, struct MHD_Connection *conn, srv_kind kind, const conn_t *st) {
    srv_req *r = tern_xcalloc(1, sizeof *r);
    srv_error err;
    if (srv_parse(h->c, kind, st->body ? st->body : "", st->len, r, &err) != 0) {
        free(r);
        return send_error(conn, &err);
    }
    const int fd = conn_fd(conn);
    const int rc = srv_sched_submit(h->s, r, fd);
    if (rc != 0) {
        srv_req_clear(r);
        free(r);
        srv_fail(&err, 503, NULL, rc == -2 ? "the server is shutting down" : "the server is busy (its queue is full); retry later");
        return send_error(conn, &err);
    }
    if (r->stream) {
        stream_t *ss = tern_xcalloc(1, sizeof *ss);
        ss->h = h;
        ss->r = r;
        ss->fd = fd;
        srv_sse_first(h->c, r, &ss->buf, &ss->len);
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, ss, stream_free);
        if (!resp) { stream_free(ss); return MHD_NO; }
        common_headers(resp, "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        const enum MHD_Result q = MHD_queue_response(conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return q;
    }
    srv_sched_lock(h->s);
    while (!r->done) {
        if (client_gone(fd)) {
            srv_sched_unlock(h->s);
            srv_sched_cancel(h->s, r);
            srv_sched_release(h->s, r);
            return MHD_NO; /* closes the connection */
        }
        srv_sched_wait(h->s, r, WAIT_MS);
    }
    char *body = NULL;
    if (r->finish) body = srv_render_response(h->c, r);
    else srv_fail(&err, 500, NULL, "%s", r->err[0] ? r->err : "the request was cancelled");
    srv_sched_unlock(h->s);
    srv_sched_release(h->s, r);
    return body ? send_json(conn, 200, body) : send_error(conn, &err);
}

/* ---- routing ---- */

static int path_is(const char *url, const char *p) {
    return !strcmp(url, p) || (!strncmp(p, "/v1/", 4) && !strcmp(url, p + 3));
}

static int authorized(const srv_http *h, struct MHD_Connection *conn) {
    if (!h->p.api_key) return 1;
    const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!a || strncasecmp(a, "Bearer ", 7) != 0) return 0; /* the scheme is case-insensitive (RFC 9110 11.1) */
    a += 7;
    const size_t n = strlen(h->p.api_key);
    if (strlen(a) != n) return 0;
    unsigned char d = 0; /* compare every byte (no early exit on the first difference) */
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(a[i] ^ h->p.api_key[i]);
    return d == 0;
}

static enum MHD_Result route(srv_http *h, struct MHD_Connection *conn, const char *url, const char *method, conn_t *st) {
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(method, "OPTIONS")) { /* CORS preflight: the page may be served from elsewhere */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        const enum MHD_Result rc = MHD_queue_response(conn, 204, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (st->too_big) {
        char lim[32];
        snprintf(lim, sizeof lim, "%zu", h->p.max_body);
        return fail(conn, 413, "the request body is larger than %s bytes (--max-body)", lim);
    }
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
        if (!get) return fail(conn, 405, "%s / is not allowed (GET)", method);
        return send_body(conn, 200, strdup(srv_page_html), "text/html; charset=utf-8", 0);
    }
    if (!strcmp(url, "/health")) {
        if (!get) return fail(conn, 405, "%s /health is not allowed (GET)", method);
        if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) return fail(conn, 503, "%s", "Loading model");
        return send_json(conn, 200, strdup("{\"status\":\"ok\"}"));
    }
    static const char *const api[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/metrics", "/tokenize",
                                      "/detokenize", "/apply-template"};
    int which = -1;
    for (int i = 0; i < (int)(sizeof api / sizeof api[0]); i++)
        if (path_is(url, api[i])) which = i;
    if (which < 0) return fail(conn, 404, "no route %.200s", url);
    if (!authorized(h, conn)) return fail(conn, 401, "%s", "a valid API key is needed (Authorization: Bearer KEY)");
    const int want_post = which != 2 && which != 3;
    if (want_post ? !post : !get) return fail(conn, 405, "this route takes %s", want_post ? "POST" : "GET");
    if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) return fail(conn, 503, "%s", "Loading model");
    srv_error err;
    char *out;
    switch (which) {
    case 0: return completion(h, conn, SRV_CHAT, st);
    case 1: return completion(h, conn, SRV_COMPLETION, st);
    case 2: return send_json(conn, 200, srv_models_json(h->c));
    case 3: return send_body(conn, 200, srv_sched_metrics(h->s), "text/plain; version=0.0.4", 0);
    case 4: out = srv_tokenize(h->c, st->body ? st->body : "", st->len, &err); break;
    case 5: out = srv_detokenize(h->c, st->body ? st->body : "", st->len, &err); break;
    default: out = srv_apply_template(h->c, st->body ? st->body : "", st->len, &err); break;
    }
    return out ? send_json(conn, 200, out) : send_error(conn, &err);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn_t *st = *con_cls;
    if (!st) { /* the headers are in; the body follows */
        st = tern_xcalloc(1, sizeof *st);
        *con_cls = st;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > h->p.max_body) {
            st->too_big = 1; /* answered now: the body is not read (MHD closes the connection after the reply) */
            return route(h, conn, url, method, st);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!st->too_big && st->len + *upload_size > h->p.max_body) {
            st->too_big = 1;
            free(st->body);
            st->body = NULL;
            st->len = st->cap = 0;
        }
        if (!st->too_big) {
            if (st->len + *upload_size + 1 > st->cap) {
                st->cap = (st->len + *upload_size + 1) * 2;
                st->body = realloc(st->body, st->cap);
                if (!st->body) return MHD_NO;
            }
            memcpy(st->body + st->len, upload, *upload_size);
            st->len += *upload_size;
            st->body[st->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return route(h, conn, url, method, st);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls; (void)conn; (void)toe;
    conn_t *st = *con_cls;
    if (!st) return;
    free(st->body);
    free(st);
    *con_cls = NULL;
}

srv_http *srv_http_start(const srv_http_params *p) {
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%d", p->port);
    const int gai = getaddrinfo(p->host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        tern_set_error("--host %s: %s", p->host, gai ? gai_strerror(gai) : "no address");
        return NULL;
    }
    srv_http *h = tern_xcalloc(1, sizeof *h);
    h->p = *p;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)p->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)p->max_conn,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(p->timeout_s > 0 ? p->timeout_s : 60),
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_END);
    const int err = errno;
    freeaddrinfo(ai);
    if (!h->d) {
        tern_set_error("cannot listen on %s:%d (%s)", p->host, p->port, err ? strerror(err) : "libmicrohttpd failed");
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : p->port;
    return h;
}

int srv_http_port(const srv_http *h) { return h->port; }

void srv_http_ready(srv_http *h, const srv_ctx *c, srv_sched *s) {
    h->c = c;
    h->s = s;
    __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
}

void srv_http_quiesce(srv_http *h) {
    const MHD_socket fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

void srv_http_drain(srv_http *h, double max_s) {
    const double t0 = tern_time_s();
    for (;;) {
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!i || i->num_connections == 0 || tern_time_s() - t0 >= max_s) return;
        usleep(10000);
    }
}

void srv_http_stop(srv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
