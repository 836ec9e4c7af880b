// Attention with the masks the cache needs: for query row i (rows[i], or i), at canvas
// position pos0 + row, out[i] = softmax(scale * q . K^T) V per head over the keys it sees
// (all of them, or those before the end of its block when block > 0). K and V hold `keys`
// rows: fresh, or cached and fresh. Online softmax (flash-style), f32, exact expf.
//
// Grid (ceil(n_rows / 16), n_head); 4 warps, each 4 query rows; a lane holds head_dim / 32
// elements of each of its rows' queries and outputs. Keys are staged 16 at a time.

#define AQ 16
#define AK 16
#define ADMAX 256

extern "C" __global__ void __launch_bounds__(128, 1)
    attention(const float* __restrict__ q, const float* __restrict__ kc,
              const float* __restrict__ vc, float* __restrict__ out,
              const int* __restrict__ rows, int n_rows, int keys, int n_head, int n_head_kv,
              int head_dim, float scale, int pos0, int block) {
    __shared__ float sk[AK][ADMAX];
    __shared__ float sv[AK][ADMAX];
    const int h = blockIdx.y, kvh = h / (n_head / n_head_kv);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int per = head_dim / WARP;  // head_dim is a multiple of 32, at most 256
    const int qw = n_head * head_dim, kw = n_head_kv * head_dim;
    float qv[4][8], o[4][8], m[4], l[4];
    int vis[4];
    int block_vis = 0;
    for (int j = 0; j < 4; j++) {
        const int i = blockIdx.x * AQ + warp * 4 + j;
        const int row = i < n_rows ? (rows ? rows[i] : i) : -1;
        vis[j] = 0;
        if (row >= 0) {
            const int pos = pos0 + row;
            vis[j] = block > 0 ? min((pos / block + 1) * block, keys) : keys;
        }
        for (int e = 0; e < 8; e++) {
            qv[j][e] = (row >= 0 && e < per) ? q[(size_t)row * qw + h * head_dim + e * WARP + lane] : 0.0f;
            o[j][e] = 0.0f;
        }
        m[j] = -__int_as_float(0x7f800000);
        l[j] = 0.0f;
    }
    // The block's furthest-seeing row bounds the keys staged.
    {
        int mine = max(max(vis[0], vis[1]), max(vis[2], vis[3]));
        __shared__ int wvis[4];
        if (lane == 0) wvis[warp] = mine;
        __syncthreads();
        block_vis = max(max(wvis[0], wvis[1]), max(wvis[2], wvis[3]));
    }
    for (int k0 = 0; k0 < block_vis; k0 += AK) {
        __syncthreads();
        for (int i = threadIdx.x; i < AK * head_dim; i += blockDim.x) {
            const int r = i / head_dim, e = i % head_dim;
            const bool in = k0 + r < keys;
            sk[r][e] = in ? kc[(size_t)(k0 + r) * kw + kvh * head_dim + e] : 0.0f;
            sv[r][e] = in ? vc[(size_t)(k0 + r) * kw + kvh * head_dim + e] : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < AK && k0 + r < block_vis; r++) {
            float kv[8], vv[8];
            for (int e = 0; e < 8; e++) {
                kv[e] = e < per ? sk[r][e * WARP + lane] : 0.0f;
                vv[e] = e < per ? sv[r][e * WARP + lane] : 0.0f;
            }
            for (int j = 0; j < 4; j++) {
                float dot = 0.0f;
                for (int e = 0; e < 8; e++) dot = fmaf(qv[j][e], kv[e], dot);
                dot = warp_sum(dot);
                if (k0 + r >= vis[j]) continue;
                const float sc = dot * scale;
                const float mn = fmaxf(m[j], sc);
                const float alpha = expf(m[j] - mn);
                const float p = expf(sc - mn);
                l[j] = l[j] * alpha + p;
                for (int e = 0; e < 8; e++) o[j][e] = fmaf(p, vv[e], o[j][e] * alpha);
                m[j] = mn;
            }
        }
    }
    for (int j = 0; j < 4; j++) {
        const int i = blockIdx.x * AQ + warp * 4 + j;
        if (i >= n_rows || vis[j] == 0) continue;
        const float inv = 1.0f / l[j];
#pragma unroll
        for (int e = 0; e < 8; e++)
            if (e < per) out[(size_t)i * qw + h * head_dim + e * WARP + lane] = o[j][e] * inv;
    }
}
