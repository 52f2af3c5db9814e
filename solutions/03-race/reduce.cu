// 03-race: sum of a large array, the classic two-pass block reduction.
//
// Pass 1: each block accumulates a grid-stride slice in registers, then reduces its 256 per-thread
// sums to one partial sum with a tree in shared memory. Pass 2: one block reduces the partial sums.
// Run it plainly and the total usually looks right. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;

  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += in[i];

  // cudabugs:begin(bug)
  s[t] = acc;
  __syncthreads();  // every thread's store must land before any thread reads s[t + stride]
  // cudabugs:end(bug)

  // Tree reduction: halve the number of active threads each step.
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_in = io.input<float>("x");
  float* h_total = io.output<float>("total");
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_in, *d_partial, *d_total;
  CB_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_total, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));

  block_sum<<<blocks, BLOCK>>>(d_in, d_partial, n);
  CB_CHECK(cudaGetLastError());
  block_sum<<<1, BLOCK>>>(d_partial, d_total, blocks);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_total, d_total, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_in));
  CB_CHECK(cudaFree(d_partial));
  CB_CHECK(cudaFree(d_total));
}
