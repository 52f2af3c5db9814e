// 53-divergence: the marked region of the untouched exercises/53-divergence/recurrence.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// One thread per element: each thread looks at its index and runs that element's recurrence.
__global__ void relax(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i % 2 == 0) {
    y[i] = relax_amplitude(x[i]);
  } else {
    y[i] = relax_phase(x[i]);
  }
}

void launch_relax(const float* x, float* y, int n) {
  relax<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n);
}
// ANCHOR_END: kernel
