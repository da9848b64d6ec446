/* check.h: a tiny test harness. Each test binary includes it, uses CHECK* and ends with
 * `return check_summary("name");` which prints "name: N passed, N failed" and returns 0/1.
 * tests/run.sh adds the counts of every binary into the final "N passed, N failed" line. */
#ifndef TERN_CHECK_H
#define TERN_CHECK_H
#include <math.h>
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

static inline int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_pass_, check_fail_);
    return check_fail_ ? 1 : 0;
}
#endif
