// 55-histogram: a 256-bin histogram of n values in [0, 1): bin = min(int(x * 256), 255).
//
// The answer is right. It is slow: count how many threads update the same 256 counters in global
// memory, and how those updates are ordered.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BINS = 256;
constexpr int BLOCK = 256;

__device__ int bin_of(float x) { return min(static_cast<int>(x * BINS), BINS - 1); }

// ANCHOR: kernel
// One thread per value: each thread adds one to its value's bin in global memory. atomicAdd makes
// concurrent increments of one counter safe.
__global__ void histogram(const float* x, unsigned* bins, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[bin_of(x[i])], 1u);
}

void launch_histogram(const float* x, unsigned* bins, int n) {
  histogram<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, bins, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  float* d_x;
  unsigned* d_bins;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_bins, BINS * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_bins, 0, BINS * sizeof(unsigned)));
  launch_histogram(d_x, d_bins, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<unsigned>("bins"), d_bins, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_bins));
}
