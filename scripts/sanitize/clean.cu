// A correct program: saxpy with every allocation freed. `sanitize` must find nothing (exit 0).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1000;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
  float first = -1;
  cudaMemcpy(&first, y, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("y[0] = %g\n", first);
  cudaFree(x);
  cudaFree(y);
  return 0;
}
