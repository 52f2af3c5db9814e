// Five kernels of a few ms each: what ncu profiles in the gate experiment.
#include <cstdio>
__global__ void spin(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f; x[i] = v; }
}
int main() {
  float* d; int n = 1 << 22;
  cudaMalloc(&d, n * 4); cudaMemset(d, 0, n * 4);
  for (int r = 0; r < 5; r++) spin<<<n / 256, 256>>>(d, n, 2000);
  cudaDeviceSynchronize(); printf("ok\n"); return 0;
}
