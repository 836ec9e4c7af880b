// y[t x n] = x[t x k] . W^T on int8 tensor cores (mma.sync, sm_80+), over weights repacked
// at load (repack.rs) and activations quantized on the device (quantize.cu).
//
// Weights, per matrix: q int8 [n][k]; for the 256-element ("K") formats sc int8 [n][k/16]
// (integer scale per 16, a 32-scale written twice), mn int8 [n][k/16] (6-bit min per 16,
// zero without mins), d and dmin f32 [n][k/256]; for the 32-element ("B32") formats d f32
// [n][k/32]. Activations: xq int8 [t][k]; K: xd f32 [t][k/256], xs int [t][k/16]; B32:
// xd f32 [t][k/32].
//
// A K-format super-block is summed in integers, as the CPU kernels do:
//   y += d*xd * sum_s sc_s * (q_s . x_s)  -  dmin*xd * sum_s mn_s * xs_s
// the second sum on the f16 tensor cores (|mn| <= 63 and |xs| <= 2032 are exact in f16; the
// f32 accumulator holds the integer sum exactly). A B32 block: y += d*xd * (q . x).
//
// Tile: 64 weight rows x 64 tokens per block of 4 warps (128 threads, always), each warp
// 32 x 32 (2 x 4 mma tiles); one 256-element k-chunk staged in shared memory per step.
//
// Split K: with few tokens a matrix of 4096 rows is only 64 tiles, fewer than the GPU has
// multiprocessors, and each block walked all of k alone, one dependent chunk load after
// another (measured on an H200: ~0.2 ms per 4096 x 4096 product at 32 tokens, ~2% of the
// card's bandwidth). blockIdx.y = token tile * splits + split: each split sums a contiguous
// run of chunks into part[split][t][n], and sum_splits adds the splits in order (no atomics:
// the result is deterministic). splits = 1 writes y directly.

#define BM 64
#define BN 64
#define BK 256
#define LDS (BK + 16)  // row stride in bytes: 68 words, so the 8 fragment rows hit 8 banks

struct Tiles {
    i8 w[BM * LDS];
    i8 x[BN * LDS];
    int sc[BM][16];
    u16 mn[BM][16];
    u16 xs[BN][16];
    float wd[BM][8];
    float wdm[BM];
    float xd[BN][8];
};

// Copies rows [r0, r0 + 64) of a [rows x k] int8 matrix, bytes [k0, k0 + 256), zero past
// either end (k is a multiple of 32, so 16-byte chunks are wholly in or out).
// A thread's eight 16-byte loads go in two groups of four, each group issued before its
// stores so that their latencies overlap (all eight at once spilled in gemm_b32).
__device__ __forceinline__ void stage(i8* dst, const i8* __restrict__ src, int rows, int k,
                                      int r0, int k0) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int4 v[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int c = threadIdx.x + (h * 4 + i) * 128;
            const int r = c >> 4, col = (c & 15) * 16;
            v[i] = make_int4(0, 0, 0, 0);
            if (r0 + r < rows && k0 + col < k)
                v[i] = *(const int4*)(src + (size_t)(r0 + r) * k + k0 + col);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int c = threadIdx.x + (h * 4 + i) * 128;
            *(int4*)(dst + (c >> 4) * LDS + (c & 15) * 16) = v[i];
        }
    }
}

template <int SUB, bool KFMT, bool MINS>
__device__ __forceinline__ void gemm_body(const i8* __restrict__ wq, const i8* __restrict__ wsc,
                                          const i8* __restrict__ wmn,
                                          const float* __restrict__ wd,
                                          const float* __restrict__ wdmin,
                                          const i8* __restrict__ xq,
                                          const float* __restrict__ xd,
                                          const int* __restrict__ xs, float* __restrict__ y,
                                          float* __restrict__ part, int n, int k, int t,
                                          int splits) {
    __shared__ __align__(16) Tiles s;
    const int split = blockIdx.y % splits;
    const int r0 = blockIdx.x * BM, c0 = (blockIdx.y / splits) * BN;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, tig = lane & 3;
    const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
    float facc[2][4][4];
    int acc[2][4][4];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            for (int e = 0; e < 4; e++) {
                facc[a][b][e] = 0.0f;
                acc[a][b][e] = 0;
            }
    const int chunks = (k + BK - 1) / BK;
    const int per = (chunks + splits - 1) / splits;
    const int kb_end = min(chunks, (split + 1) * per);
    for (int kb = split * per; kb < kb_end; kb++) {
        const int k0 = kb * BK;
        stage(s.w, wq, n, k, r0, k0);
        stage(s.x, xq, t, k, c0, k0);
        if (KFMT) {
            for (int i = threadIdx.x; i < BM * 16; i += blockDim.x) {
                const int r = i >> 4, j = i & 15;
                const bool in = r0 + r < n;
                const size_t at = (size_t)(r0 + r) * (k / 16) + kb * 16 + j;
                s.sc[r][j] = in ? wsc[at] : 0;
                if (MINS) s.mn[r][j] = f32_to_f16(in ? (float)wmn[at] : 0.0f);
            }
            for (int i = threadIdx.x; i < BN * 16; i += blockDim.x) {
                const int c = i >> 4, j = i & 15;
                if (MINS)
                    s.xs[c][j] = f32_to_f16(
                        c0 + c < t ? (float)xs[(size_t)(c0 + c) * (k / 16) + kb * 16 + j] : 0.0f);
            }
            for (int i = threadIdx.x; i < BM; i += blockDim.x) {
                const bool in = r0 + i < n;
                s.wd[i][0] = in ? wd[(size_t)(r0 + i) * chunks + kb] : 0.0f;
                s.wdm[i] = (MINS && in) ? wdmin[(size_t)(r0 + i) * chunks + kb] : 0.0f;
            }
            for (int i = threadIdx.x; i < BN; i += blockDim.x)
                s.xd[i][0] = c0 + i < t ? xd[(size_t)(c0 + i) * chunks + kb] : 0.0f;
        } else {
            const int nb = k / 32;
            for (int i = threadIdx.x; i < BM * 8; i += blockDim.x) {
                const int r = i >> 3, j = i & 7, b = kb * 8 + j;
                s.wd[r][j] = (r0 + r < n && b < nb) ? wd[(size_t)(r0 + r) * nb + b] : 0.0f;
            }
            for (int i = threadIdx.x; i < BN * 8; i += blockDim.x) {
                const int c = i >> 3, j = i & 7, b = kb * 8 + j;
                s.xd[c][j] = (c0 + c < t && b < nb) ? xd[(size_t)(c0 + c) * nb + b] : 0.0f;
            }
        }
        __syncthreads();

        // B32 unrolled by 4, not 8: fully unrolled it needs all 255 registers and spilled
        // once split-k added its few.
#pragma unroll(KFMT ? BK / SUB : 4)
        for (int sub = 0; sub < BK / SUB; sub++) {
            const int kk = sub * SUB;
            int part[2][4][4];
            int a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const i8* w0 = s.w + (wm + mi * 16 + g) * LDS + kk + tig * 4;
                a[mi][0] = *(const int*)w0;
                a[mi][1] = *(const int*)(w0 + 8 * LDS);
                if (SUB == 32) {
                    a[mi][2] = *(const int*)(w0 + 16);
                    a[mi][3] = *(const int*)(w0 + 8 * LDS + 16);
                }
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                const i8* x0 = s.x + (wn + ni * 8 + g) * LDS + kk + tig * 4;
                b[ni][0] = *(const int*)x0;
                if (SUB == 32) b[ni][1] = *(const int*)(x0 + 16);
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    int* p = part[mi][ni];
                    p[0] = p[1] = p[2] = p[3] = 0;
                    if (SUB == 32)
                        mma_s8_k32(p, a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[ni][0],
                                   b[ni][1]);
                    else
                        mma_s8_k16(p, a[mi][0], a[mi][1], b[ni][0]);
                }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int r = wm + mi * 16 + g + (e >> 1) * 8;
                        const int c = wn + ni * 8 + tig * 2 + (e & 1);
                        if (KFMT) {
                            acc[mi][ni][e] += s.sc[r][kk / 16] * part[mi][ni][e];
                        } else {
                            facc[mi][ni][e] += s.wd[r][sub] * s.xd[c][sub] *
                                               (float)part[mi][ni][e];
                        }
                    }
        }

        if (KFMT) {
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    float m[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    if (MINS) {
                        const int ra = wm + mi * 16 + g, cb = wn + ni * 8 + g;
                        mma_f16(m, *(const u32*)&s.mn[ra][tig * 2],
                                *(const u32*)&s.mn[ra + 8][tig * 2],
                                *(const u32*)&s.mn[ra][tig * 2 + 8],
                                *(const u32*)&s.mn[ra + 8][tig * 2 + 8],
                                *(const u32*)&s.xs[cb][tig * 2],
                                *(const u32*)&s.xs[cb][tig * 2 + 8]);
                    }
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int r = wm + mi * 16 + g + (e >> 1) * 8;
                        const int c = wn + ni * 8 + tig * 2 + (e & 1);
                        const float dx = s.xd[c][0];
                        facc[mi][ni][e] += s.wd[r][0] * dx * (float)acc[mi][ni][e];
                        if (MINS) facc[mi][ni][e] -= s.wdm[r] * dx * m[e];
                        acc[mi][ni][e] = 0;
                    }
                }
        }
        __syncthreads();
    }

    float* out = splits == 1 ? y : part + (size_t)split * t * n;
    store_tile(facc, out, n, t, r0 + wm, c0 + wn, g, tig);
}

#define GEMM_ENTRY(name, SUB, KFMT, MINS)                                                     \
    extern "C" __global__ void __launch_bounds__(128, 1)                                        \
        name(const i8* wq, const i8* wsc, const i8* wmn, const float* wd, const float* wdmin, \
             const i8* xq, const float* xd, const int* xs, float* y, float* part, int n,     \
             int k, int t, int splits) {                                                      \
        gemm_body<SUB, KFMT, MINS>(wq, wsc, wmn, wd, wdmin, xq, xd, xs, y, part, n, k, t,    \
                                   splits);                                                   \
    }

// Q3_K, Q6_K: scales per 16, no mins.
GEMM_ENTRY(gemm_k16, 16, true, false)
// IQ4_XS: scales per 32, no mins.
GEMM_ENTRY(gemm_k32, 32, true, false)
// Q4_K, Q5_K: scales and mins per 32.
GEMM_ENTRY(gemm_k32_mins, 32, true, true)
// Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4: one float scale per 32.
GEMM_ENTRY(gemm_b32, 32, false, false)

// y[i] = part[0][i] + part[1][i] + ... + part[splits - 1][i], in that order, over the len
// elements of one product's [t][n] output.
extern "C" __global__ void sum_splits(const float* __restrict__ part, size_t len, int splits,
                                      float* __restrict__ y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len;
         i += (size_t)gridDim.x * blockDim.x) {
        float acc = part[i];
        for (int j = 1; j < splits; j++) acc += part[(size_t)j * len + i];
        y[i] = acc;
    }
}
