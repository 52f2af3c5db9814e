// How long a CUDA process takes to start when many start at once: each prints when main began,
// when its context was ready (cudaFree(0)) and when one small kernel had run; the shell around it
// notes when it was started and when it ended.
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>

__global__ void touch(int* p) { p[threadIdx.x] = threadIdx.x; }

static double now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main() {
  double main_at = now();
  cudaFree(0);
  double context_at = now();
  int* d = nullptr;
  cudaMalloc(&d, 32 * sizeof(int));
  touch<<<1, 32>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  double kernel_at = now();
  printf("%.6f %.6f %.6f %s\n", main_at, context_at, kernel_at, cudaGetErrorString(e));
  return 0;
}
