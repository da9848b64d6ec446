/* gemm.cu: the prefill GEMM's baseline arm, cuBLASLt on f16 (or bf16) operands with f32 accumulation
 * and f32 output: Y (n, n_out) = X (n, n_in) · Wᵀ. The weight comes from tcu_dequant_f16 (dequant.cu)
 * into a scratch tile; tern's own quantized GEMM (issue: prefill roofline) will be measured against it.
 *
 * Layout: row-major Y (n, n_out) is column-major (n_out, n); W row-major (n_out, n_in) is column-major
 * (n_in, n_out), so D = op(A)·B with A = W, transa = T, B = X (column-major (n_in, n), transb = N):
 * the "TN" case cuBLAS is fastest at. Descriptors and the heuristic's algorithm are cached per shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "cuda/tcu.h"

#define GEMM_CACHE 64

typedef struct {
    int used, n;
    int64_t n_in, n_out;
    cudaDataType_t dt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} gemm_plan;

struct tcu_blas {
    cublasLtHandle_t h;
    void *ws;
    size_t ws_bytes;
    gemm_plan plans[GEMM_CACHE];
    int next;
};

extern "C" tcu_blas *tcu_blas_new(size_t ws_bytes, char *err) {
    tcu_blas *b = (tcu_blas *)calloc(1, sizeof *b);
    if (!b) { snprintf(err, 256, "out of memory"); return NULL; }
    cublasStatus_t s = cublasLtCreate(&b->h);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, 256, "cublasLtCreate failed (status %d)", (int)s);
        free(b);
        return NULL;
    }
    b->ws_bytes = ws_bytes;
    if (ws_bytes && cudaMalloc(&b->ws, ws_bytes) != cudaSuccess) {
        snprintf(err, 256, "cannot allocate the cuBLASLt workspace (%zu bytes)", ws_bytes);
        cublasLtDestroy(b->h);
        free(b);
        return NULL;
    }
    return b;
}

static void plan_free(gemm_plan *p) {
    if (!p->used) return;
    cublasLtMatmulDescDestroy(p->op);
    cublasLtMatrixLayoutDestroy(p->a);
    cublasLtMatrixLayoutDestroy(p->b);
    cublasLtMatrixLayoutDestroy(p->c);
    p->used = 0;
}

extern "C" void tcu_blas_free(tcu_blas *b) {
    if (!b) return;
    for (int i = 0; i < GEMM_CACHE; i++) plan_free(&b->plans[i]);
    if (b->ws) cudaFree(b->ws);
    cublasLtDestroy(b->h);
    free(b);
}

static gemm_plan *get_plan(tcu_blas *b, cudaDataType_t dt, int n, int64_t n_in, int64_t n_out) {
    for (int i = 0; i < GEMM_CACHE; i++) {
        gemm_plan *p = &b->plans[i];
        if (p->used && p->dt == dt && p->n == n && p->n_in == n_in && p->n_out == n_out) return p;
    }
    gemm_plan *p = &b->plans[b->next];
    b->next = (b->next + 1) % GEMM_CACHE;
    plan_free(p);
    memset(p, 0, sizeof *p);
    if (cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return NULL;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatrixLayoutCreate(&p->a, dt, (uint64_t)n_in, (uint64_t)n_out, n_in);
    cublasLtMatrixLayoutCreate(&p->b, dt, (uint64_t)n_in, (uint64_t)n, n_in);
    cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, (uint64_t)n_out, (uint64_t)n, n_out);
    p->used = 1;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &b->ws_bytes, sizeof b->ws_bytes);
    cublasLtMatmulHeuristicResult_t res;
    int count = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(b->h, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || count < 1) { plan_free(p); return NULL; }
    p->algo = res.algo;
    p->dt = dt;
    p->n = n;
    p->n_in = n_in;
    p->n_out = n_out;
    return p;
}

static int gemm(tcu_blas *b, cudaDataType_t dt, const uint16_t *w, const uint16_t *x, float *y, int n, int64_t n_in,
                int64_t n_out, cudaStream_t st) {
    gemm_plan *p = get_plan(b, dt, n, n_in, n_out);
    if (!p) return -1;
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t s = cublasLtMatmul(b->h, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo, b->ws,
                                      b->ws_bytes, st);
    return s == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

extern "C" int tcu_gemm_f16(tcu_blas *b, const uint16_t *w, const uint16_t *x, float *y, int n, int64_t n_in,
                            int64_t n_out, cudaStream_t st) {
    return gemm(b, CUDA_R_16F, w, x, y, n, n_in, n_out, st);
}

extern "C" int tcu_gemm_bf16(tcu_blas *b, const uint16_t *w, const uint16_t *x, float *y, int n, int64_t n_in,
                             int64_t n_out, cudaStream_t st) {
    return gemm(b, CUDA_R_16BF, w, x, y, n, n_in, n_out, st);
}
