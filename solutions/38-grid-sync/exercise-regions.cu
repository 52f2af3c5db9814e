// 38-grid-sync: the marked region of the untouched exercises/38-grid-sync/standardize.cu: `reset`
// restores it, `list` compares against it and the book shows it.
// ANCHOR: bug
// grid.sync() waits until every thread of every block of the grid has arrived: the blocks' sums are
// all written before any block reads them.
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

// Standardize the n values at d_x into d_y and copy them to h_y. One block per 256 values, up to
// 2048 blocks: the grid-stride loops do the rest.
constexpr int MAX_BLOCKS = 2048;

void standardize_on_gpu(const float* d_x, float* d_y, float* h_y, int n) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  double *d_sums, *d_squares;
  CB_CHECK(cudaMalloc(&d_sums, blocks * sizeof(double)));
  CB_CHECK(cudaMalloc(&d_squares, blocks * sizeof(double)));
  standardize<<<blocks, BLOCK>>>(d_x, d_y, d_sums, d_squares, n);
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_sums));
  CB_CHECK(cudaFree(d_squares));
}
// ANCHOR_END: bug
