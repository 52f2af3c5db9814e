// 21-spin-flag: the sum of a large array in one launch, no second pass.
//
// Every block adds a grid-stride slice and writes its partial sum; then one block adds the partial
// sums. A second kernel launch would order the two steps for free; here a counter in global memory
// does it: each block, once its partial sum is written, adds one to `arrived`, and block 0 waits for
// the count before it adds the partial sums.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

// The sum of one value per thread over the block, in shared memory; every thread gets it.
__device__ float block_sum(float v) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  const float total = s[0];
  __syncthreads();  // s is written again by the next call
  return total;
}

__global__ void sum_all(const float* x, int n, float* partial, unsigned* arrived, float* total) {
  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) acc += x[i];
  const float mine = block_sum(acc);
  // ANCHOR: wait
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = mine;
    // Block 0 is the one that waits: only the others need to say they are done.
    if (blockIdx.x != 0) {
      __threadfence();  // the partial sum is visible to every block before the count says so
      atomicAdd(arrived, 1u);
    }
  }
  if (blockIdx.x != 0) return;
  // Block 0: wait until every block's partial sum is written, then add them.
  if (threadIdx.x == 0) {
    while (atomicAdd(arrived, 0u) < gridDim.x) {
    }
    __threadfence();
  }
  __syncthreads();
  const volatile float* sums = partial;  // written by other blocks: read around the L1 cache
  float t = 0.0f;
  for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) t += sums[b];
  t = block_sum(t);
  if (threadIdx.x == 0) *total = t;
  // ANCHOR_END: wait
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_total = io.output<float>("total");
  const int blocks = std::max(1, std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS));

  float *d_x, *d_partial, *d_total;
  unsigned* d_arrived;
  CB_CHECK(cudaMalloc(&d_x, std::max(n, 1) * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_arrived, sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_total, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_arrived, 0, sizeof(unsigned)));

  sum_all<<<blocks, BLOCK>>>(d_x, n, d_partial, d_arrived, d_total);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_total, d_total, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_partial));
  CB_CHECK(cudaFree(d_arrived));
  CB_CHECK(cudaFree(d_total));
}
