#include <cstdio>
#include <cstdint>
__device__ __forceinline__ float att_i8f(uint32_t w, int e) {
    const uint32_t v = __byte_perm(w ^ 0x80808080u, 0x4Bu, 0x4650u | (uint32_t)e);
    return __fsub_rn(__uint_as_float(v), 8388736.0f);
}
__global__ void k(int *bad) {
    uint32_t w = blockIdx.x * 256u + threadIdx.x; // all byte values over grid
    w = w * 2654435761u;
    for (int e = 0; e < 4; e++) {
        float a = att_i8f(w, e), b = (float)(int8_t)(w >> (8 * e));
        if (__float_as_uint(a) != __float_as_uint(b)) atomicAdd(bad, 1);
    }
    for (int b = -128; b < 128; b++) { uint32_t x = (uint32_t)(uint8_t)b << 16; if (att_i8f(x, 2) != (float)b) atomicAdd(bad, 1); }
}
int main() { int *d; cudaMalloc(&d, 4); cudaMemset(d, 0, 4); k<<<1024, 256>>>(d); int h; cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost); printf("bad=%d\n", h); }
