// Activation quantization on the device, the formats the CPU backend pairs with each
// weight type (ggml's vec_dot_type): Q8_K for the 256-element formats, Q8_0 for the
// 32-element ones, f16/bf16 rounding for F16/BF16 weights. Signed int8 (the CPU stores
// q + 128 for vpdpbusd; the values are the same).

// Q8_K: one warp per 256-element block; grid (t, k / 256). d = 1 / (-127 / max) with max
// the first element of largest magnitude; sums per 16 (the min terms' activation side).
extern "C" __global__ void quantize_q8k(const float* __restrict__ x, int k,
                                        i8* __restrict__ q, float* __restrict__ d,
                                        int* __restrict__ sums16) {
    const int row = blockIdx.x, blk = blockIdx.y, lane = threadIdx.x;
    const size_t base = (size_t)row * k + (size_t)blk * 256 + lane * 8;
    float v[8];
    float best = 0.0f, bestv = 0.0f;
    int bi = 1 << 30;
    for (int i = 0; i < 8; i++) {
        v[i] = x[base + i];
        if (fabsf(v[i]) > best) {
            best = fabsf(v[i]);
            bestv = v[i];
            bi = lane * 8 + i;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        float ov = __shfl_xor_sync(0xffffffffu, bestv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ob > best || (ob == best && oi < bi)) {
            best = ob;
            bestv = ov;
            bi = oi;
        }
    }
    const int nb = k / 256;
    int s = 0;
    if (best == 0.0f) {
        for (int i = 0; i < 8; i++) q[base + i] = 0;
        if (lane == 0) d[(size_t)row * nb + blk] = 0.0f;
    } else {
        const float iscale = -127.0f / bestv;
        for (int i = 0; i < 8; i++) {
            int qi = min(__float2int_rn(iscale * v[i]), 127);
            q[base + i] = (i8)qi;
            s += qi;
        }
        if (lane == 0) d[(size_t)row * nb + blk] = 1.0f / iscale;
    }
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    if ((lane & 1) == 0) sums16[(size_t)row * (k / 16) + blk * 16 + lane / 2] = s;
}

// Q8_0 (ggml's x86 quantize_row_q8_0): one warp per 32-element block.
// Grid (t, k / 32). d is the f16 ggml stores (widened); q = round(v * 127 / amax).
extern "C" __global__ void quantize_q8_0(const float* __restrict__ x, int k,
                                         i8* __restrict__ q, float* __restrict__ d) {
    const int row = blockIdx.x, blk = blockIdx.y, lane = threadIdx.x;
    const size_t at = (size_t)row * k + (size_t)blk * 32 + lane;
    const float v = x[at];
    const float amax = warp_max(fabsf(v));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    q[at] = (i8)max(-128, min(127, __float2int_rn(v * id)));
    if (lane == 0) d[(size_t)row * (k / 32) + blk] = f16_to_f32(f32_to_f16(amax / 127.0f));
}

// Rounding to f16 / bf16 bits for the float GEMM: n elements, grid-stride.
extern "C" __global__ void round_f16(const float* __restrict__ x, size_t n,
                                     u16* __restrict__ out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = f32_to_f16(x[i]);
}
extern "C" __global__ void round_bf16(const float* __restrict__ x, size_t n,
                                      u16* __restrict__ out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = f32_to_bf16(x[i]);
}
