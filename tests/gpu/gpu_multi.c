/* gpu_multi: tcu_gemv_multi (m = 2..16 columns, one weight stream) must give, for every column, exactly
 * the bits of tcu_gemv on that column (memcmp): the exact verify path of speculative decoding and of
 * chunks of <= 16 tokens rests on it. Weights: random blocks with finite f16 scales for each weight type
 * with a GPU kernel; shapes with rows not a multiple of anything (n_out 1000, 7) and n_in 4096 / 512.
 * Also times one Q4_0 4096x14336 call at m = 1, 2, 4, 8, 16 (the verify cost curve; no assertions).
 * Run by bench/gpu_check.sh on a GPU box. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "util.h"

#define CU(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__); exit(1); } \
    } while (0)

static uint64_t rs;
static uint32_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 16); }
static float frnd(float a) { return ((float)(rnd() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * a; }

/* Byte offsets of the f16 scale fields inside a block (ggml-common.h); -1 ends the list. */
static void scale_fields(int t, int off[3]) {
    off[0] = off[1] = off[2] = -1;
    switch (t) {
    case TERN_TYPE_Q4_0: case TERN_TYPE_Q5_0: case TERN_TYPE_Q8_0: off[0] = 0; break;
    case TERN_TYPE_Q4_1: case TERN_TYPE_Q5_1: case TERN_TYPE_Q4_K: case TERN_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case TERN_TYPE_Q6_K: off[0] = 208; break;
    default: break;
    }
}

static void fill_weights(int t, uint8_t *w, int64_t n_in, int64_t n_out, size_t stride) {
    const size_t rb = tern_type_row_size((enum tern_type)t, n_in), bs = tern_type_type_size((enum tern_type)t);
    memset(w, 0, stride * (size_t)n_out);
    for (int64_t r = 0; r < n_out; r++) {
        uint8_t *row = w + (size_t)r * stride;
        if (t == TERN_TYPE_F32) { for (int64_t i = 0; i < n_in; i++) ((float *)row)[i] = frnd(1.0f); continue; }
        if (t == TERN_TYPE_F16) { for (int64_t i = 0; i < n_in; i++) ((uint16_t *)row)[i] = tern_fp32_to_fp16(frnd(1.0f)); continue; }
        if (t == TERN_TYPE_BF16) { for (int64_t i = 0; i < n_in; i++) ((uint16_t *)row)[i] = tern_fp32_to_bf16(frnd(1.0f)); continue; }
        for (size_t b = 0; b < rb; b++) row[b] = (uint8_t)rnd();
        int off[3];
        scale_fields(t, off);
        for (size_t blk = 0; blk < rb / bs; blk++)
            for (int k = 0; k < 3 && off[k] >= 0; k++) {
                const uint16_t h = tern_fp32_to_fp16(frnd(0.05f));
                memcpy(row + blk * bs + (size_t)off[k], &h, 2);
            }
    }
}

int main(void) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_multi: no CUDA device, skipped\ngpu_multi: 0 passed, 0 failed\n");
        return 0;
    }
    const char *se = getenv("GPU_TEST_SEED");
    rs = se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 7;
    printf("gpu_multi: seed %llu\n", (unsigned long long)rs);
    const int types[] = {TERN_TYPE_F32, TERN_TYPE_F16, TERN_TYPE_BF16, TERN_TYPE_Q4_0, TERN_TYPE_Q4_1, TERN_TYPE_Q5_0,
                         TERN_TYPE_Q5_1, TERN_TYPE_Q8_0, TERN_TYPE_Q4_K, TERN_TYPE_Q5_K, TERN_TYPE_Q6_K};
    const int64_t shapes[3][2] = {{4096, 1000}, {512, 7}, {4096, 33}};
    const int ms[5] = {2, 3, 8, 13, 16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int t = types[ti];
        for (int si = 0; si < 3; si++) {
            const int64_t n_in = shapes[si][0], n_out = shapes[si][1];
            const size_t stride = (tern_type_row_size((enum tern_type)t, n_in) + 15) & ~(size_t)15;
            uint8_t *hw = malloc(stride * (size_t)n_out);
            fill_weights(t, hw, n_in, n_out, stride);
            float *hx = malloc(sizeof(float) * (size_t)n_in * 16);
            for (int64_t i = 0; i < n_in * 16; i++) hx[i] = frnd(2.0f);
            void *dw; float *dx, *dy1, *dym;
            CU(cudaMalloc(&dw, stride * (size_t)n_out));
            CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
            CU(cudaMalloc((void **)&dy1, sizeof(float) * (size_t)n_out * 16));
            CU(cudaMalloc((void **)&dym, sizeof(float) * (size_t)n_out * 16));
            CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
            CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * 16, cudaMemcpyHostToDevice));
            CU(cudaMemset(dy1, 0xFF, sizeof(float) * (size_t)n_out * 16));
            for (int c = 0; c < 16; c++) tcu_gemv(t, dw, stride, n_in, n_out, dx + (size_t)c * n_in, dy1 + (size_t)c * n_out, 0);
            float *y1 = malloc(sizeof(float) * (size_t)n_out * 16), *ym = malloc(sizeof(float) * (size_t)n_out * 16);
            CU(cudaMemcpy(y1, dy1, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
            int finite = 1;
            for (int64_t i = 0; i < n_out * 16; i++) if (!isfinite(y1[i])) finite = 0;
            CHECK(finite, "type %s %lldx%lld: single-column results not all finite", tern_type_name(t), (long long)n_in, (long long)n_out);
            for (int mi = 0; mi < 5; mi++) {
                const int m = ms[mi];
                CU(cudaMemset(dym, 0xFF, sizeof(float) * (size_t)n_out * 16));
                tcu_gemv_multi(t, dw, stride, n_in, n_out, dx, m, dym, 0);
                CU(cudaGetLastError());
                CU(cudaMemcpy(ym, dym, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
                CHECK(memcmp(ym, y1, sizeof(float) * (size_t)n_out * (size_t)m) == 0,
                      "type %s %lldx%lld m=%d: multi-column result differs from the single-column kernel", tern_type_name(t),
                      (long long)n_in, (long long)n_out, m);
                int untouched = 1; /* rows >= m stay poisoned */
                for (int64_t i = (int64_t)m * n_out; i < 16 * n_out; i++) if (!isnan(ym[i])) untouched = 0;
                CHECK(untouched, "type %s m=%d wrote beyond its %d columns", tern_type_name(t), m, m);
            }
            free(hw); free(hx); free(y1); free(ym);
            CU(cudaFree(dw)); CU(cudaFree(dx)); CU(cudaFree(dy1)); CU(cudaFree(dym));
        }
    }
    /* the verify cost curve: Q4_0 4096 -> 14336, m = 1..16 */
    {
        const int64_t n_in = 4096, n_out = 14336;
        const size_t stride = tern_type_row_size(TERN_TYPE_Q4_0, n_in);
        uint8_t *hw = malloc(stride * (size_t)n_out);
        fill_weights(TERN_TYPE_Q4_0, hw, n_in, n_out, stride);
        void *dw; float *dx, *dy;
        CU(cudaMalloc(&dw, stride * (size_t)n_out));
        CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
        CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * 16));
        CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
        CU(cudaMemset(dx, 0x3C, sizeof(float) * (size_t)n_in * 16));
        cudaEvent_t e0, e1;
        CU(cudaEventCreate(&e0)); CU(cudaEventCreate(&e1));
        printf("tcu_gemv_multi q4_0 4096x14336 (29.4 MB, L2-resident after the first call: relative cost only)\n");
        const int mm[5] = {1, 2, 4, 8, 16};
        for (int i = 0; i < 5; i++) {
            float best = 1e9f;
            for (int r = 0; r < 10; r++) {
                CU(cudaEventRecord(e0, 0));
                tcu_gemv_multi(TERN_TYPE_Q4_0, dw, stride, n_in, n_out, dx, mm[i], dy, 0);
                CU(cudaEventRecord(e1, 0));
                CU(cudaEventSynchronize(e1));
                float ms_ = 0; CU(cudaEventElapsedTime(&ms_, e0, e1));
                if (ms_ < best) best = ms_;
            }
            printf("  m=%2d  %8.1f us\n", mm[i], best * 1000.0f);
        }
        free(hw);
    }
    return check_summary("gpu_multi");
}
