// Two different bugs: `scale` lets thread n through its bounds check (memcheck: out of bounds),
// and `block_sum` starts its tree before every warp has stored its value (racecheck: shared race).
// A plain run prints plausible numbers.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 2.0f * in[i];
}

__global__ void block_sum(const float* in, float* out) {
  __shared__ float s[256];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

int main() {
  const int n = 1000, blocks = 4;
  float *in, *out, *data, *sums;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&data, blocks * 256 * sizeof(float));
  cudaMalloc(&sums, blocks * sizeof(float));
  cudaMemset(in, 0, n * sizeof(float));
  cudaMemset(data, 0, blocks * 256 * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(in, out, n);
  block_sum<<<blocks, 256>>>(data, sums);
  float total[blocks];
  cudaMemcpy(total, sums, sizeof total, cudaMemcpyDeviceToHost);
  std::printf("sums: %g %g %g %g\n", total[0], total[1], total[2], total[3]);
  cudaFree(in);
  cudaFree(out);
  cudaFree(data);
  cudaFree(sums);
  return 0;
}
