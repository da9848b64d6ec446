/* gpu_sample: the device sampling chain (tcu_sample, src/backend/cuda/sample.cu) against the CPU's
 * tern_sampler_sample on the same logits and the same RNG stream (run by bench/gpu_check.sh).
 * Random logits of vocabulary sizes 1000, 49152 and 128256 with planted ties (repeated values), -0/+0,
 * NaN entries and a few +-inf cases; parameters over top_k {1, 2, 40, 1000, 1024}, top_p {1, 0.95, 0.5},
 * min_p {0, 0.05, 0.3}, temp {0.3, 0.8, 1.7}, repeat penalty {1, 1.3} with a history of 64 ids.
 * Two samplers with one seed: one samples on the host, the other only supplies the uniform draw
 * (tern_sampler_draw_uniform) and the penalty ids to the device. Every draw must pick the same id.
 * Also: the device time of one call at n = 128256, k = 40 (median of 20). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cuda/tcu.h"
#include "sampler.h"

#define CU(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__); exit(1); } \
    } while (0)

static uint64_t rs = 88172645463325252ull;
static double urand(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (double)(rs >> 11) * 0x1.0p-53;
}

int main(void) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_sample: no CUDA device, skipped\ngpu_sample: 0 passed, 0 failed\n");
        return 0;
    }
    const char *seed_env = getenv("GPU_TEST_SEED");
    rs = seed_env ? strtoull(seed_env, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 1;
    printf("gpu_sample: seed %llu\n", (unsigned long long)rs);
    const int vocabs[3] = {1000, 49152, 128256};
    const int ks[5] = {1, 2, 40, 1000, 1024};
    const float tps[3] = {1.0f, 0.95f, 0.5f}, mps[3] = {0.0f, 0.05f, 0.3f}, temps[3] = {0.3f, 0.8f, 1.7f};
    float *d_logits, *d_scratch;
    int32_t *d_pen, *d_out;
    double *d_u;
    CU(cudaMalloc((void **)&d_logits, sizeof(float) * 128256));
    CU(cudaMalloc((void **)&d_scratch, sizeof(float) * 128256));
    CU(cudaMalloc((void **)&d_pen, sizeof(int32_t) * 64));
    CU(cudaMalloc((void **)&d_out, sizeof(int32_t)));
    CU(cudaMalloc((void **)&d_u, sizeof(double)));
    float *l = malloc(sizeof(float) * 128256);
    int mism = 0, draws = 0;
    for (int vi = 0; vi < 3; vi++) {
        const int V = vocabs[vi];
        for (int trial = 0; trial < 6; trial++) {
            /* logits: normal-ish with a scale, ties from a coarse grid on some trials, NaN/-0/inf sprinkled */
            const double scale = trial % 2 ? 3.0 : 0.7;
            for (int i = 0; i < V; i++) {
                double z = (urand() + urand() + urand() - 1.5) * 2.0 * scale;
                if (trial >= 2) z = floor(z * 4.0) / 4.0; /* many exact ties */
                l[i] = (float)z;
            }
            for (int j = 0; j < 20; j++) l[(int)(urand() * V)] = NAN;
            l[(int)(urand() * V)] = -0.0f;
            l[(int)(urand() * V)] = 0.0f;
            if (trial == 5) { l[(int)(urand() * V)] = INFINITY; l[(int)(urand() * V)] = INFINITY; }
            if (trial == 4) l[(int)(urand() * V)] = -INFINITY;
            CU(cudaMemcpy(d_logits, l, sizeof(float) * (size_t)V, cudaMemcpyHostToDevice));
            int32_t hist[64];
            for (int j = 0; j < 64; j++) hist[j] = (int32_t)(urand() * V);
            hist[5] = hist[6]; /* a repeated id: penalised once */
            for (int ki = 0; ki < 5; ki++) {
                if (ks[ki] >= V) continue;
                const int combo = (int)(urand() * 27);
                tern_sampler_params p = tern_sampler_default_params();
                p.top_k = ks[ki];
                p.top_p = tps[combo % 3];
                p.min_p = mps[(combo / 3) % 3];
                p.temp = temps[combo / 9];
                p.repeat_penalty = trial % 3 == 0 ? 1.0f : 1.3f;
                p.repeat_last_n = 64;
                p.seed = (uint64_t)(urand() * 1e9);
                tern_sampler *host = tern_sampler_new(&p, V), *dev = tern_sampler_new(&p, V);
                int32_t pen[64];
                const int np = tern_sampler_penalty_ids(dev, hist, 64, pen);
                if (np) CU(cudaMemcpy(d_pen, pen, sizeof(int32_t) * (size_t)np, cudaMemcpyHostToDevice));
                for (int d = 0; d < 8; d++) {
                    const int32_t want = tern_sampler_sample(host, l, hist, 64);
                    const double u = tern_sampler_draw_uniform(dev);
                    CU(cudaMemcpy(d_u, &u, sizeof u, cudaMemcpyHostToDevice));
                    CU(cudaMemset(d_out, 0xFF, sizeof(int32_t)));
                    tcu_sample(d_logits, V, d_pen, np, p.repeat_penalty, p.top_k, p.top_p, p.min_p, p.temp, d_u, d_scratch,
                               d_out, 0);
                    CU(cudaGetLastError());
                    int32_t got;
                    CU(cudaMemcpy(&got, d_out, sizeof got, cudaMemcpyDeviceToHost));
                    draws++;
                    if (got != want) {
                        if (mism < 10)
                            fprintf(stderr, "mismatch V=%d trial=%d k=%d top_p=%g min_p=%g temp=%g pen=%g: host %d device %d\n", V,
                                    trial, p.top_k, p.top_p, p.min_p, p.temp, p.repeat_penalty, want, got);
                        mism++;
                    }
                }
                tern_sampler_free(host);
                tern_sampler_free(dev);
            }
        }
    }
    printf("gpu_sample: %d draws, %d differ from tern_sampler_sample\n", draws, mism);
    CHECK(draws > 500 && mism == 0, "%d of %d device draws differ from the host sampler", mism, draws);
    /* timing at Llama-3's vocabulary, k = 40 */
    {
        cudaEvent_t e0, e1;
        CU(cudaEventCreate(&e0));
        CU(cudaEventCreate(&e1));
        float t[20];
        for (int r = -3; r < 20; r++) {
            CU(cudaEventRecord(e0, 0));
            tcu_sample(d_logits, 128256, d_pen, 0, 1.0f, 40, 0.95f, 0.05f, 0.8f, d_u, d_scratch, d_out, 0);
            CU(cudaEventRecord(e1, 0));
            CU(cudaEventSynchronize(e1));
            if (r >= 0) CU(cudaEventElapsedTime(&t[r], e0, e1));
        }
        for (int i = 1; i < 20; i++)
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { float x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
        printf("tcu_sample n=128256 k=40: %.1f us (median of 20)\n", 1000.0 * (t[9] + t[10]) / 2);
    }
    free(l);
    return check_summary("gpu_sample");
}
