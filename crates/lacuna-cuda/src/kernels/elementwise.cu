// Row-wise and element-wise operations of the graph, in the CPU backend's arithmetic order.

// RMSNorm: one block of 256 threads per row; sum of squares in f64, scale = 1/sqrt(mean +
// eps) in f32, out = (x * scale) * w.
extern "C" __global__ void __launch_bounds__(256)
    rms_norm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
             int width, float eps) {
    __shared__ double part[8];
    const size_t row = blockIdx.x;
    const float* xr = x + row * width;
    double s = 0.0;
    for (int i = threadIdx.x; i < width; i += 256) s += (double)(xr[i] * xr[i]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    double sum = 0.0;
    for (int i = 0; i < 8; i++) sum += part[i];
    const float mean = (float)(sum / width);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = threadIdx.x; i < width; i += 256) out[row * width + i] = xr[i] * scale * w[i];
}

// RoPE in place over t rows of `width` (heads of head_dim); row i at position pos0 + i.
// theta_i = pos * theta_scale^i by repeated f32 multiplication (ggml's order; each thread
// walks its pair index from 0), times freq_scale. Grid (t), block 128 over the pairs of a row.
extern "C" __global__ void rope(float* __restrict__ x, int width, int head_dim, int n_rot,
                                int pos0, float freq_scale, float theta_scale, int neox) {
    const int row = blockIdx.x;
    const int half = n_rot / 2, heads = width / head_dim;
    for (int idx = threadIdx.x; idx < heads * half; idx += blockDim.x) {
        const int hd = idx / half, i = idx % half;
        float theta = (float)(pos0 + row);
        for (int j = 0; j < i; j++) theta *= theta_scale;
        const float th = theta * freq_scale;
        const float c = cosf(th), sn = sinf(th);
        float* head = x + (size_t)row * width + hd * head_dim;
        const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * sn;
        head[b] = x0 * sn + x1 * c;
    }
}

// out = silu(gate) * up = gate / (1 + e^-gate) * up.
extern "C" __global__ void swiglu(const float* __restrict__ gate, const float* __restrict__ up,
                                  float* __restrict__ out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

// x += y over n elements.
extern "C" __global__ void add(float* __restrict__ x, const float* __restrict__ y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] += y[i];
}

// Each of the rows of x (width wide) += b.
extern "C" __global__ void add_bias(float* __restrict__ x, const float* __restrict__ b,
                                    int width, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] += b[i % width];
}

// dst[r][0..cols] = src[idx ? idx[r] : r][col0 .. col0 + cols] for r < rows: row gathers,
// and the column split of a fused QKV product. Grid (rows), block 256.
extern "C" __global__ void copy_rows(const float* __restrict__ src, int src_width, int col0,
                                     const int* __restrict__ idx, float* __restrict__ dst,
                                     int cols) {
    const int r = blockIdx.x;
    const size_t from = (size_t)(idx ? idx[r] : r) * src_width + col0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        dst[(size_t)r * cols + c] = src[from + c];
}

// dst[to[r]] = w[r] * src[r] for r < rows (an expert's outputs into their token-and-slot
// rows; `to` distinct). Grid (rows), block 256.
extern "C" __global__ void scatter_scaled(const float* __restrict__ src,
                                          const int* __restrict__ to,
                                          const float* __restrict__ w,
                                          float* __restrict__ dst, int width) {
    const int r = blockIdx.x;
    const float s = w[r];
    for (int c = threadIdx.x; c < width; c += blockDim.x)
        dst[(size_t)to[r] * width + c] = src[(size_t)r * width + c] * s;
}

// out[i] = slots[i*k] + ... + slots[i*k + k-1], in slot order. Grid (tokens), block 256.
extern "C" __global__ void sum_slots(const float* __restrict__ slots, int k, int width,
                                     float* __restrict__ out) {
    const size_t i = blockIdx.x;
    for (int c = threadIdx.x; c < width; c += blockDim.x) {
        float acc = slots[i * k * width + c];
        for (int s = 1; s < k; s++) acc += slots[(i * k + s) * width + c];
        out[i * width + c] = acc;
    }
}

// Embedding rows out of a repacked K-format table: value = d*sc*q - dmin*mn per 16.
extern "C" __global__ void get_rows_k(const i8* __restrict__ q, const i8* __restrict__ sc,
                                      const i8* __restrict__ mn, const float* __restrict__ d,
                                      const float* __restrict__ dmin,
                                      const unsigned* __restrict__ tokens, int k,
                                      float* __restrict__ out) {
    const size_t tok = tokens[blockIdx.x];
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        const size_t s = tok * (k / 16) + c / 16, b = tok * (k / 256) + c / 256;
        const float dd = d[b] * (float)sc[s];
        const float mm = dmin[b] * (float)mn[s];
        out[(size_t)blockIdx.x * k + c] = dd * (float)q[tok * k + c] - mm;
    }
}

// Embedding rows out of a repacked B32 table: value = d * q.
extern "C" __global__ void get_rows_b32(const i8* __restrict__ q, const float* __restrict__ d,
                                        const unsigned* __restrict__ tokens, int k,
                                        float* __restrict__ out) {
    const size_t tok = tokens[blockIdx.x];
    for (int c = threadIdx.x; c < k; c += blockDim.x)
        out[(size_t)blockIdx.x * k + c] = d[tok * (k / 32) + c / 32] * (float)q[tok * k + c];
}

// Embedding rows out of an f16 / bf16 / f32 table.
extern "C" __global__ void get_rows_f16(const u16* __restrict__ tab,
                                        const unsigned* __restrict__ tokens, int k, int bf16,
                                        float* __restrict__ out) {
    const size_t tok = tokens[blockIdx.x];
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        const u16 h = tab[tok * k + c];
        out[(size_t)blockIdx.x * k + c] = bf16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
}
extern "C" __global__ void get_rows_f32(const float* __restrict__ tab,
                                        const unsigned* __restrict__ tokens, int k,
                                        float* __restrict__ out) {
    const size_t tok = tokens[blockIdx.x];
    for (int c = threadIdx.x; c < k; c += blockDim.x)
        out[(size_t)blockIdx.x * k + c] = tab[tok * k + c];
}
