// 07-leak: subtract the mean from every sample, the first step of most normalisations.
//
// Pass 1: each block sums a grid-stride slice into one partial sum. Pass 2: every thread adds the
// partial sums itself (there are at most 1024) and subtracts the mean. The partial sums live in a
// scratch buffer that a helper allocates for each call. A service calls this once per request.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

__global__ void partial_sums(const float* x, int n, float* partial) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += x[i];
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

__global__ void subtract_mean(const float* x, int n, const float* partial, int blocks, float* y) {
  __shared__ float mean;
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int b = 0; b < blocks; b++) total += partial[b];
    mean = total / n;
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] - mean;
}

// ANCHOR: alloc
// Scratch for one partial sum per block.
float* alloc_partials(int blocks) {
  float* partial;
  CB_CHECK(cudaMalloc(&partial, blocks * sizeof(float)));
  return partial;
}
// ANCHOR_END: alloc

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  float* d_partial = alloc_partials(blocks);
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));

  partial_sums<<<blocks, BLOCK>>>(d_x, n, d_partial);
  CB_CHECK(cudaGetLastError());
  subtract_mean<<<blocks, BLOCK>>>(d_x, n, d_partial, blocks, d_y);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  // ANCHOR: bug
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  // ANCHOR_END: bug
}
