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
// Privatise: each block counts into its own 256 bins in shared memory (fast atomics, contention
// only among the block's own threads), walking the input with a grid-stride loop, then adds its
// bins to the global ones once: 256 global atomics per block instead of one per value.
__global__ void histogram(const float* x, unsigned* bins, int n) {
  __shared__ unsigned local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[bin_of(x[i])], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

void launch_histogram(const float* x, unsigned* bins, int n) {
  int device, sms, per_sm;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, histogram, BLOCK, 0));
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, sms * per_sm);
  histogram<<<std::max(blocks, 1), BLOCK>>>(x, bins, n);
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
