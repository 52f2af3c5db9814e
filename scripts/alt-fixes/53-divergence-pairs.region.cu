// ANCHOR: kernel
// Another fix: one thread per (even, odd) pair runs both recurrences one after the other. Half as
// many threads, no branch at all, every lane busy.
__global__ void relax(const float* x, float* y, int n) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = 2 * p;
  if (i >= n) return;
  y[i] = relax_amplitude(x[i]);
  if (i + 1 < n) y[i + 1] = relax_phase(x[i + 1]);
}

void launch_relax(const float* x, float* y, int n) {
  const int pairs = (n + 1) / 2;
  relax<<<(pairs + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n);
}
// ANCHOR_END: kernel
