// ANCHOR: bug
// A half-fix: keep the recursion and raise the per-thread stack from 1 KB to 32 KB. That is
// enough for about 1,000 terms (32 bytes a call in a -G build, 24 with -O3), not for 2,000 or
// 5,000, and the driver reserves the stack for every thread the GPU can hold at once
// (2048 x 132 on an H100), so it cannot grow with the input for long.
__device__ float horner(const float* c, int k, int terms, float x) {
  if (k == terms) return 0.0f;
  return c[k] + x * horner(c, k + 1, terms, x);
}

__global__ void polyval(const float* x, const float* c, float* y, int n, int terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = horner(c, 0, terms, x[i]);
}

void launch_polyval(const float* d_x, const float* d_c, float* d_y, int n, int terms) {
  CB_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 32 * 1024));
  polyval<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_c, d_y, n, terms);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
