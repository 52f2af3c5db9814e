// 56-occupancy: y = 2 x + 1 over a long vector: the simplest memory-bound kernel there is, one read
// and one write per element.
//
// The answer is right. It is slow: count the blocks, the warps per SM, and the SMs that have work.
#include <algorithm>
#include "cudabugs.cuh"

// ANCHOR: kernel
// A grid-stride loop, so any grid covers any n. The launch configuration came with the code from a
// laptop GPU: 16 blocks of 128 threads.
__global__ void affine(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

void launch_affine(const float* x, float* y, int n) {
  affine<<<16, 128>>>(x, y, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  launch_affine(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
