// 26-stack-overflow: the marked regions of the untouched exercises/26-stack-overflow/poly.cu. The pristine exercise is
// solutions/26-stack-overflow/poly.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// c[k] + x * (c[k + 1] + x * (c[k + 2] + ...)): the definition, one call per coefficient.
__device__ float horner(const float* c, int k, int terms, float x) {
  if (k == terms) return 0.0f;
  return c[k] + x * horner(c, k + 1, terms, x);
}

__global__ void polyval(const float* x, const float* c, float* y, int n, int terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = horner(c, 0, terms, x[i]);
}

void launch_polyval(const float* d_x, const float* d_c, float* d_y, int n, int terms) {
  polyval<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_c, d_y, n, terms);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
