// 57-reduction: the sum of n floats, as every textbook first writes it: each block loads one value
// per thread into shared memory, adds them up in a tree, and adds its total to the result.
//
// The answer is right (to float rounding). It is slow: see which threads work at each step of the
// tree, and how many bytes per second that leaves for reading the input.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
__global__ void sum(const float* x, float* total, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  // Interleaved pairs: at step `stride`, thread t (a multiple of 2 * stride) adds s[t + stride].
  for (int stride = 1; stride < BLOCK; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(total, s[0]);
}

void launch_sum(const float* x, float* total, int n) {
  if (n > 0) sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, total, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  float *d_x, *d_total;
  CB_CHECK(cudaMalloc(&d_x, std::max(n, 1) * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_total, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_total, 0, sizeof(float)));
  launch_sum(d_x, d_total, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("total"), d_total, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_total));
}
