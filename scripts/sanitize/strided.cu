// Correct but slow: the same matrix copy twice. `copy_rows` gives each thread a row to walk, so the
// 32 threads of a warp read addresses a row apart (uncoalesced); `copy_elements` gives each thread
// one element, so a warp reads 128 contiguous bytes. `sanitize --profile` tells them apart.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void copy_rows(const float* in, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    for (int c = 0; c < cols; c++) out[r * cols + c] = in[r * cols + c];
  }
}

__global__ void copy_elements(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

int main() {
  const int rows = 2048, cols = 2048, n = rows * cols;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(in, 0, n * sizeof(float));
  copy_rows<<<(rows + 127) / 128, 128>>>(in, out, rows, cols);
  copy_elements<<<(n + 255) / 256, 256>>>(in, out, n);
  cudaDeviceSynchronize();
  std::printf("copied %d floats twice\n", n);
  cudaFree(in);
  cudaFree(out);
  return 0;
}
