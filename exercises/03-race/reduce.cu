// 03-race: sum of a large array, the classic two-pass block reduction.
//
// Pass 1: each block accumulates a grid-stride slice in registers, then reduces its 256 per-thread
// sums to one partial sum: a tree in shared memory across warps, then one warp finishes the last 64
// values. Pass 2: one block reduces the partial sums.
// Run it plainly and the total is right. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

// ANCHOR: bug
// The last 64 partial sums, finished by the 32 threads of one warp. A warp executes in lockstep,
// so no barrier is needed here, and `volatile` makes every += read and write shared
// memory instead of a register.
__device__ float warp_sum(volatile float* s, int t) {
  s[t] += s[t + 32];
  s[t] += s[t + 16];
  s[t] += s[t + 8];
  s[t] += s[t + 4];
  s[t] += s[t + 2];
  s[t] += s[t + 1];
  return s[t];
}
// ANCHOR_END: bug

__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;

  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += in[i];
  s[t] = acc;
  __syncthreads();

  // Tree reduction across warps: halve the number of active threads each step, down to 64 values.
  for (int stride = BLOCK / 2; stride > 32; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) {
    const float total = warp_sum(s, t);
    if (t == 0) partial[blockIdx.x] = total;
  }
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
