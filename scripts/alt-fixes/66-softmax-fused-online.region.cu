// ANCHOR: kernel
// Another fix: one kernel, one block per row, and the maximum and the sum found in one sweep (the
// "online" softmax of Milakov and Gimelshein, 2018). Each thread keeps its running maximum m and
// the sum s of exp(v - m) over its values so far; when a larger value arrives, the sum is rescaled
// by exp(old m - new m). Pairs (m, s) combine the same way, in the warps and then across them. The
// second sweep writes y, reading the row from L1.
__device__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = (s == 0.0f ? 0.0f : s * __expf(m - mn)) + (s2 == 0.0f ? 0.0f : s2 * __expf(m2 - mn));
  m = mn;
}

__global__ void softmax_fused(const float* x, float* y, int cols) {
  __shared__ float warp_max[BLOCK / 32], warp_sum[BLOCK / 32];
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float* row = x + base;
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) {
    const float v = row[c];
    if (v > m) {
      s = s * __expf(m - v) + 1.0f;
      m = v;
    } else {
      s += __expf(v - m);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  if (threadIdx.x % 32 == 0) {
    warp_max[threadIdx.x / 32] = m;
    warp_sum[threadIdx.x / 32] = s;
  }
  __syncthreads();
  m = warp_max[0];
  s = warp_sum[0];
  for (int w = 1; w < BLOCK / 32; ++w) merge(m, s, warp_max[w], warp_sum[w]);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = __expf(row[c] - m) * inv;
}

void softmax(const float* d_x, float* d_y, int rows, int cols) {
  softmax_fused<<<rows, BLOCK>>>(d_x, d_y, cols);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: kernel
