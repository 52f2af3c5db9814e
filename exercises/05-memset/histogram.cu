// 05-memset: 256-bin histogram of 12-bit sensor readings.
//
// Each block builds a private histogram in shared memory (shared atomics are cheap), then merges it
// into the global histogram with one atomicAdd per bin. The global bins are cleared before the
// launch. The total count printed by a plain run is usually right.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BINS = 256;
constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

__global__ void histogram(const unsigned* values, int n, unsigned* bins) {
  __shared__ unsigned local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();

  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[(values[i] >> 4) & (BINS - 1)], 1u);
  __syncthreads();

  // Merge this block's histogram into the global one.
  // ANCHOR: merge
  for (int b = threadIdx.x; b < BINS; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
  // ANCHOR_END: merge
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const unsigned* h_values = io.input<unsigned>("values");
  unsigned* h_bins = io.output<unsigned>("bins");

  unsigned *d_values, *d_bins;
  CB_CHECK(cudaMalloc(&d_values, n * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_bins, BINS * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_values, h_values, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  // ANCHOR: bug
  CB_CHECK(cudaMemset(d_bins, 0, BINS));
  // ANCHOR_END: bug

  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  histogram<<<blocks, BLOCK>>>(d_values, n, d_bins);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_bins, d_bins, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_values));
  CB_CHECK(cudaFree(d_bins));
}
