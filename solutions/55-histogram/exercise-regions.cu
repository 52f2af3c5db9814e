// 55-histogram: the marked region of the untouched exercises/55-histogram/histogram.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// One thread per value: each thread adds one to its value's bin in global memory. atomicAdd makes
// concurrent increments of one counter safe.
__global__ void histogram(const float* x, unsigned* bins, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[bin_of(x[i])], 1u);
}

void launch_histogram(const float* x, unsigned* bins, int n) {
  histogram<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, bins, n);
}
// ANCHOR_END: kernel
