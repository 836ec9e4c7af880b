// y[t x n] = x[t x k] . W^T for unquantized weights. F16/BF16 on the tensor cores
// (mma.sync m16n8k16, f32 accumulation) with the activations rounded to the weight type
// first (quantize.cu), as ggml does; F32 on the CUDA cores in f32.
//
// Tile: 64 x 64 per block of 4 warps, k staged 32 at a time; k a multiple of 8.

#define FBM 64
#define FBN 64
#define FBK 32
#define FLD (FBK + 8)  // u16 row stride: 20 words, the 8 fragment rows hit 8 banks

__device__ __forceinline__ void stage16(u16* dst, const u16* __restrict__ src, int rows, int k,
                                        int r0, int k0) {
    for (int c = threadIdx.x; c < 64 * 4; c += blockDim.x) {
        const int r = c >> 2, col = (c & 3) * 8;
        int4 v = make_int4(0, 0, 0, 0);
        if (r0 + r < rows && k0 + col < k)
            v = *(const int4*)(src + (size_t)(r0 + r) * k + k0 + col);
        *(int4*)(dst + r * FLD + col) = v;
    }
}

template <bool BF16>
__device__ __forceinline__ void gemm_half_body(const u16* __restrict__ w,
                                               const u16* __restrict__ x,
                                               float* __restrict__ y, int n, int k, int t) {
    __shared__ __align__(16) u16 sw[FBM * FLD];
    __shared__ __align__(16) u16 sx[FBN * FLD];
    const int r0 = blockIdx.x * FBM, c0 = blockIdx.y * FBN;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
    float acc[2][4][4];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            for (int e = 0; e < 4; e++) acc[a][b][e] = 0.0f;
    for (int k0 = 0; k0 < k; k0 += FBK) {
        stage16(sw, w, n, k, r0, k0);
        stage16(sx, x, t, k, c0, k0);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < FBK; kk += 16) {
            u32 a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const u16* p = sw + (wm + mi * 16 + g) * FLD + kk + tig * 2;
                a[mi][0] = *(const u32*)p;
                a[mi][1] = *(const u32*)(p + 8 * FLD);
                a[mi][2] = *(const u32*)(p + 8);
                a[mi][3] = *(const u32*)(p + 8 * FLD + 8);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                const u16* p = sx + (wn + ni * 8 + g) * FLD + kk + tig * 2;
                b[ni][0] = *(const u32*)p;
                b[ni][1] = *(const u32*)(p + 8);
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    if (BF16)
                        mma_bf16(acc[mi][ni], a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[ni][0],
                                 b[ni][1]);
                    else
                        mma_f16(acc[mi][ni], a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[ni][0],
                                b[ni][1]);
                }
        }
        __syncthreads();
    }
    store_tile(acc, y, n, t, r0 + wm, c0 + wn, g, tig);
}

extern "C" __global__ void __launch_bounds__(128, 1)
    gemm_f16(const u16* w, const u16* x, float* y, int n, int k, int t) {
    gemm_half_body<false>(w, x, y, n, k, t);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    gemm_bf16(const u16* w, const u16* x, float* y, int n, int k, int t) {
    gemm_half_body<true>(w, x, y, n, k, t);
}

// F32: 16 x 16 threads, each 4 x 4 outputs of a 64 x 64 tile, k staged 16 at a time.
extern "C" __global__ void __launch_bounds__(256)
    gemm_f32(const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ y,
             int n, int k, int t) {
    __shared__ float sw[16][65];
    __shared__ float sx[16][65];
    const int r0 = blockIdx.x * 64, c0 = blockIdx.y * 64;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < k; k0 += 16) {
        for (int i = threadIdx.x; i < 64 * 16; i += 256) {
            const int r = i >> 4, kk = i & 15;
            sw[kk][r] = (r0 + r < n && k0 + kk < k) ? w[(size_t)(r0 + r) * k + k0 + kk] : 0.0f;
            sx[kk][r] = (c0 + r < t && k0 + kk < k) ? x[(size_t)(c0 + r) * k + k0 + kk] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < 16; kk++)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(sw[kk][tx * 4 + i], sx[kk][ty * 4 + j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int r = r0 + tx * 4 + i, c = c0 + ty * 4 + j;
            if (r < n && c < t) y[(size_t)c * n + r] = acc[i][j];
        }
}
