// ANCHOR: bug
// Another fix: no grid barrier at all. The end of a kernel is a barrier across its whole grid (the
// next kernel in the stream starts when every block of this one is done), so the kernel is split
// where it synchronised the grid, into three kernels launched one after another: any number of
// blocks, resident at once or not. Each block adds up all the blocks' sums itself, in the same
// order, so every block gets the same mean and variance.
__global__ void block_sums(const float* x, double* sums, int n) {
  __shared__ double s[BLOCK];
  const int t = threadIdx.x;
  double acc = 0.0;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += x[i];
  const double block_total = block_sum(acc, s);
  if (t == 0) sums[blockIdx.x] = block_total;
}

// The mean from the blocks' sums, the same in every block.
__device__ double mean_of(const double* sums, int n, double* s) {
  double acc = 0.0;
  for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) acc += sums[b];
  return block_sum(acc, s) / n;
}

__global__ void block_squares(const float* x, const double* sums, double* squares, int n) {
  __shared__ double s[BLOCK];
  const int t = threadIdx.x;
  const double mean = mean_of(sums, n, s);
  double acc = 0.0;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) {
    const double d = x[i] - mean;
    acc += d * d;
  }
  const double block_total = block_sum(acc, s);
  if (t == 0) squares[blockIdx.x] = block_total;
}

__global__ void scale_values(const float* x, float* y, const double* sums, const double* squares, int n) {
  __shared__ double s[BLOCK];
  const double mean = mean_of(sums, n, s);
  double acc = 0.0;
  for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) acc += squares[b];
  const double inv_std = 1.0 / sqrt(block_sum(acc, s) / n + EPS);
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)
    y[i] = static_cast<float>((x[i] - mean) * inv_std);
}

constexpr int MAX_BLOCKS = 2048;

void standardize_on_gpu(const float* d_x, float* d_y, float* h_y, int n) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  double *d_sums, *d_squares;
  CB_CHECK(cudaMalloc(&d_sums, blocks * sizeof(double)));
  CB_CHECK(cudaMalloc(&d_squares, blocks * sizeof(double)));
  block_sums<<<blocks, BLOCK>>>(d_x, d_sums, n);
  CB_CHECK(cudaGetLastError());
  block_squares<<<blocks, BLOCK>>>(d_x, d_sums, d_squares, n);
  CB_CHECK(cudaGetLastError());
  scale_values<<<blocks, BLOCK>>>(d_x, d_y, d_sums, d_squares, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_sums));
  CB_CHECK(cudaFree(d_squares));
}
// ANCHOR_END: bug
