// A kernel that waits for a flag nobody sets: every tool must end in a timeout, not a hang.
#include <cuda_runtime.h>

__global__ void wait_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}

int main() {
  int* flag;
  cudaMalloc(&flag, sizeof(int));
  cudaMemset(flag, 0, sizeof(int));
  wait_forever<<<1, 1>>>(flag);
  cudaDeviceSynchronize();
  cudaFree(flag);
  return 0;
}
