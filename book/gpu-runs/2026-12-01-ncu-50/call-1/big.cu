// Experiment only: a bench-like program under ncu: N floats in, one kernel launch per call,
// CALLS calls, as the timed exercises make them.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void rowsum(const float* m, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0;
  for (int c = 0; c < cols; ++c) s += m[(size_t)c * rows + r];
  out[r] = s;
}
int main(int argc, char** argv) {
  int rows = 262144, cols = 256, calls = argc > 1 ? atoi(argv[1]) : 3;
  size_t n = (size_t)rows * cols;
  float *h = (float*)malloc(n * 4), *dm, *dout;
  for (size_t i = 0; i < n; ++i) h[i] = (i % 7) * 0.5f;
  cudaMalloc(&dm, n * 4); cudaMalloc(&dout, rows * 4);
  for (int k = 0; k < calls; ++k) {
    cudaMemcpy(dm, h, n * 4, cudaMemcpyHostToDevice);
    rowsum<<<rows / 256, 256>>>(dm, dout, rows, cols);
    cudaDeviceSynchronize();
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
