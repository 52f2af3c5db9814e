// 56-occupancy: y = 2 x + 1 over a long vector: the simplest memory-bound kernel there is, one read
// and one write per element.
//
// The answer is right. It is slow: count the blocks, the warps per SM, and the SMs that have work.
#include <algorithm>
#include "cudabugs.cuh"

// ANCHOR: kernel
// Size the grid from the GPU it runs on: as many blocks of 256 as fit on every SM at once (the
// occupancy calculator says how many), capped by the work. Each thread moves 16 bytes per load
// (float4), which halves the instructions per byte; the last n % 4 elements are done one by one.
__global__ void affine(const float* x, float* y, int n) {
  const int stride = gridDim.x * blockDim.x, first = blockIdx.x * blockDim.x + threadIdx.x;
  // cudaMalloc'd memory is 256-byte aligned: the first n / 4 * 4 elements are whole float4s.
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int i = first; i < n / 4; i += stride) {
    const float4 v = x4[i];
    y4[i] = make_float4(2.0f * v.x + 1.0f, 2.0f * v.y + 1.0f, 2.0f * v.z + 1.0f, 2.0f * v.w + 1.0f);
  }
  for (int i = n / 4 * 4 + first; i < n; i += stride) y[i] = 2.0f * x[i] + 1.0f;
}

void launch_affine(const float* x, float* y, int n) {
  constexpr int BLOCK = 256;
  int device, sms, per_sm;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, affine, BLOCK, 0));
  const int blocks = std::max(1, std::min((n / 4 + BLOCK - 1) / BLOCK, sms * per_sm));
  affine<<<blocks, BLOCK>>>(x, y, n);
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
