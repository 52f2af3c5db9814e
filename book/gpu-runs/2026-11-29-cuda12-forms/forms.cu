#include <cuda_runtime.h>
int main() {
  float* t; cudaMallocManaged(&t, 1 << 20);
#ifdef CUDA12_FORM
  cudaMemPrefetchAsync(t, 1 << 20, 0, 0);
  cudaMemAdvise(t, 1 << 20, cudaMemAdviseSetAccessedBy, 0);
#else
  cudaMemLocation gpu{}; gpu.type = cudaMemLocationTypeDevice; gpu.id = 0;
  cudaMemPrefetchAsync(t, 1 << 20, gpu, 0, 0);
  cudaMemAdvise(t, 1 << 20, cudaMemAdviseSetAccessedBy, gpu);
#endif
  return 0;
}
