// 56-occupancy: the marked region of the untouched exercises/56-occupancy/affine.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// A grid-stride loop, so any grid covers any n. The launch configuration came with the code from a
// laptop GPU: 16 blocks of 128 threads.
__global__ void affine(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

void launch_affine(const float* x, float* y, int n) {
  affine<<<16, 128>>>(x, y, n);
}
// ANCHOR_END: kernel
