/* sched.c: the server's scheduler: one thread owns the engine and runs steps (continuous batching, as Orca, Yu et
 * al. 2022, and vLLM v1's scheduler).
 *
 * A step: admit waiting requests while fewer than n_parallel run (each gets a sequence, started from the prefix
 * cache's blocks of its prompt); drop the cancelled and those whose client hung up (their sequences freed before the
 * step runs); then one batch: every decoding request's next token first, then prefill chunks of the others in
 * admission order while the step's token budget (batch_tokens) lasts, so a long prompt is spread over several steps
 * and never stalls the running streams for more than one budget's worth; one tern_engine_decode; then each output
 * row's token: logprobs, penalties, stop strings, end of generation, limits.
 * A request whose last prompt chunk ran samples its first token in that same step.
 *
 * Cancellation: before every step the scheduler polls the sockets of the running requests (one poll(), no wait) and
 * drops those whose client hung up, so a client that goes away mid-prefill or mid-decode costs at most the step in
 * flight (a step is not interrupted). The connection thread notices a hang-up too, but only as it wakes (every 50
 * ms, or for the next token): by then a ~6 ms CPU decode step of the default model has started the sequence's next
 * step (on the dev box, load 5-8: 2 steps after the last token a client read in 35 of 40 disconnects without this
 * poll, 1 in 250 of 250 with it; tests/server/test_server.py small_pool_check).
 *
 * Sampling: a row asks TERN_BATCH_ARGMAX for plain greedy, TERN_BATCH_SAMPLE (the sequence's own sampler: on the
 * device where it can) otherwise, and TERN_BATCH_LOGITS when the request wants logprobs or OpenAI's presence /
 * frequency penalties: those are applied here, on the host, to the logits (logit - frequency * count - presence *
 * (count > 0), count = times the id was generated, as OpenAI documents them), then the request's sampler draws with
 * the same chain and history as TERN_BATCH_SAMPLE would.
 *
 * Text: a token's bytes go to a private buffer; what is published is the part that can no longer change: complete
 * UTF-8 characters, and not a tail that could still become a stop string. A stop string found ends the request
 * with "stop" and nothing from it on is published. */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server.h"
#include "util.h"

struct srv_sched {
    const srv_ctx *c;
    tern_engine *e;
    srv_sched_params p;
    int V;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;              /* wakes the scheduler: a request, a cancellation, stop */
    srv_req *wait_head, *wait_tail; /* the queue, first come first served */
    int n_wait;
    srv_req **run;                  /* (n_parallel) running requests in admission order */
    int n_run;
    struct pollfd *pfd;             /* (n_parallel) the running requests' sockets, polled for a hang-up */
    int stopping;                   /* 1: no new requests; running ones finish until stop_at */
    double stop_at;
    tern_batch *b;
    float *scratch;                 /* (V) logits with the penalties */
    /* metrics, under mu */
    int64_t n_prompt_tok, n_cached_tok, n_gen_tok, n_steps, n_step_tok;
    int64_t n_finished, n_cancelled, n_failed, n_rejected;
    double t_prefill, t_decode;     /* s of steps that ran prefill tokens / decode tokens */
    tern_kv_stats kv;               /* after the last step (the engine is the scheduler thread's alone) */
};

void srv_sched_lock(srv_sched *s) { pthread_mutex_lock(&s->mu); }
void srv_sched_unlock(srv_sched *s) { pthread_mutex_unlock(&s->mu); }

void srv_sched_wait(srv_sched *s, srv_req *r, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&r->cv, &s->mu, &ts);
}

static void req_free(srv_req *r) {
    srv_req_clear(r);
    free(r->text);
    free(r->lps);
    free(r->toks);
    free(r->gen_count);
    free(r->raw);
    tern_sampler_free(r->smp);
    if (r->fd >= 0) close(r->fd);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* Under mu. */
static void release_locked(srv_req *r) {
    if (--r->refs == 0) req_free(r);
}

void srv_sched_release(srv_sched *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    release_locked(r);
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_cancel(srv_sched *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    if (!r->done) {
        r->cancel = 1;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

int srv_sched_submit(srv_sched *s, srv_req *r, int client_fd) {
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (s->stopping) rc = -2;
    else if (s->n_wait >= s->p.queue_max) rc = -1;
    if (rc) {
        s->n_rejected++;
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    pthread_cond_init(&r->cv, NULL);
    /* a dup, so the number stays this socket's after the connection closes its own (no poll of a reused fd); -1 when
     * out of descriptors: the connection thread's own poll still cancels it */
    r->fd = client_fd >= 0 ? fcntl(client_fd, F_DUPFD_CLOEXEC, 0) : -1;
    r->refs = 2; /* the caller's and the scheduler's */
    r->row = -1;
    r->t_submit = tern_time_s();
    r->next = NULL;
    if (s->wait_tail) s->wait_tail->next = r;
    else s->wait_head = r;
    s->wait_tail = r;
    s->n_wait++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* ---- the request's text (the scheduler's private buffer -> the published text) ---- */

static void append(char **p, size_t *len, size_t *cap, const char *src, size_t n) {
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *p = realloc(*p, *cap);
        if (!*p) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    }
    memcpy(*p + *len, src, n);
    *len += n;
    (*p)[*len] = 0;
}

/* The bytes of raw[0..n) that can be published: up to a cut UTF-8 character at the end. */
static size_t utf8_complete(const char *raw, size_t n) {
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        const unsigned char c = (unsigned char)raw[n - back];
        if ((c & 0xC0) == 0x80) continue;                                   /* a continuation byte */
        const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return want > back ? n - back : n;
    }
    return n;
}

/* Append raw[from..to) to r->text as valid UTF-8 (an invalid or cut sequence as U+FFFD, NUL as U+FFFD). Under mu. */
static void publish_text(srv_req *r, size_t from, size_t to) {
    for (size_t i = from; i < to;) {
        const unsigned char c = (unsigned char)r->raw[i];
        const size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (c && k && i + k <= to && srv_utf8_valid(r->raw + i, k)) {
            append(&r->text, &r->text_len, &r->text_cap, r->raw + i, k);
            i += k;
        } else {
            append(&r->text, &r->text_len, &r->text_cap, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
}

/* Publish what can no longer change (everything when final; up to stop_at when a stop string was found). */
static void publish(srv_req *r, int final, size_t stop_at) {
    size_t end = final ? (stop_at < r->raw_len ? stop_at : r->raw_len) : utf8_complete(r->raw, r->raw_len);
    if (end < r->raw_sent) end = r->raw_sent;
    if (!final) { /* hold back a tail that may grow into a stop string */
        size_t hold = 0;
        for (int i = 0; i < r->n_stop; i++) {
            const size_t L = strlen(r->stop[i]);
            for (size_t k = L - 1 < end - r->raw_sent ? L - 1 : end - r->raw_sent; k > hold; k--)
                if (!memcmp(r->raw + end - k, r->stop[i], k)) { hold = k; break; }
        }
        end -= hold;
    }
    if (end > r->raw_sent) publish_text(r, r->raw_sent, end);
    if (end > r->raw_sent) r->raw_sent = end;
}

/* ---- admission and retirement (under mu) ---- */

/* r is done: finished (finish set), cancelled or failed (err); its waiter woken, the scheduler's hold dropped. */
static void finish_req(srv_sched *s, srv_req *r, const char *finish, const char *err) {
    r->done = 1;
    r->finish = finish;
    if (err && err != r->err) snprintf(r->err, sizeof r->err, "%s", err);
    r->t_done = tern_time_s();
    if (finish) s->n_finished++;
    else if (err && !r->cancel) s->n_failed++;
    else s->n_cancelled++;
    pthread_cond_broadcast(&r->cv);
    release_locked(r);
}

/* Running request i leaves: its sequence freed (its blocks back in the pool, or kept by the prefix cache). */
static void retire(srv_sched *s, int i, const char *finish, const char *err) {
    srv_req *r = s->run[i];
    tern_seq_free(r->seq);
    r->seq = NULL;
    memmove(s->run + i, s->run + i + 1, sizeof *s->run * (size_t)(s->n_run - i - 1));
    s->n_run--;
    finish_req(s, r, finish, err);
}

/* Take the queue's head into a sequence. 0, or -1 (the request failed; it is done). */
static int admit(srv_sched *s, srv_req *r) {
    r->seq = tern_seq_new(s->e);
    r->smp = tern_sampler_new(&r->sp, s->V);
    if (!r->seq || !r->smp) {
        snprintf(r->err, sizeof r->err, "%s", tern_last_error());
        tern_seq_free(r->seq);
        r->seq = NULL;
        return -1;
    }
    tern_seq_set_sampler(r->seq, r->smp);
    const int cached = tern_seq_attach_prefix(r->seq, r->prompt, r->n_prompt);
    r->n_cached = r->n_done_prompt = cached > 0 ? cached : 0;
    s->n_cached_tok += r->n_cached;
    r->toks = tern_xmalloc(sizeof(int32_t) * ((size_t)r->n_prompt + (size_t)r->max_tokens + 1));
    memcpy(r->toks, r->prompt, sizeof(int32_t) * (size_t)r->n_prompt);
    r->n_toks = r->n_prompt;
    if (r->presence != 0.0f || r->frequency != 0.0f) r->gen_count = tern_xcalloc((size_t)s->V, sizeof(int32_t));
    return 0;
}

/* Running requests whose client hung up are cancelled: one poll() over their sockets, no wait. Under mu. */
static void poll_hangups(srv_sched *s) {
    int n = 0;
    for (int i = 0; i < s->n_run; i++)
        s->pfd[n++] = (struct pollfd){s->run[i]->cancel ? -1 : s->run[i]->fd, POLLIN | POLLRDHUP, 0};
    if (n == 0 || poll(s->pfd, (nfds_t)n, 0) <= 0) return;
    for (int i = 0; i < n; i++)
        if (s->pfd[i].fd >= 0 && s->pfd[i].revents && srv_hung_up(s->pfd[i].fd, s->pfd[i].revents)) s->run[i]->cancel = 1;
}

/* Hang-ups, cancellations, the stop deadline, admissions. Under mu. */
static void housekeeping(srv_sched *s) {
    const int expired = s->stopping && tern_time_s() > s->stop_at;
    poll_hangups(s);
    for (int i = s->n_run - 1; i >= 0; i--)
        if (s->run[i]->cancel || expired) retire(s, i, NULL, s->run[i]->cancel ? "cancelled" : "the server is shutting down");
    /* the queue: cancelled requests leave wherever they are; when stopping, all of them */
    for (srv_req **link = &s->wait_head, *prev = NULL; *link;) {
        srv_req *r = *link;
        if (!r->cancel && !s->stopping) { prev = r; link = &r->next; continue; }
        *link = r->next;
        if (s->wait_tail == r) s->wait_tail = prev;
        s->n_wait--;
        finish_req(s, r, NULL, r->cancel ? "cancelled" : "the server is shutting down");
    }
    while (s->wait_head && s->n_run < s->p.n_parallel) {
        srv_req *r = s->wait_head;
        s->wait_head = r->next;
        if (!s->wait_head) s->wait_tail = NULL;
        s->n_wait--;
        if (admit(s, r) != 0) {
            finish_req(s, r, NULL, r->err[0] ? r->err : "no sequence for the request");
            continue;
        }
        s->run[s->n_run++] = r;
    }
}

/* ---- the step ---- */

static int wants_logits(const srv_req *r) { return r->logprobs || r->presence != 0.0f || r->frequency != 0.0f; }

static int out_kind(const srv_req *r) {
    if (wants_logits(r)) return TERN_BATCH_LOGITS;
    if (r->sp.temp <= 0.0f && r->sp.repeat_penalty == 1.0f) return TERN_BATCH_ARGMAX;
    return TERN_BATCH_SAMPLE;
}

/* The token of r's output row, its logprobs into *lp. -1 on a sampler error. */
static int32_t row_token(srv_sched *s, srv_req *r, srv_lp *lp) {
    const int kind = out_kind(r);
    if (kind != TERN_BATCH_LOGITS) return tern_batch_id(s->b, r->row);
    const float *lg = tern_batch_logits(s->b, r->row);
    memcpy(s->scratch, lg, sizeof(float) * (size_t)s->V);
    if (r->gen_count)
        for (int i = r->n_prompt; i < r->n_toks; i++) { /* each generated id once: its count and presence */
            const int32_t t = r->toks[i];
            if (s->scratch[t] != lg[t]) continue;
            s->scratch[t] -= r->frequency * (float)r->gen_count[t] + r->presence;
        }
    const int32_t id = tern_sampler_sample(r->smp, s->scratch, r->toks, r->n_toks);
    if (id < 0 || !r->logprobs) return id;
    /* log_softmax of the raw logits: the chosen id and the top_logprobs best */
    float mx = -INFINITY;
    for (int i = 0; i < s->V; i++) if (lg[i] > mx) mx = lg[i];
    double sum = 0.0;
    for (int i = 0; i < s->V; i++) sum += exp((double)lg[i] - mx);
    const double lse = mx + log(sum);
    lp->id = id;
    lp->lp = (float)(lg[id] - lse);
    lp->n_top = 0;
    const int k = r->top_logprobs;
    for (int i = 0; i < s->V && k > 0; i++) { /* insertion into the k best, highest first, lower id on ties */
        if (lp->n_top == k && !(lg[i] > lp->top_lp[k - 1])) continue;
        int j = lp->n_top < k ? lp->n_top++ : k - 1;
        while (j > 0 && lg[i] > lp->top_lp[j - 1]) {
            lp->top_lp[j] = lp->top_lp[j - 1];
            lp->top_id[j] = lp->top_id[j - 1];
            j--;
        }
        lp->top_lp[j] = lg[i];
        lp->top_id[j] = i;
    }
    for (int j = 0; j < lp->n_top; j++) lp->top_lp[j] = (float)(lp->top_lp[j] - lse);
    return id;
}

/* One step outside the lock: the batch, the decode, each row's token into the request's private state. The finish
 * reason of a request that ends goes to fin[i] (its stop position to stop_at[i]); err to a failed step. */
static int step(srv_sched *s, srv_req **run, int n_run, const char **fin, size_t *stop_at, srv_lp *lps, int *has_lp,
                int *n_prefill, int *n_decode, char *err, size_t err_n) {
    tern_batch_clear(s->b);
    int budget = s->p.batch_tokens;
    *n_prefill = *n_decode = 0;
    for (int i = 0; i < n_run; i++) { /* decode tokens first: running streams never wait for a prefill */
        srv_req *r = run[i];
        r->row = -1;
        if (r->n_done_prompt < r->n_prompt) continue;
        r->row = tern_batch_add(s->b, r->seq, r->last, out_kind(r));
        budget--;
        (*n_decode)++;
    }
    if (budget < 16) budget = 16; /* prefill moves on even when decode tokens fill the budget */
    for (int i = 0; i < n_run && budget > 0; i++) { /* then prefill chunks, first come first served */
        srv_req *r = run[i];
        if (r->n_done_prompt >= r->n_prompt) continue;
        const int k = r->n_prompt - r->n_done_prompt < budget ? r->n_prompt - r->n_done_prompt : budget;
        for (int j = 0; j < k; j++) {
            const int last = r->n_done_prompt + j == r->n_prompt - 1;
            const int row = tern_batch_add(s->b, r->seq, r->prompt[r->n_done_prompt + j], last ? out_kind(r) : TERN_BATCH_NONE);
            if (last) r->row = row;
        }
        r->n_done_prompt += k; /* a failed step fails the request: no undo */
        budget -= k;
        *n_prefill += k;
    }
    if (tern_batch_n(s->b) == 0) return 0;
    if (tern_engine_decode(s->e, s->b) != 0) {
        snprintf(err, err_n, "%s", tern_last_error());
        return -1;
    }
    for (int i = 0; i < n_run; i++) {
        srv_req *r = run[i];
        fin[i] = NULL;
        has_lp[i] = 0;
        if (r->row < 0) continue;
        const int32_t id = row_token(s, r, &lps[i]);
        if (id < 0) { fin[i] = "error"; continue; }
        has_lp[i] = r->logprobs;
        r->toks[r->n_toks++] = id;
        r->last = id;
        if (r->gen_count) r->gen_count[id]++;
        r->n_gen_priv++;
        if (!r->ignore_eos && tern_model_is_eog(s->c->m, id)) {
            fin[i] = "stop";
            stop_at[i] = (size_t)-1;
            has_lp[i] = 0; /* the end-of-generation token has no text */
            continue;
        }
        char small[256];
        int n = tern_model_token_to_piece(s->c->m, id, small, sizeof small, 0);
        if (n > (int)sizeof small) {
            char *big = tern_xmalloc((size_t)n);
            n = tern_model_token_to_piece(s->c->m, id, big, n, 0);
            append(&r->raw, &r->raw_len, &r->raw_cap, big, (size_t)(n > 0 ? n : 0));
            free(big);
        } else if (n > 0) {
            append(&r->raw, &r->raw_len, &r->raw_cap, small, (size_t)n);
        }
        /* a stop string in the new bytes (or straddling into them); the earliest wins */
        size_t best = (size_t)-1;
        for (int k = 0; k < r->n_stop && n > 0; k++) {
            const size_t L = strlen(r->stop[k]);
            const size_t from = r->raw_len >= (size_t)n + L - 1 ? r->raw_len - (size_t)n - (L - 1) : 0;
            const char *hit = memmem(r->raw + from, r->raw_len - from, r->stop[k], L);
            if (hit && (size_t)(hit - r->raw) < best) best = (size_t)(hit - r->raw);
        }
        stop_at[i] = best;
        if (best != (size_t)-1) fin[i] = "stop";
        else if (r->n_gen_priv >= r->max_tokens) fin[i] = "length";
    }
    return 0;
}

static void *sched_main(void *arg) {
    srv_sched *s = arg;
    srv_req **run = tern_xcalloc((size_t)s->p.n_parallel, sizeof *run);
    const char **fin = tern_xcalloc((size_t)s->p.n_parallel, sizeof *fin);
    size_t *stop_at = tern_xcalloc((size_t)s->p.n_parallel, sizeof *stop_at);
    srv_lp *lps = tern_xcalloc((size_t)s->p.n_parallel, sizeof *lps);
    int *has_lp = tern_xcalloc((size_t)s->p.n_parallel, sizeof *has_lp);
    char err[256];
    pthread_mutex_lock(&s->mu);
    for (;;) {
        housekeeping(s);
        tern_engine_kv_stats(s->e, &s->kv); /* the blocks of retired requests are back now, before any step */
        if (s->n_run == 0) {
            if (s->stopping && !s->wait_head) break;
            if (s->stopping) continue;
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        const int n_run = s->n_run;
        memcpy(run, s->run, sizeof *run * (size_t)n_run);
        pthread_mutex_unlock(&s->mu);

        const double t0 = tern_time_s();
        int n_prefill, n_decode;
        const int rc = step(s, run, n_run, fin, stop_at, lps, has_lp, &n_prefill, &n_decode, err, sizeof err);
        const double dt = tern_time_s() - t0;

        pthread_mutex_lock(&s->mu);
        s->n_steps++;
        s->n_step_tok += n_prefill + n_decode;
        if (n_prefill) s->t_prefill += dt;
        if (n_decode) s->t_decode += dt;
        if (rc != 0) { /* nothing ran: every request of the step fails with the engine's message */
            for (int i = n_run - 1; i >= 0; i--) {
                for (int k = 0; k < s->n_run; k++)
                    if (s->run[k] == run[i]) { retire(s, k, NULL, err); break; }
            }
        } else {
            s->n_prompt_tok += n_prefill;
            for (int i = n_run - 1; i >= 0; i--) {
                srv_req *r = run[i];
                if (r->row < 0) continue;
                const int first = r->n_gen == 0;
                r->n_gen = r->n_gen_priv;
                s->n_gen_tok++;
                if (first) r->t_first = tern_time_s();
                if (has_lp[i]) {
                    if (r->n_lp == r->lp_cap) {
                        r->lp_cap = r->lp_cap ? 2 * r->lp_cap : 16;
                        r->lps = realloc(r->lps, sizeof *r->lps * (size_t)r->lp_cap);
                        if (!r->lps) abort();
                    }
                    r->lps[r->n_lp++] = lps[i];
                }
                publish(r, fin[i] != NULL, fin[i] && !strcmp(fin[i], "stop") ? stop_at[i] : (size_t)-1);
                pthread_cond_broadcast(&r->cv);
                if (fin[i]) {
                    for (int k = 0; k < s->n_run; k++)
                        if (s->run[k] == r) {
                            if (!strcmp(fin[i], "error")) retire(s, k, NULL, tern_last_error());
                            else retire(s, k, fin[i], NULL);
                            break;
                        }
                }
            }
        }
        tern_engine_kv_stats(s->e, &s->kv);
    }
    tern_engine_kv_stats(s->e, &s->kv);
    pthread_mutex_unlock(&s->mu);
    free(run); free(fin); free(stop_at); free(lps); free(has_lp);
    return NULL;
}

srv_sched *srv_sched_new(const srv_ctx *c, tern_engine *e, const srv_sched_params *p) {
    srv_sched *s = tern_xcalloc(1, sizeof *s);
    s->c = c;
    s->e = e;
    s->p = *p;
    s->V = tern_model_n_vocab(c->m);
    s->run = tern_xcalloc((size_t)p->n_parallel, sizeof *s->run);
    s->pfd = tern_xcalloc((size_t)p->n_parallel, sizeof *s->pfd);
    s->b = tern_batch_new(p->batch_tokens + p->n_parallel);
    s->scratch = tern_xmalloc(sizeof(float) * (size_t)s->V);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    tern_engine_kv_stats(e, &s->kv);
    if (pthread_create(&s->th, NULL, sched_main, s) != 0) {
        tern_set_error("cannot start the scheduler thread");
        srv_sched_free(s);
        return NULL;
    }
    return s;
}

void srv_sched_stop(srv_sched *s, double grace_s) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    s->stop_at = tern_time_s() + grace_s;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    s->th = 0;
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    tern_batch_free(s->b);
    free(s->scratch);
    free(s->run);
    free(s->pfd);
    free(s);
}

char *srv_sched_metrics(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
#define M(type, name, help, fmt, ...) \
    fprintf(f, "# HELP tern_" name " " help "\n# TYPE tern_" name " " type "\ntern_" name " " fmt "\n", __VA_ARGS__)
    M("counter", "prompt_tokens_total", "Prompt tokens run through the model (prefix-cache hits not counted).", "%lld",
      (long long)s->n_prompt_tok);
    M("counter", "prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.", "%lld",
      (long long)s->n_cached_tok);
    M("counter", "generation_tokens_total", "Tokens generated.", "%lld", (long long)s->n_gen_tok);
    M("gauge", "prompt_tokens_per_second", "Prompt tokens per second of steps that ran prefill.", "%.3f",
      s->t_prefill > 0 ? s->n_prompt_tok / s->t_prefill : 0.0);
    M("gauge", "generation_tokens_per_second", "Generated tokens per second of steps that ran decode tokens.", "%.3f",
      s->t_decode > 0 ? s->n_gen_tok / s->t_decode : 0.0);
    M("gauge", "requests_running", "Requests with a sequence in the engine.", "%d", s->n_run);
    M("gauge", "requests_waiting", "Requests queued for a sequence.", "%d", s->n_wait);
    fprintf(f, "# HELP tern_requests_total Requests by outcome.\n# TYPE tern_requests_total counter\n");
    fprintf(f, "tern_requests_total{outcome=\"finished\"} %lld\n", (long long)s->n_finished);
    fprintf(f, "tern_requests_total{outcome=\"cancelled\"} %lld\n", (long long)s->n_cancelled);
    fprintf(f, "tern_requests_total{outcome=\"failed\"} %lld\n", (long long)s->n_failed);
    fprintf(f, "tern_requests_total{outcome=\"rejected\"} %lld\n", (long long)s->n_rejected);
    M("counter", "steps_total", "Engine steps.", "%lld", (long long)s->n_steps);
    M("counter", "step_tokens_total", "Tokens run in engine steps.", "%lld", (long long)s->n_step_tok);
    M("gauge", "kv_blocks_total", "KV cache blocks in the pool.", "%d", s->kv.blocks_total);
    M("gauge", "kv_blocks_used", "KV cache blocks in use (by sequences or the prefix cache).", "%d", s->kv.blocks_used);
    M("gauge", "kv_blocks_sequences", "KV cache blocks held by live sequences.", "%d", s->kv.blocks_used - s->kv.cached_idle);
    M("gauge", "kv_blocks_cached", "KV cache blocks keyed in the prefix cache.", "%d", s->kv.cached_blocks);
    M("gauge", "kv_blocks_cached_idle", "Prefix-cache blocks no sequence holds (evictable).", "%d", s->kv.cached_idle);
    M("counter", "kv_blocks_evicted_total", "Prefix-cache blocks evicted.", "%lld", (long long)s->kv.evicted);
    M("gauge", "kv_window_blocks_total", "Blocks of the sliding-window layers' own pool (0 without it).", "%d",
      s->kv.swa_blocks_total);
    M("gauge", "kv_window_blocks_used", "Window-pool blocks in use (by sequences or the prefix cache).", "%d",
      s->kv.swa_blocks_used);
    M("gauge", "kv_block_size", "Token rows a KV block.", "%d", s->kv.block_size);
#undef M
    fclose(f);
    pthread_mutex_unlock(&s->mu);
    return out;
}
