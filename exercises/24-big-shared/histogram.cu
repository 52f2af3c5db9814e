// 24-big-shared: a histogram with many bins (a 16-bit sensor, a vocabulary, hashed features).
//
// Each block counts its grid-stride slice of the values into a private histogram in shared memory,
// where atomics are cheap, then adds its non-zero bins into the global histogram. The number of bins
// is a parameter, so the private histogram lives in dynamic shared memory: bins * 4 bytes, given as
// the third launch parameter.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 264;  // two blocks per SM of an H100

__global__ void block_histogram(const unsigned* values, unsigned* counts, int n, int bins) {
  extern __shared__ unsigned local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[values[i] % bins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&counts[b], local[b]);
  }
}

// ANCHOR: bug
// One private histogram per block, bins * 4 bytes of shared memory: an H100 SM has 228 KB of it,
// so even 50,000 bins fit.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  const size_t shared_bytes = static_cast<size_t>(bins) * sizeof(unsigned);
  const int blocks = std::max(1, std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS));
  block_histogram<<<blocks, BLOCK, shared_bytes>>>(d_values, d_counts, n, bins);
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int bins = static_cast<int>(io.param("bins"));
  const unsigned* h_values = io.input<unsigned>("values");
  unsigned* h_counts = io.output<unsigned>("counts");

  unsigned *d_values, *d_counts;
  CB_CHECK(cudaMalloc(&d_values, n * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_counts, bins * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_values, h_values, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_counts, 0, bins * sizeof(unsigned)));
  launch_histogram(d_values, d_counts, n, bins);
  CB_CHECK(cudaMemcpy(h_counts, d_counts, bins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_values));
  CB_CHECK(cudaFree(d_counts));
}
