// 14-async-error: the marked regions of the untouched exercises/14-async-error/minmax.cu. The pristine exercise is
// solutions/14-async-error/minmax.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: kernel
__global__ void minmax_blocks(const float* x, int n, float* result) {
  float lo = INFINITY, hi = -INFINITY;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  block_minmax(lo, hi, result + 2 * blockIdx.x);
}
// ANCHOR_END: kernel
  // ANCHOR: bug
  // Only a grid of several blocks needs room for each block's result.
  float* d_partial = nullptr;
  if (blocks > 1) CB_CHECK(cudaMalloc(&d_partial, 2 * blocks * sizeof(float)));
  minmax_blocks<<<blocks, BLOCK>>>(d_x, n, d_partial);
  if (blocks > 1) minmax_combine<<<1, BLOCK>>>(d_partial, blocks, d_stats);
  // ANCHOR_END: bug
