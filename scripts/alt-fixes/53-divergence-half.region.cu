// ANCHOR: kernel
// A half-fix: no branch. Every thread computes both recurrences and keeps the one it needs. The warp
// no longer diverges, but each lane now does the work of both paths: the same time as before.
__global__ void relax(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = relax_amplitude(x[i]);
  const float b = relax_phase(x[i]);
  y[i] = (i % 2 == 0) ? a : b;
}

void launch_relax(const float* x, float* y, int n) {
  relax<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n);
}
// ANCHOR_END: kernel
