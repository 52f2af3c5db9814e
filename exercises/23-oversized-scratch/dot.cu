// 23-oversized-scratch: the dot product of two long vectors, in two passes.
//
// Pass 1: each block multiplies and sums a grid-stride slice into one partial sum. Pass 2: one
// block adds the partial sums. The partial sums live in a scratch buffer that dot_on_device
// allocates for the two passes and frees after them.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

__device__ float block_sum(float v) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  return s[0];
}

__global__ void partial_dots(const float* a, const float* b, int n, float* partial) {
  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) acc += a[i] * b[i];
  const float total = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void finish(const float* partial, int blocks, float* out) {
  float acc = 0.0f;
  for (int i = threadIdx.x; i < blocks; i += BLOCK) acc += partial[i];
  const float total = block_sum(acc);
  if (threadIdx.x == 0) *out = total;
}

// ANCHOR: bug
// Both passes, with the scratch they share.
void dot_on_device(const float* d_a, const float* d_b, int n, float* d_dot) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  float* d_partial;
  CB_CHECK(cudaMalloc(&d_partial, n * sizeof(float)));
  partial_dots<<<blocks, BLOCK>>>(d_a, d_b, n, d_partial);
  CB_CHECK(cudaGetLastError());
  finish<<<1, BLOCK>>>(d_partial, blocks, d_dot);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_partial));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_a = io.input<float>("a");
  const float* h_b = io.input<float>("b");
  float* h_dot = io.output<float>("dot");
  if (n == 0) return;

  float *d_a, *d_b, *d_dot;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_dot, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice));

  dot_on_device(d_a, d_b, n, d_dot);

  CB_CHECK(cudaMemcpy(h_dot, d_dot, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_dot));
}
