// ANCHOR: bug
// A half-fix: the launch is cooperative now, and checked, but its grid is still the original's, one
// block per 256 values up to 2048 blocks. A cooperative grid must fit on the GPU all at once: at
// most 8 blocks of 256 threads per SM (1056 on a 132-SM H100), fewer where the kernel's registers
// run out first. The small cases pass; the case of a million values asks for 2048 blocks, the launch
// fails with cudaErrorCooperativeLaunchTooLarge, and the program stops there. The grid has to be
// sized to what can be resident: blocks per SM for this kernel, times the SMs.
__global__ void standardize(const float* x, float* y, double* sums, double* squares, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ double s[BLOCK];
  const int t = threadIdx.x;
  const int first = blockIdx.x * BLOCK + t;
  const int stride = gridDim.x * BLOCK;

  double acc = 0.0;
  for (int i = first; i < n; i += stride) acc += x[i];
  const double block_total = block_sum(acc, s);
  if (t == 0) sums[blockIdx.x] = block_total;
  grid.sync();

  acc = 0.0;
  for (int b = t; b < gridDim.x; b += BLOCK) acc += sums[b];
  const double mean = block_sum(acc, s) / n;
  acc = 0.0;
  for (int i = first; i < n; i += stride) {
    const double d = x[i] - mean;
    acc += d * d;
  }
  const double block_squares = block_sum(acc, s);
  if (t == 0) squares[blockIdx.x] = block_squares;
  grid.sync();

  acc = 0.0;
  for (int b = t; b < gridDim.x; b += BLOCK) acc += squares[b];
  const double inv_std = 1.0 / sqrt(block_sum(acc, s) / n + EPS);
  for (int i = first; i < n; i += stride) y[i] = static_cast<float>((x[i] - mean) * inv_std);
}

constexpr int MAX_BLOCKS = 2048;

void standardize_on_gpu(const float* d_x, float* d_y, float* h_y, int n) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  double *d_sums, *d_squares;
  CB_CHECK(cudaMalloc(&d_sums, blocks * sizeof(double)));
  CB_CHECK(cudaMalloc(&d_squares, blocks * sizeof(double)));
  void* args[] = {&d_x, &d_y, &d_sums, &d_squares, &n};
  CB_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(standardize), dim3(blocks), dim3(BLOCK), args, 0, nullptr));
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_sums));
  CB_CHECK(cudaFree(d_squares));
}
// ANCHOR_END: bug
