// ANCHOR: bug
// Another fix: the sum of c[k] x^k from the lowest term up, the power of x carried along. Also a
// loop, also no stack; a different rounding order, well inside the tolerance for |x| <= 0.9.
__global__ void polyval(const float* x, const float* c, float* y, int n, int terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[i];
  float sum = 0.0f, power = 1.0f;
  for (int k = 0; k < terms; k++) {
    sum += c[k] * power;
    power *= xi;
  }
  y[i] = sum;
}

void launch_polyval(const float* d_x, const float* d_c, float* d_y, int n, int terms) {
  polyval<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_c, d_y, n, terms);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
