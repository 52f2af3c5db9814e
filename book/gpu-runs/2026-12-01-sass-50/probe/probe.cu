#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void copy(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] * 2.0f;
}
int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 1;
  int n = argc > 2 ? atoi(argv[2]) : (1 << 22);
  float *a, *b;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float));
  for (int k = 0; k < launches; ++k) copy<<<(n + 255) / 256, 256>>>(a, b, n);
  cudaDeviceSynchronize();
  printf("done %d %s\n", launches, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
