// ANCHOR: kernel
// Another fix: one thread per element, as many blocks of 256 as n needs (262,144 for the bench).
__global__ void affine(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

void launch_affine(const float* x, float* y, int n) {
  if (n > 0) affine<<<(n + 255) / 256, 256>>>(x, y, n);
}
// ANCHOR_END: kernel
