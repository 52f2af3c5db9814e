// 25-copy-direction: subtract the mean from every sample, the first step of most normalisations.
//
// Pass 1: each block sums a grid-stride slice into one partial sum. The host brings the partial
// sums back (at most 1024), adds them in double precision and passes the mean to pass 2 as a kernel
// argument. Every copy goes through two small helpers, so that the direction is written once.
#include <algorithm>
#include <vector>
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

__global__ void subtract(const float* x, int n, float mean, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] - mean;
}

// ANCHOR: bug
// The copies between the host and the device, each in its own direction and checked: a copy whose
// kind does not match its pointers fails with cudaErrorInvalidValue and copies nothing.
void to_device(void* dst, const void* src, size_t bytes) {
  CB_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void to_host(void* dst, const void* src, size_t bytes) {
  CB_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_x, *d_y, *d_partial;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  to_device(d_x, h_x, n * sizeof(float));

  partial_sums<<<blocks, BLOCK>>>(d_x, n, d_partial);
  CB_CHECK(cudaGetLastError());
  std::vector<float> partial(blocks, 0.0f);
  to_host(partial.data(), d_partial, blocks * sizeof(float));
  double total = 0.0;
  for (float p : partial) total += p;
  const float mean = static_cast<float>(total / n);

  subtract<<<blocks, BLOCK>>>(d_x, n, mean, d_y);
  CB_CHECK(cudaGetLastError());
  to_host(h_y, d_y, n * sizeof(float));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_partial));
}
