/* check.h: a tiny test harness. Each test binary includes it, uses CHECK* and ends with
 * `return check_summary("name");` which prints "name: N passed, N failed" and returns 0/1.
 * tests/run.sh adds the counts of every binary into the final "N passed, N failed" line. */
#ifndef TERN_CHECK_H
#define TERN_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>

static int check_pass_, check_fail_;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            check_pass_++;                                                      \
        } else {                                                                \
            check_fail_++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

/* |got - want| <= abs_tol + rel_tol*|want|, NaN never passes. */
#define CHECK_NEAR(got, want, abs_tol, rel_tol, ...)                                         \
    do {                                                                                     \
        double g_ = (double)(got), w_ = (double)(want);                                      \
        CHECK(!isnan(g_) && !isnan(w_) && fabs(g_ - w_) <= (abs_tol) + (rel_tol) * fabs(w_), \
              __VA_ARGS__);                                                                  \
    } while (0)

/* Comma-separated token ids from the first line of a fixture file (tests/fixtures/): up to max, the count (0 if the
 * file cannot be read). */
static inline int check_read_ids(const char *path, int32_t *ids, int max) {
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f) return 0;
    while (n < max && fscanf(f, "%d", &ids[n]) == 1) {
        n++;
        if (fgetc(f) != ',') break;
    }
    fclose(f);
    return n;
}

/* n little-endian f32 from a fixture file into out: the count read (short when the file is). */
static inline size_t check_read_f32(const char *path, float *out, size_t n) {
    FILE *f = fopen(path, "rb");
    const size_t nr = f ? fread(out, sizeof(float), n, f) : 0;
    if (f) fclose(f);
    return nr;
}

/* The largest per-row relative L2 distance of got from want over n rows of V values (a row with zero norm: infinity;
 * NaN propagates as the worst); *bad_argmax (NULL: not counted) the rows whose first largest index differs. */
static inline double check_rows_rel(const float *got, const float *want, int n, int V, int *bad_argmax) {
    double worst = 0;
    if (bad_argmax) *bad_argmax = 0;
    for (int r = 0; r < n; r++) {
        const float *g = got + (size_t)r * V, *w = want + (size_t)r * V;
        double num = 0, den = 0;
        int ag = 0, aw = 0;
        for (int i = 0; i < V; i++) {
            const double d = (double)g[i] - w[i];
            num += d * d;
            den += (double)w[i] * w[i];
            if (g[i] > g[ag]) ag = i;
            if (w[i] > w[aw]) aw = i;
        }
        const double e = den > 0 ? sqrt(num / den) : INFINITY;
        if (!(e <= worst)) worst = e;
        if (bad_argmax) *bad_argmax += ag != aw;
    }
    return worst;
}

static inline int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_pass_, check_fail_);
    return check_fail_ ? 1 : 0;
}
#endif
