// 14-async-error: rescale a signal to [0, 1]: y = (x - min) / (max - min).
//
// Pass 1: each block finds the minimum and maximum of a grid-stride slice. Pass 2 (only for a
// grid of several blocks): one block combines the blocks' results. Pass 3 rescales. A signal that
// fits one block needs no pass 2: its block writes the final minimum and maximum itself.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

// Block-wide minimum and maximum of (lo, hi); thread 0 writes them to out[0], out[1].
__device__ void block_minmax(float lo, float hi, float* out) {
  __shared__ float s_lo[BLOCK], s_hi[BLOCK];
  const int t = threadIdx.x;
  s_lo[t] = lo;
  s_hi[t] = hi;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) {
      s_lo[t] = fminf(s_lo[t], s_lo[t + stride]);
      s_hi[t] = fmaxf(s_hi[t], s_hi[t + stride]);
    }
    __syncthreads();
  }
  if (t == 0) {
    out[0] = s_lo[0];
    out[1] = s_hi[0];
  }
}

// ANCHOR: kernel
__global__ void minmax_blocks(const float* x, int n, float* result) {
  float lo = INFINITY, hi = -INFINITY;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  block_minmax(lo, hi, result + 2 * blockIdx.x);
}
// ANCHOR_END: kernel

__global__ void minmax_combine(const float* partial, int blocks, float* stats) {
  float lo = INFINITY, hi = -INFINITY;
  for (int b = threadIdx.x; b < blocks; b += BLOCK) {
    lo = fminf(lo, partial[2 * b]);
    hi = fmaxf(hi, partial[2 * b + 1]);
  }
  block_minmax(lo, hi, stats);
}

__global__ void rescale(const float* x, int n, const float* stats, float* y) {
  const float lo = stats[0], range = stats[1] - stats[0];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = (x[i] - lo) / range;
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_x, *d_y, *d_stats;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_stats, 2 * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));

  // ANCHOR: bug
  // Only a grid of several blocks needs room for each block's result.
  float* d_partial = nullptr;
  if (blocks > 1) CB_CHECK(cudaMalloc(&d_partial, 2 * blocks * sizeof(float)));
  minmax_blocks<<<blocks, BLOCK>>>(d_x, n, d_partial);
  if (blocks > 1) minmax_combine<<<1, BLOCK>>>(d_partial, blocks, d_stats);
  // ANCHOR_END: bug
  rescale<<<blocks, BLOCK>>>(d_x, n, d_stats, d_y);

  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_stats));
  if (d_partial) CB_CHECK(cudaFree(d_partial));
}
